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
//! A task whose call a hook sent to a human (its job `awaiting_approval`)
//! is `input_required` for a caller that settles its own approvals
//! (`approve_by = "client"`): `tasks/get` carries the question (the
//! approval as every surface shows it, `rounds.rs`), and `tasks/update`
//! with the answer approves it (the call runs, and the job takes its
//! result) or denies it. For any other caller the task stays `working`
//! until an operator settles it. Either way the job itself waits without
//! holding a slot, and takes whichever settlement comes, from whatever
//! surface (the jobs runner's `approval.rs`).
//!
//! Task status notifications (`notifications/tasks`, what `tasks/get`
//! would answer at that moment) go to a client with a lifecycle (revision
//! 2025-11-25 and before) for each task its connection created, at every
//! change of status until the task ends or the client goes away
//! ([`Connection::follow_task`]). Not under 2026-07-28: its
//! `subscriptions/listen` filter names no tasks, and rmcp refuses
//! `notifications/tasks` on a listen stream; those clients poll, at the
//! `pollIntervalMs` given.

use std::time::{Duration, UNIX_EPOCH};

use rmcp::model::{
    CallToolResponse, CallToolResult, CancelTaskParams, CreateTaskResult, DetailedTask,
    ElicitRequest, ElicitResult, GetTaskParams, GetTaskResult, InputRequest, JsonObject,
    ServerNotification, Task, TaskPayload, TaskStatus, TaskStatusNotification, UpdateTaskParams,
};
use rmcp::service::{Peer, RequestContext};
use rmcp::{ErrorData, RoleServer};
use serde_json::{Value, json};

use crate::connection::Connection;
use crate::results;
use crate::rounds::APPROVE;
use glovebox::jobs::{JobError, JobInfo, JobStatus, WaitMode};
use glovebox::manifest::ApproveBy;
use glovebox::{Admitted, Principal};

/// How long a call run as a task may take and still answer with its result
/// (no task to poll).
pub const TASK_AFTER: Duration = Duration::from_secs(1);

/// How often a client is asked to poll a task.
const POLL_INTERVAL_MS: u64 = 500;

/// How long `tasks/update` waits for its job to take the settlement it
/// made, so that the next `tasks/get` finds the job ended.
const SETTLE_WAIT: Duration = Duration::from_secs(5);

/// How often a followed task's job is read again when no change was
/// marked in this process (a store several hosts share changes elsewhere).
const FOLLOW_POLL: Duration = Duration::from_secs(1);

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
    /// `peer`: the client to notify of the task's changes, on a connection
    /// with a lifecycle.
    pub(crate) async fn call_as_task(
        &self,
        caller: &Principal,
        call: Admitted,
        peer: Option<Peer<RoleServer>>,
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
        if let Some(peer) = peer {
            self.follow_task(caller, job.id.clone(), peer);
        }
        Ok(CreateTaskResult::new(task(&job, asks(caller))).into())
    }

    /// Sends `peer` a `notifications/tasks` at every change of task `id`'s
    /// status (its first, `working`, was the call's answer), until it is
    /// terminal, the client goes away, or the task cannot be read.
    fn follow_task(&self, caller: &Principal, id: String, peer: Peer<RoleServer>) {
        let (this, caller) = (self.clone(), caller.clone());
        glovebox::tasks::host_task(async move {
            let mut changes = this.shared().jobs.changes();
            let mut last = TaskStatus::Working;
            loop {
                let _ = tokio::time::timeout(FOLLOW_POLL, changes.changed()).await;
                // The client went away: nobody hears it any more.
                if peer.is_transport_closed() {
                    return;
                }
                let Ok(job) = this.shared().jobs.scope(&caller).status(&id).await else {
                    return;
                };
                let now = this.task_now(&caller, &job);
                let status = now.task.status;
                if status == last {
                    continue;
                }
                last = status;
                let notification = TaskStatusNotification::new(now.into());
                let sent = peer
                    .send_notification(ServerNotification::TaskStatusNotification(notification))
                    .await;
                if sent.is_err() || status.is_terminal() {
                    return;
                }
            }
        });
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
        Ok(GetTaskResult::new(self.task_now(caller, &job)))
    }

    /// Job `job` as its task is now, for `caller`: its question when it
    /// waits for the caller's approval.
    fn task_now(&self, caller: &Principal, job: &JobInfo) -> DetailedTask {
        // Waiting for its caller's approval: the question, when it can be
        // read (else `working`, and polled again it is asked).
        let question = (asks(caller) && job.status == JobStatus::AwaitingApproval)
            .then(|| {
                job.approval
                    .as_deref()
                    .and_then(|a| self.approval_question(a))
            })
            .flatten();
        if let Some(question) = question {
            let requests = std::collections::BTreeMap::from([(
                APPROVE.to_string(),
                InputRequest::Elicitation(ElicitRequest::new(question)),
            )]);
            let payload = TaskPayload::InputRequired {
                input_requests: requests,
            };
            return DetailedTask::new(task(job, true), payload);
        }
        detailed(job)
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

    /// `tasks/update`: the answer to the question of a task whose call
    /// waits for its caller's approval (`inputResponses.approve`, an
    /// elicitation result): accepted with `approve` true runs the call
    /// and the job takes its result; declined denies it; cancelled leaves
    /// it pending. Refused (-32602) for a task that asks nothing, a
    /// caller whose approvals an operator settles, or a malformed answer.
    pub(crate) async fn update_job_task(
        &self,
        caller: &Principal,
        request: UpdateTaskParams,
    ) -> Result<(), ErrorData> {
        let id = request.task_id;
        let jobs = self.shared().jobs.scope(caller);
        // A task of another principal's is not there at all.
        let job = jobs.status(&id).await.map_err(|e| no_task(&id, &e))?;
        let refuse = |why: String| ErrorData::invalid_params(why, Some(json!({"taskId": id})));
        let approval = match (&job.status, &job.approval) {
            (JobStatus::AwaitingApproval, Some(approval)) => approval.clone(),
            (status, _) => {
                return Err(refuse(format!(
                    "task `{id}` asks for no input (it is {}): only a task whose call waits for your approval (`input_required`) takes `tasks/update`",
                    status.as_str()
                )));
            }
        };
        if !asks(caller) {
            return Err(refuse(format!(
                "task `{id}` waits for approval `{approval}`, which an operator settles (`glovebox approve {approval}`): principal `{}` does not settle its own approvals",
                caller.name
            )));
        }
        let mut responses = request.input_responses;
        let answer = responses
            .remove(APPROVE)
            .ok_or_else(|| {
                refuse(format!(
                    "`inputResponses` has no `{APPROVE}`: answer the task's input request `{APPROVE}` with `{{\"action\": \"accept\", \"content\": {{\"approve\": true}}}}`, or `decline`"
                ))
            })
            .and_then(|answer| {
                serde_json::from_value::<ElicitResult>(answer).map_err(|e| {
                    refuse(format!(
                        "`inputResponses.{APPROVE}` is not an elicitation result ({e}): send `{{\"action\": \"accept\", \"content\": {{\"approve\": true}}}}`, or `decline`"
                    ))
                })
            })?;
        let settled = self
            .settle_by_client(caller, &approval, &answer, "MCP tasks/update")
            .await;
        if settled.is_some() {
            // The approved call ran (or the denial is recorded): the job
            // takes it, so the next `tasks/get` finds it ended.
            let _ = jobs
                .wait(std::slice::from_ref(&id), WaitMode::All, Some(SETTLE_WAIT))
                .await;
        }
        Ok(())
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

/// Whether `caller` settles its own approvals: a task of its waiting for
/// one is `input_required`, else `working` until an operator settles it.
fn asks(caller: &Principal) -> bool {
    caller.approve_by == ApproveBy::Client
}

/// A job as its task's base fields (`asks`: whether its caller settles its
/// own approvals).
fn task(job: &JobInfo, asks: bool) -> Task {
    let updated = job
        .finished_at_ms
        .or(job.started_at_ms)
        .unwrap_or(job.created_at_ms);
    let message = match (job.status, &job.approval) {
        (JobStatus::AwaitingApproval, Some(approval)) if asks => {
            format!("job {} waits for your approval {approval}", job.id)
        }
        (JobStatus::AwaitingApproval, Some(approval)) => format!(
            "job {} waits for an operator to approve {approval} (`glovebox approve {approval}`)",
            job.id
        ),
        (status, _) => format!("job {} is {}", job.id, status.as_str()),
    };
    let mut task = Task::new(
        job.id.clone(),
        status(job.status, asks),
        rfc3339(job.created_at_ms),
        rfc3339(updated),
    )
    .with_status_message(message);
    if !status(job.status, asks).is_terminal() {
        task = task.with_poll_interval_ms(POLL_INTERVAL_MS);
    }
    task
}

fn status(job: JobStatus, asks: bool) -> TaskStatus {
    match job {
        JobStatus::Queued | JobStatus::Running => TaskStatus::Working,
        JobStatus::AwaitingApproval if asks => TaskStatus::InputRequired,
        JobStatus::AwaitingApproval => TaskStatus::Working,
        JobStatus::Cancelled => TaskStatus::Cancelled,
        // The call ended: its result says how, `isError` included.
        JobStatus::Completed | JobStatus::Failed | JobStatus::Timeout | JobStatus::Interrupted => {
            TaskStatus::Completed
        }
    }
}

/// A job as `tasks/get` answers it when it asks nothing: a final one
/// carries the call's result.
fn detailed(job: &JobInfo) -> DetailedTask {
    let payload = match status(job.status, false) {
        TaskStatus::Working => TaskPayload::Working,
        TaskStatus::Cancelled => TaskPayload::Cancelled,
        _ => TaskPayload::Completed {
            result: match serde_json::to_value(outcome(job)) {
                Ok(Value::Object(map)) => map,
                _ => JsonObject::new(),
            },
        },
    };
    DetailedTask::new(task(job, false), payload)
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
