//! A host that stops: its queued jobs stay queued, its running ones get a
//! grace period, and what it holds goes back to the other hosts.

use std::collections::BTreeSet;
use std::sync::atomic::Ordering;
use std::sync::{Arc, PoisonError};
use std::time::Duration;

use tokio::sync::watch;

use glovebox_ledger::jobs::{JobStatus, JobSummary};

use super::recover::stopped_running;
use super::{CANCEL_SETTLE, Jobs, blocking};

impl Jobs {
    /// For a host that stops: no queued job starts any more (they stay
    /// queued in the store, for the next start); the running ones get until
    /// `grace` to finish. Those still running then are stopped and recorded
    /// as a restart would find them: re-queued if their tool is idempotent,
    /// `interrupted` otherwise; their calls end in the session log, cancelled
    /// with the reason. Returns the jobs it stopped.
    pub async fn shutdown(&self, grace: Duration) -> Vec<JobSummary> {
        self.stopping.store(true, Ordering::SeqCst);
        let deadline = tokio::time::Instant::now() + grace;
        let mut changes = self.changed.subscribe();
        loop {
            changes.borrow_and_update();
            if self.running().is_empty()
                || tokio::time::timeout_at(deadline, changes.changed())
                    .await
                    .is_err()
            {
                break;
            }
        }
        let mut stopped = Vec::new();
        for (id, switch) in self.running() {
            let now = self.now();
            let grace_text = humantime::format_duration(grace).to_string();
            let changed = self
                .update(&id, move |j| {
                    let why = format!(
                        ": it did not finish within the shutdown grace period of {grace_text}"
                    );
                    stopped_running(j, now, &why)
                })
                .await;
            match changed {
                Ok((job, true)) => {
                    tracing::warn!(job = %job.id, tool = %job.tool, status = %job.status, "stopping: job still running after the grace period");
                    switch.send_replace(Some(Arc::from(
                        "the host stopped before its background job finished",
                    )));
                    stopped.push(job);
                }
                Ok(_) => {}
                Err(e) => {
                    tracing::error!(job = %id, error = %e, "stopping: the job's record could not be updated; the next start marks it")
                }
            }
        }
        // Their calls settle in the session log (the instance is dropped at once).
        let settle = tokio::time::Instant::now() + CANCEL_SETTLE;
        while !stopped.iter().all(|j| !self.is_live(&j.id)) {
            if tokio::time::timeout_at(settle, changes.changed())
                .await
                .is_err()
            {
                break;
            }
        }
        // What this host still holds from the work queue goes back to the
        // other hosts now, not after the ack wait; and so do the sessions of
        // the jobs it hands back (re-queued, or never started here), or the
        // host that pulls one would find its session driven here, hand the
        // job back and wait for the lease to expire.
        let requeued: Vec<&JobSummary> = stopped
            .iter()
            .filter(|j| j.status == JobStatus::Queued)
            .collect();
        let mut handed_back: BTreeSet<String> =
            requeued.iter().map(|j| j.session.clone()).collect();
        handed_back.extend(
            self.live
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .values()
                .filter(|l| !l.running)
                .map(|l| l.session.clone()),
        );
        let sessions = self.gateway.sessions().clone();
        let _ = blocking(move || {
            for session in &handed_back {
                sessions.release_lease(session);
            }
            Ok(())
        })
        .await;
        // A re-queued job's first message may be out of reach for a while
        // (handed back by a host that pulled it while it ran here): a new
        // one reaches a free host at once. Starting is a compare-and-set, so
        // two messages still run it once.
        for job in requeued {
            self.push(&job.id, job.by.as_deref()).await;
        }
        let held: Vec<String> = self
            .deliveries
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .keys()
            .cloned()
            .collect();
        for id in held {
            self.release(&id).await;
        }
        stopped
    }

    /// The jobs this process runs now, with their cancel switch.
    fn running(&self) -> Vec<(String, watch::Sender<Option<Arc<str>>>)> {
        self.live
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .iter()
            .filter(|(_, l)| l.running)
            .map(|(id, l)| (id.clone(), l.cancel.clone()))
            .collect()
    }
}
