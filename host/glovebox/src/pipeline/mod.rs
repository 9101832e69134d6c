//! The one call pipeline. Every way in (the CLI, MCP, a background job, an
//! operator's approval, a re-run of an interrupted call, a standalone call
//! with no session) takes the same stages, each in its own file:
//!
//! 1. **admit** (`admit.rs`): resolve the tool, check the input once into an
//!    [`Admitted`] call; a bad request is not a call and leaves no trace;
//! 2. **judge** (`judge.rs`): the hook chain, or the operator's approval, or
//!    the original judgement of a re-run;
//! 3. **record** (`record.rs`): the write-ahead record, one write to the
//!    session's log with the budget judged under the session's lock
//!    (requested, decisions, and started or finished);
//! 4. **execute**: fresh hands, past admission control ([`Host::execute`]);
//! 5. **settle** (`settle.rs`): the outcome logged durably (then, and only
//!    then, the result is acknowledged), budget warnings, the detector, and
//!    the hooks told how the call ended.
//!
//! A call outside any session skips record and settle's log: nothing is
//! written, and a hook's ask is a refusal, since nobody can wait for a human.
//! A call the log cannot record is not run; a result the log cannot record is
//! not acknowledged, and the session is paused.

mod admit;
mod judge;
mod record;
mod settle;

use crate::call::{CallContext, CallReport, new_call_id};
use crate::error::CallError;
use crate::hooks::Verdict;
use crate::host::{Host, ToolCallsHandle};
use crate::ledger::Durable;
use crate::metrics::Metrics;
use crate::plugin::LoadedPlugin;
use crate::session::{SessionError, SessionState};
use crate::spend::Breach;
use crate::watermark::Watermark;

pub use crate::admitted::Admitted;
pub(crate) use judge::Caller;
pub(crate) use judge::{Judge, decided, denied};
use judge::{judge, unanswerable};
use record::{Recorded, call_cost, record};
pub(crate) use settle::call_metering;

impl Host {
    /// Runs one call outside any session: the hook chain judges it, then it
    /// runs in fresh hands. Never panics and never leaves anything of the call
    /// behind but what the tool wrote to a granted directory. A call a hook
    /// wants a human to approve is denied here: only a session can wait.
    pub async fn call(&self, tool: &str, input: &str, ctx: CallContext) -> CallReport {
        match self.admit(tool, input) {
            Ok(call) => self.call_admitted(call, ctx).await,
            Err(e) => CallReport::refused(tool, e),
        }
    }

    /// [`Host::call`] of a call already admitted.
    pub async fn call_admitted(&self, call: Admitted, ctx: CallContext) -> CallReport {
        let caller = Caller::standalone(&crate::session::actor::current());
        let judgement = judge(self, &Judge::Hooks, &call, &ctx, caller).await;
        let refusal = match &judgement.verdict {
            Verdict::Allow => None,
            Verdict::Deny(d) => Some(denied(call.name(), d)),
            Verdict::Ask(d) => Some(unanswerable(call.name(), d)),
        };
        if let Some(err) = refusal {
            return CallReport::refused(call.name(), err);
        }
        let report = self.execute(call, ctx).await;
        settle::tell_hooks(self, &judgement, &report);
        report
    }
}

impl Host {
    /// The judge stage alone, by the hook chain: what it would decide of
    /// `call` (policy replay). Nothing is recorded or run.
    pub(crate) async fn judge_only(
        &self,
        call: &Admitted,
        ctx: &CallContext,
        caller: Caller,
    ) -> Verdict {
        judge(self, &Judge::Hooks, call, ctx, caller).await.verdict
    }
}

/// What the stages of a call in a session take from the gateway that runs
/// them: the host as it is now (a reload while the call runs does not
/// change the hooks that judged it or the settle that follows), the ledger,
/// the counters, and how to pause the sessions of a scope whose spend
/// ceiling a call reached.
pub(crate) struct Stages<'a> {
    pub host: &'a Host,
    pub ledger: &'a Durable,
    pub metrics: &'a Metrics,
    pub pause_scope: &'a (dyn Fn(&Breach, &str) + Send + Sync),
    /// The tools a run of a plugin may call from inside it (`nested.rs`),
    /// as whoever makes the call: `None` for a plugin that may call none.
    pub tool_calls:
        &'a (dyn Fn(&CallContext, &LoadedPlugin) -> Option<ToolCallsHandle> + Send + Sync),
}

/// The stages of a call in session `state`, judged by `by`; see the module docs.
/// They run in one `call` span carrying the session, call, job and
/// principal ids (what a trace exporter sends a collector).
#[tracing::instrument(
        name = "call",
        skip_all,
        fields(
            session = %state.header.id,
            session_name = state.header.name.as_deref().unwrap_or(""),
            call_id = tracing::field::Empty,
            job = job_id.as_deref().unwrap_or(""),
            principal = %crate::session::actor::current(),
            tool = %call.name(),
        )
    )]
pub(crate) async fn in_session(
    stages: Stages<'_>,
    state: &SessionState,
    call: Admitted,
    by: Judge,
    job_id: Option<String>,
    cancel: Option<Cancel>,
) -> Result<CallReport, SessionError> {
    let call_id = new_call_id();
    tracing::Span::current().record("call_id", tracing::field::display(&call_id));
    let Stages {
        host,
        ledger,
        metrics,
        pause_scope,
        tool_calls,
    } = stages;
    // Below the disk watermark nothing new starts, and nothing is written.
    if let Err(reason) = Watermark::of(host.config()).check() {
        let reason = reason.to_string();
        let report = CallReport::refused(call.name(), CallError::LowDisk { reason });
        metrics.call(&report);
        return Ok(report);
    }
    // A tool the session is not offered is refused as an unknown one is:
    // nothing logged, no hook asked (`offer.rs`).
    if let Err(refused) = host.offer_in(state).check(call.info()) {
        let report = CallReport::refused(call.name(), refused);
        metrics.call(&report);
        return Ok(report);
    }
    let ctx = CallContext {
        session_id: state.header.id.clone(),
        session_name: state.header.name.clone(),
        role: state.header.role.to_string(),
        project: (!state.header.project.is_empty()).then(|| state.header.project.clone()),
        call_id,
        job_id,
    };
    let caller = Caller::in_session(&state.header, &crate::session::actor::current());
    let mut judgement = judge(host, &by, &call, &ctx, caller).await;
    metrics.decisions(&judgement.decisions);
    let writing = std::time::Instant::now();
    let counted = acting_agent(host);
    let recorded = record(host, ledger, state, &call, &ctx, &mut judgement, counted).await?;
    metrics.ledger_write(writing.elapsed());
    match recorded {
        Recorded::Refused(err) => {
            settle::refused(host, ledger, &state.header.id).await;
            let report = CallReport::refused(call.name(), err);
            metrics.call(&report);
            Ok(report)
        }
        Recorded::OverCeiling(err, breach) => {
            if breach.first {
                pause_scope(&breach, &state.header.id);
            }
            settle::refused(host, ledger, &state.header.id).await;
            let report = CallReport::refused(call.name(), err);
            metrics.call(&report);
            Ok(report)
        }
        Recorded::Run => {
            let cost = call_cost(&call);
            let name = call.name().to_string();
            let calls = tool_calls(&ctx, call.plugin());
            let run = host.execute_calling(call, ctx.clone(), calls);
            let report = match cancel {
                None => run.await,
                Some(cancel) => cancellable(run, cancel, &name).await,
            };
            settle::settle(host, ledger, &state.header.id, &ctx, cost, &report).await?;
            settle::tell_hooks(host, &judgement, &report);
            metrics.call(&report);
            Ok(report)
        }
    }
}

/// The agent principal acting now (named by the entry point: an MCP
/// request, a job it spawned, a schedule), which the per-principal quotas
/// hold; `None` for an operator, the host's own work, or nobody named.
pub(crate) fn acting_agent(host: &Host) -> Option<String> {
    let name = crate::session::actor::named()?;
    let declared = host
        .config()
        .principals
        .iter()
        .find(|p| *p.principal.name == *name);
    let agent = match declared {
        Some(p) => !p.principal.is_operator(),
        None => *name == *crate::manifest::LOCAL_PRINCIPAL,
    };
    agent.then(|| name.to_string())
}

/// How a running call is stopped from outside: it holds `None` until
/// whoever may stop the call (its job's cancel, a host that stops) sets the
/// reason, which the call's `cancelled` outcome then says.
pub type Cancel = tokio::sync::watch::Receiver<Option<std::sync::Arc<str>>>;

/// Runs `call` unless `cancel` comes first: a cancelled call ends at once
/// (the call's future, and with it its instance, is dropped).
async fn cancellable(
    call: impl std::future::Future<Output = CallReport>,
    mut cancel: Cancel,
    tool: &str,
) -> CallReport {
    let cancelled = async move {
        let reason = cancel
            .wait_for(Option::is_some)
            .await
            .map(|reason| reason.as_deref().unwrap_or_default().to_string());
        match reason {
            Ok(reason) => reason,
            // Nobody can cancel any more: the call runs to its end.
            Err(_) => std::future::pending().await,
        }
    };
    tokio::select! {
        biased;
        reason = cancelled => CallReport::refused(
            tool,
            CallError::Cancelled {
                tool: tool.to_string(),
                reason,
            },
        ),
        report = call => report,
    }
}
