//! The run queue and the run of one job: permits handed out in queue
//! order, a task per job, its start recorded, its call run as whoever
//! spawned it, its outcome stored.

use std::sync::atomic::Ordering;
use std::sync::{Arc, PoisonError, Weak};
use std::time::Duration;

use tokio::sync::{OwnedSemaphorePermit, Semaphore, mpsc};

use glovebox_ledger::jobs::{JobError, JobErrorInfo, JobResult, JobStatus, JobSummary};

use super::{Jobs, Live, blocking, failed_result};
use crate::call::CallReport;
use crate::error::CallError;
use crate::pipeline::{Admitted, call_metering};
use crate::session::SessionError;
use crate::storage::StorageError;

impl Jobs {
    /// Puts `job`, found in the store, in the run queue of this process.
    pub(super) fn start(&self, job: &JobSummary) {
        {
            let mut live = self.live.lock().unwrap_or_else(PoisonError::into_inner);
            if live.contains_key(&job.id) {
                return;
            }
            live.insert(job.id.clone(), Live::new(&job.session, job.by.clone()));
        }
        self.queue_up(&job.id);
    }

    /// Hands job `id`, live already, to the dispatcher.
    pub(super) fn queue_up(&self, id: &str) {
        let rx = self
            .queue_rx
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
        if let Some(rx) = rx {
            crate::tasks::host_task(dispatch(self.this.clone(), rx, self.permits.clone()));
        }
        // The receiver lives as long as the dispatcher, which lives as long as `self`.
        let _ = self.queue.send(id.to_string());
    }

    /// Runs job `id` with its admission `permit`.
    async fn run(self: Arc<Self>, id: String, permit: OwnedSemaphorePermit) {
        if self.stopping.load(Ordering::SeqCst) {
            // The host stops: the job stays queued in the store, for the
            // next process that runs jobs (on a shared store, another host
            // gets its message now).
            self.live
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .remove(&id);
            self.release(&id).await;
            return;
        }
        let cancel = match self
            .live
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(&id)
        {
            Some(live) => live.cancel.subscribe(),
            None => return,
        };
        let started = self.mark_started(&id).await;
        if let Ok((job, true)) = started {
            self.run_started(&id, job, cancel, permit).await;
            return;
        } else if let Err(e) = started {
            tracing::error!(job = %id, error = %e, "the job could not be started");
        }
        self.not_started(&id, permit).await;
    }

    /// Records job `id` as running here (attempt one more), unless it is
    /// not queued any more. Keeps trying while the store is failed, for up
    /// to [`OUTCOME_PATIENCE`] or until the host stops.
    async fn mark_started(&self, id: &str) -> Result<(JobSummary, bool), JobError> {
        let now = self.now();
        let mut waited = Duration::ZERO;
        loop {
            let runner = self.runner.clone();
            let started = self
                .update(id, move |j| {
                    if j.status == JobStatus::Running
                        && j.started_at_ms == Some(now)
                        && j.runner.as_deref() == Some(runner.as_str())
                    {
                        // This start's own write, which reached the store
                        // though its flush was not acknowledged: it runs.
                        return true;
                    }
                    if j.status != JobStatus::Queued {
                        // Started by another host sharing the store, or
                        // cancelled: not this process's to run.
                        return false;
                    }
                    j.status = JobStatus::Running;
                    j.started_at_ms = Some(now);
                    j.attempts += 1;
                    j.runner = Some(runner.clone());
                    true
                })
                .await;
            match started {
                Err(JobError::Storage(StorageError::Io(ref e))) if waited < OUTCOME_PATIENCE => {
                    // The store failed (it is reopened once there is room):
                    // the record may say `running` or still `queued`. Try
                    // again then, so the job neither stays `running` without
                    // running nor waits for a restart to start.
                    tracing::warn!(job = %id, error = %e, "the job could not be started yet; trying again");
                    tokio::time::sleep(crate::storage::RETRY).await;
                    waited += crate::storage::RETRY;
                    if self.stopping.load(Ordering::SeqCst) {
                        break started;
                    }
                }
                other => break other,
            }
        }
    }

    /// Runs job `job` (`id`), started here: its call, then its outcome
    /// stored, its places given back and its delivery answered.
    async fn run_started(
        &self,
        id: &str,
        job: JobSummary,
        cancel: crate::pipeline::Cancel,
        permit: OwnedSemaphorePermit,
    ) {
        if let Some(live) = self
            .live
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get_mut(id)
        {
            live.running = true;
        }
        let admitted = self
            .admitted
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(id);
        // A job this process did not spawn (recovered, or queued by the
        // CLI) is admitted now: its tool or config may have changed.
        let call = match admitted {
            Some(call) => Ok(call),
            None => self.admit_stored(&job).await,
        };
        let report = match call {
            Ok(call) => self.run_as_spawner(&job, call, cancel).await,
            Err(e) => Ok(CallReport::refused(&job.tool, e)),
        };
        let (status, result, approval) = outcome(report);
        // The slot is not needed to store the outcome, which may wait
        // for a failed store to be reopened.
        drop(permit);
        // Final, or waiting for an approval without a slot or a place.
        let ended = self.store_outcome(&job, status, result, approval).await;
        let left = self
            .live
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(id);
        self.notify();
        if let Some(left) = left
            && ended
        {
            self.give_back_places(id, &left.session, left.principal)
                .await;
        }
        self.release(id).await;
    }

    /// Forgets job `id`, which was not started here (another host did, or
    /// it was cancelled, or its start could not be stored).
    async fn not_started(&self, id: &str, permit: OwnedSemaphorePermit) {
        drop(permit);
        self.live
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(id);
        // Not started here (another host did, or it was cancelled): what was
        // admitted for it goes too.
        self.admitted
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(id);
        self.notify();
        self.release(id).await;
    }

    /// Runs `call`, job `job`'s, as whoever spawned it is now. An agent's
    /// job is that agent's call, checked as one when it starts (its session
    /// still its own, the session's role within the agent's roles now), so
    /// a reload that demoted or removed the agent while the job waited in
    /// the queue reaches it too (threat 52). An operator's job runs as the
    /// operator who spawned it (its events are that operator's), and so does
    /// an embedder's agent where the config declares no principal.
    async fn run_as_spawner(
        &self,
        job: &JobSummary,
        call: Admitted,
        cancel: crate::pipeline::Cancel,
    ) -> Result<CallReport, SessionError> {
        let job_id = Some(job.id.clone());
        if let Some(agent) = &job.charged_to {
            match self.gateway.principals().current(agent) {
                Some(principal) => {
                    return self
                        .gateway
                        .scope(&principal)
                        .call(&job.session, call, job_id, Some(cancel))
                        .await;
                }
                None if self.gateway.principals().declared() => {
                    return Err(SessionError::NotAllowed(format!(
                        "principal `{agent}`, which queued job {}, is no longer declared (a reload removed it), so the job does not run: an operator spawns it again if it should run",
                        job.id
                    )));
                }
                // No principal is declared: an embedder's own agent, which
                // no config can demote; it runs as it was spawned.
                None => {}
            }
        }
        let run =
            crate::in_session::host_call(&self.gateway, &job.session, call, job_id, Some(cancel));
        match job.by.clone() {
            Some(by) => crate::tasks::acting(by, run).await,
            None => run.await,
        }
    }

    /// Admits the call of `job`, stored by another process (recovered, or
    /// queued by the CLI): its tool or config may have changed since.
    async fn admit_stored(&self, job: &JobSummary) -> Result<Admitted, CallError> {
        let (store, id) = (self.store.clone(), job.id.clone());
        match blocking(move || store.input(&id)).await {
            Ok(input) => self.gateway.admit(&job.tool, &input),
            Err(e) => Err(CallError::InvalidInput {
                tool: job.tool.clone(),
                reason: format!("its input could not be read: {e}"),
            }),
        }
    }

    /// Stores what job `job`'s run (attempt `job.attempts`) ended with:
    /// its result apart, then its record (`approval`: the approval its call
    /// now waits for, with `awaiting_approval`). Keeps trying while the
    /// store is failed (it is reopened once there is room) for up to
    /// [`OUTCOME_PATIENCE`], rather than leave the record `running` until
    /// a restart. Returns whether the record left `running` (is final, or
    /// waits for an approval).
    async fn store_outcome(
        &self,
        job: &JobSummary,
        status: JobStatus,
        result: JobResult,
        approval: Option<String>,
    ) -> bool {
        let id = job.id.clone();
        let now = self.now();
        let mut waited = Duration::ZERO;
        // Its result apart first (once: its bytes are counted once).
        let staged = loop {
            let (store, job, result) = (self.store.clone(), job.clone(), result.clone());
            match blocking(move || store.stage_result(&job, job.attempts, &result)).await {
                Ok(staged) => break staged,
                Err(JobError::Storage(StorageError::Io(e))) if waited < OUTCOME_PATIENCE => {
                    // A failed store is reopened once there is room (see
                    // `glovebox_store::Reopening`): try again then.
                    tracing::warn!(job = %id, error = %e, "the job's result could not be stored yet; trying again");
                    tokio::time::sleep(crate::storage::RETRY).await;
                    waited += crate::storage::RETRY;
                }
                Err(e) => {
                    tracing::error!(job = %id, error = %e, "the job's result could not be stored; the next start's recovery ends its record");
                    return false;
                }
            }
        };
        loop {
            let (summary, approval) = (staged.summary.clone(), approval.clone());
            let finished = self
                .update(&id, move |j| {
                    if j.status == JobStatus::Running {
                        j.status = status;
                        j.finished_at_ms = status.is_final().then_some(now);
                        j.result = Some(summary.clone());
                        j.approval.clone_from(&approval);
                        true
                    } else if j.status == JobStatus::Cancelled && j.kept().is_none() {
                        // Cancelled while running: keep what the call says of itself.
                        j.result = Some(summary.clone());
                        true
                    } else {
                        false
                    }
                })
                .await;
            match finished {
                Err(JobError::Storage(StorageError::Io(e))) if waited < OUTCOME_PATIENCE => {
                    tracing::warn!(job = %id, error = %e, "the job's outcome could not be stored yet; trying again");
                    tokio::time::sleep(crate::storage::RETRY).await;
                    waited += crate::storage::RETRY;
                }
                Err(e) => {
                    // Its result stays stored and counted: the record may
                    // have taken it (an error says nothing of the write).
                    tracing::error!(job = %id, error = %e, "the job's outcome could not be stored; the next start's recovery ends its record");
                    return false;
                }
                Ok((record, _)) => {
                    let ended = record.status != JobStatus::Running;
                    let store = self.store.clone();
                    let _ = blocking(move || {
                        store.settle_result(&staged, &record);
                        Ok(())
                    })
                    .await;
                    return ended;
                }
            }
        }
    }
}

/// How long a job keeps trying to store its start, and after it ran its
/// outcome, in a failed store (which is reopened once there is room) before
/// it gives up.
const OUTCOME_PATIENCE: Duration = Duration::from_secs(600);

/// Hands queued jobs permits in queue order and starts their tasks.
async fn dispatch(
    jobs: Weak<Jobs>,
    mut queue: mpsc::UnboundedReceiver<String>,
    permits: Arc<Semaphore>,
) {
    while let Some(id) = queue.recv().await {
        let Ok(permit) = permits.clone().acquire_owned().await else {
            return;
        };
        let Some(jobs) = jobs.upgrade() else { return };
        // A task of its own on the multi-threaded runtime: jobs use every core.
        crate::tasks::host_task(jobs.run(id, permit));
    }
}

/// A job's status and result from its call's report, and the approval it
/// waits for when a hook sent the call to a human.
pub(super) fn outcome(
    report: Result<CallReport, SessionError>,
) -> (JobStatus, JobResult, Option<String>) {
    let report = match report {
        Ok(report) => report,
        Err(e) => {
            let result = failed_result("session", e.to_string());
            return (JobStatus::Failed, result, None);
        }
    };
    let metering = call_metering(&report.metering);
    let mut approval = None;
    let (status, output, error) = match report.outcome {
        Ok(value) => (JobStatus::Completed, Some(value), None),
        Err(e) => {
            let status = match &e {
                CallError::Timeout { .. } => JobStatus::Timeout,
                CallError::Cancelled { .. } => JobStatus::Cancelled,
                CallError::AwaitingApproval { approval_id, .. } => {
                    approval = Some(approval_id.clone());
                    JobStatus::AwaitingApproval
                }
                _ => JobStatus::Failed,
            };
            let info = JobErrorInfo {
                kind: e.kind().to_string(),
                message: e.to_string(),
            };
            (status, None, Some(info))
        }
    };
    let result = JobResult {
        output,
        error,
        stdout: report.stdout,
        stderr: report.stderr,
        metering,
    };
    (status, result, approval)
}
