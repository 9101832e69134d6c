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
use crate::scope::Scope;
use crate::session::SessionState;

/// A job of a tool its session is not offered is refused at once, as one
/// of an unknown tool is (`offer.rs`; the pipeline checks again when it runs).
fn offered(jobs: &Jobs, state: &SessionState, call: &Admitted) -> Result<(), JobError> {
    jobs.gateway()
        .host()
        .offer_in(state)
        .check(call.info())
        .map_err(|e| JobError::BadRequest(e.to_string()))
}

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

impl<'j> JobScope<'j> {
    /// The gateway on behalf of the same caller: the sessions it may see
    /// and act in.
    fn gateway(self) -> Scope<'j> {
        self.jobs.gateway().scope(self.caller)
    }

    /// Queues a call to `tool` in a session the caller may act in (id or
    /// name) and returns the job at once; it runs when a slot is free. A bad
    /// request (unknown tool, input that is not JSON, fails the tool's schema
    /// or is too large) is refused first: nothing is queued or logged.
    pub async fn spawn_call(
        self,
        session: &str,
        tool: &str,
        input: &str,
    ) -> Result<JobInfo, JobError> {
        self.spawn(session, self.jobs.admit(tool, input)?).await
    }

    /// Checks a call to `tool` and persists it as a queued job of a session
    /// the caller may act in, without running it: a process that runs jobs
    /// ([`Jobs::recover`]) will. For callers that hand the data dir over,
    /// like the CLI. Bad requests are refused as in [`JobScope::spawn_call`].
    pub async fn enqueue(
        self,
        session: &str,
        tool: &str,
        input: &str,
    ) -> Result<JobInfo, JobError> {
        let call = self.jobs.admit(tool, input)?;
        let state = self.gateway().act_session(session).await?;
        offered(self.jobs, &state, &call)?;
        let job = self.jobs.persist(&state.header.id, &call).await?;
        Ok(self.shown(job))
    }

    /// Spawns an admitted call as a job of a session the caller may act in.
    pub async fn spawn(self, session: &str, call: Admitted) -> Result<JobInfo, JobError> {
        let caller = self.caller;
        let state = self.gateway().act_session(session).await?;
        offered(self.jobs, &state, &call)?;
        let counted = (!caller.is_operator()).then_some(caller.name.as_str());
        let job = self
            .jobs
            .spawn_counted(&state.header.id, call, counted)
            .await?;
        Ok(self.shown(job))
    }

    /// The job, if it is of a session the caller may see: an agent's look
    /// at an ended job marks its result as read ([`Self::status`]), an
    /// operator's does not.
    pub async fn show(self, id: &str) -> Result<JobInfo, JobError> {
        if self.caller.is_operator() {
            self.seen(id)?;
            return self.jobs.peek(id).map(|job| self.shown(job));
        }
        self.status(id).await
    }

    /// The job, if it is of a session the caller may see.
    pub async fn status(self, id: &str) -> Result<JobInfo, JobError> {
        // Seen first (its record alone): only a caller it is shown to reads it.
        self.seen(id)?;
        self.jobs.status(id).map(|job| self.shown(job))
    }

    /// `job` as it is shown: a secret's value in the input it was spawned
    /// with masked (threat 60; its result was masked when its call ran).
    fn shown(&self, mut job: JobInfo) -> JobInfo {
        self.mask(&mut job);
        job
    }

    /// [`Self::shown`] in place.
    fn mask(&self, job: &mut JobInfo) {
        let host = self.jobs.gateway().host();
        if let std::borrow::Cow::Owned(shown) = host.config().secrets.mask(&job.input) {
            job.input = shown;
        }
    }

    /// Cancels a job of the caller's (a queued one never runs; a final one
    /// is returned as it is, not marked as read).
    pub async fn cancel(self, id: &str) -> Result<JobInfo, JobError> {
        self.seen(id)?;
        self.jobs.cancel(id).await.map(|job| self.shown(job))
    }

    /// Waits until every job (`All`) or one of them (`First`) of the
    /// caller's is final, or the timeout passes: `None` waits the runner's
    /// `default_wait`, and no wait is longer than its `max_wait`. A job that
    /// is not the caller's is "not found", and nothing is waited for.
    pub async fn wait(
        self,
        ids: &[String],
        mode: WaitMode,
        timeout: Option<std::time::Duration>,
    ) -> Result<WaitOutcome, JobError> {
        for id in crate::jobs::runner::wait_set(ids)? {
            self.seen(id)?;
        }
        let mut outcome = self.jobs.wait(ids, mode, timeout).await?;
        for job in outcome.done.iter_mut().chain(outcome.pending.iter_mut()) {
            self.mask(job);
        }
        Ok(outcome)
    }

    /// A page of the jobs of the caller's sessions, oldest first, optionally
    /// of one session (id or name) and status: their records without bodies
    /// (sizes and digests instead). An agent's listing without a
    /// session reads the index of the sessions it owns, never another's jobs.
    pub async fn list(
        self,
        session: Option<&str>,
        status: Option<JobStatus>,
        page: &PageRequest,
    ) -> Result<Page<JobSummary>, JobError> {
        let caller = self.caller;
        let session = match session {
            Some(key) => Some(self.gateway().session(key).await?.header.id),
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

    /// Job `id`'s record, if it is of a session the caller may see: looked
    /// at alone, so the check marks nothing as read.
    fn seen(self, id: &str) -> Result<JobSummary, JobError> {
        self.visible(self.jobs.summary(id)?)
    }

    fn visible(self, job: JobSummary) -> Result<JobSummary, JobError> {
        if self.jobs.gateway().sees_session(self.caller, &job.session) {
            Ok(job)
        } else {
            Err(JobError::NotFound(job.id))
        }
    }
}
