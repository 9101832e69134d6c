//! The background job built-in that is not an operation yet: `job_spawn`
//! (it runs in the connection's default session when none is bound).

use rmcp::ErrorData;
use rmcp::model::{CallToolResult, JsonObject};
use serde::Serialize;

use super::parse::parse;
use crate::connection::Connection;
use crate::results::{self, bad_arguments};
use crate::tools::SpawnArgs;
use glovebox::jobs::JobError;
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
    /// `job_spawn`: the call admitted as a direct call is, queued in the
    /// caller's session, on the caller's own jobs ([`JobScope`]).
    pub(super) async fn job_spawn(
        &self,
        caller: &Principal,
        tool: &str,
        args: JsonObject,
    ) -> Result<CallToolResult, ErrorData> {
        let a: SpawnArgs = parse(tool, args)?;
        if !a.input.is_object() {
            return Err(bad_arguments(tool, "`input` must be a JSON object"));
        }
        let call = self.admit(&a.tool, &a.input)?;
        let session = match self.session_for_call(caller).await {
            Ok(s) => s,
            Err(e) => return Ok(results::session_failure(&e)),
        };
        let jobs: JobScope<'_> = self.shared().jobs.scope(caller);
        job_answer(jobs.spawn(&session, call).await)
    }
}
