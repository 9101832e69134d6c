//! `jobs.wait`: waits for background jobs to end, up to a timeout.

use std::time::Duration;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::sizes::{ID_MAX, JOB_WAIT_MAX_MS};
use super::{Audience, Operation, OperationError, Route, job_runner};
use crate::jobs::{WaitMode, WaitOutcome};
use crate::manifest::MAX_WAIT_IDS;
use crate::scope::Scope;

pub struct WaitJobs;

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct WaitJobsArgs {
    /// The job ids (`job_spawn` returns them).
    #[schemars(length(min = 1, max = MAX_WAIT_IDS), inner(length(max = ID_MAX)))]
    pub ids: Vec<String>,
    /// Every job, or the first to end.
    #[serde(default)]
    pub mode: WaitFor,
    /// How long to wait, in milliseconds (the configured default when
    /// absent; an hour at most).
    #[schemars(range(max = JOB_WAIT_MAX_MS))]
    pub timeout_ms: Option<u64>,
}

/// What a wait waits for: every job, or the first to end. (Serialize: the
/// schema states its default.)
#[derive(Clone, Copy, Debug, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum WaitFor {
    #[default]
    All,
    First,
}

impl Operation for WaitJobs {
    const NAME: &'static str = "jobs.wait";
    const SUMMARY: &'static str = "Wait for jobs: all of them, or the first to finish, up to a timeout (the configured default when absent; never forever).";
    const DESCRIPTION: &'static str = "Returns the jobs that ended (`done`, each with its result, now read), those that have not ended (`pending`: queued, running, or awaiting an approval, which an approval settles), and whether the wait ended at its timeout (`timed_out`). A job of a session the caller may not see is not found.";
    const AUDIENCE: Audience = Audience::Anyone;
    const HTTP: Option<Route> = Some(Route::post("/jobs/wait"));
    const MCP: Option<&'static str> = Some("job_wait");
    type Args = WaitJobsArgs;
    type Output = WaitOutcome;

    async fn run(scope: Scope<'_>, args: WaitJobsArgs) -> Result<WaitOutcome, OperationError> {
        let mode = match args.mode {
            WaitFor::All => WaitMode::All,
            WaitFor::First => WaitMode::First,
        };
        let timeout = args.timeout_ms.map(Duration::from_millis);
        Ok(job_runner::<Self>(scope)?
            .wait(&args.ids, mode, timeout)
            .await?)
    }
}
