//! The background job built-ins.

use std::time::Duration;

use rmcp::ErrorData;
use rmcp::model::{CallToolResult, JsonObject};
use serde::Serialize;

use super::parse::parse;
use super::unknown_builtin;
use crate::connection::Connection;
use crate::results::{self, bad_arguments};
use crate::tools::{JOB_SPAWN, JOB_WAIT, SpawnArgs, WaitArgs, WaitFor};
use glovebox::jobs::{JobError, WaitMode};
use glovebox::{JobScope, Principal};

/// A job operation that failed, as a tool error. (The tool and its input
/// were checked before `job_spawn` got here, so what the jobs service still
/// refuses is the session's state.)
fn job_failure(e: &JobError) -> Result<CallToolResult, ErrorData> {
    Ok(match e {
        JobError::BadRequest(_) => results::failure("job_refused", e.to_string()),
        JobError::NotFound(_) => results::failure("job_not_found", e.to_string()),
        JobError::Session(s) => results::session_failure(s),
        JobError::Storage(_) => results::failure("job_storage", e.to_string()),
    })
}

/// A job operation's answer: its result as JSON, or its refusal as a tool
/// error ([`job_failure`]).
fn job_answer<T: Serialize>(result: Result<T, JobError>) -> Result<CallToolResult, ErrorData> {
    match result {
        Ok(value) => Ok(results::ok(&value)),
        Err(e) => job_failure(&e),
    }
}

impl Connection {
    /// The job built-ins (`job_spawn`, `job_wait`, `job_status`,
    /// `job_cancel` and `job_list`), each with its arguments parsed and on
    /// the caller's own jobs ([`JobScope`]).
    pub(super) async fn job(
        &self,
        caller: &Principal,
        tool: &str,
        args: JsonObject,
    ) -> Result<CallToolResult, ErrorData> {
        let jobs = self.shared().jobs.scope(caller);
        match tool {
            JOB_SPAWN => self.job_spawn(caller, jobs, tool, parse(tool, args)?).await,
            JOB_WAIT => job_wait(jobs, tool, parse(tool, args)?).await,
            other => Err(unknown_builtin(other)),
        }
    }

    /// `job_spawn`.
    async fn job_spawn(
        &self,
        caller: &Principal,
        jobs: JobScope<'_>,
        tool: &str,
        a: SpawnArgs,
    ) -> Result<CallToolResult, ErrorData> {
        if !a.input.is_object() {
            return Err(bad_arguments(tool, "`input` must be a JSON object"));
        }
        let call = self.admit(&a.tool, &a.input)?;
        let session = match self.session_for_call(caller).await {
            Ok(s) => s,
            Err(e) => return Ok(results::session_failure(&e)),
        };
        job_answer(jobs.spawn(&session, call).await)
    }
}

/// `job_wait`.
async fn job_wait(
    jobs: JobScope<'_>,
    tool: &str,
    a: WaitArgs,
) -> Result<CallToolResult, ErrorData> {
    if a.ids.is_empty() {
        return Err(bad_arguments(
            tool,
            "`ids` is empty: give at least one job id",
        ));
    }
    let mode = match a.mode {
        WaitFor::All => WaitMode::All,
        WaitFor::First => WaitMode::First,
    };
    let timeout = a.timeout_ms.map(Duration::from_millis);
    job_answer(jobs.wait(&a.ids, mode, timeout).await)
}
