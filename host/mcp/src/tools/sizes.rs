//! The limits the built-ins' schemas declare (and `limits.rs` checks first):
//! those every surface shares are the operations' (`glovebox::operations::sizes`).

pub(crate) use glovebox::operations::sizes::*;

/// The longest duration written in words (`"45m"`, `"2h 30m"`).
pub(crate) const DURATION_MAX: usize = 64;
/// The longest objective of a handoff or a child's task (the rest of a
/// handoff is held by `quotas.handoff_bytes` and `handoff_items`).
pub(crate) const OBJECTIVE_MAX: usize = TEXT_MAX;
