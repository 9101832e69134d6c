//! Waiting on jobs (all of them or the first to end) and cancelling one.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, PoisonError};
use std::time::Duration;

use glovebox_ledger::jobs::{JobError, JobInfo, JobStatus, WaitMode, WaitOutcome};

use super::{CANCEL_SETTLE, Jobs, wait_set};

impl Jobs {
    /// Waits until every job (`All`) or one of them (`First`) is final, or
    /// the timeout passes: `None` waits `default_wait`, and no wait is longer
    /// than `max_wait`. Jobs nobody runs (queued in a data dir no process
    /// runs jobs from) stay pending.
    pub(crate) async fn wait(
        &self,
        ids: &[String],
        mode: WaitMode,
        timeout: Option<Duration>,
    ) -> Result<WaitOutcome, JobError> {
        if ids.is_empty() {
            return Err(JobError::BadRequest(
                "wait for which jobs? give job ids".into(),
            ));
        }
        let unique = wait_set(ids)?;
        let timeout = timeout
            .unwrap_or(self.config.default_wait)
            .min(self.config.max_wait);
        let deadline = tokio::time::Instant::now() + timeout;
        // On a store several hosts share, a job may end on another host,
        // which does not wake this one: look again every so often.
        let poll = self
            .gateway
            .sessions()
            .lease_ttl()
            .map(|_| SHARED_WAIT_POLL);
        let mut changes = self.changed.subscribe();
        loop {
            changes.borrow_and_update();
            // Looked at without their bodies; read with them once the wait ends.
            let mut ended = 0;
            for id in &unique {
                if self.store.summary(id)?.status.is_final() {
                    ended += 1;
                }
            }
            let finished = match mode {
                WaitMode::All => ended == unique.len(),
                WaitMode::First => ended > 0,
            };
            if finished {
                return self.outcome_of(&unique, false);
            }
            let wake = poll.map_or(deadline, |poll| {
                deadline.min(tokio::time::Instant::now() + poll)
            });
            // `changed` cannot fail: this service holds the sender.
            if tokio::time::timeout_at(wake, changes.changed())
                .await
                .is_err()
                && tokio::time::Instant::now() >= deadline
            {
                return self.outcome_of(&unique, true);
            }
        }
    }

    /// What a wait for `ids` answers: the final jobs (marked as read) and
    /// the others, with their bodies.
    fn outcome_of(&self, ids: &[&String], timed_out: bool) -> Result<WaitOutcome, JobError> {
        let mut done = Vec::new();
        let mut pending = Vec::new();
        for id in ids {
            let job = self.status(id)?;
            if job.status.is_final() {
                done.push(job);
            } else {
                pending.push(job);
            }
        }
        Ok(WaitOutcome {
            done,
            pending,
            timed_out,
        })
    }

    /// Cancels a job. A queued job never runs. A running one is stopped: its
    /// instance is dropped and its call finishes in the session log with the
    /// outcome `cancelled` (awaited for a few seconds; a tool computing
    /// without pause stops at the latest at its deadline). One awaiting an
    /// approval ends at once, and its approval is denied. A final job is
    /// returned as it is.
    pub(crate) async fn cancel(&self, id: &str) -> Result<JobInfo, JobError> {
        let now = self.now();
        let was_running = Arc::new(AtomicBool::new(false));
        let running = was_running.clone();
        let was_waiting = Arc::new(std::sync::Mutex::new(None));
        let waiting = was_waiting.clone();
        let (job, changed) = self
            .update(id, move |j| {
                if j.status.is_final() {
                    return false;
                }
                running.store(j.status == JobStatus::Running, Ordering::SeqCst);
                *waiting.lock().unwrap_or_else(PoisonError::into_inner) =
                    (j.status == JobStatus::AwaitingApproval).then(|| j.approval.clone());
                j.status = JobStatus::Cancelled;
                j.finished_at_ms = Some(now);
                true
            })
            .await?;
        if !changed {
            return self.peek(id);
        }
        let awaited = was_waiting
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
        if let Some(approval) = awaited {
            // It held no place (given back when it began to wait) and runs
            // nowhere: its approval is denied, so its call never runs.
            if let Some(approval) = approval {
                self.deny_for_cancelled(id, &approval).await;
            }
            return self.status(id);
        }
        if !was_running.load(Ordering::SeqCst) {
            // A queued job ends here: its places go back now. A running
            // one's go back when its task stores the outcome.
            self.give_back_places(id, &job.session, job.by.clone())
                .await;
        }
        let mut changes = self.changed.subscribe();
        let switch = {
            let mut live = self.live.lock().unwrap_or_else(PoisonError::into_inner);
            if was_running.load(Ordering::SeqCst) {
                live.get(id).map(|l| l.cancel.clone())
            } else {
                // Queued here (or nowhere): it never runs; the dispatcher skips it.
                live.remove(id);
                self.admitted
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .remove(id);
                None
            }
        };
        let Some(switch) = switch else {
            self.release(id).await;
            return self.peek(id);
        };
        switch.send_replace(Some(Arc::from("its background job was cancelled")));
        // Its task leaves `live` once the call is settled in the session log.
        let settled = async {
            loop {
                changes.borrow_and_update();
                if !self.is_live(id) || changes.changed().await.is_err() {
                    return;
                }
            }
        };
        if tokio::time::timeout(CANCEL_SETTLE, settled).await.is_err() {
            tracing::warn!(job = %id, "cancelled job still winding down");
        }
        self.status(id)
    }
}

/// How often a wait on a store several hosts share reads the jobs again.
const SHARED_WAIT_POLL: Duration = Duration::from_millis(250);
