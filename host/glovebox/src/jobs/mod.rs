//! Background jobs: tool calls run in a session without the caller waiting.
//!
//! A job is one call through the same pipeline as any other
//! (`in_session::host_call`: hooks, sandbox, log; its `call_requested`
//! carries the job id). A caller spawns one through its scope
//! ([`Jobs::scope`], [`crate::JobScope::spawn`]), which checks the request and
//! the session, persists the job as `queued` and returns at once; a task per job, admitted in FIFO order by
//! a limit of `max_running`, runs it on the multi-threaded runtime, so
//! CPU-bound jobs use every core. Callers wait on jobs (all or the first) with
//! a timeout that is never infinite, cancel them, and list them.
//!
//! Job records live in the storage bucket `jobs` (id → JSON [`JobSummary`],
//! the bodies apart, indexes beside: see `glovebox_ledger::jobs`) and are
//! written at every status change. When a host starts, [`Jobs::recover`]
//! reads the live jobs' index, runs the queued jobs again and turns the ones that were running into
//! `interrupted`, re-queuing them only if their tool is idempotent.
//!
//! One process holds a data dir at a time, so a job is run by the process
//! that holds the store: [`crate::JobScope::enqueue`] only persists a job (the CLI's
//! `job spawn`), and whichever process next runs [`Jobs::recover`] (`glovebox
//! job wait`, the MCP server) runs it.
//!
//! The job types and the records are the ledger's (`glovebox_ledger::jobs`),
//! re-exported here; this module is the runner, which needs the host.

pub(crate) mod runner;

pub use glovebox_ledger::jobs::{
    JobError, JobErrorInfo, JobInfo, JobQuery, JobResult, JobStatus, JobStore, JobSummary,
    JobsConfig, ResultSummary, WaitMode, WaitOutcome,
};
pub use runner::Jobs;
