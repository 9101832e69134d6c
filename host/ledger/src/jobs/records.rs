//! A background job as the ledger keeps it: how jobs are run, where one
//! stands, what its call produced, its stored record, and why a job operation
//! failed.

use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::fields::job_struct;
use crate::manifest::Captured;
use crate::session::{CallMetering, SessionError};
use crate::storage::StorageError;

/// How the host's jobs service (`glovebox::jobs::Jobs`) runs jobs.
#[derive(Clone, Debug)]
pub struct JobsConfig {
    /// Jobs running at once; the others wait in a FIFO queue. Capped at the
    /// host's `runtime.max_concurrent_calls`. Default: the available cores.
    pub max_running: usize,
    /// How long a wait without a timeout waits.
    pub default_wait: Duration,
    /// The longest any wait waits, whatever the caller asks.
    pub max_wait: Duration,
}

impl Default for JobsConfig {
    fn default() -> Self {
        JobsConfig {
            max_running: std::thread::available_parallelism()
                .map(|n| n.get())
                .unwrap_or(2),
            default_wait: Duration::from_secs(30),
            max_wait: Duration::from_secs(600),
        }
    }
}

/// Where a job stands.
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum JobStatus {
    /// Persisted, waiting for a runner and a free slot.
    Queued,
    Running,
    /// The tool returned a result.
    Completed,
    /// Denied, refused by the session, or the tool failed.
    Failed,
    /// Stopped at the tool's deadline.
    Timeout,
    Cancelled,
    /// The host stopped while it ran, and its tool is not idempotent: it is
    /// not re-run (it may have had effects); the caller decides.
    Interrupted,
    /// A permission hook sent its call to a human: it waits for the
    /// approval its record names (`approval`), holding no run slot, and
    /// takes the approved call's result once it is approved (by whoever
    /// settles it: an operator, or its client), or fails when it is denied
    /// or expires. Not final.
    AwaitingApproval,
}

impl JobStatus {
    pub const ALL: [JobStatus; 8] = [
        JobStatus::Queued,
        JobStatus::Running,
        JobStatus::Completed,
        JobStatus::Failed,
        JobStatus::Timeout,
        JobStatus::Cancelled,
        JobStatus::Interrupted,
        JobStatus::AwaitingApproval,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            JobStatus::Queued => "queued",
            JobStatus::Running => "running",
            JobStatus::Completed => "completed",
            JobStatus::Failed => "failed",
            JobStatus::Timeout => "timeout",
            JobStatus::Cancelled => "cancelled",
            JobStatus::Interrupted => "interrupted",
            JobStatus::AwaitingApproval => "awaiting_approval",
        }
    }

    /// The job will not change any more.
    pub fn is_final(self) -> bool {
        !matches!(
            self,
            JobStatus::Queued | JobStatus::Running | JobStatus::AwaitingApproval
        )
    }
}

glovebox_manifest::named_enum!(JobStatus, "job status");

/// Why a job did not produce a result.
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct JobErrorInfo {
    /// How the call failed (the runtime's `CallError::kind`: `timeout`,
    /// `denied`, ...), or `session` when the session refused the call, or
    /// `interrupted`.
    pub kind: String,
    pub message: String,
}

/// What a job's call produced.
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct JobResult {
    pub output: Option<serde_json::Value>,
    pub error: Option<JobErrorInfo>,
    pub stdout: Captured,
    pub stderr: Captured,
    pub metering: CallMetering,
}

job_struct! {
    /// A job with its bodies (input and whole result), as `job_status` and
    /// `job_wait` answer it. The store keeps it in two parts: its record
    /// ([`super::JobSummary`]) and its bodies apart.
    #[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
    #[derive(Clone, Debug, Serialize, Deserialize)]
    pub struct JobInfo {
        after tool {
            /// The input, as JSON text.
            pub input: String,
        }
        after attempts {
            /// Set once final; a job re-queued after an interruption carries the
            /// interruption here until it runs again.
            pub result: Option<JobResult>,
        }
    }
}

#[cfg(test)]
impl JobInfo {
    /// A job `id` in `status`, of session `s1`, for tests.
    pub(crate) fn for_test(id: &str, status: JobStatus) -> JobInfo {
        JobInfo {
            status,
            ..JobInfo::queued(id, "s1", "t", "{}", true, 1)
        }
    }
}

impl JobInfo {
    /// A new queued job `id` of session `session` (its id): a call to `tool`
    /// with `input` (JSON text), created at `created_at_ms`, never started.
    /// Nothing else is known yet (no session name, no principal, reads not
    /// tracked): set what is.
    pub fn queued(
        id: impl Into<String>,
        session: impl Into<String>,
        tool: impl Into<String>,
        input: impl Into<String>,
        idempotent: bool,
        created_at_ms: u64,
    ) -> JobInfo {
        JobInfo {
            id: id.into(),
            session: session.into(),
            session_name: None,
            tool: tool.into(),
            input: input.into(),
            status: JobStatus::Queued,
            created_at_ms,
            started_at_ms: None,
            finished_at_ms: None,
            idempotent,
            attempts: 0,
            result: None,
            by: None,
            result_read: None,
            runner: None,
            owner: None,
            charged_to: None,
            approval: None,
        }
    }

    /// Nobody waited for it: it is still queued or running, or its result
    /// was never read.
    pub fn unwaited(&self) -> bool {
        !self.status.is_final() || self.result_read == Some(false)
    }
}

/// What a wait waits for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WaitMode {
    /// Every job to be final.
    All,
    /// Any one job to be final.
    First,
}

/// What a wait found: the final jobs, the others, and whether the wait ended
/// at its timeout.
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct WaitOutcome {
    pub done: Vec<JobInfo>,
    pub pending: Vec<JobInfo>,
    pub timed_out: bool,
}

/// Why a job operation failed.
#[derive(Debug, thiserror::Error)]
pub enum JobError {
    #[error("no job `{0}`: `glovebox job list` lists the jobs")]
    NotFound(String),
    /// The session does not exist (or refused).
    #[error(transparent)]
    Session(#[from] SessionError),
    /// An unknown tool, input that is not JSON, fails the tool's schema or is
    /// too large: refused before anything was queued or logged.
    #[error("{0}")]
    BadRequest(String),
    #[error("job storage failed: {0}")]
    Storage(#[from] StorageError),
}
