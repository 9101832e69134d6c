//! Background jobs' records: tool calls run in a session without the caller
//! waiting, as the ledger keeps them.
//!
//! Job records live in the storage bucket `jobs` (id → JSON [`JobInfo`]) and
//! are written at every status change ([`JobStore`]). Running jobs is the
//! host's (`glovebox::jobs::Jobs`: one call each through the same pipeline as
//! any other, a FIFO queue, waiting, cancelling, recovery after a restart);
//! it re-exports these types at their old paths (`glovebox::jobs::JobInfo`, ...).

mod places;
mod records;
mod store;

/// Places among the live jobs, shared by the hosts of one store (quotas across nodes).
pub use places::{JobPlaces, Scope as PlaceScope};
pub use records::{
    JobError, JobErrorInfo, JobInfo, JobResult, JobStatus, JobsConfig, WaitMode, WaitOutcome,
};
/// The job records, as the runner writes them (the crash harness writes them too).
pub use store::JobStore;
