//! What the sessions tell the host, after the event is durable: a child
//! that may have settled (the host wakes its `session_wait`s), an approval
//! a session's end denied (the gateway's waiting clients), context a rescue
//! handed over (pushed to the agent's live connections). The host
//! implements them and registers them with the [`Sessions`]; the ledger
//! only calls them.
//!
//! [`Sessions`]: super::Sessions

use crate::approvals::Approval;
use crate::values::ContextEntry;

/// Told when a child session may have settled: it ended, or its parent
/// received a handoff from it. The host wakes its `session_wait`s with it;
/// the ledger only calls it, after the event is durable.
pub trait ChildObserver: std::fmt::Debug + Send + Sync {
    /// Something changed for the children of session `parent`.
    fn changed(&self, parent: &str);
}

/// Told of every approval a session's end (or the orphan sweep) denied.
pub trait ApprovalObserver: std::fmt::Debug + Send + Sync {
    fn settled(&self, approval: &Approval);
}

/// Told of the context a rescue hands over to a session (its
/// `context_injected` events from a `rescue:<id>` source), after the event
/// is durable: the host pushes it to the agent's live connections.
pub trait HandoverObserver: std::fmt::Debug + Send + Sync {
    /// `source` (`rescue:<id>`) handed `entries` to session `session`.
    fn handed_over(&self, session: &str, source: &str, entries: &[ContextEntry]);
}
