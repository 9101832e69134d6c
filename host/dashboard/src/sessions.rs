//! `GET /ui/sessions` (sessions by filter, a page at a time) and
//! `GET /ui/sessions/ID` (one session: its watch, hash chain, timeline and
//! scratch directory; a timeline row's detail is `timeline.rs`).

use std::fmt::Write as _;

use axum::extract::{Path as UrlPath, Query};
use axum::http::StatusCode;
use axum::response::Response;
use glovebox::session::{Role, SessionFilter, SessionState, SessionStatus};

use crate::App;
use crate::card;
use crate::html::{self, badge, esc, url};
use crate::timeline::{event_detail, scratch_listing};
use crate::viewer::{Rendered, Viewer, internal, now_ms, session_link, some};

#[derive(serde::Deserialize, Default)]
pub struct SessionsQuery {
    blocked: Option<String>,
    project: Option<String>,
    role: Option<String>,
    owner: Option<String>,
    status: Option<String>,
    /// Where the previous page ended (its "next page" link).
    cursor: Option<String>,
}

pub async fn sessions(viewer: Viewer, Query(q): Query<SessionsQuery>) -> Response {
    viewer
        .page("sessions", "sessions", move |app| render_sessions(app, &q))
        .await
}

fn render_sessions(app: &App, q: &SessionsQuery) -> Rendered {
    let bad = |e: String| (StatusCode::BAD_REQUEST, e);
    let role = some(&q.role)
        .map(|r| r.parse::<Role>())
        .transpose()
        .map_err(|e| bad(e.to_string()))?;
    let status = some(&q.status)
        .map(|s| s.parse::<SessionStatus>())
        .transpose()
        .map_err(|e| bad(e.to_string()))?;
    let blocked = some(&q.blocked).is_some();
    let owner = some(&q.owner);
    let filter = SessionFilter {
        status,
        role,
        project: some(&q.project).map(str::to_string),
        owner: owner.map(str::to_string),
        ..SessionFilter::default()
    };
    let sessions = app.gateway.sessions();
    let page = glovebox::page::PageRequest {
        limit: None,
        cursor: some(&q.cursor).map(str::to_string),
    };
    let page = sessions.list(&filter, &page).map_err(|e| match e {
        glovebox::session::SessionError::InvalidInput(e) => bad(e),
        e => internal(e),
    })?;
    let host = app.gateway.host();
    let budgets = &host.config().budgets;
    let now = now_ms(app);
    let mut body = String::from("<h1>Sessions</h1>");
    // The filters, as query parameters.
    let _ = write!(
        body,
        "<form method=\"get\" action=\"/ui/sessions\" class=\"filters\" id=\"filters\">\
         <label><input type=\"checkbox\" name=\"blocked\" value=\"1\"{}> blocked only</label> \
         <label>project <input name=\"project\" value=\"{}\" size=\"12\"></label> \
         <label>role <select name=\"role\"><option value=\"\">any</option>",
        if blocked { " checked" } else { "" },
        esc(some(&q.project).unwrap_or(""))
    );
    for r in Role::ALL {
        let _ = write!(
            body,
            "<option{}>{}</option>",
            if role == Some(r) { " selected" } else { "" },
            r.as_str()
        );
    }
    let _ = write!(
        body,
        "</select></label> <label>owner <input name=\"owner\" value=\"{}\" size=\"12\"></label> \
         <label>status <input name=\"status\" value=\"{}\" size=\"10\"></label> \
         <button type=\"submit\">Filter</button> <a href=\"/ui/sessions\">clear</a></form>",
        esc(owner.unwrap_or("")),
        esc(some(&q.status).unwrap_or(""))
    );
    let mut rows = String::new();
    let mut shown = 0;
    for info in &page.items {
        let Ok(state) = sessions.show(&info.header.id) else {
            continue;
        };
        if blocked && state.watch.flags.is_empty() {
            continue;
        }
        shown += 1;
        rows += &session_row(&state, budgets, sessions, now);
    }
    if shown == 0 {
        body += "<p class=\"muted\" id=\"no-sessions\">no sessions match</p>";
    } else {
        let _ = write!(
            body,
            "<table id=\"sessions\"><thead><tr><th>session</th><th>status</th><th>role</th><th>owner</th><th>project</th><th>tags</th><th>age</th><th>last progress</th><th>flags</th><th>escalation</th><th>budget</th></tr></thead><tbody>{rows}</tbody></table>"
        );
    }
    // Newest first, a page at a time: the next page keeps the filters.
    if let Some(next) = &page.next_cursor {
        let mut link = format!("/ui/sessions?cursor={}", url(next));
        for (key, value) in [
            ("blocked", &q.blocked),
            ("project", &q.project),
            ("role", &q.role),
            ("owner", &q.owner),
            ("status", &q.status),
        ] {
            if let Some(value) = some(value) {
                let _ = write!(link, "&{key}={}", url(value));
            }
        }
        let _ = write!(
            body,
            "<p><a id=\"next-page\" href=\"{}\">next page</a></p>",
            esc(&link)
        );
    }
    Ok(("Sessions".into(), body))
}

fn session_row(
    s: &SessionState,
    budgets: &glovebox::manifest::BudgetsConfig,
    sessions: &glovebox::Sessions,
    now: u64,
) -> String {
    let mut flags = String::new();
    let mut list: Vec<_> = s.watch.flags.iter().collect();
    list.sort_by_key(|(rule, f)| (std::cmp::Reverse(f.severity), rule.as_str()));
    for (rule, f) in list {
        let _ = write!(
            flags,
            "<div class=\"flag\">{} <b>{}</b>: {}<br><span class=\"muted\">suggested: {}</span></div>",
            badge(f.severity.as_str()),
            esc(rule),
            esc(&f.reason),
            esc(&f.suggested_action)
        );
    }
    let mut budget = String::new();
    if let Ok(status) = glovebox::budget::status(sessions, budgets, &s.header.id) {
        for l in &status.limits {
            budget += &html::meter(l.used, l.limit, &format!("{}: {}", l.cap.as_str(), l.shown));
        }
    }
    if budget.is_empty() {
        budget = "<span class=\"muted\">no caps</span>".into();
    }
    let paused = s
        .paused_reason
        .as_deref()
        .map(|r| format!("<br><span class=\"muted\">{}</span>", esc(r)))
        .unwrap_or_default();
    format!(
        "<tr data-session=\"{}\"><td>{}<br><code class=\"muted\">{}</code></td><td>{}{paused}</td><td>{}</td><td>{}{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{budget}</td></tr>",
        esc(&s.header.id),
        session_link(&s.header.id, s.header.name.as_deref()),
        esc(&s.header.id),
        badge(s.header.status.as_str()),
        esc(s.header.role.as_str()),
        esc(s.owner_name()),
        card::model_line(s.agent.as_ref()),
        esc(&s.header.project),
        s.header
            .tags
            .iter()
            .map(|t| format!("<span class=\"tag plain\">{}</span>", esc(t)))
            .collect::<Vec<_>>()
            .join(" "),
        html::duration(now.saturating_sub(s.header.created_at_ms)),
        html::when(s.last_progress_at_ms, now),
        if flags.is_empty() {
            "-".to_string()
        } else {
            flags
        },
        badge(&s.watch.escalation.to_string()),
    )
}

#[derive(serde::Deserialize, Default)]
pub struct SessionQuery {
    from: Option<u64>,
}

/// Events shown on a session's page at once.
const TIMELINE: u64 = 500;

pub async fn session(
    viewer: Viewer,
    UrlPath(id): UrlPath<String>,
    Query(q): Query<SessionQuery>,
) -> Response {
    viewer
        .page("sessions", "sessions", move |app| {
            render_session(app, &id, q.from)
        })
        .await
}

fn render_session(app: &App, id: &str, from: Option<u64>) -> Rendered {
    let sessions = app.gateway.sessions();
    let state = sessions
        .show(id)
        .map_err(|e| (StatusCode::NOT_FOUND, e.to_string()))?;
    let now = now_ms(app);
    let host = app.gateway.host();
    let mut body = session_header(&state, now);
    // The card its first event recorded, and the config's today if it differs.
    let today = app
        .gateway
        .principals()
        .all()
        .into_iter()
        .find(|p| p.name == state.owner_name())
        .map(|p| p.card);
    body += &card::recorded(state.agent.as_ref(), today.as_ref());
    body += &chain_check(sessions, &state);
    // Flags and budget.
    let budgets = &host.config().budgets;
    let _ = write!(
        body,
        "<h2>Watch</h2><table><tbody>{}</tbody></table>",
        session_row(&state, budgets, sessions, now).replace("<tr ", "<tr class=\"single\" ")
    );
    body += &session_timeline(sessions, &state, from)?;
    // The scratch directory.
    body += "<h2>Scratch directory</h2>";
    body += &scratch_listing(&host.config().scratch_dir(), &state.header.id);
    Ok((
        format!(
            "Session {}",
            state.header.name.as_deref().unwrap_or(&state.header.id)
        ),
        body,
    ))
}

/// A session page's heading: its name, id, status, role, owner, project
/// and times, and why it is paused.
fn session_header(state: &SessionState, now: u64) -> String {
    let mut body = format!(
        "<h1>Session {}</h1><p><code>{}</code> · {} · role <b>{}</b> · owner <b>{}</b> · project <b>{}</b> · started {} · last progress {}</p>",
        esc(state.header.name.as_deref().unwrap_or(&state.header.id)),
        esc(&state.header.id),
        badge(state.header.status.as_str()),
        esc(state.header.role.as_str()),
        esc(state.owner_name()),
        esc(&state.header.project),
        html::when(state.header.created_at_ms, now),
        html::when(state.last_progress_at_ms, now),
    );
    if let Some(reason) = &state.paused_reason {
        let _ = write!(
            body,
            "<p class=\"warn\">paused: {}{}</p>",
            esc(reason),
            match &state.paused_by {
                Some(by) => format!(" (by {})", esc(by)),
                None => " (by the host: an operator lifts it)".into(),
            }
        );
    }
    body
}

/// What a check of the session's hash chain found.
fn chain_check(sessions: &glovebox::Sessions, state: &SessionState) -> String {
    match sessions.verify(&state.header.id) {
        Ok(r) if r.ok => format!(
            "<p id=\"verify\" class=\"good\">log verify: ok, {} events, chain intact</p>",
            r.events_checked
        ),
        Ok(r) => {
            let (seq, reason) = r.first_bad.clone().unwrap_or_default();
            format!(
                "<p id=\"verify\" class=\"error\">log verify: BAD, first bad event {seq}: {}</p>",
                esc(&reason)
            )
        }
        Err(e) => format!(
            "<p id=\"verify\" class=\"error\">log verify failed: {}</p>",
            esc(&e.to_string())
        ),
    }
}

/// The session's timeline: [`TIMELINE`] events from `from` (by default
/// its last ones), with a link to the ones before, a row each.
fn session_timeline(
    sessions: &glovebox::Sessions,
    state: &SessionState,
    from: Option<u64>,
) -> Result<String, (StatusCode, String)> {
    let last = state.last_seq;
    let from = from
        .unwrap_or_else(|| last.saturating_sub(TIMELINE - 1))
        .max(1);
    let events = sessions
        .events(&state.header.id, from, TIMELINE as usize)
        .map_err(internal)?;
    let mut body = format!(
        "<h2>Timeline</h2><p class=\"muted\">events {from} to {} of {last}",
        events.last().map(|e| e.seq).unwrap_or(from)
    );
    if from > 1 {
        let _ = write!(
            body,
            " · <a href=\"/ui/sessions/{}?from={}\">earlier</a>",
            url(&state.header.id),
            from.saturating_sub(TIMELINE).max(1)
        );
    }
    body += "</p><table id=\"timeline\"><thead><tr><th>#</th><th>time</th><th>event</th><th>detail</th></tr></thead><tbody>";
    for e in &events {
        let _ = write!(
            body,
            "<tr class=\"ev {}\"><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            e.kind.name(),
            e.seq,
            html::time(e.at_ms),
            e.kind.name(),
            event_detail(e)
        );
    }
    body += "</tbody></table>";
    Ok(body)
}

#[cfg(test)]
mod tests;
