//! Judge: whether an admitted call may run. The hook chain decides a new call;
//! an operator's approval decides the call it was asked about; an interrupted
//! call re-run keeps its original judgement. (The budget is judged when the
//! call is recorded, under the session's lock: see `record.rs`.)
//!
//! This is also the one place that words a refusal: a hook's deny, a hook's
//! ask where no human can answer, the budget's deny.

use crate::approvals::{Approval, ApprovalStatus};
use crate::budget;
use crate::call::CallContext;
use crate::error::CallError;
use crate::hooks::{ChainOutcome, DecisionKind, HookDecision, HookHttp, HookRequest, Verdict};
use crate::host::Host;
use crate::session::{EventKind, SessionHeader};

use crate::admitted::Admitted;

/// Who decides whether a call runs.
pub(crate) enum Judge {
    /// The hook chain.
    Hooks,
    /// An operator, through a pending approval.
    Approved(Box<Approval>),
    /// The original judgement: an interrupted idempotent call run again.
    Rerun { idempotency_key: String },
}

/// What the judge decided.
pub(crate) struct Judgement {
    /// What the hooks see of the call (and are told again after it ran).
    pub request: HookRequest,
    /// The decisions to log, one `call_decided` event each.
    pub decisions: Vec<EventKind>,
    pub verdict: Verdict,
    /// The chain's outcome, when the hooks judged: its hooks hear how the call ended.
    pub chain: Option<ChainOutcome>,
    /// The key of the original call, for a re-run.
    pub idempotency_key: Option<String>,
}

/// Who makes a call, and from which session, as the hooks see it.
pub(crate) struct Caller {
    /// The principal, as the session's log names it.
    pub principal: String,
    /// The session's project, if it has one.
    pub project: Option<String>,
    /// The session's tags.
    pub tags: Vec<String>,
}

impl Caller {
    /// `principal`, calling in the session of `header`.
    pub fn in_session(header: &SessionHeader, principal: &str) -> Caller {
        Caller {
            principal: principal.to_string(),
            project: (!header.project.is_empty()).then(|| header.project.clone()),
            tags: header.tags.clone(),
        }
    }

    /// `principal`, calling outside any session.
    pub fn standalone(principal: &str) -> Caller {
        Caller {
            principal: principal.to_string(),
            project: None,
            tags: Vec::new(),
        }
    }
}

/// Judges `call`, made with `ctx` by `caller`.
pub(crate) async fn judge(
    host: &Host,
    judge: &Judge,
    call: &Admitted,
    ctx: &CallContext,
    caller: Caller,
) -> Judgement {
    let request = hook_request(call, ctx, caller);
    match judge {
        Judge::Hooks => {
            let outcome = host.evaluate_hooks(&request).await;
            let decisions = decided(&ctx.call_id, &outcome.decisions);
            Judgement {
                request,
                decisions,
                verdict: outcome.verdict.clone(),
                chain: Some(outcome),
                idempotency_key: None,
            }
        }
        Judge::Approved(a) => Judgement {
            request,
            decisions: vec![EventKind::CallDecided {
                call_id: ctx.call_id.clone(),
                hook: "operator".into(),
                pattern: a.pattern.clone(),
                decision: "allow".into(),
                reason: Some(format!(
                    "approval {} of call {} ({}: {}){}",
                    a.id,
                    a.call_id,
                    a.hook,
                    a.reason,
                    match &a.status {
                        ApprovalStatus::Approved { by: Some(by), .. } =>
                            format!(", approved by {by}"),
                        _ => String::new(),
                    }
                )),
                alternatives: Vec::new(),
                took_ms: 0,
                hook_digest: None,
            }],
            verdict: Verdict::Allow,
            chain: None,
            idempotency_key: None,
        },
        Judge::Rerun { idempotency_key } => Judgement {
            request,
            decisions: Vec::new(),
            verdict: Verdict::Allow,
            chain: None,
            idempotency_key: Some(idempotency_key.clone()),
        },
    }
}

/// The `call_decided` events of the hooks' `decisions` on call `call_id`.
pub(crate) fn decided(call_id: &str, decisions: &[HookDecision]) -> Vec<EventKind> {
    decisions
        .iter()
        .map(|d| EventKind::CallDecided {
            call_id: call_id.to_string(),
            hook: d.hook.clone(),
            pattern: d.pattern.clone(),
            decision: decision_name(&d.decision).to_string(),
            reason: d.reason.clone(),
            alternatives: d.alternatives.clone(),
            took_ms: u64::try_from(d.took.as_millis()).unwrap_or(u64::MAX),
            hook_digest: d.digest.clone(),
        })
        .collect()
}

/// What a hook sees of a call.
fn hook_request(call: &Admitted, ctx: &CallContext, caller: Caller) -> HookRequest {
    let info = call.info();
    HookRequest {
        call_id: ctx.call_id.clone(),
        tool: info.name.clone(),
        action: info.action.clone(),
        role: ctx.role.clone(),
        session: ctx.session_id.clone(),
        input: call.input().to_string(),
        estimated_cost: info.cost.unwrap_or(0.0),
        destructive: info.destructive,
        tags: caller.tags,
        principal: caller.principal,
        project: caller.project,
        http: info
            .http
            .as_ref()
            .and_then(|f| HookHttp::read(f, call.input())),
    }
}

/// The error of a call of `tool` a hook denied.
pub(crate) fn denied(tool: &str, d: &HookDecision) -> CallError {
    CallError::Denied {
        tool: tool.to_string(),
        hook: d.hook.clone(),
        pattern: d.pattern.clone(),
        reason: d.reason.clone().unwrap_or_default(),
        alternatives: d.alternatives.clone(),
    }
}

/// The error of a call a hook wants a human to approve, made where nobody can
/// wait for one (outside a session).
pub(crate) fn unanswerable(tool: &str, d: &HookDecision) -> CallError {
    let mut d = d.clone();
    d.reason = Some(format!(
        "{}: a human must approve this call; run it in a session (`--session`) so it can wait for approval",
        d.reason.as_deref().unwrap_or("approval needed")
    ));
    denied(tool, &d)
}

/// The error of a call of `tool` the budget refuses: a denial by the hook
/// `budget`, from the ledger's [`budget::Denial`].
pub(crate) fn over_budget(tool: &str, denial: budget::Denial) -> CallError {
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

fn decision_name(d: &DecisionKind) -> &'static str {
    match d {
        DecisionKind::Allow => "allow",
        DecisionKind::Deny => "deny",
        DecisionKind::Ask => "ask",
    }
}
