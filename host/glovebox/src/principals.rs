//! Who is calling: the gateway's entry points on behalf of a [`Principal`].
//!
//! Adapters authenticate a connection (a token over HTTP, the operator's
//! word over stdio) and then go through these methods, which enforce the
//! ledger's ownership rules (see `glovebox_ledger::session::access`): a
//! session, its calls and its jobs are its owner's and operators' only, and
//! anything else is "not found". The command line acts as the operator
//! `cli:<uid>` ([`cli_operator`]) and keeps the unscoped methods.

use std::collections::HashSet;
use std::sync::Arc;

use crate::approvals::Approval;
use crate::budget::UsageReport;
use crate::call::CallReport;
use crate::gateway::Gateway;
use crate::jobs::{
    JobError, JobInfo, JobQuery, JobStatus, JobSummary, Jobs, WaitMode, WaitOutcome,
};
use crate::manifest::{self, Principal};
use crate::page::{Page, PageRequest};
use crate::pipeline::{Admitted, Judge, ledger_work};
use crate::session::{
    EndOutcome, Event, EventKind, Handoff, Resumed, SessionError, SessionFilter, SessionInfo,
    SessionState, StartSession, check_ceiling, may_touch,
};

/// The operator at the command line: `cli:<uid>` (the uid that runs the
/// command; `cli:unknown` where there is none).
pub fn cli_operator() -> Principal {
    #[cfg(unix)]
    let uid = rustix::process::getuid().as_raw().to_string();
    #[cfg(not(unix))]
    let uid = "unknown".to_string();
    Principal::operator(format!("cli:{uid}"))
}

impl Gateway {
    /// Whether the config declares principals (then HTTP needs a token).
    pub fn has_principals(&self) -> bool {
        !self.host().config().principals.is_empty()
    }

    /// The declared principal whose token `token` is (compared in constant
    /// time against every credential).
    pub fn authenticate(&self, token: &str) -> Option<Principal> {
        manifest::authenticate(&self.host().config().principals, token).map(|p| p.principal.clone())
    }

    /// The declared principal called `name`.
    pub fn principal(&self, name: &str) -> Option<Principal> {
        self.host()
            .config()
            .principals
            .iter()
            .find(|p| p.principal.name == name)
            .map(|p| p.principal.clone())
    }

    /// Who `name` is under the config served now: the declared principal
    /// of that name (its kind, roles, projects, tags and `approve_by` as
    /// the config says them now), or the built-in `local` agent while no
    /// principal is declared. `None`: nobody by that name any more (a reload
    /// removed it); a connection of it must not be served. Adapters ask
    /// this at every request, so a reload reaches open connections.
    pub fn current_principal(&self, name: &str) -> Option<Principal> {
        if !self.has_principals() {
            return (name == manifest::LOCAL_PRINCIPAL).then(Principal::local);
        }
        self.principal(name)
    }

    /// Who a stdio connection is when the operator did not say (`serve`
    /// without `--as`): the one declared agent, or the built-in `local`
    /// agent when there is none. With several agents the operator must
    /// name one.
    pub fn default_stdio_principal(&self) -> Result<Principal, String> {
        let host = self.host();
        let agents: Vec<&Principal> = host
            .config()
            .principals
            .iter()
            .map(|p| &p.principal)
            .filter(|p| !p.is_operator())
            .collect();
        match agents.as_slice() {
            [] => Ok(Principal::local()),
            [one] => Ok((*one).clone()),
            many => Err(format!(
                "the config declares {} agent principals: name the one this connection is with `serve --as NAME` ({})",
                many.len(),
                many.iter()
                    .map(|p| p.name.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            )),
        }
    }

    fn reserved_tags(&self) -> HashSet<String> {
        manifest::pinned_tags(&self.host().config().principals)
    }

    /// Calls `tool` in `session` (id or name) on behalf of `caller`: another
    /// principal's session is "not found". See [`Gateway::call`].
    pub async fn call_as(
        &self,
        caller: &Principal,
        session: &str,
        call: Admitted,
        job_id: Option<String>,
        cancel: Option<crate::pipeline::Cancel>,
    ) -> Result<CallReport, SessionError> {
        // One look at the session, the caller's: the stages run on it. From
        // the ledger's cache when it can answer at once, sparing the
        // blocking work (and taking this thread out of the async workers).
        let state = match self.sessions().show_cached_as(caller, session) {
            Some(state) => state?,
            None => self.session_as(caller, session).await?,
        };
        // Acting in it: its role within the caller's roles now (threat 52).
        check_ceiling(caller, &state)?;
        // The call is the caller's: its records, and the quotas, say so
        // (its log lines still go where the entry point sent them).
        crate::tasks::acting_with(
            caller.name.clone(),
            crate::tasks::log_sink(),
            self.run(&state, call, Judge::Hooks, job_id, cancel),
        )
        .await
    }

    /// Starts a session owned by `caller`, within its ceiling.
    pub async fn start_session_as(
        &self,
        caller: &Principal,
        start: StartSession,
    ) -> Result<SessionState, SessionError> {
        let (sessions, caller, reserved) = (
            self.sessions().clone(),
            caller.clone(),
            self.reserved_tags(),
        );
        ledger_work(move || sessions.start_as(&caller, start, &reserved)).await
    }

    /// The state of a session `caller` may see.
    pub async fn session_as(
        &self,
        caller: &Principal,
        session: &str,
    ) -> Result<SessionState, SessionError> {
        let (sessions, caller, key) =
            (self.sessions().clone(), caller.clone(), session.to_string());
        ledger_work(move || sessions.show_as(&caller, &key)).await
    }

    /// The state of a session `caller` may act in: it may see it, and its
    /// role is among the caller's roles now (see
    /// `glovebox_ledger::session::access`).
    pub async fn act_session_as(
        &self,
        caller: &Principal,
        session: &str,
    ) -> Result<SessionState, SessionError> {
        let (sessions, caller, key) =
            (self.sessions().clone(), caller.clone(), session.to_string());
        ledger_work(move || sessions.act_as(&caller, &key)).await
    }

    /// Resumes a session for `caller` (a pause the host took is refused to an agent).
    pub async fn resume_session_as(
        &self,
        caller: &Principal,
        session: &str,
    ) -> Result<Resumed, SessionError> {
        let (sessions, caller, key) =
            (self.sessions().clone(), caller.clone(), session.to_string());
        ledger_work(move || sessions.resume_as(&caller, &key)).await
    }

    /// Pauses a session for `caller`'s own reasons (it may lift that pause).
    pub async fn pause_session_as(
        &self,
        caller: &Principal,
        session: &str,
        reason: &str,
    ) -> Result<SessionState, SessionError> {
        let (sessions, caller, key, reason) = (
            self.sessions().clone(),
            caller.clone(),
            session.to_string(),
            reason.to_string(),
        );
        ledger_work(move || sessions.pause_as(&caller, &key, &reason)).await
    }

    /// Ends a session of `caller`'s.
    pub async fn end_session_as(
        &self,
        caller: &Principal,
        session: &str,
        outcome: EndOutcome,
    ) -> Result<SessionState, SessionError> {
        let (sessions, caller, key) =
            (self.sessions().clone(), caller.clone(), session.to_string());
        ledger_work(move || sessions.end_as(&caller, &key, outcome)).await
    }

    /// Writes a handoff from a session of `caller`'s, into one of its own
    /// sessions when it names a target, or into another principal's along a
    /// route of `[handoffs] routes`.
    pub async fn handoff_as(
        &self,
        caller: &Principal,
        session: &str,
        handoff: Handoff,
    ) -> Result<Event, SessionError> {
        let (sessions, caller, key) =
            (self.sessions().clone(), caller.clone(), session.to_string());
        let routes = self.host().config().handoffs.clone();
        ledger_work(move || sessions.handoff_as(&caller, &key, handoff, &routes)).await
    }

    /// Events of a session of `caller`'s.
    pub async fn events_as(
        &self,
        caller: &Principal,
        session: &str,
        from_seq: u64,
        limit: usize,
    ) -> Result<Vec<Event>, SessionError> {
        let (sessions, caller, key) =
            (self.sessions().clone(), caller.clone(), session.to_string());
        ledger_work(move || sessions.events_as(&caller, &key, from_seq, limit)).await
    }

    /// A page of the sessions of `caller` matching `filter`, newest first.
    pub async fn list_sessions_as(
        &self,
        caller: &Principal,
        filter: SessionFilter,
        page: PageRequest,
    ) -> Result<Page<SessionInfo>, SessionError> {
        let (sessions, caller) = (self.sessions().clone(), caller.clone());
        ledger_work(move || sessions.list_as(&caller, &filter, &page)).await
    }

    /// Re-runs an interrupted idempotent call of a session of `caller`'s
    /// (see [`Gateway::rerun_interrupted`]); the session is resumed as
    /// `caller` may resume it (a pause the host took stays).
    pub async fn rerun_interrupted_as(
        &self,
        caller: &Principal,
        session: &str,
        call_id: &str,
    ) -> Result<CallReport, SessionError> {
        let resumed = self.resume_session_as(caller, session).await?;
        self.rerun_resumed(resumed, session, call_id).await
    }

    /// Logs usage the brain reports into a session of `caller`'s (see
    /// [`Gateway::report_usage`]: it counts toward budgets and billing).
    pub async fn report_usage_as(
        &self,
        caller: &Principal,
        session: &str,
        usage: UsageReport,
    ) -> Result<Vec<Event>, SessionError> {
        let state = self.act_session_as(caller, session).await?;
        self.report_usage(&state.header.id, usage).await
    }

    /// Writes a progress note into a session of `caller`'s.
    pub async fn note_as(
        &self,
        caller: &Principal,
        session: &str,
        text: &str,
    ) -> Result<Event, SessionError> {
        let id = self.act_session_as(caller, session).await?.header.id;
        let (sessions, text) = (self.sessions().clone(), text.to_string());
        ledger_work(move || sessions.append(&id, EventKind::Note { text })).await
    }

    /// Approval `id`, if it is of a session `caller` may see; `None` when
    /// there is no such approval or it is another's (the same answer).
    pub async fn approval_as(
        &self,
        caller: &Principal,
        id: &str,
    ) -> Result<Option<Approval>, SessionError> {
        let (approvals, key) = (self.ledger().approvals.clone(), id.to_string());
        let found = ledger_work(move || match approvals.get(&key) {
            Ok(a) => Ok(Some(a)),
            Err(SessionError::InvalidInput(_)) => Ok(None),
            Err(e) => Err(e),
        })
        .await?;
        Ok(found.filter(|a| self.sees_session(caller, &a.session)))
    }

    /// A page of the live entries of the context index that match every
    /// word of `query` (case-insensitive), the latest added first, in
    /// `project` or in every project `caller` may touch. A project it may not touch is refused with the
    /// same words as `session_start` uses.
    pub async fn context_search_as(
        &self,
        caller: &Principal,
        query: &str,
        project: Option<&str>,
        page: &crate::page::PageRequest,
    ) -> Result<crate::page::Page<crate::rescue::IndexEntry>, SessionError> {
        if let Some(project) = project
            && !caller.may_touch(project)
        {
            return Err(SessionError::NotAllowed(format!(
                "{caller} may not touch project `{project}` (its projects: {})",
                caller.projects.join(", ")
            )));
        }
        let index = crate::rescue::ContextIndex::new(
            self.ledger().storage.clone(),
            self.host().config().context.clone(),
        );
        let (query, wanted, page) = (query.to_string(), project.map(str::to_string), page.clone());
        let mut found = ledger_work(move || {
            index
                .search(&query, wanted.as_deref(), &page)
                .map_err(|e| SessionError::InvalidInput(e.to_string()))
        })
        .await?;
        // Entries of projects the caller may not touch are left out of the
        // page (its cursor still goes on past them).
        found.items.retain(|e| caller.may_touch(&e.project));
        Ok(found)
    }

    /// Whether `caller` may see session `id` (an id, as jobs record it).
    pub(crate) fn sees_session(&self, caller: &Principal, id: &str) -> bool {
        caller.is_operator()
            || self
                .sessions()
                .show(id)
                .is_ok_and(|s| may_touch(caller, s.owner_name()))
    }
}

/// The jobs service on behalf of a principal: only the jobs of sessions the
/// caller may see exist for it; another's job is "not found".
impl Jobs {
    /// Spawns an admitted call as a job of a session of `caller`'s.
    pub async fn spawn_as(
        self: &Arc<Self>,
        caller: &Principal,
        session: &str,
        call: Admitted,
    ) -> Result<JobInfo, JobError> {
        let state = self.gateway().act_session_as(caller, session).await?;
        let counted = (!caller.is_operator()).then_some(caller.name.as_str());
        self.spawn_counted(&state.header.id, call, counted).await
    }

    /// The job, if it is of a session `caller` may see.
    pub async fn status_as(&self, caller: &Principal, id: &str) -> Result<JobInfo, JobError> {
        // Seen first (its record alone): only a caller it is shown to reads it.
        self.visible(caller, self.summary(id)?)?;
        self.status(id)
    }

    /// Cancels a job of `caller`'s.
    pub async fn cancel_as(&self, caller: &Principal, id: &str) -> Result<JobInfo, JobError> {
        self.status_as(caller, id).await?;
        self.cancel(id).await
    }

    /// Waits for jobs of `caller`'s (see [`Jobs::wait`]); one that is not is
    /// "not found", and nothing is waited for.
    pub async fn wait_as(
        &self,
        caller: &Principal,
        ids: &[String],
        mode: WaitMode,
        timeout: Option<std::time::Duration>,
    ) -> Result<WaitOutcome, JobError> {
        for id in crate::jobs::runner::wait_set(ids)? {
            self.status_as(caller, id).await?;
        }
        self.wait(ids, mode, timeout).await
    }

    /// A page of the jobs of `caller`'s sessions, optionally of one session
    /// and status (see [`Jobs::list`]). An agent's listing without a session
    /// reads the index of the sessions it owns, never another's jobs.
    pub async fn list_as(
        &self,
        caller: &Principal,
        session: Option<&str>,
        status: Option<JobStatus>,
        page: &PageRequest,
    ) -> Result<Page<JobSummary>, JobError> {
        let session = match session {
            Some(key) => Some(self.gateway().session_as(caller, key).await?.header.id),
            None => None,
        };
        let owner = (session.is_none() && !caller.is_operator()).then(|| caller.name.clone());
        let query = JobQuery {
            session,
            owner,
            status,
        };
        self.list_query(&query, page)
    }

    fn visible(&self, caller: &Principal, job: JobSummary) -> Result<JobSummary, JobError> {
        if self.gateway().sees_session(caller, &job.session) {
            Ok(job)
        } else {
            Err(JobError::NotFound(job.id))
        }
    }
}
