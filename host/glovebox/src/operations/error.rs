//! Why an operation failed: one type for every operation and every surface.
//! It carries a stable `kind` (a word a client branches on: the same words
//! an MCP tool error carries), the message (which names the culprit and the
//! fix), and its [`ErrorClass`], from which each surface derives its own
//! signal (an HTTP status, an exit code) in one place of its own.

use serde::{Deserialize, Serialize};

use crate::jobs::JobError;
use crate::memory::MemoryError;
use crate::rescue::RescueError;
use crate::scope::MergeError;
use crate::scratch::ReadError;
use crate::session::SessionError;
use crate::workspaces::WorkspaceError;

/// What sort of failure it is, for the surfaces that answer with a number.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ErrorClass {
    /// Bad arguments: the request is wrong; sent again unchanged it fails again.
    Invalid,
    /// No such thing, or not the caller's (the same answer).
    NotFound,
    /// The caller may not do this.
    NotAllowed,
    /// It conflicts with what is there now (a name taken, a session ended).
    Conflict,
    /// A quota or a ceiling is reached.
    Limited,
    /// Not now: the disk is low, another node holds the session.
    Unavailable,
    /// The host failed (the storage, a damaged log).
    Failed,
}

/// Why an operation failed (see the module docs).
#[derive(
    Clone, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema, thiserror::Error,
)]
#[error("{message}")]
pub struct OperationError {
    pub class: ErrorClass,
    /// A stable word for the failure (`session_not_found`, `invalid_arguments`).
    pub kind: String,
    /// What went wrong, naming the culprit and the fix.
    pub message: String,
}

impl OperationError {
    pub fn new(class: ErrorClass, kind: &str, message: impl Into<String>) -> OperationError {
        OperationError {
            class,
            kind: kind.to_string(),
            message: message.into(),
        }
    }

    /// Arguments that do not fit the operation.
    pub fn invalid(message: impl Into<String>) -> OperationError {
        OperationError::new(ErrorClass::Invalid, "invalid_arguments", message)
    }

    /// A record that is not there, or not the caller's.
    pub fn not_found(kind: &str, message: impl Into<String>) -> OperationError {
        OperationError::new(ErrorClass::NotFound, kind, message)
    }

    /// The caller may not run it.
    pub fn not_allowed(message: impl Into<String>) -> OperationError {
        OperationError::new(ErrorClass::NotAllowed, "not_allowed", message)
    }

    /// `Err` with `why` when `text` is blank: a reason someone reads.
    pub(super) fn unless_given(text: &str, why: &str) -> Result<(), OperationError> {
        match text.trim().is_empty() {
            true => Err(OperationError::invalid(why)),
            false => Ok(()),
        }
    }

    /// The host failed.
    pub fn failed(message: impl Into<String>) -> OperationError {
        OperationError::new(ErrorClass::Failed, "internal", message)
    }
}

/// The class of a session operation's refusal.
fn session_class(e: &SessionError) -> ErrorClass {
    match e {
        SessionError::NotFound(_) => ErrorClass::NotFound,
        SessionError::InvalidInput(_)
        | SessionError::BadHandoff { .. }
        | SessionError::InvalidEvent { .. } => ErrorClass::Invalid,
        SessionError::NameTaken { .. }
        | SessionError::IllegalTransition { .. }
        | SessionError::Incomplete(_) => ErrorClass::Conflict,
        SessionError::NotAllowed(_) => ErrorClass::NotAllowed,
        SessionError::Quota { .. } | SessionError::Ceiling(_) => ErrorClass::Limited,
        SessionError::LowDisk(_) | SessionError::Leased { .. } => ErrorClass::Unavailable,
        SessionError::Tampered { .. } | SessionError::KeyRequired(_) | SessionError::Storage(_) => {
            ErrorClass::Failed
        }
    }
}

impl From<SessionError> for OperationError {
    fn from(e: SessionError) -> OperationError {
        OperationError::new(session_class(&e), e.kind(), e.to_string())
    }
}

impl From<JobError> for OperationError {
    fn from(e: JobError) -> OperationError {
        let message = e.to_string();
        let (class, kind) = match e {
            JobError::Session(s) => return OperationError::from(s),
            JobError::BadRequest(_) => (ErrorClass::Invalid, "job_refused"),
            JobError::NotFound(_) => (ErrorClass::NotFound, "job_not_found"),
            JobError::Storage(_) => (ErrorClass::Failed, "job_storage"),
        };
        OperationError::new(class, kind, message)
    }
}

impl From<MemoryError> for OperationError {
    fn from(e: MemoryError) -> OperationError {
        let class = match &e {
            MemoryError::NotFound(_) => ErrorClass::NotFound,
            MemoryError::NotAllowed(_) => ErrorClass::NotAllowed,
            MemoryError::InvalidInput(_) => ErrorClass::Invalid,
            MemoryError::Session(s) => session_class(s),
            MemoryError::Storage(_) => ErrorClass::Failed,
        };
        OperationError::new(class, e.kind(), e.to_string())
    }
}

impl From<ReadError> for OperationError {
    fn from(e: ReadError) -> OperationError {
        let (class, kind) = match &e {
            ReadError::BadPath { .. } | ReadError::IsDir { .. } | ReadError::NotDir { .. } => {
                (ErrorClass::Invalid, "bad_path")
            }
            ReadError::NotFound { .. } => (ErrorClass::NotFound, "file_not_found"),
            ReadError::Outside { .. } => (ErrorClass::NotAllowed, "outside_scratch"),
            ReadError::Io { .. } => (ErrorClass::Failed, "scratch_io"),
        };
        OperationError::new(class, kind, e.to_string())
    }
}

impl From<RescueError> for OperationError {
    /// A rescue's own refusals keep kinds of their own (`rescue_…`): the
    /// command line exits on them as it always did (`Exit::of_rescue`).
    fn from(e: RescueError) -> OperationError {
        let message = e.to_string();
        let (class, kind) = match e {
            RescueError::Session(s) => return OperationError::from(s),
            RescueError::NotFound(_) => (ErrorClass::NotFound, "rescue_not_found"),
            RescueError::InvalidInput(_) => (ErrorClass::Invalid, "rescue_invalid_input"),
            RescueError::Refused(_) => (ErrorClass::NotAllowed, "rescue_refused"),
            RescueError::Storage(_) => (ErrorClass::Failed, "rescue_storage"),
        };
        OperationError::new(class, kind, message)
    }
}

impl From<WorkspaceError> for OperationError {
    /// A worktree's refusals: none there, work not committed or a checkout
    /// in the way, a merge that conflicts (its paths in the message), git
    /// failing.
    fn from(e: WorkspaceError) -> OperationError {
        let (class, kind) = match &e {
            WorkspaceError::NoTree { .. } => (ErrorClass::NotFound, "workspace_not_found"),
            WorkspaceError::Uncommitted { .. } | WorkspaceError::BaseDirty { .. } => {
                (ErrorClass::Conflict, "workspace_not_clean")
            }
            WorkspaceError::Conflict { .. } => (ErrorClass::Conflict, "merge_conflict"),
            WorkspaceError::Git { .. } => (ErrorClass::Failed, "workspace_git"),
        };
        OperationError::new(class, kind, e.to_string())
    }
}

impl From<MergeError> for OperationError {
    fn from(e: MergeError) -> OperationError {
        match e {
            MergeError::Session(s) => OperationError::from(s),
            MergeError::Workspace(w) => OperationError::from(w),
        }
    }
}
