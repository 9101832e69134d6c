//! What a guest wrote to one stream (stdout or stderr), bounded: a value type
//! shared by the crates above. The runtime produces it (its sandbox keeps the
//! first bytes and counts the rest), the ledger records it (a background job's
//! result), the host reports it. It lives in this bottom crate so the ledger
//! can keep it without depending on the runtime; `glovebox_runtime::Captured`
//! re-exports it at its old path.

use serde::{Deserialize, Serialize};

/// What a guest wrote to one stream, bounded.
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Captured {
    /// The first bytes written, up to the limit (lossy UTF-8).
    pub text: String,
    /// Total bytes the guest wrote, kept or not.
    pub total_bytes: u64,
    /// True when more was written than kept.
    pub truncated: bool,
}
