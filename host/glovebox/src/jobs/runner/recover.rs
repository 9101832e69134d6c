//! Recovery: at a host's start, and on a shared store every third of the
//! lease TTL, the jobs nobody runs are taken to run here (see
//! [`Jobs::recover`] for the rules).

use std::sync::atomic::Ordering;
use std::sync::{Arc, PoisonError};
use std::time::Duration;

use glovebox_ledger::jobs::{JobError, JobStatus, JobSummary, ResultSummary};

use super::{Jobs, blocking, failed_result};

/// Records that the host stopped while job `j` was running (`why` is
/// appended to the message): re-queued if its tool is idempotent, else
/// `interrupted`. `false` (nothing changed) if it was not running. The one
/// rule for a restart's recovery and a shutdown's grace period alike.
pub(super) fn stopped_running(j: &mut JobSummary, now: u64, why: &str) -> bool {
    if j.status != JobStatus::Running {
        return false;
    }
    let message = format!(
        "the host stopped while the job was running (attempt {}){why}",
        j.attempts
    );
    let (status, message) = if j.idempotent {
        (
            JobStatus::Queued,
            format!("{message}; re-queued: its tool is idempotent"),
        )
    } else {
        (
            JobStatus::Interrupted,
            format!(
                "{message}; not re-run: its tool is not idempotent, so it may have had effects (spawn it again if it is safe)"
            ),
        )
    };
    j.status = status;
    if status.is_final() {
        j.finished_at_ms = Some(now);
    }
    j.result = Some(ResultSummary::of(&failed_result("interrupted", message), j.attempts).0);
    true
}

/// Who else may own a job, as this process sees it at one moment: what
/// the pass over the stored jobs and the work queue's deliveries both ask.
pub(super) struct Owners {
    sessions: Arc<crate::session::Sessions>,
    /// This process's runner name.
    me: String,
    now: u64,
    /// The lease TTL, on a shared store.
    ttl_ms: Option<u64>,
}

impl Owners {
    /// Whether `job` (not final) is another live host's on a shared store:
    /// that host drives the job's session (holds its lease), or started
    /// the job less than a TTL ago (its first append, which takes the
    /// lease, may be on its way).
    pub(super) fn anothers(&self, job: &JobSummary) -> Result<bool, JobError> {
        let Some(ttl_ms) = self.ttl_ms else {
            return Ok(false);
        };
        let just_started = job.status == JobStatus::Running
            && job.runner.as_deref() != Some(self.me.as_str())
            && self.now.saturating_sub(job.started_at_ms.unwrap_or(0)) < ttl_ms;
        Ok(just_started || self.sessions.leased_elsewhere(&job.session)?)
    }
}

impl Jobs {
    /// Run at host start, before jobs are spawned: queued jobs are queued to
    /// run again; jobs left running by a process that stopped become
    /// `interrupted`, and are re-queued (to run again) only if their tool is
    /// idempotent. Returns those jobs as they are now.
    ///
    /// On a store several hosts share (session leases: `[storage] backend =
    /// "nats"`), a job is another host's while that host drives its session
    /// (holds the session's lease) or started it less than a lease TTL ago
    /// (its first append, which takes the lease, may be on its way): those
    /// are left alone. A job whose host died is this host's once the
    /// session's lease expired. Since a host may die at any time, the same
    /// pass then runs every third of the lease TTL for as long as `self`
    /// lives; and since every start is a compare-and-set of the record
    /// ([`JobStore::update`]), of the hosts finding one queued job exactly
    /// one runs it.
    ///
    /// There, too, every job spawned or queued is pushed on the store's work
    /// queue (`jobs`, a JetStream work-queue stream), and from here on this
    /// process pulls from it whenever it has a slot free and nothing waiting
    /// for one: a job reaches whichever host is free at once, not at the
    /// next pass, and the spawning principals take turns. A delivery is this host's while the job is live here
    /// (kept alive every third of its ack wait, the lease TTL) and is
    /// acknowledged once the job is final; a host that dies holding one
    /// stops keeping it alive, so it comes back to another host after the
    /// ack wait, which then finds the job's record `running` under a
    /// session lease that expired and applies the same rules as the pass.
    /// The pass stays, for the jobs whose message never made it to the
    /// queue (the host died between storing the job and pushing it).
    pub async fn recover(self: &Arc<Self>) -> Result<Vec<JobSummary>, JobError> {
        let recovered = self.sweep().await?;
        if let Some(queue) = self.work_queue().await? {
            self.start_pulling(queue);
        }
        let sessions = self.gateway.sessions();
        if let Some(period) = sessions.lease_renewal_period() {
            let this = Arc::downgrade(self);
            let pass = crate::tasks::every(period.max(Duration::from_millis(100)), move || {
                let this = this.clone();
                async move {
                    let Some(jobs) = this.upgrade() else { return };
                    if jobs.stopping.load(Ordering::SeqCst) {
                        return;
                    }
                    match jobs.sweep().await {
                        Ok(found) if !found.is_empty() => {
                            tracing::info!(
                                jobs = found.len(),
                                "took over background jobs nobody ran"
                            );
                        }
                        Ok(_) => {}
                        Err(e) => {
                            tracing::warn!(error = %e, "the pass over unrun background jobs failed")
                        }
                    }
                }
            });
            *self.sweeper.lock().unwrap_or_else(PoisonError::into_inner) = Some(pass);
        }
        Ok(recovered)
    }

    /// One pass of [`Jobs::recover`]: the stored jobs that are not final and
    /// not this process's to run already, minus other live hosts' (on a
    /// shared store), queued to run here; those left running by a host that
    /// stopped are ended or re-queued first.
    ///
    /// With a work queue, a queued job reaches a host through the queue, in
    /// its spawner's turn. The pass takes only queued jobs the queue may
    /// have lost (queued more than a TTL ago: their host may have died
    /// between storing and pushing them), the oldest first and no more than
    /// `max_running` a pass, so it cannot gather a backlog into this host's
    /// own first-in, first-out queue.
    async fn sweep(self: &Arc<Self>) -> Result<Vec<JobSummary>, JobError> {
        let has_queue = matches!(self.work_queue().await, Ok(Some(_)));
        let queued_budget = has_queue.then_some(self.config.max_running);
        let (store, owners) = (self.store.clone(), self.owners());
        let jobs = blocking(move || -> Result<Vec<JobSummary>, JobError> {
            let mut orphans = Vec::new();
            let mut lost = Vec::new();
            // The live jobs only: their index, never the finished ones.
            for job in store.live(owners.now)? {
                if job.status.is_final() || owners.anothers(&job)? {
                    continue;
                }
                match (job.status, queued_budget, owners.ttl_ms) {
                    (JobStatus::Queued, Some(_), Some(ttl_ms)) => {
                        if owners.now.saturating_sub(job.created_at_ms) >= ttl_ms {
                            lost.push(job);
                        }
                    }
                    _ => orphans.push(job),
                }
            }
            lost.sort_by_key(|j| j.created_at_ms);
            orphans.extend(lost.into_iter().take(queued_budget.unwrap_or(0)));
            Ok(orphans)
        })
        .await?;
        let mut recovered = Vec::new();
        for job in jobs {
            if let Some(job) = self.take_over(job).await? {
                recovered.push(job);
            }
        }
        Ok(recovered)
    }

    /// Takes `job`, found in the store with no live host of its own, to run
    /// here: a queued one is queued here; one left running by a host that
    /// stopped is ended or re-queued first ([`stopped_running`]). Returns
    /// it as it is now, `None` if there was nothing to take (live here
    /// already, or changed meanwhile).
    pub(super) async fn take_over(&self, job: JobSummary) -> Result<Option<JobSummary>, JobError> {
        if self.is_live(&job.id) {
            return Ok(None);
        }
        match job.status {
            JobStatus::Queued => {
                self.start(&job);
                Ok(Some(job))
            }
            JobStatus::Running => {
                let now = self.now();
                let why = match &job.runner {
                    Some(runner) if *runner != self.runner => format!(" on `{runner}`"),
                    _ => String::new(),
                };
                let (job, changed) = self
                    .update(&job.id, move |j| stopped_running(j, now, &why))
                    .await?;
                if !changed {
                    return Ok(None);
                }
                tracing::warn!(job = %job.id, tool = %job.tool, status = %job.status, "job was running when its host stopped");
                if job.status == JobStatus::Queued {
                    self.start(&job);
                }
                Ok(Some(job))
            }
            // Its approval may have been settled where no runner heard it.
            JobStatus::AwaitingApproval => self.reconcile(&job).await,
            _ => Ok(None),
        }
    }

    /// Who else may own a job, now.
    pub(super) fn owners(&self) -> Owners {
        let sessions = self.gateway.sessions().clone();
        let ttl_ms = sessions
            .lease_ttl()
            .map(|ttl| u64::try_from(ttl.as_millis()).unwrap_or(u64::MAX));
        Owners {
            sessions,
            me: self.runner.clone(),
            now: self.now(),
            ttl_ms,
        }
    }
}
