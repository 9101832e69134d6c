//! `jobs.cancel`: stops a queued or running background job.

use schemars::JsonSchema;
use serde::Deserialize;

use super::sizes::ID_MAX;
use super::{Audience, Operation, OperationError, Route, job_runner};
use crate::jobs::JobInfo;
use crate::scope::Scope;

pub struct CancelJob;

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CancelJobArgs {
    /// The job id (`job_spawn` returns it).
    #[schemars(length(max = ID_MAX))]
    pub id: String,
}

impl Operation for CancelJob {
    const NAME: &'static str = "jobs.cancel";
    const SUMMARY: &'static str = "Cancel a job that has not ended.";
    const DESCRIPTION: &'static str = "A queued job never runs; a running one is stopped and recorded as cancelled; one awaiting an approval is cancelled and its approval denied, so its call never runs; an ended one is returned as it is. A job of a session the caller may not see is not found.";
    const AUDIENCE: Audience = Audience::Anyone;
    const HTTP: Option<Route> = Some(Route::post("/jobs/{id}/cancel"));
    const MCP: Option<&'static str> = Some("job_cancel");
    type Args = CancelJobArgs;
    type Output = JobInfo;

    async fn run(scope: Scope<'_>, args: CancelJobArgs) -> Result<JobInfo, OperationError> {
        Ok(job_runner::<Self>(scope)?.cancel(&args.id).await?)
    }
}
