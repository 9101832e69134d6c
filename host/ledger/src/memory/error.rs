//! Why a memory bank operation was refused or failed.

use crate::session::SessionError;
use crate::storage::StorageError;

/// Why a memory bank operation was refused or failed. Nothing is written
/// when one is returned.
#[derive(Debug, thiserror::Error)]
pub enum MemoryError {
    /// No entry has that id.
    #[error("{0}")]
    NotFound(String),
    /// A rule of the bank forbids it (a scope that is not the writer's, a
    /// role `[memory.propose]` does not list).
    #[error("{0}")]
    NotAllowed(String),
    /// An argument is not acceptable, or the entry is not in a state for it.
    #[error("{0}")]
    InvalidInput(String),
    #[error(transparent)]
    Session(#[from] SessionError),
    #[error("memory bank storage failed: {0}")]
    Storage(#[from] StorageError),
}

impl MemoryError {
    /// The error's kind, a stable word every surface carries beside the
    /// message (see `SessionError::kind`).
    pub fn kind(&self) -> &'static str {
        match self {
            MemoryError::NotAllowed(_) => "memory_not_allowed",
            MemoryError::NotFound(_) => "memory_not_found",
            MemoryError::InvalidInput(_) => "memory_invalid_input",
            MemoryError::Session(e) => e.kind(),
            MemoryError::Storage(_) => "memory_storage",
        }
    }
}
