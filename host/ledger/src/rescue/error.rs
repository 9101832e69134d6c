//! The errors of rescues and of the context index.

use crate::session::SessionError;
use crate::storage::StorageError;

/// Why a rescue or context index operation failed.
#[derive(Debug, thiserror::Error)]
pub enum RescueError {
    #[error("{0}")]
    NotFound(String),
    /// An argument is not acceptable, or the rescue is not in a state for it.
    #[error("{0}")]
    InvalidInput(String),
    /// The operator's settings do not allow it.
    #[error("{0}")]
    Refused(String),
    #[error(transparent)]
    Session(#[from] SessionError),
    #[error("rescue storage failed: {0}")]
    Storage(#[from] StorageError),
}
