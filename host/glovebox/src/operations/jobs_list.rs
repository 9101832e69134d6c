//! `jobs.list`: the background jobs of the caller's sessions, a page at a
//! time, with their inputs' and outputs' sizes and SHA-256, not their text.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::sizes::{CURSOR_MAX, SESSION_REF_MAX};
use super::{Audience, Operation, OperationError, Route, job_runner, page_request};
use crate::jobs::{JobStatus, JobSummary};
use crate::page::MAX_PAGE;
use crate::scope::Scope;

pub struct ListJobs;

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ListJobsArgs {
    /// Session id or name.
    #[schemars(length(max = SESSION_REF_MAX))]
    pub session: Option<String>,
    #[serde(default)]
    #[schemars(schema_with = "job_statuses")]
    pub status: Option<JobStatus>,
    /// Jobs in this page: 100 when absent, 500 at most.
    #[schemars(range(min = 1, max = MAX_PAGE))]
    pub limit: Option<usize>,
    /// The `next_cursor` of the previous page; absent for the first page.
    #[schemars(length(max = CURSOR_MAX))]
    pub cursor: Option<String>,
}

/// A job's status as clients know a closed set of words: a string of an
/// `enum`.
fn job_statuses(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
    schemars::json_schema!({
        "type": "string",
        "enum": JobStatus::ALL.map(JobStatus::as_str),
    })
}

/// A page of jobs.
#[derive(Debug, Serialize, JsonSchema)]
pub struct JobsPage {
    pub jobs: Vec<JobSummary>,
    /// The `cursor` of the next page; absent at the end.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next_cursor: Option<String>,
}

impl Operation for ListJobs {
    const NAME: &'static str = "jobs.list";
    const SUMMARY: &'static str = "List jobs of a session (the bound one when `session` is absent; all sessions when nothing is bound), optionally by status, oldest first, a page at a time: `limit` jobs (100 when absent, 500 at most) after `cursor`; `next_cursor` is there when more may follow.";
    const DESCRIPTION: &'static str = "A job shows its input's and output's sizes and SHA-256, not their text: `job_status` returns those.";
    const AUDIENCE: Audience = Audience::Anyone;
    const HTTP: Option<Route> = Some(Route::get("/jobs"));
    const MCP: Option<&'static str> = Some("job_list");
    type Args = ListJobsArgs;
    type Output = JobsPage;

    async fn run(scope: Scope<'_>, args: ListJobsArgs) -> Result<JobsPage, OperationError> {
        let page = page_request(args.limit, args.cursor)?;
        // A named session must be within the caller's reach; none named
        // lists the bound session's (every session's, when none is bound).
        let session = match args.session {
            Some(named) => {
                scope.reach(&named).await?;
                Some(named)
            }
            None => scope.bound().map(str::to_string),
        };
        let found = job_runner::<Self>(scope)?
            .list(session.as_deref(), args.status, &page)
            .await?;
        Ok(JobsPage {
            jobs: found.items,
            next_cursor: found.next_cursor,
        })
    }
}
