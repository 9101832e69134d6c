//! `jobs.show`: one background job, with its result once it ended.

use schemars::JsonSchema;
use serde::Deserialize;

use super::sizes::ID_MAX;
use super::{Audience, Operation, OperationError, Route, job_runner};
use crate::jobs::JobInfo;
use crate::scope::Scope;

pub struct ShowJob;

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ShowJobArgs {
    /// The job id (`job_spawn` returns it).
    #[schemars(length(max = ID_MAX))]
    pub id: String,
}

impl Operation for ShowJob {
    const NAME: &'static str = "jobs.show";
    const SUMMARY: &'static str =
        "A job's status and, once it ended, its result: output, captured logs, error and metering.";
    const DESCRIPTION: &'static str = "A job of a session the caller may not see is not found. An agent's look at an ended job marks its result as read; an operator's does not.";
    const AUDIENCE: Audience = Audience::Anyone;
    const HTTP: Option<Route> = Some(Route::get("/jobs/{id}"));
    const MCP: Option<&'static str> = Some("job_status");
    type Args = ShowJobArgs;
    type Output = JobInfo;

    async fn run(scope: Scope<'_>, args: ShowJobArgs) -> Result<JobInfo, OperationError> {
        Ok(job_runner::<Self>(scope)?.show(&args.id).await?)
    }
}
