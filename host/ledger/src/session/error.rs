//! Why a session operation failed.

use super::lifecycle::{SessionStatus, Transition};
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
    #[error("session {session} is {from}: `{action}` would make it {to}, which is not allowed; {}{}", allowed_text(*.from, .allowed), .waiting.as_deref().map(|w| format!(" ({w})")).unwrap_or_default())]
    IllegalTransition {
        session: String,
        action: String,
        from: SessionStatus,
        to: SessionStatus,
        allowed: Vec<Transition>,
        /// What waits for the agent there, when something does (a rescue's
        /// handover its resume returns).
        waiting: Option<String>,
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
    /// The session's log is keyed (see `chain.rs`) and its chain key is not
    /// the configured one: it is neither read nor written, never taken for
    /// plain. The message names the key file to set.
    #[error("{0}")]
    KeyRequired(String),
    /// The handoff does not fit the session (its role, its target).
    #[error("bad handoff from session {session}: {reason}")]
    BadHandoff { session: String, reason: String },
    /// The event does not fit the session's state (an unknown call id, a closed log).
    #[error("cannot log this in session {session}: {reason}")]
    InvalidEvent { session: String, reason: String },
    /// The caller's principal may not do this: the message says what was
    /// refused, why, and who can do it (never whose session it is).
    #[error("{0}")]
    NotAllowed(String),
    /// A `[quotas]` bound would be passed; nothing was written. The
    /// message names the quota, its value, its key and who set it.
    #[error("quota reached: {what} ({limit}); {fix}")]
    Quota {
        limit: crate::manifest::QuotaLimit,
        what: String,
        fix: String,
    },
    /// A spend ceiling across sessions (`[budgets.principal|project|role.NAME.day|week|month]`)
    /// is reached: no new session of its scope starts. The message names
    /// the ceiling, its key, the figures, when the period ends and the fix.
    #[error("{0}")]
    Ceiling(String),
    /// The data dir's disk is nearly full (`storage.min_free`): new work is
    /// refused, nothing was written.
    #[error("{0}")]
    LowDisk(super::config::NoRoom),
    /// `completed` refused: the session's completion condition does not
    /// hold (a gate failed, no judge passed its handoff).
    #[error("{0}")]
    Incomplete(String),
    /// Another host drives the session (it holds its lease, see
    /// `lease.rs`): nothing was written. The message names the node, its
    /// address when it advertises one, and how long until the lease expires.
    #[error(
        "session {session} is driven by node `{node}`{} until its lease expires: send the call there, or wait {} s (the lease expires then unless that node renews it)",
        .addr.as_ref().map(|a| format!(" ({a})")).unwrap_or_default(),
        .wait_ms.div_ceil(1000)
    )]
    Leased {
        session: String,
        node: String,
        addr: Option<String>,
        wait_ms: u64,
    },
    /// The storage failed; nothing of the operation was acknowledged.
    #[error("session storage failed: {0}")]
    Storage(#[from] StorageError),
}

impl SessionError {
    /// The error's kind: a stable word every surface carries beside the
    /// message (an MCP tool error's `error.kind`, the HTTP API's, an
    /// operation's), so a client can branch on it without reading text.
    pub fn kind(&self) -> &'static str {
        match self {
            SessionError::NotFound(_) => "session_not_found",
            SessionError::NameTaken { .. } => "session_name_taken",
            SessionError::InvalidInput(_) => "session_invalid_input",
            SessionError::IllegalTransition { .. } => "session_illegal_transition",
            SessionError::Tampered { .. } => "session_tampered",
            SessionError::KeyRequired(_) => "session_key_required",
            SessionError::BadHandoff { .. } => "bad_handoff",
            SessionError::InvalidEvent { .. } => "session_invalid_event",
            SessionError::NotAllowed(_) => "not_allowed",
            SessionError::Quota { .. } => "quota",
            SessionError::Ceiling(_) => "ceiling",
            SessionError::LowDisk(_) => "low_disk",
            SessionError::Incomplete(_) => "not_complete",
            SessionError::Leased { .. } => "session_leased",
            SessionError::Storage(_) => "session_storage",
        }
    }
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
