//! Jobs as Tasks: the official extension `io.modelcontextprotocol/tasks`
//! (SEP-2663) served by Glovebox's background jobs.
//!
//! Why jobs: a task is a durable handle to a long call that a client polls
//! and may pick up again after a disconnect, from another connection or
//! node. A job is exactly that, already: persisted before it runs, run
//! once per idempotency key, re-run or marked interrupted after a crash,
//! owned by its session's principal. So a task's id *is* its job's id, and
//! `tasks/get` and `tasks/cancel` are the jobs' own status and cancel,
//! through the caller's [`JobScope`](glovebox::JobScope): a job of another
//! principal is a task that does not exist.
//!
//! When a call becomes a task: the server decides (SEP-2663). A plugin tool
//! call from a client that declared the extension is queued as a job of the
//! request's session; if it ends within [`TASK_AFTER`] its result is the
//! answer, as for a direct call, otherwise the answer is the task (its id
//! created, and durable, before the response). Built-ins are never tasks
//! (`job_spawn` and `job_wait` remain for clients without the extension).
//!
//! What is not served: `tasks/update` (no job asks its client for input
//! mid-run: a call a hook sends to "ask" ends with the approval's id, for
//! the client's `approval_*` tools or an operator) and task status
//! notifications (clients poll, at the `pollIntervalMs` given).

use std::time::{Duration, UNIX_EPOCH};

use rmcp::model::{
    CallToolResponse, CallToolResult, CancelTaskParams, CreateTaskResult, DetailedTask,
    GetTaskParams, GetTaskResult, JsonObject, Task, TaskPayload, TaskStatus, UpdateTaskParams,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer};
use serde_json::{Value, json};

use crate::connection::Connection;
use crate::results;
use glovebox::jobs::{JobError, JobInfo, JobStatus, WaitMode};
use glovebox::{Admitted, Principal};

/// How long a call run as a task may take and still answer with its result
/// (no task to poll).
pub const TASK_AFTER: Duration = Duration::from_secs(1);

/// How often a client is asked to poll a task.
const POLL_INTERVAL_MS: u64 = 500;

/// Whether the request's client declared the tasks extension (in its
/// `_meta` under 2026-07-28, at `initialize` before).
pub(crate) fn declared(context: &RequestContext<RoleServer>) -> bool {
    context
        .client_capabilities()
        .is_some_and(|c| c.supports_tasks())
}

impl Connection {
    /// Runs `call` as a task: a job of the request's session, answered with
    /// its result when it ends within [`TASK_AFTER`], else with the task.
    pub(crate) async fn call_as_task(
        &self,
        caller: &Principal,
        call: Admitted,
    ) -> Result<CallToolResponse, ErrorData> {
        let session = match self.session_for_call(caller).await {
            Ok(s) => s,
            Err(e) => return Ok(results::session_failure(&e).into()),
        };
        let jobs = self.shared().jobs.scope(caller);
        let job = match jobs.spawn(&session, call).await {
            Ok(job) => job,
            Err(e) => return Ok(job_refused(&e).into()),
        };
        let ids = [job.id.clone()];
        if let Ok(waited) = jobs.wait(&ids, WaitMode::All, Some(TASK_AFTER)).await
            && let Some(done) = waited.done.first()
        {
            return Ok(outcome(done).into());
        }
        Ok(CreateTaskResult::new(task(&job)).into())
    }

    /// `tasks/get`: the job with the task's id, as the caller may see it.
    pub(crate) async fn get_job_task(
        &self,
        caller: &Principal,
        request: GetTaskParams,
    ) -> Result<GetTaskResult, ErrorData> {
        let job = self
            .shared()
            .jobs
            .scope(caller)
            .status(&request.task_id)
            .await
            .map_err(|e| no_task(&request.task_id, &e))?;
        Ok(GetTaskResult::new(detailed(&job)))
    }

    /// `tasks/cancel`: cancels the job (a final one stays as it ended).
    pub(crate) async fn cancel_job_task(
        &self,
        caller: &Principal,
        request: CancelTaskParams,
    ) -> Result<(), ErrorData> {
        self.shared()
            .jobs
            .scope(caller)
            .cancel(&request.task_id)
            .await
            .map(|_| ())
            .map_err(|e| no_task(&request.task_id, &e))
    }

    /// `tasks/update`: no job asks for input, so there is nothing to
    /// deliver; refused with where approvals go instead.
    pub(crate) async fn update_job_task(
        &self,
        caller: &Principal,
        request: UpdateTaskParams,
    ) -> Result<(), ErrorData> {
        // A task of another principal's is not there at all.
        self.shared()
            .jobs
            .scope(caller)
            .status(&request.task_id)
            .await
            .map_err(|e| no_task(&request.task_id, &e))?;
        Err(ErrorData::invalid_params(
            format!(
                "task `{}` asks for no input: Glovebox's tasks never wait for the client mid-run; a call a hook sends to \"ask\" ends with its approval's id (`approval_status`, or an operator's `glovebox approve`)",
                request.task_id
            ),
            Some(json!({"taskId": request.task_id})),
        ))
    }
}

/// Why a task cannot be read or acted on: unknown (or another principal's),
/// or the store failed.
fn no_task(id: &str, e: &JobError) -> ErrorData {
    match e {
        JobError::NotFound(_) => ErrorData::invalid_params(
            format!(
                "no task `{id}`: a task's id is the one its call answered (`job_list` lists your jobs, which are your tasks)"
            ),
            Some(json!({"taskId": id})),
        ),
        other => ErrorData::internal_error(format!("task `{id}`: {other}"), None),
    }
}

/// A spawn the jobs service refused, as the call's tool error.
fn job_refused(e: &JobError) -> CallToolResult {
    match e {
        JobError::Session(s) => results::session_failure(s),
        other => results::failure("job_refused", other.to_string()),
    }
}

/// A job as its task's base fields.
fn task(job: &JobInfo) -> Task {
    let updated = job
        .finished_at_ms
        .or(job.started_at_ms)
        .unwrap_or(job.created_at_ms);
    let mut task = Task::new(
        job.id.clone(),
        status(job.status),
        rfc3339(job.created_at_ms),
        rfc3339(updated),
    )
    .with_status_message(format!("job {} is {}", job.id, job.status.as_str()));
    if !status(job.status).is_terminal() {
        task = task.with_poll_interval_ms(POLL_INTERVAL_MS);
    }
    task
}

fn status(job: JobStatus) -> TaskStatus {
    match job {
        JobStatus::Queued | JobStatus::Running => TaskStatus::Working,
        JobStatus::Cancelled => TaskStatus::Cancelled,
        // The call ended: its result says how, `isError` included.
        JobStatus::Completed | JobStatus::Failed | JobStatus::Timeout | JobStatus::Interrupted => {
            TaskStatus::Completed
        }
    }
}

/// A job as `tasks/get` answers it: a final one carries the call's result.
fn detailed(job: &JobInfo) -> DetailedTask {
    let payload = match status(job.status) {
        TaskStatus::Working => TaskPayload::Working,
        TaskStatus::Cancelled => TaskPayload::Cancelled,
        _ => TaskPayload::Completed {
            result: match serde_json::to_value(outcome(job)) {
                Ok(Value::Object(map)) => map,
                _ => JsonObject::new(),
            },
        },
    };
    DetailedTask::new(task(job), payload)
}

/// A final job's result as the call's: its output, or its error as the
/// tool error a direct call gets.
fn outcome(job: &JobInfo) -> CallToolResult {
    match &job.result {
        Some(result) => match (&result.error, &result.output) {
            (Some(error), _) => results::failure(&error.kind, error.message.clone()),
            (None, output) => results::ok_value(output.clone().unwrap_or(Value::Null)),
        },
        None => results::failure(
            job.status.as_str(),
            format!(
                "job {} ended {} with no result",
                job.id,
                job.status.as_str()
            ),
        ),
    }
}

fn rfc3339(ms: u64) -> String {
    humantime::format_rfc3339_millis(UNIX_EPOCH + Duration::from_millis(ms)).to_string()
}
