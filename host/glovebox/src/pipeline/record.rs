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
//!
//! A call a hook asks about is parked only if its agent principal has a
//! place left under `[quotas] approvals_per_principal` (counted in the
//! store, so across hosts): past it the call is denied, by `quota`, with
//! the quota named, and nothing waits (threat 49).

use std::sync::Arc;

use crate::approvals::{Approval, ApprovalStatus, Approvals};
use crate::budget;
use crate::call::CallContext;
use crate::ceilings;
use crate::error::CallError;
use crate::hooks::Verdict;
use crate::host::Host;
use crate::ledger::Durable;
use crate::manifest::{BudgetsConfig, QuotaLimit};
use crate::session::{
    Commit, EventKind, SessionError, SessionState, Sessions, digest, inline_if_small,
};
use crate::spend::{Admission, Breach, Tallies};
use crate::storage::StorageError;

use super::judge::{Judgement, denied, over_budget};
use crate::admitted::Admitted;
use crate::tasks::ledger_work;

/// What the record decided.
pub(crate) enum Recorded {
    /// The call runs; its `started` event is in the log.
    Run,
    /// The call ends here; its `finished` event is in the log (and durable).
    Refused(CallError),
    /// The call ends here at a spend ceiling across sessions, and the
    /// session is paused; the first refusal of the period at that ceiling
    /// pauses the scope's other sessions too.
    OverCeiling(CallError, Breach),
}

/// Writes the call's write-ahead record; see the module docs. `counted`:
/// the agent principal whose call it is (held to the per-principal quotas;
/// `None` for an operator or the host).
pub(crate) async fn record(
    host: &Host,
    ledger: &Durable,
    state: &SessionState,
    call: &Admitted,
    ctx: &CallContext,
    judgement: &mut Judgement,
    counted: Option<String>,
) -> Result<Recorded, SessionError> {
    let info = call.info();
    let input = call.input();
    let approval = asked_approval(state, call, ctx, &judgement.verdict, counted.clone());
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
    let commit = if refusal.is_none() && call.may_run_before_durable() {
        Commit::Deferred
    } else {
        Commit::Durable
    };
    let cost = call_cost(call);
    let plan = Plan {
        requested: EventKind::CallRequested {
            call_id: ctx.call_id.clone(),
            tool: info.name.clone(),
            input_digest: digest(input.as_bytes()),
            // A secret's value an agent put in the input is not kept
            // (threat 60): the digest is the input's as the tool gets it,
            // so a re-run can tell the input kept is not that one.
            input: inline_if_small(&host.config().secrets.mask(input)),
            job_id: ctx.job_id.clone(),
            trace_id: crate::trace::current_trace_id(),
            parent_call: crate::nesting::parent_call(),
        },
        decisions: std::mem::take(&mut judgement.decisions),
        refusal,
        started: started_event(state, call, ctx, judgement.idempotency_key.clone(), cost),
        call_id: ctx.call_id.clone(),
        tool: info.name.clone(),
        cost,
        budgets: host.config().budgets.clone(),
    };
    let writer = Writer {
        sessions: ledger.sessions.clone(),
        approvals: ledger.approvals.clone(),
        session: state.header.id.clone(),
        quota: host.config().quotas.limit("approvals_per_principal"),
        counted,
        commit,
    };
    ledger_work(move || writer.write(plan, approval)).await
}

/// Where a call's record goes, and what bounds it.
struct Writer {
    sessions: Arc<Sessions>,
    approvals: Arc<Approvals>,
    /// The session's id.
    session: String,
    /// `[quotas] approvals_per_principal`.
    quota: QuotaLimit,
    /// The agent principal the call is counted against, if any.
    counted: Option<String>,
    commit: Commit,
}

impl Writer {
    /// Takes the approval's place (or denies the ask at the quota), appends
    /// the record `plan` decides on, and stores the approval the call now
    /// waits for; an approval's place taken for a call that does not wait
    /// is given back.
    fn write(
        self,
        mut plan: Plan,
        mut approval: Option<Approval>,
    ) -> Result<Recorded, SessionError> {
        let Writer {
            sessions,
            approvals,
            session,
            quota,
            counted,
            commit,
        } = self;
        // The approval's place, taken before anything is written.
        let now = sessions.clock_ms();
        let placed = match place(
            &approvals,
            counted.as_deref(),
            approval.as_ref(),
            quota.value,
            now,
        )? {
            Placed::Taken(principal, id) => Some((principal, id)),
            Placed::Nothing => None,
            Placed::AtQuota(principal, count) => {
                if let Some(asked) = approval.take() {
                    let (decided, err) = approvals_quota(
                        &plan.tool,
                        &plan.call_id,
                        &principal,
                        count,
                        &asked,
                        quota,
                    );
                    plan.decisions.push(decided);
                    plan.refusal = Some(err);
                }
                None
            }
        };
        let give_back = || {
            if let Some((principal, id)) = &placed
                && let Err(e) = approvals.give_back_place(principal, id)
            {
                tracing::warn!(approval = %id, error = %e, "could not give back an approval's place (the next take drops it)");
            }
        };
        let tallies = sessions.tallies();
        let appended = sessions.append_with_commit(&session, commit, |state, now| {
            plan.decide(&sessions, tallies, state, now)
        });
        let (outcome, now) = match appended {
            Ok((_, done)) => done,
            Err(e) => {
                give_back();
                return Err(e);
            }
        };
        let refused = |err| -> Result<CallError, SessionError> {
            give_back();
            if commit == Commit::Deferred {
                sessions.sync()?;
            }
            Ok(err)
        };
        match outcome {
            Outcome::Run => Ok(Recorded::Run),
            Outcome::Failed(e) => {
                give_back();
                Err(SessionError::Storage(e))
            }
            Outcome::NoRoom(e) => {
                give_back();
                Err(e)
            }
            Outcome::OverBudget(err) => Ok(Recorded::Refused(refused(err)?)),
            Outcome::OverCeiling(err, breach) => Ok(Recorded::OverCeiling(refused(err)?, breach)),
            Outcome::Refused(err) => {
                match approval {
                    Some(mut approval) if matches!(err, CallError::AwaitingApproval { .. }) => {
                        approval.requested_at_ms = now;
                        approvals.put(&approval).inspect_err(|_| give_back())?;
                    }
                    _ => give_back(),
                }
                Ok(Recorded::Refused(err))
            }
        }
    }
}

/// The approval a hook's ask gets now, so that the log names it (its time
/// is set once it is stored).
fn asked_approval(
    state: &SessionState,
    call: &Admitted,
    ctx: &CallContext,
    verdict: &Verdict,
    counted: Option<String>,
) -> Option<Approval> {
    let Verdict::Ask(d) = verdict else {
        return None;
    };
    let info = call.info();
    let input = call.input();
    Some(Approval {
        id: Approvals::new_id(),
        session: state.header.id.clone(),
        session_name: state.header.name.clone(),
        call_id: ctx.call_id.clone(),
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
        principal: counted,
        job: ctx.job_id.clone(),
    })
}

/// The `call_started` a call that runs gets, with its idempotency key: the
/// caller's, or else the session's and the call's (a job's attempts share
/// the job's, so a job run again after its host died is the same
/// operation to whoever dedupes).
fn started_event(
    state: &SessionState,
    call: &Admitted,
    ctx: &CallContext,
    key: Option<String>,
    cost: u64,
) -> EventKind {
    let info = call.info();
    EventKind::CallStarted {
        call_id: ctx.call_id.clone(),
        tool: info.name.clone(),
        idempotency_key: key.unwrap_or_else(|| match &ctx.job_id {
            Some(job) => format!("{}/{job}", state.header.id),
            None => format!("{}/{}", state.header.id, ctx.call_id),
        }),
        idempotent: info.idempotent,
        tool_digest: call.component_digest().to_string(),
        cost_micros: cost,
    }
}

/// A call's record before the session's look decides among its endings:
/// what was asked, the judges' decisions, the refusal they came to (if
/// any), and the `call_started` it gets if it runs.
struct Plan {
    requested: EventKind,
    decisions: Vec<EventKind>,
    refusal: Option<CallError>,
    started: EventKind,
    call_id: String,
    tool: String,
    cost: u64,
    budgets: BudgetsConfig,
}

impl Plan {
    /// The events to append, and what they decide, in the session's state
    /// `state` at `now` (under its lock): no room in the log; the session's
    /// budget, whose deny comes first; the judges' refusal; or the ceilings
    /// across sessions, last, charged only for a call that runs.
    fn decide(
        self,
        sessions: &Sessions,
        tallies: &Tallies,
        state: &SessionState,
        now: u64,
    ) -> (Vec<EventKind>, (Outcome, u64)) {
        let Plan {
            requested,
            decisions,
            refusal,
            started,
            call_id,
            tool,
            cost,
            budgets,
        } = self;
        // A call the session's log has no room for is refused before
        // anything of it is counted or charged (`quotas.session_events`,
        // `session_bytes`); the append checks the sealed records again.
        if let Err(e) = sessions.check_log_room(state, &requested) {
            return (Vec::new(), (Outcome::NoRoom(e), now));
        }
        let mut events = vec![requested];
        if let Some(breach) = budget::check_call(state, &budgets, now, cost) {
            // The budget's deny comes first: the hooks' decisions are not
            // logged, and nothing waits for an approval.
            let denial = breach.denial(state);
            let reason = denial.reason.clone();
            events.push(deny_event(&call_id, &denial));
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
        if let Some(err) = refusal {
            events.push(finished_refused(&call_id, &err));
            if matches!(err, CallError::AwaitingApproval { .. }) {
                events.push(EventKind::Paused {
                    reason: err.to_string(),
                    by: None,
                });
            }
            return (events, (Outcome::Refused(err), now));
        }
        // The ceilings across sessions, last: charged only for a call that
        // runs, before its `started` is written (a crash between them
        // over-counts, never under-counts).
        let scopes = ceilings::scopes_of(state);
        match tallies.admit_call(&scopes, cost, now) {
            Err(e) => (Vec::new(), (Outcome::Failed(e), now)),
            Ok(Admission::Run(crossed)) => {
                events.push(started);
                events.extend(crossed.iter().map(ceilings::warning_event));
                (events, (Outcome::Run, now))
            }
            Ok(Admission::Refused(breach)) => {
                let denial = ceiling_denial(&breach, &state.header.id);
                events.push(deny_event(&call_id, &denial));
                let err = over_budget(&tool, denial);
                events.push(finished_refused(&call_id, &err));
                events.extend(ceilings::refusal_events(&breach, &call_id));
                tracing::warn!(session = %state.header.id, tool = %tool, ceiling = %breach.key(), "call refused at a spend ceiling: session paused");
                (events, (Outcome::OverCeiling(err, breach), now))
            }
        }
    }
}

/// The `call_decided` of a deny the host made itself (a budget, a ceiling).
fn deny_event(call_id: &str, denial: &budget::Denial) -> EventKind {
    EventKind::CallDecided {
        call_id: call_id.to_string(),
        hook: denial.hook.clone(),
        pattern: denial.pattern.clone(),
        decision: "deny".into(),
        reason: Some(denial.reason.clone()),
        alternatives: denial.alternatives.clone(),
        took_ms: 0,
        hook_digest: None,
    }
}

/// Whether the approval a hook asked for has its place.
enum Placed {
    /// Nothing to count: no approval, or no agent principal to count it against.
    Nothing,
    /// Taken, for the principal and approval named.
    Taken(String, String),
    /// The principal already has this many pending: the ask is denied.
    AtQuota(String, u64),
}

/// Takes a place for `approval` (when a hook asked for one) against the
/// agent principal `counted`'s `[quotas] approvals_per_principal`.
fn place(
    approvals: &Approvals,
    counted: Option<&str>,
    approval: Option<&Approval>,
    limit: u64,
    now: u64,
) -> Result<Placed, SessionError> {
    let (Some(a), Some(principal)) = (approval, counted) else {
        return Ok(Placed::Nothing);
    };
    Ok(match approvals.take_place(principal, &a.id, limit, now)? {
        Ok(()) => Placed::Taken(principal.to_string(), a.id.clone()),
        Err(count) => Placed::AtQuota(principal.to_string(), count),
    })
}

/// The denial of a call of `tool` a hook asked about (`asked`) when its
/// principal already has `count` pending approvals, past `quota`: the
/// `call_decided` event by `quota` and the call's error, logged as any
/// denial is.
fn approvals_quota(
    tool: &str,
    call_id: &str,
    principal: &str,
    count: u64,
    asked: &Approval,
    quota: QuotaLimit,
) -> (EventKind, CallError) {
    let reason = SessionError::Quota {
        limit: quota,
        what: format!(
            "principal `{principal}` already has {count} calls waiting for approval, and hook `{}` asked for one more ({})",
            asked.hook, asked.reason
        ),
        fix: "nothing was parked; ask an operator to settle the pending ones (`glovebox approvals`), or to raise the quota".into(),
    }
    .to_string();
    tracing::warn!(
        principal,
        tool,
        count,
        "a call a hook asked about was denied: the principal is at `quotas.approvals_per_principal`"
    );
    let decided = EventKind::CallDecided {
        call_id: call_id.to_string(),
        hook: QUOTA_HOOK.into(),
        pattern: "approvals_per_principal".into(),
        decision: "deny".into(),
        reason: Some(reason.clone()),
        alternatives: Vec::new(),
        took_ms: 0,
        hook_digest: None,
    };
    let err = CallError::Denied {
        tool: tool.to_string(),
        hook: QUOTA_HOOK.into(),
        pattern: "approvals_per_principal".into(),
        reason,
        alternatives: Vec::new(),
    };
    (decided, err)
}

/// The name a quota's denial of a call is logged under, as `budget` is
/// for the budget's.
const QUOTA_HOOK: &str = "quota";

/// What the look at the session decided.
enum Outcome {
    Run,
    OverBudget(CallError),
    OverCeiling(CallError, Breach),
    Refused(CallError),
    /// The spend tallies could not be read or written: nothing is logged,
    /// and the call does not run.
    Failed(StorageError),
    /// The session's log has no room for the call (its quotas): nothing
    /// is logged, and the call does not run.
    NoRoom(SessionError),
}

/// The `budget` hook's denial of a call at a spend ceiling.
fn ceiling_denial(breach: &Breach, session: &str) -> budget::Denial {
    budget::Denial {
        hook: budget::BUDGET_HOOK.to_string(),
        pattern: breach.pattern(),
        reason: breach.reason(),
        alternatives: breach.alternatives(session),
    }
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
