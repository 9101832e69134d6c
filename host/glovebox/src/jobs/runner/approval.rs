//! A job whose call a permission hook sent to a human: how it waits, and
//! how it takes the approval's settlement.
//!
//! Why no task waits: a human may take hours, and a task or a run slot
//! held that long per job is growth nothing bounds. So the job's record
//! says `awaiting_approval` and names the approval (`approval`); it holds
//! no slot and no place among the live jobs, and what bounds how many wait
//! is the approvals' own quota (`quotas.approvals_per_principal`).
//!
//! Whoever settles the approval (an operator's `glovebox approve`, the
//! client's `tasks/update` or `approval_*` tools, the expiry sweep, the
//! session's end) hands the settlement to the runners listening
//! (`settled.rs`): approved, the call ran in the approver's request and its
//! report becomes the job's result (its attempt counted); denied, the job
//! fails with the denial. A settlement no runner heard (its host stopped
//! first) is found by the recovery pass ([`Jobs::reconcile`]): denied, the
//! job fails as above; approved, the report never reached the job, which
//! ends `interrupted` and says where the call's outcome is.
//!
//! A cancelled job's pending approval is denied (by `host`), so nobody
//! runs a call whose job is gone.

use glovebox_ledger::jobs::{JobError, JobResult, JobStatus, JobSummary};

use super::run::outcome;
use super::{Jobs, blocking, failed_result};
use crate::approvals::{Approval, ApprovalStatus};
use crate::manifest::Principal;
use crate::settled::{JobListener, Settled, denied_call, settled_in_store};

/// Who denies the approval of a job that was cancelled.
const HOST: &str = "host";

impl JobListener for Jobs {
    fn settled(&self, approval: &Approval, settled: &Settled) {
        let (Some(jobs), Some(job)) = (self.this.upgrade(), approval.job.clone()) else {
            return;
        };
        // Outside a runtime (a command that has none) nobody takes it now:
        // the next recovery pass does.
        if tokio::runtime::Handle::try_current().is_err() {
            return;
        }
        let (approval, settled) = (approval.clone(), settled.clone());
        crate::tasks::host_task(async move {
            jobs.take_settlement(&job, &approval, settled).await;
        });
    }
}

/// Whether job `j` waits for approval `id`: it says so, or its call was
/// just refused for it and the runner has not stored that yet (the record
/// is still `running`, naming no approval).
fn waits_for(j: &JobSummary, id: &str) -> bool {
    match j.status {
        JobStatus::AwaitingApproval => j.approval.as_deref() == Some(id),
        JobStatus::Running => j.approval.is_none(),
        _ => false,
    }
}

impl Jobs {
    /// Gives job `id` how `approval`, which it waits for, was `settled`:
    /// the approved call's result, or the denial. Nothing changes when the
    /// job does not wait for it (any more). Returns the job as it is now.
    pub(crate) async fn take_settlement(
        &self,
        id: &str,
        approval: &Approval,
        settled: Settled,
    ) -> Option<JobSummary> {
        let ran = matches!(settled, Settled::Ran(_));
        let (status, result, next) = match settled {
            Settled::Ran(report) => outcome(Ok(report)),
            Settled::Denied(denied) => (JobStatus::Failed, refused(&denied), None),
            Settled::RanElsewhere(approved) => (JobStatus::Interrupted, elsewhere(&approved), None),
        };
        let (store, key) = (self.store.clone(), id.to_string());
        let job = match blocking(move || store.summary(&key)).await {
            Ok(job) if waits_for(&job, &approval.id) => job,
            Ok(_) => return None,
            Err(e) => {
                tracing::warn!(job = %id, approval = %approval.id, error = %e, "the job's record could not be read to take its approval's settlement; the recovery pass takes it");
                return None;
            }
        };
        // The approved call ran: one more attempt, its result kept apart
        // under that attempt when large.
        let attempt = job.attempts + u32::from(ran);
        let (store, staged_job) = (self.store.clone(), job.clone());
        let staged = match blocking(move || store.stage_result(&staged_job, attempt, &result)).await
        {
            Ok(staged) => staged,
            Err(e) => {
                tracing::error!(job = %id, approval = %approval.id, error = %e, "the approved call's result could not be stored for its job; the recovery pass ends the job");
                return None;
            }
        };
        let now = self.now();
        let (summary, waited) = (staged.summary.clone(), approval.id.clone());
        let taken = self
            .update(id, move |j| {
                if !waits_for(j, &waited) {
                    return false;
                }
                j.status = status;
                j.finished_at_ms = status.is_final().then_some(now);
                j.result = Some(summary.clone());
                j.attempts = attempt;
                // A second hook may ask again: the job then waits for that one.
                j.approval = Some(next.clone().unwrap_or_else(|| waited.clone()));
                true
            })
            .await;
        let record = match taken {
            Ok((record, _)) => record,
            Err(e) => {
                tracing::error!(job = %id, approval = %approval.id, error = %e, "the job could not take its approval's settlement; the recovery pass ends it");
                return None;
            }
        };
        let (store, kept) = (self.store.clone(), record.clone());
        let _ = blocking(move || {
            store.settle_result(&staged, &kept);
            Ok(())
        })
        .await;
        Some(record)
    }

    /// The recovery pass's look at job `job`, which awaits an approval:
    /// ended when the approval was settled where no runner heard it, or is
    /// gone. Returns the job as it is now when it changed.
    pub(super) async fn reconcile(&self, job: &JobSummary) -> Result<Option<JobSummary>, JobError> {
        let Some(id) = job.approval.clone() else {
            return Ok(None);
        };
        let approvals = self.gateway.ledger().approvals.clone();
        let read = {
            let id = id.clone();
            blocking(move || Ok(approvals.get(&id))).await?
        };
        let approval = match read {
            Ok(approval) => approval,
            Err(crate::session::SessionError::InvalidInput(_)) => {
                return self.approval_gone(job, &id).await;
            }
            Err(e) => {
                return Err(JobError::Storage(crate::storage::StorageError::Io(
                    format!("approval `{id}` of job {}: {e}", job.id),
                )));
            }
        };
        // Settled as the store says (still pending: nothing to take).
        let Some(settled) = settled_in_store(approval.clone()) else {
            return Ok(None);
        };
        Ok(self.take_settlement(&job.id, &approval, settled).await)
    }

    /// Ends job `job`, whose approval `id` is no longer stored.
    async fn approval_gone(
        &self,
        job: &JobSummary,
        id: &str,
    ) -> Result<Option<JobSummary>, JobError> {
        let now = self.now();
        let (waited, message) = (
            id.to_string(),
            format!(
                "approval `{id}`, which the job's call waited for, is no longer stored: spawn the job again if it should run"
            ),
        );
        let gone = failed_result("awaiting_approval", message);
        let (record, changed) = self
            .update(&job.id, move |j| {
                if !waits_for(j, &waited) {
                    return false;
                }
                j.status = JobStatus::Failed;
                j.finished_at_ms = Some(now);
                j.result = Some(glovebox_ledger::jobs::ResultSummary::of(&gone, j.attempts).0);
                true
            })
            .await?;
        Ok(changed.then_some(record))
    }

    /// Denies approval `id`, which cancelled job `job` waited for, so its
    /// call never runs.
    pub(super) async fn deny_for_cancelled(&self, job: &str, id: &str) {
        let host = Principal::operator(HOST);
        let why = format!("its background job {job} was cancelled");
        match self.gateway.scope(&host).approvals().deny(id, &why).await {
            Ok(_) => {}
            // Settled meanwhile by someone else.
            Err(crate::session::SessionError::InvalidInput(_)) => {}
            Err(e) => {
                tracing::warn!(job = %job, approval = %id, error = %e, "the approval of a cancelled job could not be denied; it stays pending for an operator");
            }
        }
    }
}

/// A denied approval as its job's result.
fn refused(approval: &Approval) -> JobResult {
    let refusal = denied_call(approval);
    failed_result(refusal.kind(), refusal.to_string())
}

/// An approval approved where no runner heard it, as its job's result.
fn elsewhere(approval: &Approval) -> JobResult {
    let by = match &approval.status {
        ApprovalStatus::Approved { by: Some(by), .. } => format!(" by {by}"),
        _ => String::new(),
    };
    failed_result(
        "approved_elsewhere",
        format!(
            "approval {} was approved{by} and the call ran, but its result did not reach this job (the approving host stopped first): the call's outcome is in session {}'s log, after the approval",
            approval.id, approval.session
        ),
    )
}
