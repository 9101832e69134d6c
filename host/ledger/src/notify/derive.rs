//! What an acknowledged event means to the operator: the notifications
//! [`derive`] maps each logged event to.

use serde_json::json;

use super::{Notification, NotifyKind};
use crate::manifest::Severity;
use crate::session::{EndOutcome, Event, EventKind, SessionState};
use crate::values::EscalationStep;

/// The notifications `event` means, given the session's state `before` it
/// was applied. Pure: the same event always means the same notifications.
pub fn derive(before: &SessionState, event: &Event) -> Vec<(NotifyKind, Notification)> {
    let mut out = Vec::new();
    let mut push = |kind: NotifyKind, severity: Option<Severity>, summary: String, details| {
        out.push((
            kind,
            Notification {
                event: kind.as_str().to_string(),
                severity,
                session: before.header.id.clone(),
                session_name: before.header.name.clone(),
                project: before.header.project.clone(),
                role: before.header.role.to_string(),
                seq: event.seq,
                at_ms: event.at_ms,
                summary,
                details,
                to: Vec::new(),
            },
        ));
    };
    let label = before
        .header
        .name
        .clone()
        .unwrap_or_else(|| before.header.id.clone());
    match &event.kind {
        EventKind::CallFinished {
            call_id,
            outcome,
            error,
            ..
        } => {
            let call = before.in_flight.get(call_id);
            let tool = call.map(|c| c.tool.clone()).unwrap_or_default();
            if outcome == "awaiting_approval" {
                let approval = error.as_deref().and_then(approval_id);
                push(
                    NotifyKind::ApprovalNeeded,
                    None,
                    format!(
                        "session `{label}`: call to `{tool}` awaits approval{}",
                        approval
                            .as_deref()
                            .map(|a| format!(" `{a}` (`glovebox approve {a}`)"))
                            .unwrap_or_default()
                    ),
                    json!({ "call_id": call_id, "tool": tool, "approval_id": approval, "reason": error }),
                );
            } else if let Some(job) = call.and_then(|c| c.job_id.clone()) {
                let (kind, summary) = if outcome == "ok" {
                    (
                        NotifyKind::JobFinished,
                        format!("session `{label}`: job `{job}` ({tool}) finished"),
                    )
                } else {
                    (
                        NotifyKind::JobFailed,
                        format!("session `{label}`: job `{job}` ({tool}) failed: {outcome}"),
                    )
                };
                push(
                    kind,
                    None,
                    summary,
                    json!({ "job_id": job, "call_id": call_id, "tool": tool, "outcome": outcome, "error": error }),
                );
            }
        }
        EventKind::BlockerFlag(flag) => {
            let (rule, severity, reason) = (&flag.rule, flag.severity, &flag.reason);
            let details = json!({ "rule": rule, "reason": reason, "suggested_action": flag.suggested_action, "call_id": flag.call_id });
            push(
                NotifyKind::Flag,
                Some(severity),
                format!("session `{label}`: {severity} flag `{rule}`: {reason}"),
                details.clone(),
            );
            if rule == "no_progress" || rule == "stale" {
                push(
                    NotifyKind::SessionStalled,
                    Some(severity),
                    format!("session `{label}` stalled: {reason}"),
                    details,
                );
            }
        }
        EventKind::BudgetWarning {
            cap,
            used,
            limit,
            percent,
        } => push(
            NotifyKind::BudgetWarning,
            None,
            format!("session `{label}`: {percent}% of its {cap} cap used"),
            json!({ "cap": cap.as_str(), "used": used, "limit": limit, "percent": percent }),
        ),
        EventKind::BudgetExceeded {
            cap,
            used,
            limit,
            call_id,
        } => push(
            NotifyKind::BudgetExceeded,
            None,
            format!(
                "session `{label}`: {cap} cap exceeded ({used} of {limit}); the session is paused"
            ),
            json!({ "cap": cap.as_str(), "used": used, "limit": limit, "call_id": call_id }),
        ),
        EventKind::CeilingWarning {
            scope,
            period,
            period_id,
            measure,
            used,
            limit,
            percent,
        } => push(
            NotifyKind::CeilingWarning,
            None,
            format!(
                "{scope}: {percent}% of its {} {measure} ceiling used in {period} {period_id} ({} of {})",
                period.adjective(),
                measure.show(*used),
                measure.show(*limit)
            ),
            json!({ "scope": scope, "period": period, "period_id": period_id, "measure": measure, "used": used, "limit": limit, "percent": percent }),
        ),
        EventKind::CeilingReached {
            scope,
            period,
            period_id,
            measure,
            used,
            limit,
            ends_at_ms,
            call_id,
            first: true,
        } => push(
            NotifyKind::CeilingReached,
            None,
            format!(
                "{scope} reached its {} {measure} ceiling in {period} {period_id} ({} of {}): its calls are refused and its sessions paused until an operator lifts it (`glovebox budget`)",
                period.adjective(),
                measure.show(*used),
                measure.show(*limit)
            ),
            json!({ "scope": scope, "period": period, "period_id": period_id, "measure": measure, "used": used, "limit": limit, "ends_at_ms": ends_at_ms, "call_id": call_id }),
        ),
        EventKind::Escalation {
            step,
            reason,
            rescue,
        } => {
            if *step == EscalationStep::Rescue && rescue.is_some() {
                push(
                    NotifyKind::RescueOpened,
                    None,
                    format!("session `{label}`: {reason}"),
                    json!({ "rescue_id": rescue, "reason": reason }),
                );
            } else if let Some(open) = before.watch.rescue.as_ref().filter(|open| {
                *step != EscalationStep::Rescue && reason.starts_with(&format!("rescue `{open}`"))
            }) {
                push(
                    NotifyKind::RescueResolved,
                    None,
                    format!("session `{label}`: {reason}"),
                    json!({ "rescue_id": open, "reason": reason, "step": step.as_str() }),
                );
            }
        }
        EventKind::Ended {
            outcome: EndOutcome::Completed,
            summary,
        } => push(
            NotifyKind::SessionCompleted,
            None,
            format!("session `{label}` completed"),
            serde_json::to_value(summary).unwrap_or_default(),
        ),
        EventKind::ScheduleAlert {
            source,
            reason,
            notify,
            call_id,
        } => {
            push(
                NotifyKind::ScheduleAlert,
                None,
                format!("session `{label}`: {source}: {reason}"),
                json!({ "source": source, "reason": reason, "call_id": call_id }),
            );
            if let Some((_, n)) = out.last_mut() {
                n.to = notify.clone();
            }
        }
        _ => {}
    }
    out
}

/// The approval id in an `awaiting_approval` error text.
pub(super) fn approval_id(error: &str) -> Option<String> {
    let rest = error.split_once("awaits approval `")?.1;
    Some(rest.split_once('`')?.0.to_string())
}

/// A notification for `glovebox notify test`: no session behind it.
pub fn test_notification(target: &str, now_ms: u64) -> Notification {
    Notification {
        event: "test".to_string(),
        severity: None,
        session: "test".to_string(),
        session_name: None,
        project: String::new(),
        role: String::new(),
        seq: now_ms,
        at_ms: now_ms,
        summary: format!("a test notification for target `{target}` from `glovebox notify test`"),
        details: json!({}),
        to: Vec::new(),
    }
}
