//! What an event of each kind does to a session's log, for the three
//! limits on what actors write: the disk watermark (`room.rs`), the log's
//! quotas (`quota.rs`) and the principal's daily counts (`store.rs`).
//!
//! Why one list: each limit refuses new content and lets through whatever
//! settles work already admitted, and they differ only in which new
//! content they hold (the watermark leaves calls to the pipeline, which
//! checks it before a call is recorded; the log's quotas check receipts
//! and openings on the log they land in first; the daily counts hold new
//! work, not reports). Kept as three lists, a new kind of event had to
//! choose three times, and could choose differently by accident. Every
//! kind is in one class here (the match is exhaustive), and each limit
//! names the classes it holds. The kinds that let a whole batch through
//! the watermark and the log's quotas ([`settles`]) and the classes the
//! daily counts refuse ([`starts_work`]) are said here too, beside the list.

use super::kind::EventKind;

/// The class of an event kind (see the module docs).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Growth {
    /// A new session, or a child's record in its parent: new work that
    /// starts elsewhere.
    Opening,
    /// A tool call asked for.
    Call,
    /// New work an actor writes in the session: a note, a handoff, a
    /// memory proposal or search, a name, tags.
    Work,
    /// A report of work done: usage, a verdict received.
    Report,
    /// The record of a write made from another session (a handoff's
    /// receipt, a verdict's copy) or handed at a start (context).
    Receipt,
    /// What follows a call already admitted, and what closes, pauses,
    /// flags or settles: never refused.
    Follows,
}

/// The class of `kind`.
pub(super) fn growth(kind: &EventKind) -> Growth {
    match kind {
        EventKind::SessionStarted { .. } | EventKind::ChildSpawned { .. } => Growth::Opening,
        EventKind::CallRequested { .. } => Growth::Call,
        EventKind::Note { .. }
        | EventKind::Handoff(_)
        | EventKind::MemoryProposed { .. }
        | EventKind::MemorySearched { .. }
        | EventKind::Renamed { .. }
        | EventKind::Tagged { .. } => Growth::Work,
        EventKind::UsageReported { .. } | EventKind::VerdictReceived { .. } => Growth::Report,
        EventKind::HandoffReceived { .. }
        | EventKind::VerdictGiven { .. }
        | EventKind::ContextInjected { .. } => Growth::Receipt,
        EventKind::CallDecided { .. }
        | EventKind::CallStarted { .. }
        | EventKind::CallFinished { .. }
        | EventKind::CallInterrupted { .. }
        | EventKind::Paused { .. }
        | EventKind::Resumed
        | EventKind::Ended { .. }
        | EventKind::Archived
        | EventKind::BudgetWarning { .. }
        | EventKind::BudgetExceeded { .. }
        | EventKind::CapRaised { .. }
        | EventKind::CeilingWarning { .. }
        | EventKind::CeilingReached { .. }
        | EventKind::BlockerFlag(_)
        | EventKind::Escalation { .. }
        | EventKind::JobsUnwaited { .. }
        | EventKind::ActionRefused { .. }
        | EventKind::GatesChecked { .. }
        | EventKind::ScheduleAlert { .. } => Growth::Follows,
    }
}

/// Whether `kind` closes a session or lifts its pause: a batch with one
/// goes through whatever else it carries (the notes of the approvals a
/// session's end, or an operator's denial, settles).
pub(super) fn settles(kind: &EventKind) -> bool {
    matches!(
        kind,
        EventKind::Ended { .. } | EventKind::Archived | EventKind::Resumed
    )
}

/// Whether an event starts new work of its session's agent (a call, a note,
/// a handoff, a proposal, a child, ...): the kinds the per-principal daily
/// quotas refuse. What finishes or stops work already admitted (a call's
/// outcome, a pause, an end, the host's and operators' records) is counted,
/// never refused, so nothing acknowledged is lost to a quota.
pub(super) fn starts_work(kind: &EventKind) -> bool {
    matches!(growth(kind), Growth::Opening | Growth::Call | Growth::Work)
}
