//! Background jobs' records: tool calls run in a session without the caller
//! waiting, as the ledger keeps them.
//!
//! A job is kept in parts, so that nothing that lists, recovers or sweeps
//! jobs reads more than it is about (threat 49):
//!
//! - its record in bucket `jobs` (id → JSON [`JobSummary`]): everything but
//!   its bodies, with their sizes and SHA-256; written at every status
//!   change ([`JobStore`]);
//! - its bodies in bucket `job_data` (`data.rs`): the input and the whole
//!   result, read by `job_status` and `job_wait` only ([`JobInfo`]);
//! - its index entries in bucket `job_index` (`index.rs`): by creation, by
//!   session, by the session's owner, live, final by status, latest ended;
//!   listings answer a page at a time through them (`list.rs`), the
//!   recovery at start reads the live ones, the retention sweep the oldest
//!   (`sweep.rs`);
//! - the bytes of an agent's bodies, counted in bucket `job_bytes` against
//!   `quotas.job_bytes_per_principal` (`bytes.rs`).
//!
//! Running jobs is the host's (`glovebox::jobs::Jobs`: one call each through
//! the same pipeline as any other, a FIFO queue, waiting, cancelling,
//! recovery after a restart); it re-exports these types at their old paths
//! (`glovebox::jobs::JobInfo`, ...).

mod bytes;
mod data;
mod fields;
mod index;
mod list;
mod places;
mod records;
#[cfg(all(test, feature = "schemars"))]
mod schemas;
mod store;
mod summary;
mod sweep;
#[cfg(test)]
mod tests;

pub use list::{JobQuery, SCAN_BUDGET};
/// Places among the live jobs, shared by the hosts of one store (quotas across nodes).
pub use places::{JobPlaces, Scope as PlaceScope};
pub use records::{
    JobError, JobErrorInfo, JobInfo, JobResult, JobStatus, JobsConfig, WaitMode, WaitOutcome,
};
/// The job records, as the runner writes them (the crash harness writes them too).
pub use store::{JobStore, StagedResult};
pub use summary::{JobSummary, Kept, ResultSummary, SUMMARY_ERROR_BYTES};
