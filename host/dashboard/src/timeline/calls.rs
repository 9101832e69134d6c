//! A timeline row's detail for a call's records: requested, decided by a
//! hook, started, finished, interrupted.

use std::fmt::Write as _;

use glovebox::session::{CallMetering, EventKind};

use super::{SHOWN, short};
use crate::html::{self, badge, esc};

/// The detail of a call's record, or `None` for a kind of another family.
pub(super) fn detail(kind: &EventKind) -> Option<String> {
    Some(match kind {
        EventKind::CallRequested {
            call_id,
            tool,
            input_digest,
            input,
            job_id,
            trace_id,
            parent_call,
        } => requested(
            call_id,
            tool,
            input_digest,
            input.as_deref(),
            [
                job_id.as_deref().map(|j| ("job", j)),
                parent_call.as_deref().map(|c| ("made by call", c)),
            ],
            trace_id.as_deref(),
        ),
        EventKind::CallDecided {
            call_id,
            hook,
            pattern,
            decision,
            reason,
            alternatives,
            took_ms,
            hook_digest,
        } => {
            let mut out = decided(
                call_id,
                hook,
                pattern,
                decision,
                *took_ms,
                hook_digest.as_deref(),
            );
            because(&mut out, reason.as_deref(), alternatives);
            out
        }
        EventKind::CallStarted {
            call_id,
            tool,
            idempotent,
            tool_digest,
            ..
        } => format!(
            "call <code>{}</code> of <b>{}</b> runs (tool {}{})",
            esc(call_id),
            esc(tool),
            short(tool_digest),
            if *idempotent { ", idempotent" } else { "" }
        ),
        EventKind::CallFinished {
            call_id,
            outcome,
            error,
            output,
            metering,
            ..
        } => finished(
            call_id,
            outcome,
            error.as_deref(),
            output.as_deref(),
            metering,
        ),
        EventKind::CallInterrupted { call_id, reason } => format!(
            "{} call <code>{}</code>: {}",
            badge("interrupted"),
            esc(call_id),
            esc(reason)
        ),
        _ => return None,
    })
}

/// A requested call: its tool, job and trace, its input's digest and the
/// input itself when the log kept it.
fn requested(
    call_id: &str,
    tool: &str,
    input_digest: &str,
    input: Option<&str>,
    links: [Option<(&str, &str)>; 2],
    trace_id: Option<&str>,
) -> String {
    format!(
        "call <code>{}</code> of <b>{}</b>{}{} · input {}<details><summary>input</summary>{}</details>",
        esc(call_id),
        esc(tool),
        links
            .iter()
            .flatten()
            .map(|(what, id)| format!(" ({what} <code>{}</code>)", esc(id)))
            .collect::<String>(),
        trace_id
            .map(|t| format!(" · trace <code>{}</code>", esc(t)))
            .unwrap_or_default(),
        short(input_digest),
        input
            .map(|i| html::pre_marked(&glovebox::shown::visible(i), SHOWN))
            .unwrap_or_else(|| {
                "<p class=\"muted\">too large to keep in the log: digest only</p>".into()
            })
    )
}

/// A hook's decision on a call: by which hook, on which pattern, in how long.
fn decided(
    call_id: &str,
    hook: &str,
    pattern: &str,
    decision: &str,
    took_ms: u64,
    hook_digest: Option<&str>,
) -> String {
    format!(
        "{} by hook <b>{}</b> (<code>{}</code>, {took_ms} ms{}) on call <code>{}</code>",
        badge(decision),
        esc(hook),
        esc(pattern),
        hook_digest
            .map(|d| format!(", sha256 {}", short(d)))
            .unwrap_or_default(),
        esc(call_id)
    )
}

/// The hook's reason and the alternatives it offered, after its decision.
fn because(out: &mut String, reason: Option<&str>, alternatives: &[String]) {
    if let Some(r) = reason {
        let _ = write!(out, "<br>{}", esc(r));
    }
    if !alternatives.is_empty() {
        *out += "<ul class=\"alternatives\">";
        for a in alternatives {
            let _ = write!(out, "<li>{}</li>", esc(a));
        }
        *out += "</ul>";
    }
}

/// A finished call: its outcome and metering, its error, and its output
/// when the log kept it.
fn finished(
    call_id: &str,
    outcome: &str,
    error: Option<&str>,
    output: Option<&str>,
    m: &CallMetering,
) -> String {
    let mut out = format!(
        "{} call <code>{}</code> · {:.1} ms · {} B in · {} B out{}{}",
        badge(outcome),
        esc(call_id),
        m.wall_us as f64 / 1000.0,
        m.bytes_in,
        m.bytes_out,
        m.fuel.map(|f| format!(" · fuel {f}")).unwrap_or_default(),
        if m.cost_micros > 0 {
            format!(" · cost {:.4}", m.cost_micros as f64 / 1e6)
        } else {
            String::new()
        }
    );
    if let Some(err) = error {
        let _ = write!(out, "<br><span class=\"error\">{}</span>", esc(err));
    }
    if let Some(o) = output {
        let _ = write!(
            out,
            "<details><summary>output</summary>{}</details>",
            html::pre(o, SHOWN)
        );
    }
    out
}
