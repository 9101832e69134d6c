//! The gateway: the hands ([`Host`]: plugins, hooks, admission) and the
//! ledger ([`Durable`]: the sessions, approvals and records in the data dir)
//! held together, and every way a call comes in. Adapters (MCP, the CLI, the
//! jobs runner) hold one `Gateway` and nothing else; each of its entry points
//! ends in the one pipeline (`pipeline/`).

use std::path::Path;
use std::sync::Arc;

use crate::approvals::{Approval, ApprovalStatus};
use crate::budget;
use crate::call::CallReport;
use crate::detect;
use crate::error::CallError;
use crate::host::Host;
use crate::ledger::{Durable, open_sessions};
use crate::pipeline::{Admitted, Judge, ledger_work};
use crate::session::{Event, EventKind, SessionError, Sessions, digest};
use crate::tasks;

/// The host and its ledger; cheap to clone.
#[derive(Clone)]
pub struct Gateway {
    host: Arc<Host>,
    ledger: Arc<Durable>,
}

impl Gateway {
    pub fn new(host: Arc<Host>, ledger: Arc<Durable>) -> Gateway {
        Gateway { host, ledger }
    }

    /// Loads the host from the config at `path` and opens its data dir
    /// (refused while another process holds it; calls that were in flight when
    /// the last process died are marked interrupted).
    pub async fn open(path: &Path) -> anyhow::Result<Gateway> {
        let host = Arc::new(Host::from_config_file(path).await?);
        let ledger = Arc::new(open_sessions(host.config())?);
        Ok(Gateway::new(host, ledger))
    }

    pub fn host(&self) -> &Arc<Host> {
        &self.host
    }

    pub fn ledger(&self) -> &Arc<Durable> {
        &self.ledger
    }

    pub fn sessions(&self) -> &Arc<Sessions> {
        &self.ledger.sessions
    }

    /// Stage one of the pipeline, for adapters that check a request before
    /// they commit to it: see [`Host::admit`].
    pub fn admit(&self, tool: &str, input: &str) -> Result<Admitted, CallError> {
        self.host.admit(tool, input)
    }

    /// Calls `tool` within `session` (id or name): the call is logged before
    /// it runs and its outcome after; see the pipeline's docs.
    ///
    /// `Err` means the session refused the call or the log failed; a call
    /// that was denied, awaits approval, or ran and failed is `Ok` with the
    /// failure in the report. A bad request (unknown tool, bad input) is `Ok`
    /// with the failure and nothing logged.
    pub async fn call_in_session(
        &self,
        session: &str,
        tool: &str,
        input: &str,
        job_id: Option<String>,
    ) -> Result<CallReport, SessionError> {
        match self.admit(tool, input) {
            Ok(call) => self.call(session, call, job_id, None).await,
            Err(e) => Ok(CallReport::refused(tool, e)),
        }
    }

    /// An admitted call in `session` (id or name). `cancel` (background jobs)
    /// stops it once it holds `true`: the call is not run if it has not
    /// started, and is stopped (its instance dropped) if it runs. Either way it
    /// finishes in the log with the outcome `cancelled`.
    pub async fn call(
        &self,
        session: &str,
        call: Admitted,
        job_id: Option<String>,
        cancel: Option<tokio::sync::watch::Receiver<bool>>,
    ) -> Result<CallReport, SessionError> {
        let sessions = self.sessions().clone();
        let key = session.to_string();
        let state = ledger_work(move || sessions.show(&key)).await?;
        self.run(&state, call, Judge::Hooks, job_id, cancel).await
    }

    /// Re-runs an interrupted call of an idempotent tool with its original
    /// idempotency key. Calls of other tools are refused: they are the
    /// caller's to decide.
    pub async fn rerun_interrupted(
        &self,
        session: &str,
        call_id: &str,
    ) -> Result<CallReport, SessionError> {
        let sessions = self.sessions().clone();
        let key = session.to_string();
        let resumed = ledger_work(move || sessions.resume(&key)).await?;
        self.rerun_resumed(resumed, session, call_id).await
    }

    /// [`Gateway::rerun_interrupted`] once the session is resumed (by
    /// whoever may resume it).
    pub(crate) async fn rerun_resumed(
        &self,
        resumed: crate::session::Resumed,
        session: &str,
        call_id: &str,
    ) -> Result<CallReport, SessionError> {
        let state = resumed.state;
        let Some(call) = resumed
            .interrupted_calls
            .iter()
            .find(|c| c.call_id == call_id)
            .cloned()
        else {
            return Err(SessionError::InvalidInput(format!(
                "session `{}` has no interrupted call `{call_id}`: `glovebox session resume {}` lists them",
                state.label(),
                session
            )));
        };
        let (Some(idempotency_key), true) = (call.idempotency_key.clone(), call.idempotent) else {
            return Err(SessionError::InvalidInput(format!(
                "call `{call_id}` of `{}` is not idempotent (or never started): it is not re-run automatically; decide and call the tool again",
                call.tool
            )));
        };
        // The original input is in the log, inline when small.
        let sessions = self.sessions().clone();
        let (id, wanted) = (state.id.clone(), call_id.to_string());
        let input = ledger_work(move || {
            let events = sessions.events(&id, 1, usize::MAX)?;
            Ok(events.into_iter().find_map(|e| match e.kind {
                EventKind::CallRequested { call_id, input, .. } if call_id == wanted => input,
                _ => None,
            }))
        })
        .await?
        .ok_or_else(|| {
            SessionError::InvalidInput(format!(
                "the input of call `{call_id}` was too large to keep in the log: call the tool again"
            ))
        })?;
        let admitted = self.admit(&call.tool, &input).map_err(|e| {
            SessionError::InvalidInput(format!("call `{call_id}` cannot run again: {e}"))
        })?;
        let judge = Judge::Rerun { idempotency_key };
        self.run(&state, admitted, judge, None, None).await
    }

    /// Runs the call approval `id` is for, exactly as it was judged, and
    /// resumes its session.
    pub async fn approve(&self, id: &str) -> Result<CallReport, SessionError> {
        let approval = self.ledger.approvals.pending(id)?;
        let call = self
            .admit(&approval.tool, &approval.input)
            .map_err(|e| SessionError::InvalidInput(format!("approval `{id}` cannot run: {e}")))?;
        if call.component_digest() != approval.tool_digest {
            return Err(SessionError::InvalidInput(format!(
                "approval `{id}` was given for another build of `{}` (its component changed since the call was judged): deny it and call again",
                approval.tool
            )));
        }
        if digest(approval.input.as_bytes()) != approval.input_hash {
            return Err(SessionError::InvalidInput(format!(
                "approval `{id}` does not match its recorded input hash: deny it"
            )));
        }
        let (sessions, approvals) = (self.sessions().clone(), self.ledger.approvals.clone());
        let settled = approval.clone();
        let resumed = ledger_work(move || {
            let resumed = sessions.resume(&settled.session)?;
            let mut settled = settled;
            settled.status = ApprovalStatus::Approved {
                at_ms: sessions.clock_ms(),
            };
            approvals.put(&settled)?;
            Ok(resumed)
        })
        .await?;
        let judge = Judge::Approved(Box::new(approval));
        self.run(&resumed.state, call, judge, None, None).await
    }

    /// Refuses approval `id`: its call fails for good, and its session is
    /// resumed so the agent can carry on.
    pub async fn deny_approval(&self, id: &str, reason: &str) -> Result<Approval, SessionError> {
        let approval = self.ledger.approvals.pending(id)?;
        let (sessions, approvals) = (self.sessions().clone(), self.ledger.approvals.clone());
        let reason = reason.to_string();
        ledger_work(move || {
            let mut approval = approval;
            approval.status = ApprovalStatus::Denied {
                at_ms: sessions.clock_ms(),
                reason: reason.clone(),
            };
            approvals.put(&approval)?;
            let note = format!(
                "approval {} of call {} ({}) denied by an operator: {reason}",
                approval.id, approval.call_id, approval.tool
            );
            sessions.resume(&approval.session)?;
            sessions.append(&approval.session, EventKind::Note { text: note })?;
            Ok(approval)
        })
        .await
    }

    /// Logs usage the brain reports (tokens, model cost) into `session`; its
    /// cost counts toward the session's cost cap. See [`budget::report_usage`].
    pub async fn report_usage(
        &self,
        session: &str,
        usage: budget::UsageReport,
    ) -> Result<Vec<Event>, SessionError> {
        let budgets = self.host.config().budgets.clone();
        let sessions = self.sessions().clone();
        let key = session.to_string();
        ledger_work(move || budget::report_usage(&sessions, &budgets, &key, &usage)).await
    }
}

impl Gateway {
    /// One pass of the stuck-agent detector's sweep ([`detect::sweep`]): the
    /// time-based rules over every live session (flags as events, a pause on
    /// a critical flag) and, with `[detector] archive_after`, the archive of
    /// sessions idle that long. The ledger work runs off the async threads;
    /// what the pass did is logged and returned.
    pub async fn sweep(&self) -> Result<detect::Swept, SessionError> {
        let config = self.host.config().detector.clone();
        let (sessions, approvals) = (self.sessions().clone(), self.ledger.approvals.clone());
        let swept = ledger_work(move || detect::sweep(&sessions, &approvals, &config)).await?;
        for f in &swept.raised {
            tracing::warn!(session = %f.session, name = f.name.as_deref().unwrap_or("-"), rule = %f.rule, severity = %f.severity, reason = %f.reason, "sweep: blocker flag raised");
        }
        for id in &swept.paused {
            tracing::warn!(session = %id, "sweep: paused on a critical flag");
        }
        for id in &swept.archived {
            tracing::info!(session = %id, "sweep: archived an idle session");
        }
        for why in &swept.failed {
            tracing::warn!(error = %why, "sweep: a session could not be swept");
        }
        tracing::debug!(
            judged = swept.judged,
            raised = swept.raised.len(),
            paused = swept.paused.len(),
            archived = swept.archived.len(),
            "sweep pass done"
        );
        Ok(swept)
    }

    /// Starts the delivery of notifications to the `[[notify]]` targets (see
    /// [`crate::notify`]): what is in the outbox, including what a previous
    /// process left there, and what the sessions add to it. `None` without
    /// targets. Delivery stops when the handle is dropped.
    pub fn start_notify(&self) -> Option<tasks::Owned<()>> {
        crate::notify::start(self.ledger.outbox.clone())
    }

    /// Starts the sweep every `[detector] sweep_interval` in a task of its
    /// own (none when the interval is off or the detector is disabled). The
    /// sweep stops when the handle is dropped.
    pub fn start_sweeps(&self) -> Option<tasks::Owned<()>> {
        let detector = &self.host.config().detector;
        let every = detector.sweep_interval.filter(|_| detector.enabled)?;
        tracing::info!(every = %humantime::format_duration(every), "the detector sweeps live sessions");
        let gateway = self.clone();
        Some(tasks::every(every, move || {
            let gateway = gateway.clone();
            async move {
                if let Err(e) = gateway.sweep().await {
                    tracing::warn!(error = %e, "sweep: the pass failed (the next one tries again)");
                }
            }
        }))
    }
}
