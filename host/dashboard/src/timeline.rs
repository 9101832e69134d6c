//! What a session's page shows of its log and its files: one timeline
//! row's detail per event kind, and the listing of its scratch directory.

use std::fmt::Write as _;
use std::path::Path;

use glovebox::scratch::{EntryKind, ScratchDirs};
use glovebox::session::{Event, EventKind};

use crate::html::{self, badge, esc};

/// A digest, cut short, whole in its title.
fn short(digest: &str) -> String {
    let (s, _) = html::cut(digest, 12);
    format!("<code title=\"{}\">{}</code>", esc(digest), esc(s))
}

/// How much of an input or output a timeline row shows.
const SHOWN: usize = 4096;

/// A timeline row's detail: what the event says, inputs and outputs cut
/// at [`SHOWN`] bytes.
pub(crate) fn event_detail(e: &Event) -> String {
    match &e.kind {
        EventKind::CallRequested {
            call_id,
            tool,
            input_digest,
            input,
            job_id,
            trace_id,
        } => format!(
            "call <code>{}</code> of <b>{}</b>{}{} · input {}<details><summary>input</summary>{}</details>",
            esc(call_id),
            esc(tool),
            job_id
                .as_deref()
                .map(|j| format!(" (job <code>{}</code>)", esc(j)))
                .unwrap_or_default(),
            trace_id
                .as_deref()
                .map(|t| format!(" · trace <code>{}</code>", esc(t)))
                .unwrap_or_default(),
            short(input_digest),
            input
                .as_deref()
                .map(|i| html::pre_marked(&glovebox::shown::visible(i), SHOWN))
                .unwrap_or_else(|| {
                    "<p class=\"muted\">too large to keep in the log: digest only</p>".into()
                })
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
            let mut out = format!(
                "{} by hook <b>{}</b> (<code>{}</code>, {took_ms} ms{}) on call <code>{}</code>",
                badge(decision),
                esc(hook),
                esc(pattern),
                hook_digest
                    .as_deref()
                    .map(|d| format!(", sha256 {}", short(d)))
                    .unwrap_or_default(),
                esc(call_id)
            );
            if let Some(r) = reason {
                let _ = write!(out, "<br>{}", esc(r));
            }
            if !alternatives.is_empty() {
                out += "<ul class=\"alternatives\">";
                for a in alternatives {
                    let _ = write!(out, "<li>{}</li>", esc(a));
                }
                out += "</ul>";
            }
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
            metering: m,
            ..
        } => {
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
        EventKind::CallInterrupted { call_id, reason } => format!(
            "{} call <code>{}</code>: {}",
            badge("interrupted"),
            esc(call_id),
            esc(reason)
        ),
        EventKind::Note { text } => format!("<q>{}</q>", esc(text)),
        EventKind::UsageReported {
            tokens_in,
            tokens_out,
            cost_micros,
            model,
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
        EventKind::GatesChecked { passed, gates } => {
            let rows: Vec<String> = gates
                .iter()
                .map(|g| {
                    format!(
                        "{} <code>{}</code> {}",
                        badge(if g.passed { "passed" } else { "failed" }),
                        esc(&g.tool),
                        esc(html::cut(&g.detail, 300).0)
                    )
                })
                .collect();
            format!(
                "completion gates {}<br>{}",
                badge(if *passed { "passed" } else { "failed" }),
                rows.join("<br>")
            )
        }
        EventKind::VerdictReceived { verdict } | EventKind::VerdictGiven { verdict, .. } => {
            format!(
                "{} on handoff {} by judge <code>{}</code> (session <code>{}</code>){}",
                badge(if verdict.pass { "pass" } else { "fail" }),
                verdict.handoff_seq,
                esc(&verdict.judge),
                esc(&verdict.judge_session),
                if verdict.reasons.is_empty() {
                    String::new()
                } else {
                    format!(": {}", esc(&verdict.reasons.join("; ")))
                }
            )
        }
        other => {
            // Handoffs, context, lifecycle: the record itself.
            let text = serde_json::to_string_pretty(other).unwrap_or_default();
            let first = text
                .lines()
                .skip(1)
                .find(|l| !l.trim_start().starts_with("\"type\""))
                .unwrap_or("");
            let (first, _) = html::cut(first, 120);
            format!(
                "<details><summary>{}</summary>{}</details>",
                esc(first.trim()),
                html::pre(&text, SHOWN)
            )
        }
    }
}

/// Entries of a scratch directory listed at most.
const MAX_SCRATCH: usize = 200;

/// The session's scratch directory, as a table of paths and sizes (at most
/// [`MAX_SCRATCH`] entries, four levels deep), read as every surface reads
/// it (`ScratchDirs::list_files`: beneath the directory, links listed and
/// never followed).
pub(crate) fn scratch_listing(root: &Path, session: &str) -> String {
    let dirs = ScratchDirs::new(root.to_path_buf());
    if dirs.path_of(session).is_err() {
        return "<p class=\"muted\">no scratch directory</p>".into();
    }
    let mut entries = Vec::new();
    walk(&dirs, session, "", 0, &mut entries);
    if entries.is_empty() {
        return "<p class=\"muted\" id=\"scratch\">empty (or not created yet)</p>".into();
    }
    let mut out = String::from(
        "<table id=\"scratch\"><thead><tr><th>path</th><th>size</th></tr></thead><tbody>",
    );
    for (path, size) in &entries {
        let _ = write!(
            out,
            "<tr><td><code>{}</code></td><td>{}</td></tr>",
            esc(path),
            esc(size)
        );
    }
    out += "</tbody></table>";
    if entries.len() >= MAX_SCRATCH {
        let _ = write!(out, "<p class=\"muted\">first {MAX_SCRATCH} entries</p>");
    }
    out
}

/// The entries under `at` (a directory's path ending in `/`, or the top),
/// depth first, as (path, what its size column says).
fn walk(
    dirs: &ScratchDirs,
    session: &str,
    at: &str,
    depth: usize,
    out: &mut Vec<(String, String)>,
) {
    let Ok(listing) = dirs.list_files(session, at, None, MAX_SCRATCH) else {
        return;
    };
    for entry in listing.entries {
        if out.len() >= MAX_SCRATCH {
            return;
        }
        let path = format!("{at}{}", entry.name);
        match entry.kind {
            EntryKind::Dir => {
                let dir = format!("{path}/");
                out.push((dir.clone(), "dir".into()));
                if depth < 4 {
                    walk(dirs, session, &dir, depth + 1, out);
                }
            }
            EntryKind::Link => out.push((path, "link".into())),
            EntryKind::File | EntryKind::Other => out.push((path, format!("{} B", entry.size))),
        }
    }
}

#[cfg(test)]
mod detail_tests;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_scratch_table_lists_files_and_directories_and_follows_no_link() {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().join("scratch");
        assert!(scratch_listing(&root, "s-1").contains("empty"));
        let dir = root.join("s-1");
        std::fs::create_dir_all(dir.join("out/deep")).unwrap();
        std::fs::write(dir.join("a.txt"), "hello").unwrap();
        std::fs::write(dir.join("out/deep/b <x>.txt"), "hi").unwrap();
        std::fs::write(tmp.path().join("secret"), "host only").unwrap();
        std::os::unix::fs::symlink(tmp.path(), dir.join("up")).unwrap();
        let table = scratch_listing(&root, "s-1");
        for row in [
            "<tr><td><code>a.txt</code></td><td>5 B</td></tr>",
            "<tr><td><code>out/</code></td><td>dir</td></tr>",
            "<tr><td><code>out/deep/</code></td><td>dir</td></tr>",
            "<tr><td><code>out/deep/b &lt;x&gt;.txt</code></td><td>2 B</td></tr>",
            "<tr><td><code>up</code></td><td>link</td></tr>",
        ] {
            assert!(table.contains(row), "{row} in {table}");
        }
        assert!(!table.contains("secret"), "{table}");
        assert!(scratch_listing(&root, "../x").contains("no scratch directory"));
    }
}
