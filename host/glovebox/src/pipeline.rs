//! The one call pipeline for calls made in a session: every step is an event
//! in the session's log, acknowledged only once durable.
//!
//! requested → started (with its idempotency key) → finished (outcome, output
//! or its digest, metering). A call the log cannot record is not run; a
//! result the log cannot record is not acknowledged, and the session is paused.

use std::sync::Arc;

use crate::approvals::{Approval, ApprovalStatus, Approvals};
use crate::budget;
use crate::call::{CallContext, CallReport, Metering, new_call_id};
use crate::error::CallError;
use crate::hooks::{DecisionKind, Verdict};
use crate::host::Host;
use crate::ledger::Durable;
use crate::session::{
    CallMetering, EventKind, SessionError, SessionState, Sessions, digest, inline_if_small,
};

/// What one call cost, as the log records it: the runtime's metering, without
/// the tool's estimated cost (the pipeline adds it for calls that ran).
pub(crate) fn call_metering(m: &Metering) -> CallMetering {
    CallMetering {
        wall_us: u64::try_from(m.wall.as_micros()).unwrap_or(u64::MAX),
        fuel: m.fuel,
        peak_memory_bytes: m.peak_memory_bytes,
        bytes_in: m.bytes_in,
        bytes_out: m.bytes_out,
        cost_micros: 0,
    }
}

/// The error of a call of `tool` the budget refuses: a denial by the hook
/// `budget`, from the ledger's [`budget::Denial`].
fn budget_denial(tool: &str, denial: budget::Denial) -> CallError {
    let budget::Denial {
        hook,
        pattern,
        reason,
        alternatives,
    } = denial;
    CallError::Denied {
        tool: tool.to_string(),
        hook,
        pattern,
        reason,
        alternatives,
    }
}

/// Runs a blocking session operation off the async threads.
async fn blocking<T: Send + 'static>(
    sessions: &Arc<Sessions>,
    f: impl FnOnce(&Sessions) -> Result<T, SessionError> + Send + 'static,
) -> Result<T, SessionError> {
    let sessions = sessions.clone();
    match tokio::task::spawn_blocking(move || f(&sessions)).await {
        Ok(r) => r,
        Err(e) => Err(SessionError::Storage(crate::storage::StorageError::Io(
            format!("the session store task failed: {e}"),
        ))),
    }
}

impl Host {
    /// Calls `tool` within `session` (id or name): the call is logged before
    /// it runs and its outcome after; see the module docs.
    ///
    /// `Err` means the session refused the call or the log failed; a call
    /// that was denied, awaits approval, or ran and failed is `Ok` with the
    /// failure in the report.
    pub async fn call_in_session(
        &self,
        durable: &Durable,
        session: &str,
        tool: &str,
        input: &str,
        job_id: Option<String>,
    ) -> Result<CallReport, SessionError> {
        self.call_in_session_cancellable(durable, session, tool, input, job_id, None)
            .await
    }

    /// [`Host::call_in_session`] that `cancel` can stop (background jobs):
    /// once it holds `true`, the call is not run if it has not started, and
    /// is stopped (its instance dropped) if it runs. Either way it finishes in
    /// the log with the outcome `cancelled`.
    pub async fn call_in_session_cancellable(
        &self,
        durable: &Durable,
        session: &str,
        tool: &str,
        input: &str,
        job_id: Option<String>,
        cancel: Option<tokio::sync::watch::Receiver<bool>>,
    ) -> Result<CallReport, SessionError> {
        let key = session.to_string();
        let state = blocking(&durable.sessions, move |s| s.show(&key)).await?;
        self.run_logged(durable, &state, tool, input, job_id, Judge::Hooks, cancel)
            .await
    }

    /// Re-runs an interrupted call of an idempotent tool with its original
    /// idempotency key. Calls of other tools are refused: they are the
    /// caller's to decide.
    pub async fn rerun_interrupted(
        &self,
        durable: &Durable,
        session: &str,
        call_id: &str,
    ) -> Result<CallReport, SessionError> {
        let sessions = &durable.sessions;
        let key = session.to_string();
        let resumed = blocking(sessions, move |s| s.resume(&key)).await?;
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
        let (id, wanted) = (state.id.clone(), call_id.to_string());
        let input = blocking(sessions, move |s| {
            let events = s.events(&id, 1, usize::MAX)?;
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
        let judge = Judge::Rerun { idempotency_key };
        self.run_logged(durable, &state, &call.tool, &input, None, judge, None)
            .await
    }

    /// Runs the call approval `id` is for, exactly as it was judged, and
    /// resumes its session.
    pub async fn approve(&self, durable: &Durable, id: &str) -> Result<CallReport, SessionError> {
        let approval = durable.approvals.pending(id)?;
        let prepared = self.prepare(&approval.tool, &approval.input).map_err(|r| {
            SessionError::InvalidInput(format!(
                "approval `{id}` cannot run: {}",
                r.outcome.err().map(|e| e.to_string()).unwrap_or_default()
            ))
        })?;
        if self.digest(&prepared) != approval.tool_digest {
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
        let key = approval.session.clone();
        let resumed = blocking(&durable.sessions, move |s| s.resume(&key)).await?;
        let mut settled = approval.clone();
        settled.status = ApprovalStatus::Approved { at_ms: now_ms() };
        let approvals = durable.approvals.clone();
        blocking(&durable.sessions, move |_| approvals.put(&settled)).await?;
        let input = approval.input.clone();
        let judge = Judge::Approved(Box::new(approval));
        self.run_logged(
            durable,
            &resumed.state,
            &prepared.name,
            &input,
            None,
            judge,
            None,
        )
        .await
    }

    /// Refuses approval `id`: its call fails for good, and its session is
    /// resumed so the agent can carry on.
    pub async fn deny_approval(
        &self,
        durable: &Durable,
        id: &str,
        reason: &str,
    ) -> Result<Approval, SessionError> {
        let mut approval = durable.approvals.pending(id)?;
        approval.status = ApprovalStatus::Denied {
            at_ms: now_ms(),
            reason: reason.to_string(),
        };
        let settled = approval.clone();
        let approvals = durable.approvals.clone();
        let note = format!(
            "approval {id} of call {} ({}) denied by an operator: {reason}",
            approval.call_id, approval.tool
        );
        let session = approval.session.clone();
        blocking(&durable.sessions, move |s| {
            approvals.put(&settled)?;
            s.resume(&session)?;
            s.append(&session, EventKind::Note { text: note })
        })
        .await?;
        Ok(approval)
    }

    #[allow(clippy::too_many_arguments)] // one call's whole context, passed through once
    async fn run_logged(
        &self,
        durable: &Durable,
        state: &SessionState,
        tool: &str,
        input: &str,
        job_id: Option<String>,
        judge: Judge,
        cancel: Option<tokio::sync::watch::Receiver<bool>>,
    ) -> Result<CallReport, SessionError> {
        let sessions = &durable.sessions;
        // A bad request (unknown tool, bad input) is not a call: nothing is logged.
        let prepared = match self.prepare(tool, input) {
            Ok(p) => p,
            Err(report) => return Ok(*report),
        };
        let info = self.info(&prepared).clone();
        let tool_digest = self.digest(&prepared).to_string();
        let call_id = new_call_id();
        let ctx = CallContext {
            session_id: state.id.clone(),
            session_name: state.name.clone(),
            role: state.role.to_string(),
            call_id: call_id.clone(),
            job_id: job_id.clone(),
        };
        let id = state.id.clone();
        let requested = EventKind::CallRequested {
            call_id: call_id.clone(),
            tool: info.name.clone(),
            input_digest: digest(input.as_bytes()),
            input: inline_if_small(input),
            job_id,
        };
        // The budget guard: judged and the call logged under the session's
        // lock, so concurrent calls cannot pass it together.
        let call_cost = info
            .cost
            .map(|c| budget::to_micros(c).unwrap_or(0))
            .unwrap_or(0);
        let costs = self.tool_costs();
        let budgets = self.config().budgets.clone();
        let sid = id.clone();
        let (_, breach) = blocking(sessions, move |s| {
            s.append_with(&sid, move |state, now| {
                let in_flight = state
                    .in_flight
                    .values()
                    .map(|c| costs.get(&c.tool).copied().unwrap_or(0))
                    .sum();
                let breach = budget::check_call(state, &budgets, now, call_cost, in_flight);
                (vec![requested], breach)
            })
        })
        .await?;
        if let Some(breach) = breach {
            let denial = breach.denial(state);
            let reason = denial.reason.clone();
            let decided = EventKind::CallDecided {
                call_id: call_id.clone(),
                hook: denial.hook.clone(),
                pattern: denial.pattern.clone(),
                decision: "deny".into(),
                reason: Some(reason.clone()),
                alternatives: denial.alternatives.clone(),
                took_ms: 0,
            };
            let err = budget_denial(&info.name, denial);
            let events = vec![
                decided,
                EventKind::CallFinished {
                    call_id: call_id.clone(),
                    outcome: err.kind().to_string(),
                    error: Some(err.to_string()),
                    output: None,
                    output_digest: String::new(),
                    metering: Default::default(),
                },
                EventKind::BudgetExceeded {
                    cap: breach.cap,
                    used: breach.projected,
                    limit: breach.limit,
                    call_id: Some(call_id.clone()),
                },
            ];
            let sid = id.clone();
            blocking(sessions, move |s| {
                for e in events {
                    s.append(&sid, e)?;
                }
                s.pause(&sid, &reason)?;
                Ok(())
            })
            .await?;
            tracing::warn!(session = %id, tool = %info.name, cap = %breach.cap, "call denied by the budget: session paused");
            self.detect_stuck(sessions, &id).await;
            return Ok(CallReport::refused(&info.name, err));
        }

        // Judge the call: the hook chain, or the operator's approval, or the
        // original judgement of an interrupted call being re-run.
        let request = self.hook_request(&prepared, input, &ctx, state.tags.clone());
        let (decided, outcome, idempotency_key) = match &judge {
            Judge::Hooks => {
                let outcome = self.hooks().evaluate(&request).await;
                let events = outcome
                    .decisions
                    .iter()
                    .map(|d| EventKind::CallDecided {
                        call_id: call_id.clone(),
                        hook: d.hook.clone(),
                        pattern: d.pattern.clone(),
                        decision: decision_name(&d.decision).to_string(),
                        reason: d.reason.clone(),
                        alternatives: d.alternatives.clone(),
                        took_ms: u64::try_from(d.took.as_millis()).unwrap_or(u64::MAX),
                    })
                    .collect::<Vec<_>>();
                (events, Some(outcome), None)
            }
            Judge::Approved(a) => (
                vec![EventKind::CallDecided {
                    call_id: call_id.clone(),
                    hook: "operator".into(),
                    pattern: a.pattern.clone(),
                    decision: "allow".into(),
                    reason: Some(format!(
                        "approval {} of call {} ({}: {})",
                        a.id, a.call_id, a.hook, a.reason
                    )),
                    alternatives: Vec::new(),
                    took_ms: 0,
                }],
                None,
                None,
            ),
            Judge::Rerun { idempotency_key } => (Vec::new(), None, Some(idempotency_key.clone())),
        };
        let sid = id.clone();
        blocking(sessions, move |s| {
            for e in decided {
                s.append(&sid, e)?;
            }
            Ok(())
        })
        .await?;

        let verdict = outcome
            .as_ref()
            .map(|o| o.verdict.clone())
            .unwrap_or(Verdict::Allow);
        let refusal = match verdict {
            Verdict::Allow => None,
            Verdict::Deny(d) => Some(crate::host::denied(&info.name, &d)),
            Verdict::Ask(d) => {
                let approval = Approval {
                    id: Approvals::new_id(),
                    session: state.id.clone(),
                    session_name: state.name.clone(),
                    call_id: call_id.clone(),
                    tool: info.name.clone(),
                    tool_digest: tool_digest.clone(),
                    input_hash: digest(input.as_bytes()),
                    input: input.to_string(),
                    action: info.action.clone(),
                    hook: d.hook.clone(),
                    pattern: d.pattern.clone(),
                    reason: d.reason.clone().unwrap_or_default(),
                    requested_at_ms: now_ms(),
                    status: ApprovalStatus::Pending,
                };
                let err = CallError::AwaitingApproval {
                    tool: info.name.clone(),
                    approval_id: approval.id.clone(),
                    hook: approval.hook.clone(),
                    reason: approval.reason.clone(),
                };
                let approvals = durable.approvals.clone();
                blocking(sessions, move |_| approvals.put(&approval)).await?;
                Some(err)
            }
        };
        if let Some(err) = refusal {
            // The judged call ends here; an approval runs it as a new call.
            let finished = EventKind::CallFinished {
                call_id,
                outcome: err.kind().to_string(),
                error: Some(err.to_string()),
                output: None,
                output_digest: String::new(),
                metering: Default::default(),
            };
            let pause = matches!(err, CallError::AwaitingApproval { .. }).then(|| err.to_string());
            let sid = id.clone();
            blocking(sessions, move |s| {
                s.append(&sid, finished)?;
                if let Some(reason) = pause {
                    s.pause(&sid, &reason)?;
                }
                Ok(())
            })
            .await?;
            self.detect_stuck(sessions, &id).await;
            return Ok(CallReport::refused(&info.name, err));
        }

        let started = EventKind::CallStarted {
            call_id: call_id.clone(),
            tool: info.name.clone(),
            idempotency_key: idempotency_key.unwrap_or_else(|| format!("{id}/{call_id}")),
            idempotent: info.idempotent,
            tool_digest,
        };
        let sid = id.clone();
        blocking(sessions, move |s| s.append(&sid, started)).await?;

        let report = match cancel {
            None => self.execute(prepared, input, ctx).await,
            Some(cancel) => {
                cancellable(self.execute(prepared, input, ctx), cancel, &info.name).await
            }
        };

        let (outcome_name, error, output, output_digest) = match &report.outcome {
            Ok(value) => {
                let text = value.to_string();
                (
                    "ok".to_string(),
                    None,
                    inline_if_small(&text),
                    digest(text.as_bytes()),
                )
            }
            Err(e) => (
                e.kind().to_string(),
                Some(e.to_string()),
                None,
                String::new(),
            ),
        };
        let mut metering = call_metering(&report.metering);
        metering.cost_micros = call_cost;
        let finished = EventKind::CallFinished {
            call_id,
            outcome: outcome_name,
            error,
            output,
            output_digest,
            metering,
        };
        let sid = id.clone();
        if let Err(e) = blocking(sessions, move |s| s.append(&sid, finished)).await {
            // Not acknowledged: say so, and stop the session until an
            // operator looks (best effort: the store may be failing).
            let reason = format!("the outcome of a call could not be logged: {e}");
            let _ = blocking(sessions, move |s| s.pause(&id, &reason)).await;
            return Err(e);
        }
        if let Some(outcome) = &outcome {
            self.after_hooks(&request, outcome, &report);
        }
        // Budget warnings due after this call (best effort: the call is
        // acknowledged already).
        let budgets = self.config().budgets.clone();
        if let Err(e) = blocking(sessions, move |s| budget::upkeep(s, &budgets, &id)).await {
            tracing::warn!(error = %e, "could not log the session's budget warnings");
        }
        self.detect_stuck(sessions, &state.id).await;
        Ok(report)
    }

    /// Runs the stuck-agent detector on session `id` after a call (best
    /// effort: the call is acknowledged already). See [`crate::detect`].
    async fn detect_stuck(&self, sessions: &Arc<Sessions>, id: &str) {
        let config = self.config().detector.clone();
        if !config.enabled {
            return;
        }
        let key = id.to_string();
        match blocking(sessions, move |s| crate::detect::check(s, &config, &key)).await {
            Ok(check) => {
                for flag in &check.raised {
                    tracing::warn!(session = %id, rule = %flag.rule, severity = %flag.severity, reason = %flag.reason, "blocker flag raised");
                }
            }
            Err(e) => {
                tracing::warn!(session = %id, error = %e, "the stuck-agent detector could not run")
            }
        }
    }

    /// Logs usage the brain reports (tokens, model cost) into `session`; its
    /// cost counts toward the session's cost cap. See [`budget::report_usage`].
    pub async fn report_usage(
        &self,
        durable: &Durable,
        session: &str,
        usage: budget::UsageReport,
    ) -> Result<Vec<crate::session::Event>, SessionError> {
        let budgets = self.config().budgets.clone();
        let key = session.to_string();
        blocking(&durable.sessions, move |s| {
            budget::report_usage(s, &budgets, &key, &usage)
        })
        .await
    }

    /// The estimated cost of each tool, in micros (tools without a cost left out).
    fn tool_costs(&self) -> std::collections::HashMap<String, u64> {
        self.tools()
            .into_iter()
            .filter_map(|t| {
                let micros = budget::to_micros(t.cost?).ok()?;
                Some((t.name.clone(), micros))
            })
            .collect()
    }
}

/// Who decides whether a logged call runs.
enum Judge {
    /// The hook chain.
    Hooks,
    /// An operator, through a pending approval.
    Approved(Box<Approval>),
    /// The original judgement: an interrupted idempotent call run again.
    Rerun { idempotency_key: String },
}

/// Runs `call` unless `cancel` comes first: a cancelled call ends at once
/// (the call's future, and with it its instance, is dropped).
async fn cancellable(
    call: impl std::future::Future<Output = CallReport>,
    mut cancel: tokio::sync::watch::Receiver<bool>,
    tool: &str,
) -> CallReport {
    let cancelled = async move {
        if cancel.wait_for(|c| *c).await.is_err() {
            // Nobody can cancel any more: the call runs to its end.
            std::future::pending::<()>().await;
        }
    };
    tokio::select! {
        biased;
        () = cancelled => CallReport::refused(
            tool,
            CallError::Cancelled {
                tool: tool.to_string(),
                reason: "its background job was cancelled".to_string(),
            },
        ),
        report = call => report,
    }
}

fn decision_name(d: &DecisionKind) -> &'static str {
    match d {
        DecisionKind::Allow => "allow",
        DecisionKind::Deny => "deny",
        DecisionKind::Ask => "ask",
    }
}

fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
        .unwrap_or(0)
}
