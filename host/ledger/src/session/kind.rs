//! What can happen in a session: the kinds of its events ([`EventKind`])
//! and the values they carry (a blocker flag, a call's metering, the totals
//! of an end, how it ended). The sealed, chained record around a kind is
//! `event.rs`'s [`Event`](super::Event); a kind already in a log must
//! serialize to the bytes its hash covers, so fields keep their names and
//! places.

use serde::{Deserialize, Serialize};

use super::chain::KeyedChain;
use super::gate::{GateResult, Verdict};
use super::handoff::Handoff;
use crate::manifest::{AgentCard, BudgetCaps, Cap, Completion, Measure, Period, Scope, Severity};
use crate::values::{ContextEntry, EscalationStep};

/// A blocker flag the stuck-agent detector raised (see [`crate::detect`]):
/// the content of a `blocker_flag` event, whose fields stand beside its
/// `type` in the log as they did when the variant spelt them out.
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Flag {
    /// `budget`, `retry`, `overrun`, `denials`, `no_progress`, `stale` or
    /// `approval_wait`.
    pub rule: String,
    pub severity: Severity,
    pub reason: String,
    pub suggested_action: String,
    /// The call it concerns, if one.
    pub call_id: Option<String>,
}

/// Everything that can happen in a session.
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum EventKind {
    /// Always event 1.
    SessionStarted {
        role: Role,
        project: String,
        name: Option<String>,
        tags: Vec<String>,
        expected_duration_ms: Option<u64>,
        /// The session's own budget caps (see [`crate::budget`]).
        #[serde(default, skip_serializing_if = "BudgetCaps::is_empty")]
        budget: BudgetCaps,
        /// The principal that started it, and so owns it. Absent in logs
        /// written before principals existed: those sessions belong to the
        /// built-in agent `local` (and operators). Left out of the record when
        /// absent, so old records hash as they did.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        owner: Option<String>,
        /// The tags its owner's operator pinned (a subset of `tags`): they
        /// cannot be removed by the agent.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        pinned_tags: Vec<String>,
        /// The chain key the log is sealed with (its id, never the key);
        /// absent for a plain log, and in every log written before keyed
        /// chains existed, so those hash as they did and load as plain.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        keyed: Option<KeyedChain>,
        /// The session that spawned it (`session_spawn`), by id; absent for
        /// a session started on its own, and in every log written before
        /// child sessions existed, so those hash as they did.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        parent: Option<String>,
        /// What must hold before it ends as `completed` (see
        /// `completion.rs`): its own condition, its parent's for it and the
        /// operator's `[[completion]]` together. Left out when empty, so
        /// logs written before conditions existed hash as they did.
        #[serde(default, skip_serializing_if = "Completion::is_empty")]
        completion: Completion,
        /// What the operator said about its owner when it started (the
        /// `[[principal]]`'s card: model, version, owner, description), so
        /// a change of model shows in the logs. Absent when nothing was
        /// said, and in logs written before, so those hash as they did.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        agent: Option<AgentCard>,
        /// Offered only tools annotated read-only, for good: its owner is
        /// read-only, it was started so, or its parent is. Left out when
        /// false, so logs written before hash as they did.
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        read_only: bool,
    },
    Renamed {
        name: String,
    },
    Tagged {
        add: Vec<String>,
        remove: Vec<String>,
    },
    Paused {
        reason: String,
        /// The principal that asked for the pause; absent when the host took
        /// it (a critical flag, a budget, a rescue, a pending approval, a
        /// failed write), which only an operator lifts.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        by: Option<String>,
    },
    Resumed,
    Ended {
        outcome: EndOutcome,
        summary: SessionSummary,
    },
    Archived,
    /// A handoff written by this session.
    Handoff(Handoff),
    /// A handoff another session wrote with this one as `target_session`.
    HandoffReceived {
        from_session: String,
        handoff: Handoff,
    },
    CallRequested {
        call_id: String,
        tool: String,
        input_digest: String,
        /// The input itself when it is at most [`MAX_INLINE_BYTES`](super::MAX_INLINE_BYTES).
        input: Option<String>,
        job_id: Option<String>,
        /// The W3C trace the request that made the call belongs to (its
        /// `traceparent`'s trace id), when it named one. Left out
        /// otherwise, so logs written before it was recorded hash as they did.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        trace_id: Option<String>,
        /// The call whose run made this one from inside (code mode: a
        /// script calling a tool), when one did. Left out otherwise, so
        /// logs written before it was recorded hash as they did.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        parent_call: Option<String>,
    },
    /// One permission hook's verdict on a call.
    CallDecided {
        call_id: String,
        hook: String,
        /// The trigger pattern that matched.
        pattern: String,
        /// `allow`, `deny` or `ask`.
        #[cfg_attr(feature = "schemars", schemars(extend("enum" = ["allow", "deny", "ask"])))]
        decision: String,
        reason: Option<String>,
        alternatives: Vec<String>,
        took_ms: u64,
        /// The sha256 of the hook's component that decided; absent for a
        /// hook that did not load, an operator's approval, and in logs
        /// written before it was recorded (their hashes stay as they were).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        hook_digest: Option<String>,
    },
    /// Logged before the tool runs, so a crash leaves the idempotency key behind.
    CallStarted {
        call_id: String,
        tool: String,
        idempotency_key: String,
        idempotent: bool,
        tool_digest: String,
        /// The tool's estimated cost (its manifest's `cost`) in millionths:
        /// what the call commits of its session's (and family's) budget
        /// while it runs. Left out when 0, so logs written before it was
        /// recorded hash as they did.
        #[serde(default, skip_serializing_if = "is_zero")]
        cost_micros: u64,
    },
    CallFinished {
        call_id: String,
        /// `ok`, or the kind of error (`timeout`, `denied`, …).
        outcome: String,
        error: Option<String>,
        /// The output itself when it is at most [`MAX_INLINE_BYTES`](super::MAX_INLINE_BYTES).
        output: Option<String>,
        output_digest: String,
        metering: CallMetering,
    },
    /// A call that was requested or running when the host stopped.
    CallInterrupted {
        call_id: String,
        reason: String,
    },
    /// This session spawned a child session (`session_spawn`): the child's
    /// id, role and name, the caps carved out of this session's budget for
    /// it, and the task handed to it (the child's log has the same handoff as
    /// `handoff_received`).
    ChildSpawned {
        child: String,
        role: Role,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        name: Option<String>,
        /// The child's caps in force when it was spawned (its own, or its
        /// role's where lower): what this session's caps keep for it.
        #[serde(default, skip_serializing_if = "BudgetCaps::is_empty")]
        budget: BudgetCaps,
        task: Handoff,
    },
    /// Free-form progress.
    Note {
        text: String,
    },
    /// The brain's own usage, reported by it (Glovebox cannot see the model).
    UsageReported {
        tokens_in: u64,
        tokens_out: u64,
        /// Model cost in millionths of a cost unit.
        cost_micros: u64,
        model: Option<String>,
        /// The brain's context now, in tokens, and its window: what the
        /// `context` rule compares. Absent from reports without them.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        context_tokens: Option<u64>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        context_limit: Option<u64>,
    },
    /// The session reached the warning threshold (80% by default) of a cap.
    BudgetWarning {
        cap: Cap,
        /// In the cap's unit: cost micros, calls, milliseconds.
        used: u64,
        limit: u64,
        percent: u64,
    },
    /// A call (or a usage report, `call_id` none) went past a cap; the
    /// session pauses.
    BudgetExceeded {
        cap: Cap,
        /// What the session would have reached.
        used: u64,
        limit: u64,
        call_id: Option<String>,
    },
    /// An operator set a cap of this session (`glovebox session budget`).
    CapRaised {
        cap: Cap,
        /// The cap in force before, if any.
        from: Option<u64>,
        to: u64,
    },
    /// The sessions of a principal, project or role together reached the
    /// warning threshold (`[budgets] warn_at`) of one of its ceilings
    /// across sessions, with a call or a usage report of this session
    /// (see [`crate::spend`]); once per ceiling and period.
    CeilingWarning {
        scope: Scope,
        period: Period,
        /// `2025-06-14`, `2025-W24`, `2025-06`.
        period_id: String,
        measure: Measure,
        /// In the measure's unit: cost micros, calls, tokens.
        used: u64,
        limit: u64,
        percent: u64,
    },
    /// A ceiling across sessions of the session's principal, project or
    /// role was reached: a call of this session was refused at it
    /// (`call_id`), a usage report of it took the scope to it, or (`first`
    /// false, no call) another session of the scope reached it. The session
    /// pauses, and only an operator lifts that pause (`glovebox budget`).
    CeilingReached {
        scope: Scope,
        period: Period,
        period_id: String,
        measure: Measure,
        used: u64,
        limit: u64,
        /// When the period ends (unix millis).
        ends_at_ms: u64,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        call_id: Option<String>,
        /// The period's first refusal at this ceiling: the one that
        /// notifies (`ceiling_reached`).
        first: bool,
    },
    /// The stuck-agent detector raised a blocker flag (see [`crate::detect`]).
    BlockerFlag(Flag),
    /// The session moved on the escalation ladder.
    Escalation {
        step: EscalationStep,
        reason: String,
        /// The rescue, on the `rescue` step.
        rescue: Option<String>,
    },
    /// Context handed to the session: its project's context index when it
    /// starts, or a rescue's injection. `resume` returns it.
    ContextInjected {
        /// `index`, or `rescue:<id>`.
        source: String,
        entries: Vec<ContextEntry>,
    },
    /// The session ended with background jobs of its own nobody waited
    /// for: still queued or running, or with a result nobody read (seed
    /// 001's fire-and-forget antipattern; `glovebox doctor` reports it).
    /// Appended just before its `ended` event.
    JobsUnwaited {
        jobs: Vec<UnwaitedJob>,
    },
    /// A built-in action on this session (`glovebox:<noun>:<verb>`, e.g.
    /// `glovebox:job:spawn`) that the hook chain refused: denied, or asked
    /// (built-ins do not wait for approval). Nothing else of it happened.
    ActionRefused {
        /// The action, `glovebox:<noun>:<verb>`.
        action: String,
        /// The hook that refused it.
        hook: String,
        /// The refusal, as the caller got it.
        reason: String,
        /// The SHA-256 of that hook's component.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        hook_digest: Option<String>,
    },
    /// The session proposed an entry to the memory bank (`memory_propose`,
    /// see [`crate::memory`]); it reaches new sessions only once an
    /// operator approves it.
    MemoryProposed {
        /// The entry (`m-…`).
        id: String,
        /// `project:NAME`, `user:NAME` or `role:ROLE`.
        scope: String,
        text: String,
    },
    /// The session searched the memory bank (`memory_search`): what it
    /// asked and the entries it was shown, best first.
    MemorySearched {
        query: String,
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        found: Vec<String>,
    },
    /// The session's completion gates ran (at `session_end completed`),
    /// each as a call of its own in this log: what each gave.
    GatesChecked {
        passed: bool,
        gates: Vec<GateResult>,
    },
    /// A judge recorded a verdict on this session's handoff.
    VerdictReceived {
        verdict: Verdict,
    },
    /// This judge session recorded a verdict on session `session`'s handoff.
    VerdictGiven {
        session: String,
        verdict: Verdict,
    },
    /// A `[[schedule]]` or `[[trigger]]` run in this session met its
    /// `alert_if`, or failed: its `notify` targets are told (see
    /// [`crate::notify::derive`]).
    ScheduleAlert {
        /// `schedule:<name>` or `trigger:<name>`.
        source: String,
        /// What holds, for a person: ``the alert `count > 0` holds: count = 3``.
        reason: String,
        /// The `[[notify]]` targets it names.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        notify: Vec<String>,
        /// The call whose result it is about.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        call_id: Option<String>,
    },
}

/// A background job nobody waited for when its session ended.
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct UnwaitedJob {
    /// `job-…`.
    pub id: String,
    /// `plugin.tool`.
    pub tool: String,
    /// Its status then: `queued`, `running`, or a final one (its result
    /// never read). A job status's word (the schema says which).
    #[cfg_attr(feature = "schemars", schemars(with = "crate::jobs::JobStatus"))]
    pub status: String,
}

/// The pattern of the annotation kinds: records that remark on a session
/// without steering it. No `Sessions` method is dedicated to them
/// ([`Sessions::append`](super::Sessions::append) takes them), they change
/// no status and any log not archived takes them. One list, for the matches
/// that treat them alike.
macro_rules! annotation_kinds {
    () => {
        $crate::session::EventKind::Note { .. }
            | $crate::session::EventKind::UsageReported { .. }
            | $crate::session::EventKind::BudgetWarning { .. }
            | $crate::session::EventKind::BudgetExceeded { .. }
            | $crate::session::EventKind::CapRaised { .. }
            | $crate::session::EventKind::CeilingWarning { .. }
            | $crate::session::EventKind::CeilingReached { .. }
            | $crate::session::EventKind::BlockerFlag(_)
            | $crate::session::EventKind::Escalation { .. }
            | $crate::session::EventKind::ContextInjected { .. }
            | $crate::session::EventKind::JobsUnwaited { .. }
            | $crate::session::EventKind::ActionRefused { .. }
            | $crate::session::EventKind::MemoryProposed { .. }
            | $crate::session::EventKind::MemorySearched { .. }
            | $crate::session::EventKind::ScheduleAlert { .. }
    };
}
pub(super) use annotation_kinds;

impl EventKind {
    /// The snake_case name used in the log's `type` field.
    pub fn name(&self) -> &'static str {
        match self {
            EventKind::SessionStarted { .. } => "session_started",
            EventKind::Renamed { .. } => "renamed",
            EventKind::Tagged { .. } => "tagged",
            EventKind::Paused { .. } => "paused",
            EventKind::Resumed => "resumed",
            EventKind::Ended { .. } => "ended",
            EventKind::Archived => "archived",
            EventKind::Handoff(_) => "handoff",
            EventKind::HandoffReceived { .. } => "handoff_received",
            EventKind::CallRequested { .. } => "call_requested",
            EventKind::CallDecided { .. } => "call_decided",
            EventKind::CallStarted { .. } => "call_started",
            EventKind::CallFinished { .. } => "call_finished",
            EventKind::CallInterrupted { .. } => "call_interrupted",
            EventKind::Note { .. } => "note",
            EventKind::UsageReported { .. } => "usage_reported",
            EventKind::BudgetWarning { .. } => "budget_warning",
            EventKind::BudgetExceeded { .. } => "budget_exceeded",
            EventKind::CapRaised { .. } => "cap_raised",
            EventKind::CeilingWarning { .. } => "ceiling_warning",
            EventKind::CeilingReached { .. } => "ceiling_reached",
            EventKind::BlockerFlag(_) => "blocker_flag",
            EventKind::Escalation { .. } => "escalation",
            EventKind::ContextInjected { .. } => "context_injected",
            EventKind::JobsUnwaited { .. } => "jobs_unwaited",
            EventKind::ActionRefused { .. } => "action_refused",
            EventKind::MemoryProposed { .. } => "memory_proposed",
            EventKind::MemorySearched { .. } => "memory_searched",
            EventKind::ScheduleAlert { .. } => "schedule_alert",
            EventKind::ChildSpawned { .. } => "child_spawned",
            EventKind::GatesChecked { .. } => "gates_checked",
            EventKind::VerdictReceived { .. } => "verdict_received",
            EventKind::VerdictGiven { .. } => "verdict_given",
        }
    }
}

/// What one call cost, as logged.
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CallMetering {
    pub wall_us: u64,
    /// Fuel consumed, when fuel metering is on for the plugin.
    pub fuel: Option<u64>,
    pub peak_memory_bytes: u64,
    pub bytes_in: u64,
    pub bytes_out: u64,
    /// The tool's estimated cost (its manifest's `cost`) in millionths, for
    /// calls that ran.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub cost_micros: u64,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// Totals over a session's calls, as both its running counters and its end
/// record carry them.
///
/// Flattened into both, fields in this order: an end record already in a
/// log must serialize to the bytes its hash covers, so these fields keep
/// their names and places.
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CallTotals {
    /// Finished and interrupted calls.
    pub calls: u64,
    /// Calls whose outcome was not `ok`, interrupted ones included.
    pub failures: u64,
    pub wall_us_total: u64,
    pub bytes_in: u64,
    pub bytes_out: u64,
    pub fuel_total: u64,
    pub peak_memory_max: u64,
}

impl CallTotals {
    /// Counts a finished call: whether it `failed`, and what it used.
    pub fn count_finished(&mut self, failed: bool, metering: &CallMetering) {
        self.calls += 1;
        self.failures += u64::from(failed);
        self.wall_us_total = self.wall_us_total.saturating_add(metering.wall_us);
        self.bytes_in = self.bytes_in.saturating_add(metering.bytes_in);
        self.bytes_out = self.bytes_out.saturating_add(metering.bytes_out);
        self.fuel_total = self.fuel_total.saturating_add(metering.fuel.unwrap_or(0));
        self.peak_memory_max = self.peak_memory_max.max(metering.peak_memory_bytes);
    }
}

/// The totals a session-end record carries.
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SessionSummary {
    /// From the session's start to its end.
    pub duration_ms: u64,
    #[serde(flatten)]
    pub totals: CallTotals,
    /// Estimated tool cost of the calls that ran, in millionths.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub cost_micros: u64,
    /// Model cost the brain reported, in millionths.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub model_cost_micros: u64,
    #[serde(default, skip_serializing_if = "is_zero")]
    pub tokens_in: u64,
    #[serde(default, skip_serializing_if = "is_zero")]
    pub tokens_out: u64,
}

/// How a session ended.
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EndOutcome {
    /// The work is done.
    Completed,
    /// Stopped before the work was done (a crash, an operator).
    Interrupted,
    /// The agent left without saying the work is done.
    Exit,
}

impl EndOutcome {
    pub const ALL: [EndOutcome; 3] = [
        EndOutcome::Completed,
        EndOutcome::Interrupted,
        EndOutcome::Exit,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            EndOutcome::Completed => "completed",
            EndOutcome::Interrupted => "interrupted",
            EndOutcome::Exit => "exit",
        }
    }
}

glovebox_manifest::named_enum!(EndOutcome, "outcome");

// The part a session plays is a value type of the config (`[budgets.role.<role>]`):
// it lives in `glovebox-manifest` (the bottom crate) and is re-exported here, at its
// old path.
pub use glovebox_manifest::Role;
