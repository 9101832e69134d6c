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
//!
//! A tool held for its text (`held_tool_text`) has, beside its fix, the
//! button that accepts its plugin's text (`plugin_actions.rs`: the
//! operation `plugins.accept`, as `glovebox plugin accept` runs it), after
//! the operator read the change and the findings in the row.

use std::fmt::Write as _;

use axum::extract::Query;
use axum::http::StatusCode;
use axum::response::Response;
use glovebox::doctor::{
    DailyScore, FULL_SCORE, Finding, NOTICE_WEIGHT, Severity, TREND_DAYS, WARNING_WEIGHT, score,
};

use crate::html::{badge, esc, url};
use crate::viewer::{Rendered, Viewer, internal, now_ms, session_link};

#[derive(serde::Deserialize)]
pub struct DoctorQuery {
    /// The plugin whose text an operator just accepted.
    accepted: Option<String>,
}

/// `GET /ui/doctor`.
pub async fn doctor(viewer: Viewer, Query(q): Query<DoctorQuery>) -> Response {
    shown(viewer, StatusCode::OK, Flash::of(q.accepted.as_deref())).await
}

/// What the page says above its findings after an action: done, or why not.
pub(crate) enum Flash {
    None,
    Accepted(String),
    Refused(String),
}

impl Flash {
    fn of(accepted: Option<&str>) -> Flash {
        accepted.map_or(Flash::None, |p| Flash::Accepted(p.to_string()))
    }

    fn html(&self) -> String {
        match self {
            Flash::None => String::new(),
            Flash::Accepted(plugin) => format!(
                "<p class=\"good\" id=\"flash\">accepted the text of plugin <code>{}</code>: its tools are offered again</p>",
                esc(plugin)
            ),
            Flash::Refused(why) => format!("<p class=\"error\" id=\"flash\">{}</p>", esc(why)),
        }
    }
}

/// The page with `flash` above it, answered with `status`.
pub(crate) async fn shown(viewer: Viewer, status: StatusCode, flash: Flash) -> Response {
    let found = glovebox::doctor::check(&viewer.app.gateway)
        .await
        .map_err(crate::viewer::internal);
    viewer
        .page_with(status, "doctor", "sessions", move |app| {
            let today = glovebox::billing::day_of(now_ms(app));
            let trend = glovebox::doctor::trend(&app.gateway).map_err(internal);
            let (title, body) = render(found, trend, &today)?;
            Ok((title, format!("{}{body}", flash.html())))
        })
        .await
}

/// For a tool held for its text, the button that accepts its plugin's
/// text (once a plugin, on its first row).
fn accept_button(f: &Finding, shown: &mut std::collections::BTreeSet<String>) -> String {
    if f.rule.as_str() != "held_tool_text" {
        return String::new();
    }
    let plugin = f
        .culprit
        .name
        .split_once('.')
        .map_or(f.culprit.name.as_str(), |(p, _)| p);
    if !shown.insert(plugin.to_string()) {
        return String::new();
    }
    format!(
        "<form method=\"post\" action=\"/ui/plugins/{}/accept\" class=\"inline\"><button type=\"submit\" id=\"accept-{}\">Accept the text of {}</button></form>",
        url(plugin),
        esc(plugin),
        esc(plugin)
    )
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
    let mut buttons = std::collections::BTreeSet::new();
    for f in &found {
        let culprit = match (&f.culprit.id, f.culprit.kind.as_str()) {
            (Some(id), _) => session_link(id, Some(&f.culprit.name)),
            (None, "session") => session_link(&f.culprit.name, None),
            (None, kind) => format!("{kind} <code>{}</code>", esc(&f.culprit.name)),
        };
        let _ = write!(
            body,
            "<tr class=\"finding {rule}\"><td>{sev}</td><td><code>{rule}</code></td><td>{culprit}</td><td>{message}</td><td>{fix}{button}</td></tr>",
            sev = badge(f.severity.as_str()),
            rule = f.rule.as_str(),
            message = esc(&f.message),
            fix = esc(&f.fix),
            button = accept_button(f, &mut buttons),
        );
    }
    body += "</tbody></table>";
    body += &trend;
    Ok(("Doctor".into(), body))
}
