//! The gateway on behalf of one caller: [`Gateway::scope`] binds a
//! [`Principal`] once, and every operation that depends on who calls is a
//! method of the [`Scope`] it returns.
//!
//! Why one place: who may see a session, act in it (its role within the
//! caller's roles now, threat 52), reach another one of its family, or read
//! a job, approval, context entry or memory is decided here, once, for
//! every front end (the MCP adapter, the dashboard, the command line,
//! schedules). The rules themselves are the ledger's, made the same way:
//! `Sessions::scope` binds the caller for every session operation
//! (`glovebox_ledger::session::access`), and this scope's session methods
//! are that one's, run off the async threads. A session, its calls and its
//! jobs are its owner's and operators' only, and anything else is "not
//! found".
//! The operator is a principal like any other, of kind `operator`
//! (the command line acts as `cli:<uid>`, [`cli_operator`]), so there is no
//! unscoped twin of these methods for it: an operator's scope sees and acts
//! in every session.
//!
//! The [`Scope`] type itself is declared in `gateway.rs`, beside the
//! gateway it borrows; its methods are here. The operations are grouped by
//! what they touch, one file each: the
//! sessions (here), child sessions (`children.rs`), ending a session with
//! its completion gates (`completion.rs`), the memory bank (`memory.rs`),
//! a session's scratch files (`files.rs`), the rescues (`rescues.rs`), and the jobs runner ([`JobScope`], `jobs.rs`).
//!
//! [`cli_operator`]: crate::cli_operator

mod approvals;
mod children;
mod completion;
mod files;
mod jobs;
mod memory;
mod rescues;
mod verify;
mod workspaces;

use std::sync::Arc;

use crate::approvals::Approval;
use crate::budget::UsageReport;
use crate::call::CallReport;
use crate::gateway::Gateway;
use crate::jobs::Jobs;
use crate::manifest::Principal;
use crate::page::{Page, PageRequest};
use crate::pipeline::{Admitted, Judge};
use crate::session::{
    EndOutcome, Event, EventKind, Flag, Handoff, Resumed, SessionError, SessionFilter, SessionInfo,
    SessionState, StartSession, check_ceiling,
};
use crate::tasks::ledger_work;

pub use crate::gateway::Scope;
pub use approvals::ApprovalScope;
pub(crate) use approvals::expire as expire_approvals;
pub use jobs::JobScope;
pub use workspaces::MergeError;

impl<'g> Scope<'g> {
    /// Settling approvals as the caller (see [`ApprovalScope`]).
    pub fn approvals(self) -> ApprovalScope<'g> {
        ApprovalScope::new(self.gateway, self.caller)
    }

    /// Who calls.
    pub fn caller(self) -> &'g Principal {
        self.caller
    }

    /// This scope, acting from `session` (an id): the session an operation
    /// acts on when it names none (an MCP connection's bound session), and
    /// from whose family the sessions it names must be reachable.
    pub fn acting_from(self, session: Option<&'g str>) -> Scope<'g> {
        Scope { session, ..self }
    }

    /// This scope, with the jobs runner a surface started over the gateway.
    pub fn with_jobs(self, jobs: &'g Arc<Jobs>) -> Scope<'g> {
        Scope {
            jobs: Some(jobs),
            ..self
        }
    }

    /// The jobs runner on behalf of the caller, if this scope has one.
    pub fn jobs(self) -> Option<JobScope<'g>> {
        self.jobs.map(|jobs| jobs.scope(self.caller))
    }

    /// The session the caller acts from, if any (see [`Self::acting_from`]).
    pub fn bound(self) -> Option<&'g str> {
        self.session
    }

    /// The gateway this scope is of.
    pub fn gateway(self) -> &'g Gateway {
        self.gateway
    }

    /// Calls `tool` in `session` (id or name) on behalf of the caller:
    /// another principal's session is "not found", and one whose role is
    /// above the caller's roles now is refused. `cancel` (background jobs)
    /// stops it once it holds `true` (see `in_session::host_call`).
    ///
    /// `Err` means the session refused the call or the log failed; a call
    /// that was denied, awaits approval, or ran and failed is `Ok` with the
    /// failure in the report.
    ///
    /// A successful call that `[[verify]]` checks follow is followed by them,
    /// each a call of the caller's in the session; their verdicts are in
    /// the report's `verification` (`verify.rs`).
    pub async fn call(
        self,
        session: &str,
        call: Admitted,
        job_id: Option<String>,
        cancel: Option<crate::pipeline::Cancel>,
    ) -> Result<CallReport, SessionError> {
        // Only a call some check follows keeps its input for the check.
        let checked = self
            .gateway
            .host()
            .config()
            .verify
            .iter()
            .any(|rule| rule.follows(call.name()))
            .then(|| (call.name().to_string(), call.input().to_string()));
        let mut report = self.call_unverified(session, call, job_id, cancel).await?;
        if let (Some((tool, input)), true) = (checked, report.outcome.is_ok()) {
            self.verify_after(session, &tool, &input, &mut report)
                .await?;
        }
        Ok(report)
    }

    /// [`Scope::call`] with no `[[verify]]` check after it: how the checks'
    /// own calls run.
    pub(crate) async fn call_unverified(
        self,
        session: &str,
        call: Admitted,
        job_id: Option<String>,
        cancel: Option<crate::pipeline::Cancel>,
    ) -> Result<CallReport, SessionError> {
        let (gateway, caller) = (self.gateway, self.caller);
        // One look at the session, the caller's: the stages run on it. From
        // the ledger's cache when it can answer at once, sparing the
        // blocking work (and taking this thread out of the async workers).
        let state = match gateway.sessions().scope(caller).show_cached(session) {
            Some(state) => state?,
            None => self.session(session).await?,
        };
        // Acting in it: its role within the caller's roles now (threat 52).
        check_ceiling(caller, &state)?;
        // The call is the caller's: its records, and the quotas, say so
        // (its log lines still go where the entry point sent them).
        crate::tasks::acting_with(
            caller.name.clone(),
            crate::tasks::log_sink(),
            crate::in_session::run(
                gateway,
                Some(caller),
                &state,
                call,
                Judge::Hooks,
                job_id,
                cancel,
            ),
        )
        .await
    }

    /// Calls `tool` with `input` in `session` (id or name) on behalf of the
    /// caller: [`Gateway::admit`], then [`Scope::call`]. A bad request
    /// (unknown tool, bad input) is `Ok` with the failure and nothing logged.
    pub async fn call_in_session(
        self,
        session: &str,
        tool: &str,
        input: &str,
    ) -> Result<CallReport, SessionError> {
        match self.gateway.admit(tool, input) {
            Ok(call) => self.call(session, call, None, None).await,
            Err(e) => Ok(CallReport::refused(tool, e)),
        }
    }

    /// Starts a session owned by the caller, within its ceiling.
    pub async fn start_session(self, start: StartSession) -> Result<SessionState, SessionError> {
        self.start_read_only(start, false).await
    }

    /// [`Scope::start_session`], read-only for good when `read_only` (as it
    /// is anyway when the caller is): it and its children are offered only
    /// tools annotated read-only (`offer.rs`).
    pub async fn start_read_only(
        self,
        start: StartSession,
        read_only: bool,
    ) -> Result<SessionState, SessionError> {
        let (sessions, caller, reserved) = (
            self.gateway.sessions().clone(),
            self.caller.clone(),
            self.gateway.reserved_tags(),
        );
        ledger_work(move || {
            sessions
                .scope(&caller)
                .start_read_only(start, &reserved, read_only)
        })
        .await
    }

    /// The state of a session the caller may see.
    pub async fn session(self, session: &str) -> Result<SessionState, SessionError> {
        let (sessions, caller, key) = self.with(session);
        ledger_work(move || sessions.scope(&caller).show(&key)).await
    }

    /// The state of a session the caller may act in: it may see it, and
    /// its role is among the caller's roles now (see
    /// `glovebox_ledger::session::access`).
    pub async fn act_session(self, session: &str) -> Result<SessionState, SessionError> {
        let (sessions, caller, key) = self.with(session);
        ledger_work(move || sessions.scope(&caller).act(&key)).await
    }

    /// Resumes a session for the caller (a pause the host took is refused
    /// to an agent).
    pub async fn resume_session(self, session: &str) -> Result<Resumed, SessionError> {
        let (sessions, caller, key) = self.with(session);
        ledger_work(move || sessions.scope(&caller).resume(&key)).await
    }

    /// Pauses a session for the caller's own reasons (it may lift that pause).
    pub async fn pause_session(
        self,
        session: &str,
        reason: &str,
    ) -> Result<SessionState, SessionError> {
        let (sessions, caller, key) = self.with(session);
        let reason = reason.to_string();
        ledger_work(move || sessions.scope(&caller).pause(&key, &reason)).await
    }

    /// An agent stops its own session (`session_pause`): paused as
    /// [`Scope::pause_session`] does, and a `paused` blocker flag raised
    /// (severity `[detector.severity] paused`), so someone hears that it
    /// stopped and why. (A pause the host takes for the agent, as when its
    /// connection goes away, is not one.)
    pub async fn pause_by_agent(
        self,
        session: &str,
        reason: &str,
    ) -> Result<SessionState, SessionError> {
        let paused = self.pause_session(session, reason).await?;
        if self.caller.is_operator() {
            return Ok(paused);
        }
        let flag = Flag {
            rule: "paused".into(),
            severity: self.gateway.host().config().detector.severity_of("paused"),
            reason: format!("the agent paused the session: {reason}"),
            suggested_action: "read the reason and answer it, then resume the session".into(),
            call_id: None,
        };
        Ok(self.flag_session(session, flag).await?.state)
    }

    /// Ends a session of the caller's.
    pub async fn end_session(
        self,
        session: &str,
        outcome: EndOutcome,
    ) -> Result<SessionState, SessionError> {
        let (sessions, caller, key) = self.with(session);
        let state = ledger_work(move || sessions.scope(&caller).end(&key, outcome)).await?;
        self.ended(&state, outcome).await;
        Ok(state)
    }

    /// What a session's end does besides its record: a completed one
    /// commits what it changed in its worktrees (`workspaces.rs`).
    pub(crate) async fn ended(self, state: &SessionState, outcome: EndOutcome) {
        if outcome != EndOutcome::Completed {
            return;
        }
        let objective = state
            .latest_handoff
            .as_ref()
            .map(|h| h.handoff.objective.clone())
            .or_else(|| state.header.name.clone())
            .unwrap_or_default();
        self.commit_workspaces(
            &state.header.id,
            crate::workspaces::UnitOfWork::Completed,
            &objective,
        )
        .await;
    }

    /// Writes a handoff from a session of the caller's, into one of its own
    /// sessions when it names a target, or into another principal's along a
    /// route of `[handoffs] routes`.
    /// A handoff naming blockers raises a `handoff` blocker flag on the
    /// writer's session (see `Sessions::handoff`).
    pub async fn handoff(self, session: &str, handoff: Handoff) -> Result<Event, SessionError> {
        let (sessions, caller, key) = self.with(session);
        let routes = self.gateway.host().config().handoffs.clone();
        let objective = handoff.objective.clone();
        let event =
            ledger_work(move || sessions.scope(&caller).handoff(&key, handoff, &routes)).await?;
        // Recorded first: a commit that fails loses no handoff.
        self.commit_workspaces(
            &event.session,
            crate::workspaces::UnitOfWork::Handoff,
            &objective,
        )
        .await;
        Ok(event)
    }

    /// Raises a blocker flag on a session of the caller's, as the caller
    /// says it holds (`sessions.flag`): logged as the detector's flags are,
    /// through the escalation ladder; a critical one pauses the session
    /// until an operator resumes it. It reaches the `[[notify]]` targets
    /// and `[[trigger]]`s that take `flag`, and `session list --blocked`.
    pub async fn flag_session(
        self,
        session: &str,
        flag: Flag,
    ) -> Result<crate::detect::Check, SessionError> {
        let (sessions, caller, key) = self.with(session);
        let detector = self.gateway.host().config().detector.clone();
        ledger_work(move || sessions.scope(&caller).flag(&key, &detector, flag)).await
    }

    /// Events of a session of the caller's.
    pub async fn events(
        self,
        session: &str,
        from_seq: u64,
        limit: usize,
    ) -> Result<Vec<Event>, SessionError> {
        let (sessions, caller, key) = self.with(session);
        ledger_work(move || sessions.scope(&caller).events(&key, from_seq, limit)).await
    }

    /// A page of the caller's sessions matching `filter`, newest first.
    pub async fn list_sessions(
        self,
        filter: SessionFilter,
        page: PageRequest,
    ) -> Result<Page<SessionInfo>, SessionError> {
        let (sessions, caller) = (self.gateway.sessions().clone(), self.caller.clone());
        ledger_work(move || sessions.scope(&caller).list(&filter, &page)).await
    }

    /// Re-runs an interrupted call of an idempotent tool with its original
    /// idempotency key, in a session of the caller's; the session is
    /// resumed as the caller may resume it (a pause the host took stays
    /// for an agent). Calls of other tools are refused: they are the
    /// caller's to decide.
    pub async fn rerun_interrupted(
        self,
        session: &str,
        call_id: &str,
    ) -> Result<CallReport, SessionError> {
        let resumed = self.resume_session(session).await?;
        crate::in_session::rerun_resumed(self.gateway, self.caller, resumed, session, call_id).await
    }

    /// Logs usage the brain reports (tokens, model cost) into a session of
    /// the caller's: it counts toward the session's cost cap, budgets and
    /// billing (see `budget::report_usage`).
    pub async fn report_usage(
        self,
        session: &str,
        usage: UsageReport,
    ) -> Result<Vec<Event>, SessionError> {
        let state = self.act_session(session).await?;
        self.gateway.report_usage(&state.header.id, usage).await
    }

    /// Writes a progress note into a session of the caller's.
    pub async fn note(self, session: &str, text: &str) -> Result<Event, SessionError> {
        let id = self.act_session(session).await?.header.id;
        let (sessions, text) = (self.gateway.sessions().clone(), text.to_string());
        ledger_work(move || sessions.append(&id, EventKind::Note { text })).await
    }

    /// Approval `id`, if it is of a session the caller may see; `None` when
    /// there is no such approval or it is another's (the same answer).
    pub async fn approval(self, id: &str) -> Result<Option<Approval>, SessionError> {
        let (approvals, key) = (self.gateway.ledger().approvals.clone(), id.to_string());
        let found = ledger_work(move || match approvals.get(&key) {
            Ok(a) => Ok(Some(a)),
            Err(SessionError::InvalidInput(_)) => Ok(None),
            Err(e) => Err(e),
        })
        .await?;
        Ok(found.filter(|a| self.gateway.sees_session(self.caller, &a.session)))
    }

    /// A page of the live entries of the context index that match every
    /// word of `query` (case-insensitive), the latest added first, in
    /// `project` or in every project the caller may touch. A project it may
    /// not touch is refused with the same words as `session_start` uses.
    pub async fn context_search(
        self,
        query: &str,
        project: Option<&str>,
        page: &PageRequest,
    ) -> Result<Page<crate::rescue::IndexEntry>, SessionError> {
        let caller = self.caller;
        if let Some(project) = project
            && !caller.may_touch(project)
        {
            return Err(SessionError::NotAllowed(format!(
                "{caller} may not touch project `{project}` (its projects: {})",
                caller.projects.join(", ")
            )));
        }
        let index = crate::rescue::ContextIndex::new(
            self.gateway.ledger().storage.clone(),
            self.gateway.host().config().context.clone(),
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

    /// What a blocking ledger operation on `session` takes along: the
    /// sessions, the caller and the key, owned.
    fn with(self, session: &str) -> (std::sync::Arc<crate::session::Sessions>, Principal, String) {
        (
            self.gateway.sessions().clone(),
            self.caller.clone(),
            session.to_string(),
        )
    }
}
