//! `GET /ui/notify`: the `[[notify]]` targets and their outbox.

use std::fmt::Write as _;

use axum::response::Response;

use crate::App;
use crate::html::{self, esc};
use crate::viewer::{Rendered, Viewer, internal, now_ms, session_link};

pub async fn notify(viewer: Viewer) -> Response {
    viewer
        .page("notify", "sessions approvals jobs rescues", render_notify)
        .await
}

/// The `[[notify]]` targets and their outbox, as `glovebox notify status`.
fn render_notify(app: &App) -> Rendered {
    let targets = app.gateway.ledger().outbox.status().map_err(internal)?;
    let now = now_ms(app);
    let mut body = String::from("<h1>Notifications</h1>");
    if targets.is_empty() {
        body += "<p class=\"muted\" id=\"no-targets\">no <code>[[notify]]</code> targets are configured and the outbox is empty</p>";
        return Ok(("Notifications".into(), body));
    }
    body += "<table id=\"targets\"><thead><tr><th>target</th><th>url</th><th>pending</th><th>delivered</th><th>failed (gave up)</th><th title=\"dropped, oldest first, because the target's outbox held quotas.outbox_per_target\">dropped (outbox full)</th><th>last delivery</th></tr></thead><tbody>";
    for t in &targets {
        let _ = write!(
            body,
            "<tr><td>{}</td><td><code>{}</code></td><td>{}</td><td>{}</td><td>{}</td><td class=\"dropped\">{}</td><td>{}</td></tr>",
            esc(&t.target),
            esc(&t
                .url
                .as_deref()
                .map(glovebox::notify::redacted)
                .unwrap_or_else(|| "(no longer configured)".into())),
            t.pending,
            t.delivered,
            t.failed,
            match t.last_dropped_at_ms {
                Some(at) if t.dropped > 0 =>
                    format!("{} (the last {})", t.dropped, html::when(at, now)),
                _ => "0".into(),
            },
            t.last_delivered_at_ms
                .map(|at| html::when(at, now))
                .unwrap_or_else(|| "-".into())
        );
    }
    body += "</tbody></table>";
    for t in &targets {
        for (what, entries) in [
            ("failed (gave up)", &t.failed_entries),
            ("retrying", &t.retrying),
        ] {
            if entries.is_empty() {
                continue;
            }
            let _ = write!(
                body,
                "<h2>{}: {what}</h2><table><thead><tr><th>delivery</th><th>event</th><th>session</th><th>attempts</th><th>last error</th></tr></thead><tbody>",
                esc(&t.target)
            );
            for e in entries.iter().take(100) {
                let n = &e.notification;
                let _ = write!(
                    body,
                    "<tr><td><code>{}</code></td><td>{}</td><td>{} event {}</td><td>{}</td><td>{}</td></tr>",
                    esc(&e.delivery_id),
                    esc(&n.event),
                    session_link(&n.session, n.session_name.as_deref()),
                    n.seq,
                    e.attempts,
                    esc(e.last_error.as_deref().unwrap_or("-"))
                );
            }
            body += "</tbody></table>";
        }
    }
    Ok(("Notifications".into(), body))
}
