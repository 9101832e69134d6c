//! The antipattern page (`/ui/doctor`): what `glovebox doctor` finds in the
//! running server's config and data dir (docs/operators/doctor.md's list: jobs nobody waited
//! for, sessions without a name, hooks on `*` that allow everything, roles
//! without budgets, long sessions without a handoff, plugins without a digest
//! pin, read-write directories shared by plugins), warnings first, each with
//! its culprit and the fix.
//!
//! The findings come from the same function as the command (`doctor::check`),
//! so the page and `glovebox doctor --json` never disagree. Above them, the
//! compliance score they make (`doctor::score`: 100 less 10 per warning and
//! 2 per notice, never below 0) and its trend over the last 30 days, from
//! the records the sweep writes once a day (`trend.rs`).

use std::fmt::Write as _;

use axum::http::StatusCode;
use axum::response::Response;
use glovebox::doctor::{
    DailyScore, FULL_SCORE, Finding, NOTICE_WEIGHT, Severity, TREND_DAYS, WARNING_WEIGHT, score,
};

use crate::html::{badge, esc};
use crate::viewer::{Rendered, Viewer, internal, now_ms, session_link};

/// `GET /ui/doctor`.
pub async fn doctor(viewer: Viewer) -> Response {
    let found = glovebox::doctor::check(&viewer.app.gateway)
        .await
        .map_err(crate::viewer::internal);
    viewer
        .page("doctor", "sessions", move |app| {
            let today = glovebox::billing::day_of(now_ms(app));
            let trend = glovebox::doctor::trend(&app.gateway).map_err(internal);
            render(found, trend, &today)
        })
        .await
}

pub(crate) fn render(
    found: Result<Vec<Finding>, (StatusCode, String)>,
    trend: Result<Vec<DailyScore>, (StatusCode, String)>,
    today: &str,
) -> Rendered {
    let found = found?;
    let warnings = found
        .iter()
        .filter(|f| f.severity == Severity::Warning)
        .count();
    let mut body = format!(
        "<h1>Doctor</h1><p id=\"doctor-summary\">{} warning(s), {} notice(s): what <code>glovebox doctor</code> finds in this server's config and data dir.</p>",
        warnings,
        found.len() - warnings
    );
    let scored = score(&found);
    let _ = write!(
        body,
        "<p id=\"compliance-score\">compliance score <b>{}</b>/{FULL_SCORE} <span class=\"muted\">({} warning(s) × {WARNING_WEIGHT}, {} notice(s) × {NOTICE_WEIGHT} taken from {FULL_SCORE}, never below 0)</span></p>",
        scored.score, scored.warnings, scored.notices,
    );
    let trend = crate::trend::trend(&trend?, today, TREND_DAYS);
    if found.is_empty() {
        body += "<p class=\"muted\" id=\"no-findings\">no antipatterns found</p>";
        body += &trend;
        return Ok(("Doctor".into(), body));
    }
    body += "<table id=\"findings\"><thead><tr><th>severity</th><th>rule</th><th>culprit</th><th>what is wrong</th><th>fix</th></tr></thead><tbody>";
    for f in &found {
        let culprit = match (&f.culprit.id, f.culprit.kind.as_str()) {
            (Some(id), _) => session_link(id, Some(&f.culprit.name)),
            (None, "session") => session_link(&f.culprit.name, None),
            (None, kind) => format!("{kind} <code>{}</code>", esc(&f.culprit.name)),
        };
        let _ = write!(
            body,
            "<tr class=\"finding {rule}\"><td>{sev}</td><td><code>{rule}</code></td><td>{culprit}</td><td>{message}</td><td>{fix}</td></tr>",
            sev = badge(f.severity.as_str()),
            rule = f.rule.as_str(),
            message = esc(&f.message),
            fix = esc(&f.fix),
        );
    }
    body += "</tbody></table>";
    body += &trend;
    Ok(("Doctor".into(), body))
}
