//! Session state: what the fold of a session's events keeps (the fold itself
//! is in `fold.rs`; see `lifecycle` for the transitions it allows), and each
//! session's record in the `sessions` bucket ([`SessionInfo`]).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::chain::KeyedChain;
use super::completion::CompletionState;
use super::event::Event;
use super::handoff::Handoff;
use super::kind::{CallTotals, EndOutcome, Role, SessionSummary};
use super::lifecycle::SessionStatus;
use super::watch::Watch;
use crate::manifest::{AgentCard, BudgetCaps, Cap};
use crate::values::{BudgetState, ContextEntry};

/// Running totals over a session's calls.
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
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
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
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
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
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
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct HandoffRecord {
    pub seq: u64,
    pub at_ms: u64,
    /// The session that wrote it (this one, or another for a received handoff).
    pub from_session: String,
    pub handoff: Handoff,
}

/// A child session as its parent's state keeps it (see `family.rs`).
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
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
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Carved {
    pub cost_micros: u64,
    pub calls: u64,
    /// Absent (0) in states folded before tokens were capped.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub tokens: u64,
}

impl Carved {
    pub fn is_empty(&self) -> bool {
        *self == Carved::default()
    }

    pub(super) fn add(&mut self, caps: &BudgetCaps) {
        let add = |to: &mut u64, cap: Cap| *to = to.saturating_add(caps.get(cap).unwrap_or(0));
        add(&mut self.cost_micros, Cap::Cost);
        add(&mut self.calls, Cap::Calls);
        add(&mut self.tokens, Cap::Tokens);
    }
}

/// Who a session is and where it stands: what both its state and its
/// entry in the `sessions` bucket ([`SessionInfo`]) carry. Flattened into
/// both, so their JSON (and every checkpoint's bytes) keeps these fields at
/// the top.
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
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
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
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
    /// What the operator said about its owner when it started (model,
    /// version, owner, description; see `session_started`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent: Option<AgentCard>,
    /// Offered only tools annotated read-only, for good (see
    /// `session_started`'s `read_only`); its children are too.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub read_only: bool,
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
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
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
}

/// What the `sessions` bucket keeps per session, so listing does not replay logs.
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
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
    use super::super::event::GENESIS_HASH;
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
