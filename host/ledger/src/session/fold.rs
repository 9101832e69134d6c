//! The fold: a session's state after its first event
//! ([`SessionState::start`]) and after each event that follows
//! ([`SessionState::apply`]), and the check of an event against the
//! lifecycle before it is appended ([`SessionState::check`]; see
//! `lifecycle.rs` for the transitions it allows). The log is the source of
//! truth, and a state is only ever this fold of it.

use std::collections::BTreeMap;

use super::completion::CompletionState;
use super::error::SessionError;
use super::event::{Event, GENESIS_HASH};
use super::handoff::Handoff;
use super::kind::{EventKind, annotation_kinds};
use super::lifecycle::SessionStatus;
use super::state::{
    Carved, ChildLink, Counters, HandoffRecord, InFlightCall, InterruptedCall, SessionHeader,
    SessionState, Written,
};
use super::watch::Watch;
use crate::values::BudgetState;

/// Context entries kept in the state (the newest); older ones are still in the log.
const MAX_CONTEXT: usize = 256;

/// Interrupted calls kept in the state for the caller to deal with; older ones
/// are still in the log.
const MAX_INTERRUPTED: usize = 256;

impl SessionState {
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
            agent,
            read_only,
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
            agent: agent.clone(),
            read_only: *read_only,
            children: BTreeMap::new(),
            completion: CompletionState::new(completion.clone()),
            children_spawned: 0,
            children_carved: Carved::default(),
            report: None,
            written: Written::default(),
        })
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
        self.fold_kind(event);
        self.watch.apply(event);
        self.completion.apply(event);
        if next != SessionStatus::Paused {
            self.paused_reason = None;
            self.paused_by = None;
        }
        self.header.status = next;
        self.last_seq = event.seq;
        self.last_hash = event.hash.clone();
        self.header.updated_at_ms = event.at_ms;
        Ok(())
    }

    /// What `event`'s kind changes of the state, besides what the detector
    /// and the completion conditions keep of it (they fold every event
    /// themselves) and the status, sequence and hash every event moves.
    fn fold_kind(&mut self, event: &Event) {
        let at = event.at_ms;
        match &event.kind {
            EventKind::SessionStarted { .. } | EventKind::Archived => {}
            EventKind::Resumed => {
                self.budget.exceeded = None;
                self.budget.ceiling = None;
            }
            EventKind::Renamed { name } => self.header.name = Some(name.clone()),
            EventKind::Tagged { add, remove } => self.retag(add, remove),
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
            EventKind::CallRequested { .. }
            | EventKind::CallStarted { .. }
            | EventKind::CallFinished { .. }
            | EventKind::CallInterrupted { .. } => self.fold_call(&event.kind, at),
            EventKind::Note { .. } => self.last_progress_at_ms = at,
            EventKind::UsageReported { .. }
            | EventKind::BudgetWarning { .. }
            | EventKind::BudgetExceeded { .. }
            | EventKind::CapRaised { .. }
            | EventKind::CeilingReached { .. } => self.fold_spend(&event.kind),
            EventKind::CallDecided { .. }
            | EventKind::CeilingWarning { .. }
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
    }

    /// The session's tags after `tagged`: `remove` taken out, `add` put in,
    /// sorted, each once.
    fn retag(&mut self, add: &[String], remove: &[String]) {
        self.header.tags.retain(|t| !remove.contains(t));
        self.header.tags.extend(add.iter().cloned());
        self.header.tags.sort();
        self.header.tags.dedup();
    }

    /// What a spend event changes: the brain's usage it reported, and what
    /// the state keeps of the session's budget (the caps warned of, raised
    /// or exceeded, the ceiling reached). Any other kind changes nothing
    /// here.
    fn fold_spend(&mut self, kind: &EventKind) {
        match kind {
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
            EventKind::BudgetWarning { cap, .. } if !self.budget.warned.contains(cap) => {
                self.budget.warned.push(*cap);
            }
            EventKind::BudgetExceeded { cap, .. } => self.budget.exceeded = Some(*cap),
            EventKind::CapRaised { cap, to, .. } => {
                self.budget.raised.set(*cap, Some(*to));
                self.budget.warned.retain(|c| c != cap);
            }
            EventKind::CeilingReached { scope, .. } => self.budget.ceiling = Some(scope.clone()),
            _ => {}
        }
    }

    /// What a call's event at `at` changes: the calls in flight, the
    /// interrupted calls the caller is to deal with, and the counters. Any
    /// other kind changes nothing here.
    fn fold_call(&mut self, kind: &EventKind, at: u64) {
        match kind {
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
            _ => {}
        }
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
            waiting: self.handover_waiting(),
        })
    }

    /// The rescue's handover the agent has not picked up yet: context a
    /// rescue injected after the session's last progress (a resume is
    /// progress), said in the refusal of the agent's next call. The agent
    /// reads it at once with `session_status` (its state's `context`),
    /// while the session stays paused until the operator lifts the pause.
    fn handover_waiting(&self) -> Option<String> {
        let rescue = self.watch.rescue.as_ref()?;
        let source = format!("rescue:{rescue}");
        let latest = self.context.iter().rev().find(|c| c.source == source)?;
        (latest.at_ms >= self.watch.last_success_at_ms).then(|| {
            format!(
                "rescue `{rescue}` handed over context for this session: read it now with `session_status` (its `context`); `session_resume` returns it too once the operator lifts the pause"
            )
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
