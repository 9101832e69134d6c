//! The jobs runner on behalf of a caller: only the jobs of sessions the
//! caller may see exist for it; another's job is "not found". An agent's
//! spawns count toward its `quotas.jobs_per_principal`.
//!
//! The runner is not part of the gateway (a server starts one over it), so
//! its scope is made from the runner: [`Jobs::scope`].

use std::sync::Arc;

use crate::jobs::{
    JobError, JobInfo, JobQuery, JobStatus, JobSummary, Jobs, WaitMode, WaitOutcome,
};
use crate::manifest::Principal;
use crate::page::{Page, PageRequest};
use crate::pipeline::Admitted;

/// The jobs runner bound to one caller; cheap: two references. Made by
/// [`Jobs::scope`].
#[derive(Clone, Copy)]
pub struct JobScope<'j> {
    jobs: &'j Arc<Jobs>,
    caller: &'j Principal,
}

impl Jobs {
    /// The runner on behalf of `caller` (see [`JobScope`]).
    pub fn scope<'j>(self: &'j Arc<Self>, caller: &'j Principal) -> JobScope<'j> {
        JobScope { jobs: self, caller }
    }
}

impl JobScope<'_> {
    /// Spawns an admitted call as a job of a session the caller may act in.
    pub async fn spawn(self, session: &str, call: Admitted) -> Result<JobInfo, JobError> {
        let caller = self.caller;
        let state = self
            .jobs
            .gateway()
            .scope(caller)
            .act_session(session)
            .await?;
        let counted = (!caller.is_operator()).then_some(caller.name.as_str());
        self.jobs
            .spawn_counted(&state.header.id, call, counted)
            .await
    }

    /// The job, if it is of a session the caller may see.
    pub async fn status(self, id: &str) -> Result<JobInfo, JobError> {
        // Seen first (its record alone): only a caller it is shown to reads it.
        self.visible(self.jobs.summary(id)?)?;
        self.jobs.status(id)
    }

    /// Cancels a job of the caller's.
    pub async fn cancel(self, id: &str) -> Result<JobInfo, JobError> {
        self.status(id).await?;
        self.jobs.cancel(id).await
    }

    /// Waits for jobs of the caller's (see [`Jobs::wait`]); one that is not
    /// is "not found", and nothing is waited for.
    pub async fn wait(
        self,
        ids: &[String],
        mode: WaitMode,
        timeout: Option<std::time::Duration>,
    ) -> Result<WaitOutcome, JobError> {
        for id in crate::jobs::runner::wait_set(ids)? {
            self.status(id).await?;
        }
        self.jobs.wait(ids, mode, timeout).await
    }

    /// A page of the jobs of the caller's sessions, optionally of one
    /// session and status (see [`Jobs::list`]). An agent's listing without a
    /// session reads the index of the sessions it owns, never another's jobs.
    pub async fn list(
        self,
        session: Option<&str>,
        status: Option<JobStatus>,
        page: &PageRequest,
    ) -> Result<Page<JobSummary>, JobError> {
        let caller = self.caller;
        let session = match session {
            Some(key) => Some(
                self.jobs
                    .gateway()
                    .scope(caller)
                    .session(key)
                    .await?
                    .header
                    .id,
            ),
            None => None,
        };
        let owner = (session.is_none() && !caller.is_operator()).then(|| caller.name.clone());
        let query = JobQuery {
            session,
            owner,
            status,
        };
        self.jobs.list_query(&query, page)
    }

    fn visible(self, job: JobSummary) -> Result<JobSummary, JobError> {
        if self.jobs.gateway().sees_session(self.caller, &job.session) {
            Ok(job)
        } else {
            Err(JobError::NotFound(job.id))
        }
    }
}
