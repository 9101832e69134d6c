//! Record: the call's write-ahead record, one write to the session's log.
//!
//! `call_requested`, each judge's `call_decided` and then either
//! `call_started` (it runs) or `call_finished` (it ends here: denied, over
//! budget, awaiting approval, with the session paused for the last two) are
//! appended together, under the session's lock, with the budget judged in
//! the same look at the session, so concurrent calls cannot pass it together.
//!
//! A call that runs needs its record durable before it runs, unless running
//! it again after a crash is harmless (an idempotent tool that is not
//! destructive): then it runs while its record is flushed, and its outcome,
//! appended durably, makes both durable before the result is acknowledged.
//! A refusal is the call's result, so it is always durable before it returns.

use crate::approvals::{Approval, ApprovalStatus, Approvals};
use crate::budget;
use crate::call::CallContext;
use crate::error::CallError;
use crate::hooks::Verdict;
use crate::host::Host;
use crate::ledger::Durable;
use crate::session::{Commit, EventKind, SessionError, SessionState, digest, inline_if_small};

use super::admit::Admitted;
use super::judge::{Judgement, denied, over_budget};
use super::ledger_work;

/// What the record decided.
pub(crate) enum Recorded {
    /// The call runs; its `started` event is in the log.
    Run,
    /// The call ends here; its `finished` event is in the log (and durable).
    Refused(CallError),
}

/// Writes the call's write-ahead record; see the module docs.
pub(crate) async fn record(
    host: &Host,
    ledger: &Durable,
    state: &SessionState,
    call: &Admitted,
    ctx: &CallContext,
    judgement: &mut Judgement,
) -> Result<Recorded, SessionError> {
    let info = call.info();
    let call_id = ctx.call_id.clone();
    let input = call.input();
    let requested = EventKind::CallRequested {
        call_id: call_id.clone(),
        tool: info.name.clone(),
        input_digest: digest(input.as_bytes()),
        input: inline_if_small(input),
        job_id: ctx.job_id.clone(),
    };
    let decisions = std::mem::take(&mut judgement.decisions);
    // A call a hook asks about gets its approval id now: the log names it.
    let approval = match &judgement.verdict {
        Verdict::Ask(d) => Some(Approval {
            id: Approvals::new_id(),
            session: state.header.id.clone(),
            session_name: state.header.name.clone(),
            call_id: call_id.clone(),
            tool: info.name.clone(),
            tool_digest: call.component_digest().to_string(),
            input_hash: digest(input.as_bytes()),
            input: input.to_string(),
            action: info.action.clone(),
            hook: d.hook.clone(),
            pattern: d.pattern.clone(),
            reason: d.reason.clone().unwrap_or_default(),
            requested_at_ms: 0,
            status: ApprovalStatus::Pending,
        }),
        _ => None,
    };
    let refusal = match &judgement.verdict {
        Verdict::Allow => None,
        Verdict::Deny(d) => Some(denied(&info.name, d)),
        Verdict::Ask(_) => approval.as_ref().map(|a| CallError::AwaitingApproval {
            tool: info.name.clone(),
            approval_id: a.id.clone(),
            hook: a.hook.clone(),
            reason: a.reason.clone(),
        }),
    };
    let started = EventKind::CallStarted {
        call_id: call_id.clone(),
        tool: info.name.clone(),
        idempotency_key: judgement.idempotency_key.clone().unwrap_or_else(|| {
            // A job's attempts share one key (the job's), so a job run again
            // after its host died is the same operation to whoever dedupes.
            match &ctx.job_id {
                Some(job) => format!("{}/{job}", state.header.id),
                None => format!("{}/{call_id}", state.header.id),
            }
        }),
        idempotent: info.idempotent,
        tool_digest: call.component_digest().to_string(),
    };
    let commit = if refusal.is_none() && call.may_run_before_durable() {
        Commit::Deferred
    } else {
        Commit::Durable
    };

    let call_cost = call_cost(call);
    let costs = host.tool_costs().clone();
    let budgets = host.config().budgets.clone();
    let tool = info.name.clone();
    let sessions = ledger.sessions.clone();
    let approvals = ledger.approvals.clone();
    let id = state.header.id.clone();
    let recorded = ledger_work(move || {
        let (_, (outcome, now)) = sessions.append_with_commit(&id, commit, |state, now| {
            let in_flight = state
                .in_flight
                .values()
                .map(|c| costs.get(&c.tool).copied().unwrap_or(0))
                .sum();
            let mut events = vec![requested];
            if let Some(breach) = budget::check_call(state, &budgets, now, call_cost, in_flight) {
                // The budget's deny comes first: the hooks' decisions are not
                // logged, and nothing waits for an approval.
                let denial = breach.denial(state);
                let reason = denial.reason.clone();
                events.push(EventKind::CallDecided {
                    call_id: call_id.clone(),
                    hook: denial.hook.clone(),
                    pattern: denial.pattern.clone(),
                    decision: "deny".into(),
                    reason: Some(reason.clone()),
                    alternatives: denial.alternatives.clone(),
                    took_ms: 0,
                    hook_digest: None,
                });
                let err = over_budget(&tool, denial);
                events.push(finished_refused(&call_id, &err));
                events.push(EventKind::BudgetExceeded {
                    cap: breach.cap,
                    used: breach.projected,
                    limit: breach.limit,
                    call_id: Some(call_id.clone()),
                });
                events.push(EventKind::Paused { reason, by: None });
                tracing::warn!(session = %state.header.id, tool = %tool, cap = %breach.cap, "call denied by the budget: session paused");
                return (events, (Outcome::OverBudget(err), now));
            }
            events.extend(decisions);
            match refusal {
                None => {
                    events.push(started);
                    (events, (Outcome::Run, now))
                }
                Some(err) => {
                    events.push(finished_refused(&call_id, &err));
                    if matches!(err, CallError::AwaitingApproval { .. }) {
                        events.push(EventKind::Paused {
                            reason: err.to_string(),
                            by: None,
                        });
                    }
                    (events, (Outcome::Refused(err), now))
                }
            }
        })?;
        match outcome {
            Outcome::Run => Ok(Recorded::Run),
            Outcome::OverBudget(err) => {
                if commit == Commit::Deferred {
                    sessions.sync()?;
                }
                Ok(Recorded::Refused(err))
            }
            Outcome::Refused(err) => {
                if let Some(mut approval) = approval {
                    approval.requested_at_ms = now;
                    approvals.put(&approval)?;
                }
                Ok(Recorded::Refused(err))
            }
        }
    })
    .await?;
    Ok(recorded)
}

/// What the look at the session decided.
enum Outcome {
    Run,
    OverBudget(CallError),
    Refused(CallError),
}

/// The `finished` event of a call that did not run.
fn finished_refused(call_id: &str, err: &CallError) -> EventKind {
    EventKind::CallFinished {
        call_id: call_id.to_string(),
        outcome: err.kind().to_string(),
        error: Some(crate::session::bounded_error(err.to_string())),
        output: None,
        output_digest: String::new(),
        metering: Default::default(),
    }
}

/// The tool's estimated cost of one call, in micros (0 when it declares none).
pub(crate) fn call_cost(call: &Admitted) -> u64 {
    call.info()
        .cost
        .map(|c| budget::to_micros(c).unwrap_or(0))
        .unwrap_or(0)
}
