//! Sessions: named, tagged units of agent work with a role, a lifecycle and an
//! append-only, hash-chained event log.
//!
//! The log is the source of truth; a session's state is the fold of its events
//! ([`SessionState::apply`]). [`Sessions`] is the service over a [`Storage`]:
//! it checks every event against the lifecycle before appending it, keeps the
//! state of the sessions it has touched in memory (one storage append per
//! event), writes checkpoints so loading a session reads the newest valid
//! checkpoint plus the events after it, and recovers calls the host lost when
//! it stopped.
//!
//! Storage layout: one stream per session (named by its id); buckets
//! `sessions` (id → [`SessionInfo`], for listing), `names` (name → id, for live
//! sessions) and `checkpoints` (`<id>/<seq, 20 digits>`).
//!
//! [`Storage`]: crate::storage::Storage

pub(crate) mod checkpoint;
mod event;
mod handoff;
mod lifecycle;
mod log;
mod ops;
mod recover;
mod state;
mod store;
#[cfg(test)]
mod tests;

pub use event::{
    CallMetering, EndOutcome, Event, EventKind, GENESIS_HASH, MAX_INLINE_BYTES, Role,
    SessionSummary, digest, inline_if_small,
};
pub use handoff::{Handoff, HandoffKind};
pub use lifecycle::{SessionStatus, TRANSITIONS, Transition};
pub use log::{LoadStats, VerifyReport};
pub use ops::{Resumed, SessionFilter, StartSession};
pub use recover::{RecoveredCall, Recovery};
pub use state::{
    Counters, HandoffRecord, InFlightCall, InterruptedCall, SessionInfo, SessionState,
};
pub use store::{Sessions, SessionsConfig};

use crate::storage::StorageError;

/// Why a session operation failed.
#[derive(Debug, thiserror::Error)]
pub enum SessionError {
    /// No session has that id or name.
    #[error(
        "no session with the id or name `{0}`: run `glovebox session list` to see the sessions there are"
    )]
    NotFound(String),
    /// A live session already has the name.
    #[error(
        "the name `{name}` is taken by the live session {holder}: pick another name, or end or archive that session first"
    )]
    NameTaken { name: String, holder: String },
    /// A name, tag or other argument is not acceptable.
    #[error("{0}")]
    InvalidInput(String),
    /// The lifecycle does not allow the action from the session's status.
    #[error("session {session} is {from}: `{action}` would make it {to}, which is not allowed; {}", allowed_text(*.from, .allowed))]
    IllegalTransition {
        session: String,
        action: String,
        from: SessionStatus,
        to: SessionStatus,
        allowed: Vec<Transition>,
    },
    /// The session's log was altered or damaged; it is not resumed.
    #[error(
        "session {session} will not resume: its log was altered at event {seq}: {reason}; run `glovebox log verify` to see the damage and restore the data dir from a backup"
    )]
    Tampered {
        session: String,
        seq: u64,
        reason: String,
    },
    /// The handoff does not fit the session (its role, its target).
    #[error("bad handoff from session {session}: {reason}")]
    BadHandoff { session: String, reason: String },
    /// The event does not fit the session's state (an unknown call id, a closed log).
    #[error("cannot log this in session {session}: {reason}")]
    InvalidEvent { session: String, reason: String },
    /// The storage failed; nothing of the operation was acknowledged.
    #[error("session storage failed: {0}")]
    Storage(#[from] StorageError),
}

fn allowed_text(from: SessionStatus, allowed: &[Transition]) -> String {
    if allowed.is_empty() {
        return format!("{from} is final: start a new session");
    }
    let list = allowed
        .iter()
        .map(|t| t.to_string())
        .collect::<Vec<_>>()
        .join(", ");
    format!("from {from} the allowed transitions are: {list}")
}
