//! Sessions: named, tagged units of agent work with a role, a lifecycle and an
//! append-only, hash-chained event log.
//!
//! The chain is plain SHA-256, or HMAC-SHA256 under a key kept outside the
//! data dir, per session (see `chain.rs`); it is computed here, above the
//! [`Storage`] trait, so every backend stores the same sealed bytes.
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
//! `sessions` (id → [`SessionInfo`], the record that confirms every index
//! entry), the indexes of `index.rs` (by start, by owner, live, by name),
//! `session_names` (`<owner>/<name>` → id, for live sessions: `names.rs`),
//! `checkpoints` (`<id>/<seq, 20 digits>`) and, on a store several hosts
//! share, `leases` (id → which host drives the session: `lease.rs`).
//!
//! Inside, the files depend one way, so each can be read with only what is
//! below it: the records at the bottom (the events and their kinds, the
//! state and its fold, the chain, checkpoints and log reads, the config,
//! the leases' records, the slots, the observers the host implements),
//! [`Sessions`] itself (`store.rs`: the service and its batch append) above
//! them, and the operations, each an `impl Sessions` or `impl SessionScope`
//! block of its own file (indexes, names, records, leasing, room, start,
//! ops, recovery, listing, the caller's scope in `access.rs`, families,
//! verdicts, closing) above it, importing downward only. A type or helper
//! two operations share goes down to the lowest file that needs it, never
//! up into an operation's file.
//!
//! [`Storage`]: crate::storage::Storage

mod access;
pub mod actor;
mod brood;
mod chain;
pub mod checkpoint;
mod children;
mod closing;
mod completion;
mod config;
mod error;
mod event;
mod family;
mod fold;
mod gate;
mod growth;
mod handoff;
mod index;
mod info;
mod kind;
mod lease;
mod leasing;
mod lifecycle;
mod listing;
mod log;
mod names;
mod observers;
mod ops;
mod owed;
mod quota;
mod recover;
mod room;
mod slots;
mod start;
mod state;
mod store;
#[cfg(test)]
pub(crate) mod tests;
mod verdict;
mod verify;
pub(crate) mod watch;

pub use access::{SessionScope, check_ceiling, check_may_lift, may_touch};
pub use brood::{OutsideFamily, RECENT_CHILDREN, check_addressable};
pub use chain::{Chain, ChainKey, ChainKeyError, KeyedChain, MIN_KEY_BYTES};
pub use children::ChildStatus;
pub use closing::denial_note;
pub use completion::{CompletionState, GatesRun};
pub use config::{DiskRoom, NoRoom, SessionDirs, SessionsConfig};
pub use error::SessionError;
pub use event::{
    BadEvent, Event, GENESIS_HASH, MAX_ERROR_BYTES, MAX_INLINE_BYTES, bounded, bounded_error,
    digest, inline_if_small,
};
pub use family::{CarveError, SpawnChild, Spawned, WAIT_DEFAULT, WAIT_MAX, carve};
pub use gate::{GateResult, MAX_GATE_DETAIL, Verdict};
pub use handoff::{Handoff, HandoffKind, HandoffNotes, HandoffRefused};
pub use kind::{
    CallMetering, CallTotals, EndOutcome, EventKind, Flag, Role, SessionSummary, UnwaitedJob,
};
pub use lease::{Lease, LeaseConfig};
pub use lifecycle::{SessionStatus, TRANSITIONS, Transition};
pub use listing::LOOK_AT_MOST;
pub use log::LoadStats;
pub use observers::{ApprovalObserver, ChildObserver, HandoverObserver};
pub use ops::{Resumed, SessionFilter};
pub use recover::{RecoveredCall, Recovery};
pub use start::StartSession;
pub use state::{
    Carved, ChildLink, Counters, HandoffRecord, InFlightCall, InterruptedCall, SessionHeader,
    SessionInfo, SessionState, Written,
};
pub use store::{Commit, Sessions};
pub use verdict::{Judged, VerdictInput};
pub use verify::{ExportKeyError, VerifyReport, verify_export};
