//! The jobs' work queue on a store several hosts share (`[storage] backend
//! = "nats"`): pushing every job stored, pulling while this process has
//! room, holding a delivery while its job is live here, and answering for
//! it once the job leaves (see [`Jobs::recover`] for the rules).

use std::sync::atomic::Ordering;
use std::sync::{Arc, PoisonError, Weak};
use std::time::Duration;

use glovebox_ledger::jobs::{JobError, JobStatus};

use super::{Jobs, blocking};
use crate::storage::{Delivery, WorkQueue};

/// What a host answers for a job's message from the work queue.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Answer {
    /// The job is final (or gone): acknowledged, never delivered again.
    Done,
    /// Handed back to be delivered again at once (a job this host will not
    /// run: it stops).
    Now,
    /// Handed back to be delivered again after a third of the ack wait
    /// (another live host has the job, or it could not be read).
    Later,
    /// Held while the job is live here.
    Hold,
}

/// Pulls jobs from `queue` whenever `jobs` has room for one, until `jobs`
/// is dropped or stops.
async fn pull_jobs(jobs: Weak<Jobs>, queue: Arc<dyn WorkQueue>) {
    /// How long one pull waits for a message before looking at the room again.
    const PULL_WAIT: Duration = Duration::from_secs(1);
    loop {
        let room = match jobs.upgrade() {
            Some(jobs) if jobs.stopping.load(Ordering::SeqCst) => return,
            Some(jobs) => jobs.has_room(),
            None => return,
        };
        if !room {
            tokio::time::sleep(Duration::from_millis(50)).await;
            continue;
        }
        let from = queue.clone();
        let pulled = blocking(move || Ok(from.pull(PULL_WAIT)?)).await;
        match pulled {
            Ok(None) => {}
            Ok(Some(delivery)) => {
                let Some(jobs) = jobs.upgrade() else { return };
                jobs.delivered(Arc::from(delivery)).await;
            }
            Err(e) => {
                tracing::warn!(error = %e, "pulling from the jobs' work queue failed; trying again");
                tokio::time::sleep(PULL_WAIT).await;
            }
        }
    }
}

impl Jobs {
    /// The store's work queue of jobs, on a store several hosts share
    /// (opened once; `None` on the embedded stores, where this process's
    /// own queue is all there is).
    pub(super) async fn work_queue(&self) -> Result<Option<Arc<dyn WorkQueue>>, JobError> {
        let Some(ttl) = self.gateway.sessions().lease_ttl() else {
            return Ok(None);
        };
        let storage = self.gateway.ledger().storage.clone();
        self.work
            .get_or_try_init(|| blocking(move || Ok(storage.work_queue("jobs", ttl)?)))
            .await
            .cloned()
    }

    /// Pushes `job` (stored already) on the work queue, if the store has
    /// one. A push that fails is logged: the job is stored, and the hosts'
    /// pass over the stored jobs finds it.
    pub(super) async fn push(&self, id: &str, by: Option<&str>) {
        let queue = match self.work_queue().await {
            Ok(Some(queue)) => queue,
            Ok(None) => return,
            Err(e) => {
                tracing::warn!(job = %id, error = %e, "the jobs' work queue cannot be opened; the job is stored, and the hosts' pass over the stored jobs will find it");
                return;
            }
        };
        // The groups that take turns are the spawners (`by`: a principal,
        // or the operator's `cli:<uid>`, or `host`).
        let (item, group) = (id.to_string(), by.unwrap_or("host").to_string());
        if let Err(e) = blocking(move || Ok(queue.push(&item, &group)?)).await {
            tracing::warn!(job = %id, error = %e, "the job could not be pushed on the work queue; it is stored, and the hosts' pass over the stored jobs will find it");
        }
    }

    /// Starts the tasks that pull jobs from `queue` while this process has
    /// room for them, and keep the deliveries it holds alive.
    pub(super) fn start_pulling(self: &Arc<Self>, queue: Arc<dyn WorkQueue>) {
        let mut pulling = self.pulling.lock().unwrap_or_else(PoisonError::into_inner);
        if !pulling.is_empty() {
            return;
        }
        let this = Arc::downgrade(self);
        let keep_alive = (queue.ack_wait() / 3).max(Duration::from_millis(100));
        pulling.push(crate::tasks::owned(pull_jobs(this.clone(), queue)));
        pulling.push(crate::tasks::every(keep_alive, move || {
            let this = this.clone();
            async move {
                let Some(jobs) = this.upgrade() else { return };
                let held: Vec<_> = jobs
                    .deliveries
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .values()
                    .cloned()
                    .collect();
                drop(jobs);
                let kept = blocking(move || {
                    for delivery in held {
                        delivery.in_progress()?;
                    }
                    Ok(())
                })
                .await;
                if let Err(e) = kept {
                    tracing::warn!(error = %e, "the jobs held from the work queue could not be kept; they may be delivered to another host, which finds them running here and leaves them");
                }
            }
        }));
    }

    /// Whether this process should pull another job: a slot is free and no
    /// job here waits for one.
    fn has_room(&self) -> bool {
        self.permits.available_permits() > 0
            && !self
                .live
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .values()
                .any(|l| !l.running)
    }

    /// A job's message from the work queue: run it here if it is nobody
    /// else's, and hold the delivery while it is live here; else hand the
    /// message back (another live host has it: it comes back later, until
    /// the job is final) or acknowledge it (the job is final, or gone).
    async fn delivered(&self, delivery: Arc<dyn Delivery>) {
        let id = delivery.item().to_string();
        let (store, owners) = (self.store.clone(), self.owners());
        let key = id.clone();
        let found = blocking(move || match store.summary(&key) {
            Ok(job) => {
                let elsewhere = !job.status.is_final() && owners.anothers(&job)?;
                Ok(Some((job, elsewhere)))
            }
            Err(JobError::NotFound(_)) => Ok(None),
            Err(e) => Err(e),
        })
        .await;
        let answer = match found {
            Err(e) => {
                tracing::warn!(job = %id, error = %e, "a job from the work queue could not be read; handed back");
                Answer::Later
            }
            Ok(None) => Answer::Done,
            Ok(Some((job, _))) if job.status.is_final() => Answer::Done,
            // This host stops, and its pull was under way: it takes nothing
            // new, and the message goes back at once for a host that runs
            // (handed back for later, the job would wait a third of the ack
            // wait, or the other hosts' next pass over the stored jobs).
            Ok(Some(_)) if self.stopping.load(Ordering::SeqCst) => Answer::Now,
            Ok(Some(_)) if self.is_live(&id) => Answer::Hold,
            Ok(Some((_, true))) => Answer::Later,
            Ok(Some((job, false))) => match self.take_over(job).await {
                Ok(_) if self.is_live(&id) => Answer::Hold,
                Ok(_) => Answer::Later,
                Err(e) => {
                    tracing::warn!(job = %id, error = %e, "a job from the work queue could not be taken over; handed back");
                    Answer::Later
                }
            },
        };
        if answer == Answer::Hold {
            let second = {
                let mut held = self
                    .deliveries
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner);
                if held.contains_key(&id) {
                    Some(delivery)
                } else {
                    held.insert(id.clone(), delivery);
                    None
                }
            };
            match second {
                // A second message for a job held already: one is enough.
                Some(delivery) => self.answer(delivery, Answer::Done).await,
                // It ended before its delivery was held: answer now.
                None if !self.is_live(&id) => self.release(&id).await,
                None => {}
            }
            return;
        }
        self.answer(delivery, answer).await;
    }

    /// Acknowledges or hands back `delivery`, logging what fails (a
    /// delivery not answered comes back after its ack wait anyway).
    async fn answer(&self, delivery: Arc<dyn Delivery>, answer: Answer) {
        let later = self
            .work
            .get()
            .and_then(Option::as_ref)
            .map_or(Duration::from_secs(1), |q| q.ack_wait() / 3);
        let item = delivery.item().to_string();
        let answered = blocking(move || {
            match answer {
                Answer::Done => delivery.ack()?,
                Answer::Now => delivery.nak(Duration::ZERO)?,
                Answer::Later | Answer::Hold => delivery.nak(later)?,
            }
            Ok(())
        })
        .await;
        if let Err(e) = answered {
            tracing::warn!(job = %item, error = %e, "a job's message could not be answered; it comes back after its ack wait");
        }
    }

    /// Job `id` left this process: the delivery held for it, if any, is
    /// acknowledged when the job is final, else handed back (at once for a
    /// queued job, which another host may run now).
    pub(super) async fn release(&self, id: &str) {
        let Some(delivery) = self
            .deliveries
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(id)
        else {
            return;
        };
        let store = self.store.clone();
        let key = id.to_string();
        let answer = match blocking(move || store.summary(&key)).await {
            // Final, or waiting for an approval: no host needs to hold it
            // (the approval's settlement, or the recovery pass, ends it).
            Ok(job) if job.status.is_final() || job.status == JobStatus::AwaitingApproval => {
                Answer::Done
            }
            Ok(job) if job.status == JobStatus::Queued => Answer::Now,
            Ok(_) => Answer::Later,
            Err(JobError::NotFound(_)) => Answer::Done,
            Err(_) => Answer::Later,
        };
        self.answer(delivery, answer).await;
    }
}
