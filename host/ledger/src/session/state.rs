//! Session state: the fold of a session's events (see `lifecycle` for the
//! transitions the fold allows).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::chain::KeyedChain;
use super::completion::CompletionState;
use super::error::SessionError;
use super::event::{
    CallTotals, EndOutcome, Event, EventKind, GENESIS_HASH, Role, SessionSummary, annotation_kinds,
};
use super::handoff::Handoff;
use super::lifecycle::SessionStatus;
use super::watch::Watch;
use crate::manifest::{BudgetCaps, Cap};
use crate::values::{BudgetState, ContextEntry};

/// Context entries kept in the state (the newest); older ones are still in the log.
const MAX_CONTEXT: usize = 256;

/// Interrupted calls kept in the state for the caller to deal with; older ones
/// are still in the log.
const MAX_INTERRUPTED: usize = 256;

/// Running totals over a session's calls.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Counters {
    /// What the session's end record carries too (its fields stand here,
    /// first, as they always have).
    #[serde(flatten)]
    pub totals: CallTotals,
    /// Calls that ran (`call_started`): what the `calls` budget cap counts.
    #[serde(default)]
    pub calls_run: u64,
    /// Estimated tool cost of the calls that ran, in millionths.
    #[serde(default)]
    pub cost_micros: u64,
    /// Model cost the brain reported (`usage_reported`), in millionths.
    #[serde(default)]
    pub model_cost_micros: u64,
    #[serde(default)]
    pub tokens_in: u64,
    #[serde(default)]
    pub tokens_out: u64,
}

/// A call that was requested and has not finished.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct InFlightCall {
    pub tool: String,
    pub requested_at_ms: u64,
    /// Set once the call is started, i.e. the tool may have run.
    pub started_at_ms: Option<u64>,
    pub idempotency_key: Option<String>,
    pub idempotent: bool,
    /// The background job the call runs for (notifications of jobs).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub job_id: Option<String>,
    /// The tool's estimated cost, in micros, once the call is started:
    /// committed while it runs (see `budget::Used::committed`).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub cost_micros: u64,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// A call the host lost while it was requested or running.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct InterruptedCall {
    pub call_id: String,
    pub tool: String,
    pub reason: String,
    pub at_ms: u64,
    /// Whether the tool may have run (it was started).
    pub started: bool,
    /// Safe to re-run with `idempotency_key`.
    pub idempotent: bool,
    pub idempotency_key: Option<String>,
}

/// A handoff and where it came from.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct HandoffRecord {
    pub seq: u64,
    pub at_ms: u64,
    /// The session that wrote it (this one, or another for a received handoff).
    pub from_session: String,
    pub handoff: Handoff,
}

/// A child session as its parent's state keeps it (see `family.rs`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ChildLink {
    pub role: Role,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// The caps carved out of the parent's for the child.
    #[serde(default)]
    pub budget: BudgetCaps,
    pub spawned_at_ms: u64,
    /// Only in a state written before children were bounded (`brood.rs`):
    /// the latest handoff the child wrote to its parent. A child's report
    /// is now its own ([`SessionState::report`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub report: Option<HandoffRecord>,
}

/// The caps a parent carved for all its children together: what its own
/// budget counts as spent for them (see `budget::Used`).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Carved {
    pub cost_micros: u64,
    pub calls: u64,
}

impl Carved {
    pub fn is_empty(&self) -> bool {
        *self == Carved::default()
    }

    pub(super) fn add(&mut self, caps: &BudgetCaps) {
        let add = |to: &mut u64, cap: Cap| *to = to.saturating_add(caps.get(cap).unwrap_or(0));
        add(&mut self.cost_micros, Cap::Cost);
        add(&mut self.calls, Cap::Calls);
    }
}

/// Who a session is and where it stands: what both its state and its
/// entry in the `sessions` bucket ([`SessionInfo`]) carry. Flattened into
/// both, so their JSON (and every checkpoint's bytes) keeps these fields at
/// the top.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SessionHeader {
    pub id: String,
    pub name: Option<String>,
    pub role: Role,
    pub project: String,
    /// Sorted, without duplicates.
    pub tags: Vec<String>,
    pub status: SessionStatus,
    pub created_at_ms: u64,
    /// The time of its last event. A `sessions` bucket entry has it as of
    /// the entry's last write; `Sessions::list` reports the log's instead.
    pub updated_at_ms: u64,
}

/// The fold of a session's events.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SessionState {
    #[serde(flatten)]
    pub header: SessionHeader,
    /// The last call finished, note, handoff or start.
    pub last_progress_at_ms: u64,
    pub expected_duration_ms: Option<u64>,
    pub paused_reason: Option<String>,
    pub outcome: Option<EndOutcome>,
    pub latest_handoff: Option<HandoffRecord>,
    /// Handoffs written and received.
    pub handoffs: u64,
    pub last_seq: u64,
    pub last_hash: String,
    pub counters: Counters,
    pub in_flight: BTreeMap<String, InFlightCall>,
    /// Interrupted calls not re-run since (newest last, at most 256).
    pub interrupted: Vec<InterruptedCall>,
    /// Budget caps, warnings given and the cap that paused the session.
    #[serde(default)]
    pub budget: BudgetState,
    /// Blocker flags, the escalation step and what the stuck-agent detector
    /// reads (see [`crate::detect`]).
    #[serde(default)]
    pub watch: Watch,
    /// Context handed to the session: its project's context index at start,
    /// and rescue injections (oldest first, at most 256).
    #[serde(default)]
    pub context: Vec<ContextEntry>,
    /// The principal that started the session (see
    /// [`SessionState::owner_name`]).
    #[serde(default)]
    pub owner: Option<String>,
    /// Tags the owner's operator pinned: the agent cannot remove them.
    #[serde(default)]
    pub pinned_tags: Vec<String>,
    /// While paused: the principal that asked for the pause, or none when
    /// the host took it (then only an operator lifts it).
    #[serde(default)]
    pub paused_by: Option<String>,
    /// The chain key its log is sealed with, from its first event; none
    /// for a plain log (see `chain.rs`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub keyed: Option<KeyedChain>,
    /// The session that spawned this one (`session_spawn`), by id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent: Option<String>,
    /// The newest sessions this one spawned (at most
    /// [`super::brood::RECENT_CHILDREN`]), by id; every one is in the
    /// store's children index (see `brood.rs`, `family.rs`).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub children: BTreeMap<String, ChildLink>,
    /// Its completion condition and where it stands (see `completion.rs`).
    #[serde(default)]
    pub completion: CompletionState,
    /// How many sessions this one spawned in all.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub children_spawned: u64,
    /// The caps carved for all of them together.
    #[serde(default, skip_serializing_if = "Carved::is_empty")]
    pub children_carved: Carved,
    /// For a child: its latest report to its parent (a handoff to it of
    /// any kind but a continuation), what `session_wait` waits for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub report: Option<HandoffRecord>,
    /// What its actors wrote into its log (see [`Written`]). A checkpoint
    /// written before it was counted carries none: the events before it
    /// are not counted (under, never over, once).
    #[serde(default, skip_serializing_if = "Written::is_empty")]
    pub written: Written,
}

/// The events, and their bytes as stored, that actors (agents, operators;
/// not the host's own records) wrote into a session's log: what
/// `quotas.session_events` and `quotas.session_bytes` bound (see
/// `quota.rs`). Kept in the state, so a checkpoint carries it and a load
/// adds what follows: a restart recounts nothing from the whole log.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Written {
    pub events: u64,
    pub bytes: u64,
}

impl Written {
    fn is_empty(&self) -> bool {
        *self == Written::default()
    }
}

/// Whether `event` counts in [`Written`]: an actor's, not the host's (nor
/// of a log older than the actor's record).
pub(crate) fn written_by_actor(event: &Event) -> bool {
    event
        .by
        .as_deref()
        .is_some_and(|by| by != super::actor::HOST)
}

impl SessionState {
    /// Counts `event`, stored as `stored` bytes, in [`SessionState::written`]
    /// if an actor wrote it. Called wherever an event's stored bytes are at
    /// hand: the append, the start, the load's replay.
    pub(crate) fn count_written(&mut self, event: &Event, stored: usize) {
        if written_by_actor(event) {
            self.written.events += 1;
            self.written.bytes = self.written.bytes.saturating_add(stored as u64);
        }
    }

    /// The principal that owns the session: the one that started it, or the
    /// built-in agent `local` for a session started before principals were
    /// recorded.
    pub fn owner_name(&self) -> &str {
        self.owner
            .as_deref()
            .unwrap_or(glovebox_manifest::LOCAL_PRINCIPAL)
    }

    /// The state after a session's first event, which must be `session_started`.
    pub fn start(event: &Event) -> Result<SessionState, SessionError> {
        let EventKind::SessionStarted {
            role,
            project,
            name,
            tags,
            expected_duration_ms,
            budget,
            owner,
            pinned_tags,
            keyed,
            parent,
            completion,
        } = &event.kind
        else {
            return Err(SessionError::InvalidEvent {
                session: event.session.clone(),
                reason: format!(
                    "a session's first event must be session_started, not {}",
                    event.kind.name()
                ),
            });
        };
        if event.seq != 1 || event.prev_hash != GENESIS_HASH {
            return Err(SessionError::InvalidEvent {
                session: event.session.clone(),
                reason: "session_started must be event 1, after the genesis hash".to_string(),
            });
        }
        let mut tags = tags.clone();
        tags.sort();
        tags.dedup();
        Ok(SessionState {
            header: SessionHeader {
                id: event.session.clone(),
                name: name.clone(),
                role: *role,
                project: project.clone(),
                tags,
                status: SessionStatus::Created,
                created_at_ms: event.at_ms,
                updated_at_ms: event.at_ms,
            },
            last_progress_at_ms: event.at_ms,
            expected_duration_ms: *expected_duration_ms,
            paused_reason: None,
            outcome: None,
            latest_handoff: None,
            handoffs: 0,
            last_seq: 1,
            last_hash: event.hash.clone(),
            counters: Counters::default(),
            in_flight: BTreeMap::new(),
            interrupted: Vec::new(),
            budget: BudgetState {
                caps: budget.clone(),
                ..BudgetState::default()
            },
            watch: Watch::new(event.at_ms),
            context: Vec::new(),
            owner: owner.clone(),
            pinned_tags: pinned_tags.clone(),
            paused_by: None,
            keyed: keyed.clone(),
            parent: parent.clone(),
            children: BTreeMap::new(),
            completion: CompletionState::new(completion.clone()),
            children_spawned: 0,
            children_carved: Carved::default(),
            report: None,
            written: Written::default(),
        })
    }

    /// How errors name this session: "`name` (id)" or the id.
    pub fn label(&self) -> String {
        match &self.header.name {
            Some(name) => format!("`{name}` ({})", self.header.id),
            None => format!("`{}`", self.header.id),
        }
    }

    /// The totals an `ended` record carries, as of `now_ms`.
    pub fn summary(&self, now_ms: u64) -> SessionSummary {
        let c = &self.counters;
        SessionSummary {
            duration_ms: now_ms.saturating_sub(self.header.created_at_ms),
            totals: c.totals.clone(),
            cost_micros: c.cost_micros,
            model_cost_micros: c.model_cost_micros,
            tokens_in: c.tokens_in,
            tokens_out: c.tokens_out,
        }
    }

    /// The status after `kind`, or why `kind` may not be appended now. Checked
    /// before every append, so the log only ever holds allowed transitions.
    pub fn check(&self, kind: &EventKind) -> Result<SessionStatus, SessionError> {
        use SessionStatus::*;
        let status = self.header.status;
        match kind {
            EventKind::SessionStarted { .. } => Err(self.invalid("a session is started only once")),
            EventKind::Renamed { .. }
            | EventKind::Tagged { .. }
            | EventKind::VerdictGiven { .. }
            | annotation_kinds!() => {
                if status == Archived {
                    Err(self.invalid("the session is archived: its log is closed"))
                } else {
                    Ok(status)
                }
            }
            EventKind::ChildSpawned { child, .. } => {
                if !status.is_live() {
                    Err(self.invalid(&format!(
                        "the session is {status}: only a live session spawns children"
                    )))
                } else if self.children.contains_key(child) {
                    Err(self.invalid(&format!("session `{child}` is already its child")))
                } else {
                    Ok(status)
                }
            }
            EventKind::GatesChecked { .. } | EventKind::VerdictReceived { .. } => {
                if status.is_live() {
                    Ok(status)
                } else {
                    Err(self.invalid(&format!(
                        "the session is {status}: gates and verdicts concern a live session"
                    )))
                }
            }
            EventKind::Paused { .. } => self.transition("pause", Paused),
            EventKind::Resumed => self.transition("resume", Active),
            EventKind::Ended { .. } => self.transition("end", Completed),
            EventKind::Archived => self.transition("archive", Archived),
            EventKind::Handoff(_) if matches!(status, Active | Paused) => Ok(status),
            EventKind::Handoff(_) => self.transition("handoff", Active),
            EventKind::HandoffReceived { .. } if status.is_live() => Ok(status),
            EventKind::HandoffReceived { .. } => Err(self.invalid(&format!(
                "the session is {status} and takes no handoffs: hand off to a live session"
            ))),
            EventKind::CallRequested { call_id, .. } => {
                if self.in_flight.contains_key(call_id) {
                    return Err(self.invalid(&format!("call `{call_id}` was already requested")));
                }
                if status == Active {
                    Ok(Active)
                } else {
                    self.transition("call", Active)
                }
            }
            EventKind::CallStarted { call_id, .. } => match self.in_flight.get(call_id) {
                Some(call) if call.started_at_ms.is_some() => {
                    Err(self.invalid(&format!("call `{call_id}` was already started")))
                }
                Some(_) => Ok(status),
                None => Err(self.unknown_call(call_id)),
            },
            EventKind::CallDecided { call_id, .. }
            | EventKind::CallFinished { call_id, .. }
            | EventKind::CallInterrupted { call_id, .. } => {
                if self.in_flight.contains_key(call_id) {
                    Ok(status)
                } else {
                    Err(self.unknown_call(call_id))
                }
            }
        }
    }

    /// Folds `event`, which must follow the last one, into the state.
    pub fn apply(&mut self, event: &Event) -> Result<(), SessionError> {
        if event.session != self.header.id
            || event.seq != self.last_seq + 1
            || event.prev_hash != self.last_hash
        {
            return Err(self.invalid(&format!(
                "event {} of `{}` does not follow event {} of this session",
                event.seq, event.session, self.last_seq
            )));
        }
        let next = self.check(&event.kind)?;
        let at = event.at_ms;
        match &event.kind {
            EventKind::SessionStarted { .. } | EventKind::Archived => {}
            EventKind::Resumed => {
                self.budget.exceeded = None;
                self.budget.ceiling = None;
            }
            EventKind::Renamed { name } => self.header.name = Some(name.clone()),
            EventKind::Tagged { add, remove } => {
                self.header.tags.retain(|t| !remove.contains(t));
                self.header.tags.extend(add.iter().cloned());
                self.header.tags.sort();
                self.header.tags.dedup();
            }
            EventKind::Paused { reason, by } => {
                self.paused_reason = Some(reason.clone());
                self.paused_by = by.clone();
            }
            EventKind::Ended { outcome, .. } => {
                self.outcome = Some(*outcome);
                self.last_progress_at_ms = at;
            }
            EventKind::Handoff(handoff) => {
                self.record_handoff(event, &self.header.id.clone(), handoff);
                self.reported(handoff);
            }
            EventKind::HandoffReceived {
                from_session,
                handoff,
            } => self.record_handoff(event, from_session, handoff),
            EventKind::ChildSpawned {
                child,
                role,
                name,
                budget,
                ..
            } => {
                let link = ChildLink {
                    role: *role,
                    name: name.clone(),
                    budget: budget.clone(),
                    spawned_at_ms: at,
                    report: None,
                };
                self.child_spawned(child, link);
                self.last_progress_at_ms = at;
            }
            EventKind::CallRequested {
                call_id,
                tool,
                job_id,
                ..
            } => {
                let call = InFlightCall {
                    tool: tool.clone(),
                    requested_at_ms: at,
                    started_at_ms: None,
                    idempotency_key: None,
                    idempotent: false,
                    job_id: job_id.clone(),
                    cost_micros: 0,
                };
                self.in_flight.insert(call_id.clone(), call);
            }
            EventKind::CallDecided { .. } => {}
            EventKind::CallStarted {
                call_id,
                idempotency_key,
                idempotent,
                cost_micros,
                ..
            } => {
                self.counters.calls_run += 1;
                if let Some(call) = self.in_flight.get_mut(call_id) {
                    call.started_at_ms = Some(at);
                    call.idempotency_key = Some(idempotency_key.clone());
                    call.idempotent = *idempotent;
                    call.cost_micros = *cost_micros;
                }
                // A re-run of an interrupted call under its key settles it.
                self.interrupted
                    .retain(|c| c.idempotency_key.as_ref() != Some(idempotency_key));
            }
            EventKind::CallFinished {
                call_id,
                outcome,
                metering,
                ..
            } => {
                self.in_flight.remove(call_id);
                let c = &mut self.counters;
                c.totals.count_finished(outcome != "ok", metering);
                c.cost_micros = c.cost_micros.saturating_add(metering.cost_micros);
                self.last_progress_at_ms = at;
            }
            EventKind::CallInterrupted { call_id, reason } => {
                if let Some(call) = self.in_flight.remove(call_id) {
                    self.counters.totals.calls += 1;
                    self.counters.totals.failures += 1;
                    self.interrupted.push(InterruptedCall {
                        call_id: call_id.clone(),
                        tool: call.tool,
                        reason: reason.clone(),
                        at_ms: at,
                        started: call.started_at_ms.is_some(),
                        idempotent: call.idempotent,
                        idempotency_key: call.idempotency_key,
                    });
                    if self.interrupted.len() > MAX_INTERRUPTED {
                        self.interrupted.remove(0);
                    }
                }
            }
            EventKind::Note { .. } => self.last_progress_at_ms = at,
            EventKind::UsageReported {
                tokens_in,
                tokens_out,
                cost_micros,
                ..
            } => {
                let c = &mut self.counters;
                c.tokens_in = c.tokens_in.saturating_add(*tokens_in);
                c.tokens_out = c.tokens_out.saturating_add(*tokens_out);
                c.model_cost_micros = c.model_cost_micros.saturating_add(*cost_micros);
            }
            EventKind::BudgetWarning { cap, .. } => {
                if !self.budget.warned.contains(cap) {
                    self.budget.warned.push(*cap);
                }
            }
            EventKind::BudgetExceeded { cap, .. } => self.budget.exceeded = Some(*cap),
            EventKind::CapRaised { cap, to, .. } => {
                self.budget.raised.set(*cap, Some(*to));
                self.budget.warned.retain(|c| c != cap);
            }
            EventKind::CeilingReached { scope, .. } => self.budget.ceiling = Some(scope.clone()),
            EventKind::CeilingWarning { .. }
            | EventKind::BlockerFlag(_)
            | EventKind::Escalation { .. }
            | EventKind::JobsUnwaited { .. }
            | EventKind::ActionRefused { .. }
            | EventKind::MemoryProposed { .. }
            | EventKind::MemorySearched { .. }
            | EventKind::GatesChecked { .. }
            | EventKind::VerdictReceived { .. }
            | EventKind::VerdictGiven { .. }
            | EventKind::ScheduleAlert { .. } => {}
            EventKind::ContextInjected { entries, .. } => {
                self.context.extend(entries.iter().cloned());
                let over = self.context.len().saturating_sub(MAX_CONTEXT);
                self.context.drain(..over);
            }
        }
        self.watch.apply(event);
        self.completion.apply(event);
        if next != SessionStatus::Paused {
            self.paused_reason = None;
            self.paused_by = None;
        }
        self.header.status = next;
        self.last_seq = event.seq;
        self.last_hash = event.hash.clone();
        self.header.updated_at_ms = at;
        Ok(())
    }

    fn record_handoff(&mut self, event: &Event, from_session: &str, handoff: &Handoff) {
        self.handoffs += 1;
        self.last_progress_at_ms = event.at_ms;
        self.latest_handoff = Some(HandoffRecord {
            seq: event.seq,
            at_ms: event.at_ms,
            from_session: from_session.to_string(),
            handoff: handoff.clone(),
        });
    }

    fn transition(&self, action: &str, to: SessionStatus) -> Result<SessionStatus, SessionError> {
        let allowed = self.header.status.transitions();
        if allowed.iter().any(|t| t.action == action && t.to == to) {
            return Ok(to);
        }
        Err(SessionError::IllegalTransition {
            session: self.label(),
            action: action.to_string(),
            from: self.header.status,
            to,
            allowed,
        })
    }

    fn invalid(&self, reason: &str) -> SessionError {
        SessionError::InvalidEvent {
            session: self.label(),
            reason: reason.to_string(),
        }
    }

    fn unknown_call(&self, call_id: &str) -> SessionError {
        self.invalid(&format!(
            "call `{call_id}` is not in flight: log call_requested first"
        ))
    }
}

/// What the `sessions` bucket keeps per session, so listing does not replay logs.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SessionInfo {
    #[serde(flatten)]
    pub header: SessionHeader,
    /// See [`SessionState::owner`].
    #[serde(default)]
    pub owner: Option<String>,
    /// The log's head when this entry was written: the sequence and hash of
    /// its last event, recorded after every append (never before the append
    /// it names). `log verify` and loading check the log against it, so
    /// events cut off the tail are found even between checkpoints. 0: an
    /// entry written before heads were recorded.
    #[serde(default)]
    pub head_seq: u64,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub head_hash: String,
    /// For a keyed session: a MAC of the head under the chain key, so the
    /// head cannot be moved back along with a cut tail without the key.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub head_mac: String,
    /// See [`SessionState::parent`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent: Option<String>,
}

impl SessionInfo {
    /// See [`SessionState::owner_name`].
    pub fn owner_name(&self) -> &str {
        self.owner
            .as_deref()
            .unwrap_or(glovebox_manifest::LOCAL_PRINCIPAL)
    }
}

impl From<&SessionState> for SessionInfo {
    fn from(s: &SessionState) -> Self {
        SessionInfo {
            header: s.header.clone(),
            owner: s.owner.clone(),
            head_seq: s.last_seq,
            head_hash: s.last_hash.clone(),
            head_mac: String::new(),
            parent: s.parent.clone(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::chain::Chain;
    use super::*;

    /// As the code before the header wrote them (checked against it).
    const STATE: &str = r#"{"id":"s-1","name":"n","role":"workagent","project":"p","tags":["a","b"],"status":"created","created_at_ms":10,"updated_at_ms":10,"last_progress_at_ms":10,"expected_duration_ms":60000,"paused_reason":null,"outcome":null,"latest_handoff":null,"handoffs":0,"last_seq":1,"last_hash":"ea0756110d08c139b7a4c22a877f4c2164dab704a1358050935ec3d7b354519d","counters":{"calls":0,"failures":0,"wall_us_total":0,"bytes_in":0,"bytes_out":0,"fuel_total":0,"peak_memory_max":0,"calls_run":0,"cost_micros":0,"model_cost_micros":0,"tokens_in":0,"tokens_out":0},"in_flight":{},"interrupted":[],"budget":{"caps":{},"raised":{},"warned":[],"exceeded":null},"watch":{"escalation":"none","escalated_at_ms":null,"rescue":null,"flags":{},"last_success_at_ms":10,"failure_streak":0,"failing":{},"last_failed_call":null,"recent_denied":[],"budget_percent":{},"pending":{},"last_activity_at_ms":10},"context":[],"owner":"alice","pinned_tags":[],"paused_by":null,"parent":"s-0","completion":{"failing_runs":0}}"#;
    const INFO: &str = r#"{"id":"s-1","name":"n","role":"workagent","project":"p","tags":["a","b"],"status":"created","created_at_ms":10,"updated_at_ms":10,"owner":"alice","head_seq":1,"head_hash":"ea0756110d08c139b7a4c22a877f4c2164dab704a1358050935ec3d7b354519d","parent":"s-0"}"#;

    /// A checkpoint's state and an index entry serialize to the bytes they
    /// had before their common fields became one flattened header, and
    /// what was stored then decodes to the same values: a checkpoint's
    /// checksum and MAC cover its bytes.
    #[test]
    fn states_and_index_entries_keep_their_bytes_with_the_header_flattened() {
        let kind = serde_json::from_str(
            r#"{"type":"session_started","role":"workagent","project":"p","name":"n","tags":["b","a","b"],"expected_duration_ms":60000,"owner":"alice","parent":"s-0"}"#,
        )
        .unwrap();
        let started = Event::seal(&Chain::Plain, "s-1", 1, 10, GENESIS_HASH, kind);
        let state = SessionState::start(&started).unwrap();
        assert_eq!(state.header.tags, ["a", "b"]);
        assert_eq!(serde_json::to_string(&state).unwrap(), STATE);
        assert_eq!(serde_json::from_str::<SessionState>(STATE).unwrap(), state);
        let info = SessionInfo::from(&state);
        assert_eq!(serde_json::to_string(&info).unwrap(), INFO);
        assert_eq!(serde_json::from_str::<SessionInfo>(INFO).unwrap(), info);
    }
}
