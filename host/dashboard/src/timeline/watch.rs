//! A timeline row's detail for what the agent reports of itself (a note,
//! its model's usage) and what the host's watch records of the session (a
//! pause, a blocker flag, a step of the escalation ladder, a budget warned
//! of or gone past).

use glovebox::session::EventKind;

use crate::html::{badge, esc};

/// The detail of such a record, or `None` for a kind of another family.
pub(super) fn detail(kind: &EventKind) -> Option<String> {
    Some(match kind {
        EventKind::Note { text } => format!("<q>{}</q>", esc(text)),
        EventKind::UsageReported {
            tokens_in,
            tokens_out,
            cost_micros,
            model,
            ..
        } => format!(
            "{tokens_in} tokens in, {tokens_out} out, model cost {:.4}{}",
            *cost_micros as f64 / 1e6,
            model
                .as_deref()
                .map(|m| format!(" ({})", esc(m)))
                .unwrap_or_default()
        ),
        EventKind::Paused { reason, by } => format!(
            "{} {}{}",
            badge("paused"),
            esc(reason),
            by.as_deref()
                .map(|b| format!(" (by {})", esc(b)))
                .unwrap_or_else(|| " (by the host)".into())
        ),
        EventKind::BlockerFlag(flag) => format!(
            "{} <b>{}</b>: {}{}<br><span class=\"muted\">suggested: {}</span>",
            badge(flag.severity.as_str()),
            esc(&flag.rule),
            esc(&flag.reason),
            flag.call_id
                .as_deref()
                .map(|c| format!(" (call <code>{}</code>)", esc(c)))
                .unwrap_or_default(),
            esc(&flag.suggested_action)
        ),
        EventKind::Escalation {
            step,
            reason,
            rescue,
        } => format!(
            "step {}: {}{}",
            badge(&step.to_string()),
            esc(reason),
            rescue
                .as_deref()
                .map(|r| format!(" (rescue <code>{}</code>)", esc(r)))
                .unwrap_or_default()
        ),
        EventKind::BudgetWarning {
            cap,
            used,
            limit,
            percent,
        } => format!(
            "{} {} at {percent}%: {}",
            badge("warning"),
            cap.as_str(),
            esc(&format!("{} of {}", cap.show(*used), cap.show(*limit)))
        ),
        EventKind::BudgetExceeded {
            cap, used, limit, ..
        } => format!(
            "{} {}: {}",
            badge("critical"),
            cap.as_str(),
            esc(&format!("{} past {}", cap.show(*used), cap.show(*limit)))
        ),
        _ => return None,
    })
}
