//! What an acknowledged event means to the operator: the notifications
//! [`derive`] maps each logged event to.

use serde_json::json;

use super::{Notification, NotifyKind};
use crate::manifest::Severity;
use crate::session::{EndOutcome, Event, EventKind, Flag, SessionState};
use crate::values::EscalationStep;

/// The notifications `event` means, given the session's state `before` it
/// was applied. Pure: the same event always means the same notifications.
pub fn derive(before: &SessionState, event: &Event) -> Vec<(NotifyKind, Notification)> {
    let mut out = Derived {
        before,
        event,
        label: before
            .header
            .name
            .clone()
            .unwrap_or_else(|| before.header.id.clone()),
        list: Vec::new(),
    };
    match &event.kind {
        EventKind::CallFinished {
            call_id,
            outcome,
            error,
            ..
        } => call_finished(&mut out, call_id, outcome, error.as_deref()),
        EventKind::BlockerFlag(flag) => flagged(&mut out, flag),
        EventKind::Escalation {
            step,
            reason,
            rescue,
        } => escalated(&mut out, *step, reason, rescue.as_deref()),
        EventKind::Ended {
            outcome: EndOutcome::Completed,
            summary,
        } => {
            let summary_text = format!("session `{}` completed", out.label);
            out.push(
                NotifyKind::SessionCompleted,
                None,
                summary_text,
                serde_json::to_value(summary).unwrap_or_default(),
            );
        }
        EventKind::ScheduleAlert {
            source,
            reason,
            notify,
            call_id,
        } => {
            let summary = format!("session `{}`: {source}: {reason}", out.label);
            out.push(
                NotifyKind::ScheduleAlert,
                None,
                summary,
                json!({ "source": source, "reason": reason, "call_id": call_id }),
            );
            if let Some((_, n)) = out.list.last_mut() {
                n.to = notify.clone();
            }
        }
        EventKind::ChildSpawned {
            child,
            role,
            name,
            task,
            ..
        } => {
            let summary = format!(
                "session `{}` spawned {role} child `{}`: {}",
                out.label,
                name.as_deref().unwrap_or(child),
                task.objective
            );
            let details =
                json!({ "child": child, "role": role, "name": name, "objective": task.objective });
            out.push(NotifyKind::ChildSpawned, None, summary, details);
        }
        EventKind::Handoff(handoff) => {
            let blockers = &handoff.notes.blockers;
            let summary = format!(
                "session `{}` handed off ({}){}: {}",
                out.label,
                handoff.kind,
                if blockers.is_empty() {
                    String::new()
                } else {
                    format!(" with {} blocker(s)", blockers.len())
                },
                handoff.objective
            );
            let details = json!({
                "kind": handoff.kind,
                "to_role": handoff.to_role,
                "target_session": handoff.target_session,
                "objective": handoff.objective,
                "next_steps": handoff.notes.next_steps,
                "blockers": blockers,
            });
            out.push(NotifyKind::Handoff, None, summary, details);
        }
        other => spent(&mut out, other),
    }
    out.list
}

/// The notifications one event means so far, and what each is stamped
/// with: the session (as it was before the event) and the event.
struct Derived<'a> {
    before: &'a SessionState,
    event: &'a Event,
    /// The session as a person names it: its name, or its id.
    label: String,
    list: Vec<(NotifyKind, Notification)>,
}

impl Derived<'_> {
    /// Adds a `kind` notification about this session and event.
    fn push(
        &mut self,
        kind: NotifyKind,
        severity: Option<Severity>,
        summary: String,
        details: serde_json::Value,
    ) {
        let header = &self.before.header;
        self.list.push((
            kind,
            Notification {
                event: kind.as_str().to_string(),
                severity,
                session: header.id.clone(),
                session_name: header.name.clone(),
                project: header.project.clone(),
                role: header.role.to_string(),
                seq: self.event.seq,
                at_ms: self.event.at_ms,
                summary,
                details,
                to: Vec::new(),
            },
        ));
    }
}

/// A finished call: one that now awaits approval, one that was denied, one
/// that ran and failed, or a background job's call that finished or failed.
/// Any other call (one that succeeded, or was cancelled) tells nobody.
fn call_finished(out: &mut Derived, call_id: &str, outcome: &str, error: Option<&str>) {
    let label = out.label.clone();
    let call = out.before.in_flight.get(call_id);
    let tool = call.map(|c| c.tool.clone()).unwrap_or_default();
    if outcome == "awaiting_approval" {
        let approval = error.and_then(approval_id);
        out.push(
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
    } else {
        if outcome == "denied" {
            out.push(
                NotifyKind::CallDenied,
                None,
                match error {
                    // The error says the call, the hook and the reason.
                    Some(error) => format!("session `{label}`: {error}"),
                    None => format!("session `{label}`: call to `{tool}` denied"),
                },
                json!({ "call_id": call_id, "tool": tool, "reason": error }),
            );
        } else if !matches!(outcome, "ok" | "cancelled" | "interrupted")
            && call.is_some_and(|c| c.job_id.is_none())
        {
            out.push(
                NotifyKind::CallFailed,
                None,
                format!(
                    "session `{label}`: call to `{tool}` failed ({outcome}){}",
                    error.map(|e| format!(": {e}")).unwrap_or_default()
                ),
                json!({ "call_id": call_id, "tool": tool, "outcome": outcome, "error": error }),
            );
        }
        job_outcome(out, call_id, &tool, outcome, error);
    }
}

/// A call of a background job that ended: `job_finished` or `job_failed`.
fn job_outcome(out: &mut Derived, call_id: &str, tool: &str, outcome: &str, error: Option<&str>) {
    let label = out.label.clone();
    let call = out.before.in_flight.get(call_id);
    if let Some(job) = call.and_then(|c| c.job_id.clone()) {
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
        out.push(
            kind,
            None,
            summary,
            json!({ "job_id": job, "call_id": call_id, "tool": tool, "outcome": outcome, "error": error }),
        );
    }
}

/// A blocker flag: always a `flag`, and a `no_progress` or `stale` one also
/// says the session stalled.
fn flagged(out: &mut Derived, flag: &Flag) {
    let label = out.label.clone();
    let (rule, severity, reason) = (&flag.rule, flag.severity, &flag.reason);
    let details = json!({ "rule": rule, "reason": reason, "suggested_action": flag.suggested_action, "call_id": flag.call_id });
    out.push(
        NotifyKind::Flag,
        Some(severity),
        format!("session `{label}`: {severity} flag `{rule}`: {reason}"),
        details.clone(),
    );
    if rule == "no_progress" || rule == "stale" {
        out.push(
            NotifyKind::SessionStalled,
            Some(severity),
            format!("session `{label}` stalled: {reason}"),
            details,
        );
    }
}

/// A step on the escalation ladder: a rescue opened, or the step that
/// resolves the rescue the session had open. Other steps tell nobody.
fn escalated(out: &mut Derived, step: EscalationStep, reason: &str, rescue: Option<&str>) {
    let label = out.label.clone();
    if step == EscalationStep::Rescue && rescue.is_some() {
        out.push(
            NotifyKind::RescueOpened,
            None,
            format!("session `{label}`: {reason}"),
            json!({ "rescue_id": rescue, "reason": reason }),
        );
    } else if let Some(open) = out.before.watch.rescue.as_ref().filter(|open| {
        step != EscalationStep::Rescue && reason.starts_with(&format!("rescue `{open}`"))
    }) {
        out.push(
            NotifyKind::RescueResolved,
            None,
            format!("session `{label}`: {reason}"),
            json!({ "rescue_id": open, "reason": reason, "step": step.as_str() }),
        );
    }
}

/// A spend event: the session near or past one of its budget caps, or its
/// scope near or (first in the period) at a ceiling across sessions. Any
/// other event tells nobody.
fn spent(out: &mut Derived, kind: &EventKind) {
    let label = out.label.clone();
    match kind {
        EventKind::BudgetWarning {
            cap,
            used,
            limit,
            percent,
        } => out.push(
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
        } => out.push(
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
        } => out.push(
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
        } => out.push(
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
        _ => {}
    }
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
