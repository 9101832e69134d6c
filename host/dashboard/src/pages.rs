//! The pages: sessions, one session, the approvals inbox, billing,
//! rescues; and `/metrics` (the jobs pages are `jobs.rs`). Each page reads the ledger off the async threads
//! ([`crate::blocking`]) through the `glovebox` crate's public API and
//! escapes everything it shows.

use std::fmt::Write as _;
use std::path::Path;
use std::sync::Arc;

use axum::Extension;
use axum::Form;
use axum::extract::{FromRequestParts, Path as UrlPath, Query, State};
use axum::http::request::Parts;
use axum::http::{StatusCode, header};
use axum::response::{Html, IntoResponse, Redirect, Response};
use glovebox::approvals::ApprovalStatus;
use glovebox::billing::{self, DateRange, GroupBy};
use glovebox::page::PageRequest;
use glovebox::session::{
    Event, EventKind, Role, SessionError, SessionFilter, SessionState, SessionStatus,
};

use crate::App;
use crate::auth::Operator;
use crate::html::{self, Bar, Chrome, badge, esc, url};

/// What a page's reader returns: its title and body, or an answer that is not a page.
pub(crate) type Rendered = Result<(String, String), (StatusCode, String)>;

/// A reader's failure (the store's, a report's) as the answer a page gives
/// in its place: 500 with the error's own words.
pub(crate) fn internal(e: impl std::fmt::Display) -> (StatusCode, String) {
    (StatusCode::INTERNAL_SERVER_ERROR, e.to_string())
}

/// Who a page is served to, and the app serving it: what every page's
/// handler extracts (the operator is set by [`crate::auth::guard`]).
pub(crate) struct Viewer {
    pub(crate) app: Arc<App>,
    pub(crate) op: Operator,
}

impl FromRequestParts<Arc<App>> for Viewer {
    type Rejection = <Extension<Operator> as FromRequestParts<Arc<App>>>::Rejection;

    async fn from_request_parts(
        parts: &mut Parts,
        app: &Arc<App>,
    ) -> Result<Self, Self::Rejection> {
        let Extension(op) = Extension::<Operator>::from_request_parts(parts, app).await?;
        Ok(Viewer {
            app: Arc::clone(app),
            op,
        })
    }
}

impl Viewer {
    /// Renders a page with `200 OK`: see [`Viewer::page_with`].
    pub(crate) async fn page(
        self,
        active: &'static str,
        watch: &'static str,
        read: impl FnOnce(&App) -> Rendered + Send + 'static,
    ) -> Response {
        self.page_with(StatusCode::OK, active, watch, read).await
    }

    /// Renders a page: `read` runs off the async threads, the layout around it.
    /// `active` is its nav entry, `watch` the parts of the ledger whose changes
    /// refresh it (see [`Chrome`]).
    pub(crate) async fn page_with(
        self,
        status: StatusCode,
        active: &'static str,
        watch: &'static str,
        read: impl FnOnce(&App) -> Rendered + Send + 'static,
    ) -> Response {
        let Viewer { app, op } = self;
        let result = crate::blocking(move || {
            let pending = app
                .gateway
                .ledger()
                .approvals
                .count_pending(PENDING_COUNTED)
                .unwrap_or(0);
            let logins = app.gateway.principals().declared();
            (read(&app), pending, logins)
        })
        .await;
        let (read, pending, logins) = match result {
            Ok(r) => r,
            Err(e) => {
                return (StatusCode::INTERNAL_SERVER_ERROR, format!("{e:#}\n")).into_response();
            }
        };
        let (status, title, body) = match read {
            Ok((title, body)) => (status, title, body),
            Err((status, message)) => (
                status,
                "Error".to_string(),
                format!("<p class=\"error\">{}</p>", esc(&message)),
            ),
        };
        let chrome = Chrome {
            title: &title,
            active,
            watch,
            operator: &op.0.name,
            pending_approvals: pending,
            logins,
        };
        (status, Html(html::page(&chrome, &body))).into_response()
    }
}

/// Now, by the ledger's clock (see `glovebox_ledger::clock`).
pub(crate) fn now_ms(app: &App) -> u64 {
    app.gateway.sessions().clock_ms()
}

fn some(v: &Option<String>) -> Option<&str> {
    v.as_deref().map(str::trim).filter(|s| !s.is_empty())
}

pub(crate) fn session_link(id: &str, name: Option<&str>) -> String {
    format!(
        "<a href=\"/ui/sessions/{}\">{}</a>",
        url(id),
        esc(name.unwrap_or(id))
    )
}

fn short(digest: &str) -> String {
    let (s, _) = html::cut(digest, 12);
    format!("<code title=\"{}\">{}</code>", esc(digest), esc(s))
}

// ---------------------------------------------------------------- assets

/// An embedded asset, cached by the browser for `max_age` seconds.
fn asset(content_type: &'static str, max_age: &'static str, body: &'static str) -> Response {
    (
        [
            (header::CONTENT_TYPE, content_type),
            (header::CACHE_CONTROL, max_age),
        ],
        body,
    )
        .into_response()
}

pub async fn style() -> Response {
    asset(
        "text/css; charset=utf-8",
        "max-age=300",
        include_str!("assets/style.css"),
    )
}

pub async fn script() -> Response {
    asset(
        "text/javascript; charset=utf-8",
        "max-age=300",
        include_str!("assets/app.js"),
    )
}

pub async fn icon() -> Response {
    asset(
        "image/svg+xml",
        "max-age=86400",
        include_str!("assets/icon.svg"),
    )
}

pub async fn to_ui() -> Redirect {
    Redirect::to("/ui")
}

pub async fn not_found() -> Response {
    (
        StatusCode::NOT_FOUND,
        "not found: the dashboard is at /ui, the metrics at /metrics\n",
    )
        .into_response()
}

/// `GET /metrics`, as on the MCP listener.
pub async fn metrics(State(app): State<Arc<App>>, Extension(_): Extension<Operator>) -> Response {
    match app.gateway.metrics_text().await {
        Ok(text) => (
            [(header::CONTENT_TYPE, glovebox::metrics::CONTENT_TYPE)],
            text,
        )
            .into_response(),
        Err(e) => (
            StatusCode::INTERNAL_SERVER_ERROR,
            format!("cannot read the ledger for the metrics: {e}\n"),
        )
            .into_response(),
    }
}

// ---------------------------------------------------------------- sessions

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
        "<tr data-session=\"{}\"><td>{}<br><code class=\"muted\">{}</code></td><td>{}{paused}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{budget}</td></tr>",
        esc(&s.header.id),
        session_link(&s.header.id, s.header.name.as_deref()),
        esc(&s.header.id),
        badge(s.header.status.as_str()),
        esc(s.header.role.as_str()),
        esc(s.owner_name()),
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

// ---------------------------------------------------------------- one session

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
    // The hash chain.
    match sessions.verify(&state.header.id) {
        Ok(r) if r.ok => {
            let _ = write!(
                body,
                "<p id=\"verify\" class=\"good\">log verify: ok, {} events, chain intact</p>",
                r.events_checked
            );
        }
        Ok(r) => {
            let (seq, reason) = r.first_bad.clone().unwrap_or_default();
            let _ = write!(
                body,
                "<p id=\"verify\" class=\"error\">log verify: BAD, first bad event {seq}: {}</p>",
                esc(&reason)
            );
        }
        Err(e) => {
            let _ = write!(
                body,
                "<p id=\"verify\" class=\"error\">log verify failed: {}</p>",
                esc(&e.to_string())
            );
        }
    }
    // Flags and budget.
    let budgets = &host.config().budgets;
    let _ = write!(
        body,
        "<h2>Watch</h2><table><tbody>{}</tbody></table>",
        session_row(&state, budgets, sessions, now).replace("<tr ", "<tr class=\"single\" ")
    );
    // The timeline.
    let last = state.last_seq;
    let from = from
        .unwrap_or_else(|| last.saturating_sub(TIMELINE - 1))
        .max(1);
    let events = sessions
        .events(&state.header.id, from, TIMELINE as usize)
        .map_err(internal)?;
    let _ = write!(
        body,
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

/// How much of an input or output a timeline row shows.
const SHOWN: usize = 4096;

fn event_detail(e: &Event) -> String {
    match &e.kind {
        EventKind::CallRequested {
            call_id,
            tool,
            input_digest,
            input,
            job_id,
        } => format!(
            "call <code>{}</code> of <b>{}</b>{} · input {}<details><summary>input</summary>{}</details>",
            esc(call_id),
            esc(tool),
            job_id
                .as_deref()
                .map(|j| format!(" (job <code>{}</code>)", esc(j)))
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

fn scratch_listing(root: &Path, session: &str) -> String {
    let Ok(dir) = glovebox::scratch::ScratchDirs::new(root.to_path_buf()).path_of(session) else {
        return "<p class=\"muted\">no scratch directory</p>".into();
    };
    let mut entries = Vec::new();
    walk(&dir, &dir, 0, &mut entries);
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
            size.map(|s| format!("{s} B"))
                .unwrap_or_else(|| "dir".into())
        );
    }
    out += "</tbody></table>";
    if entries.len() >= MAX_SCRATCH {
        let _ = write!(out, "<p class=\"muted\">first {MAX_SCRATCH} entries</p>");
    }
    out
}

fn walk(root: &Path, dir: &Path, depth: usize, out: &mut Vec<(String, Option<u64>)>) {
    let Ok(read) = std::fs::read_dir(dir) else {
        return;
    };
    let mut items: Vec<_> = read.filter_map(Result::ok).collect();
    items.sort_by_key(|e| e.file_name());
    for entry in items {
        if out.len() >= MAX_SCRATCH {
            return;
        }
        let path = entry.path();
        // Never follows a link out of the directory.
        let Ok(meta) = std::fs::symlink_metadata(&path) else {
            continue;
        };
        let rel = path
            .strip_prefix(root)
            .unwrap_or(&path)
            .to_string_lossy()
            .into_owned();
        if meta.is_dir() {
            out.push((format!("{rel}/"), None));
            if depth < 4 {
                walk(root, &path, depth + 1, out);
            }
        } else {
            out.push((rel, Some(meta.len())));
        }
    }
}

// ---------------------------------------------------------------- approvals

/// Pending approvals the nav's badge counts at most (a walk of the index
/// that stops there).
const PENDING_COUNTED: usize = 1000;
/// Settled approvals shown below the pending ones (the newest).
const SETTLED_SHOWN: usize = 50;

#[derive(serde::Deserialize, Default)]
pub struct ApprovalsQuery {
    done: Option<String>,
    /// Where the page of pending approvals starts (the previous page's
    /// "next page" link).
    cursor: Option<String>,
}

pub async fn approvals(viewer: Viewer, Query(q): Query<ApprovalsQuery>) -> Response {
    viewer
        .page("approvals", "approvals", move |app| {
            render_approvals(app, q.done.as_deref(), q.cursor, None)
        })
        .await
}

/// The approvals page after an approval or a denial failed, saying why.
async fn approvals_refused(viewer: Viewer, message: String) -> Response {
    viewer
        .page_with(StatusCode::CONFLICT, "approvals", "approvals", move |app| {
            render_approvals(app, None, None, Some(&message))
        })
        .await
}

fn render_approvals(
    app: &App,
    done: Option<&str>,
    cursor: Option<String>,
    error: Option<&str>,
) -> Rendered {
    let store = &app.gateway.ledger().approvals;
    let page = store
        .page(
            false,
            &PageRequest {
                limit: None,
                cursor,
            },
        )
        .map_err(|e| match e {
            SessionError::InvalidInput(why) => (StatusCode::BAD_REQUEST, why),
            e => internal(e),
        })?;
    let now = now_ms(app);
    let mut body = String::from("<h1>Approvals</h1>");
    if let Some(message) = error {
        let _ = write!(body, "<p class=\"error\" id=\"flash\">{}</p>", esc(message));
    }
    if let Some(a) = done.and_then(|id| store.get(id).ok()) {
        let said = match &a.status {
            ApprovalStatus::Approved { by, .. } => format!(
                "approved by {}: the call ran (its outcome is in the session's timeline)",
                esc(by.as_deref().unwrap_or("?"))
            ),
            ApprovalStatus::Denied { by, reason, .. } => format!(
                "denied by {}: {}",
                esc(by.as_deref().unwrap_or("?")),
                esc(reason)
            ),
            ApprovalStatus::Pending => "still pending".into(),
        };
        let _ = write!(
            body,
            "<p class=\"good\" id=\"flash\"><code>{}</code> ({} in {}): {said}</p>",
            esc(&a.id),
            esc(&a.tool),
            session_link(&a.session, a.session_name.as_deref())
        );
    }
    let pending = &page.items;
    if pending.is_empty() {
        body += "<p class=\"muted\" id=\"no-pending\">no pending approvals</p>";
    }
    // One rendering of an approval for every surface (threat 55).
    let host = app.gateway.host();
    for a in pending {
        body += &crate::approval::card(&host.show_approval(a), now);
    }
    if let Some(next) = &page.next_cursor {
        let _ = write!(
            body,
            "<p class=\"more\"><a id=\"next-page\" href=\"/ui/approvals?cursor={}\">next page of pending approvals</a></p>",
            url(next)
        );
    }
    let settled = store
        .settled(&PageRequest::first(SETTLED_SHOWN))
        .map_err(internal)?
        .items;
    if !settled.is_empty() {
        body += "<h2>Settled</h2><table id=\"settled\"><thead><tr><th>approval</th><th>tool</th><th>session</th><th>settled</th><th>by</th><th>reason</th></tr></thead><tbody>";
        for a in settled {
            let (word, by, reason, at) = match &a.status {
                ApprovalStatus::Approved { by, at_ms } => {
                    ("approved", by.clone(), String::new(), *at_ms)
                }
                ApprovalStatus::Denied { by, reason, at_ms } => {
                    ("denied", by.clone(), reason.clone(), *at_ms)
                }
                ApprovalStatus::Pending => continue,
            };
            let _ = write!(
                body,
                "<tr><td><code>{}</code></td><td>{}</td><td>{}</td><td>{} {}</td><td>{}</td><td>{}</td></tr>",
                esc(&a.id),
                esc(&a.tool),
                session_link(&a.session, a.session_name.as_deref()),
                badge(word),
                html::when(at, now),
                esc(by.as_deref().unwrap_or("-")),
                esc(&reason)
            );
        }
        body += "</tbody></table>";
    }
    Ok(("Approvals".into(), body))
}

/// `POST /ui/approvals/ID/approve`: as `glovebox approve ID`, recording the operator.
pub async fn approve(viewer: Viewer, UrlPath(id): UrlPath<String>) -> Response {
    tracing::info!(approval = %id, principal = %viewer.op.0.name, "dashboard: approve");
    match viewer.app.gateway.approve(&id, &viewer.op.0).await {
        Ok(_) => Redirect::to(&format!("/ui/approvals?done={}", url(&id))).into_response(),
        Err(e) => approvals_refused(viewer, e.to_string()).await,
    }
}

#[derive(serde::Deserialize)]
pub struct DenyForm {
    #[serde(default)]
    reason: String,
}

/// `POST /ui/approvals/ID/deny`: as `glovebox deny ID --reason ...`.
pub async fn deny(
    viewer: Viewer,
    UrlPath(id): UrlPath<String>,
    Form(form): Form<DenyForm>,
) -> Response {
    let reason = form.reason.trim().to_string();
    let result = if reason.is_empty() {
        Err("a denial needs a reason: the agent is told it".to_string())
    } else {
        tracing::info!(approval = %id, principal = %viewer.op.0.name, "dashboard: deny");
        viewer
            .app
            .gateway
            .deny_approval(&id, &reason, &viewer.op.0)
            .await
            .map(|_| ())
            .map_err(|e| e.to_string())
    };
    match result {
        Ok(()) => Redirect::to(&format!("/ui/approvals?done={}", url(&id))).into_response(),
        Err(message) => approvals_refused(viewer, message).await,
    }
}

// The jobs pages are `jobs.rs`.

// ---------------------------------------------------------------- billing

#[derive(serde::Deserialize, Default)]
pub struct BillingQuery {
    from: Option<String>,
    to: Option<String>,
    by: Option<String>,
}

const GROUPINGS: [GroupBy; 4] = [GroupBy::Role, GroupBy::Project, GroupBy::Tool, GroupBy::Day];

pub async fn billing(viewer: Viewer, Query(q): Query<BillingQuery>) -> Response {
    viewer
        .page("billing", "sessions", move |app| render_billing(app, &q))
        .await
}

fn range(app: &App, q: &BillingQuery) -> Result<DateRange, (StatusCode, String)> {
    DateRange::parse(some(&q.from), some(&q.to), now_ms(app))
        .map_err(|e| (StatusCode::BAD_REQUEST, e))
}

fn render_billing(app: &App, q: &BillingQuery) -> Rendered {
    let range = range(app, q)?;
    let sessions = app.gateway.sessions();
    let mut body = format!(
        "<h1>Billing</h1><form method=\"get\" action=\"/ui/billing\" class=\"filters\">\
         <label>from <input name=\"from\" value=\"{}\" placeholder=\"YYYY-MM-DD\" size=\"10\"></label> \
         <label>to <input name=\"to\" value=\"{}\" placeholder=\"YYYY-MM-DD\" size=\"10\"></label> \
         <button type=\"submit\">Show</button></form>",
        esc(some(&q.from).unwrap_or("")),
        esc(some(&q.to).unwrap_or(""))
    );
    for by in GROUPINGS {
        let report = billing::report(sessions, &range, by).map_err(internal)?;
        let csv = format!(
            "/ui/billing.csv?by={}{}{}",
            by.as_str(),
            some(&q.from)
                .map(|f| format!("&from={}", url(f)))
                .unwrap_or_default(),
            some(&q.to)
                .map(|t| format!("&to={}", url(t)))
                .unwrap_or_default()
        );
        let _ = write!(
            body,
            "<section class=\"billing\" id=\"billing-{by}\"><h2>By {by} <span class=\"muted\">{} to {}, {} sessions</span> <a href=\"{}\" class=\"csv\" download>CSV</a></h2>",
            esc(&report.from),
            esc(&report.to),
            report.sessions,
            esc(&csv),
            by = by.as_str()
        );
        let bars: Vec<Bar> = report
            .groups
            .iter()
            .map(|g| Bar {
                label: g.label.clone().unwrap_or_else(|| g.key.clone()),
                parts: vec![(g.foreground.cost, "fg"), (g.background.cost, "bg")],
                shown: format!("{:.4} · {} calls", g.total.cost, g.total.calls),
            })
            .collect();
        body += "<div class=\"charts\">";
        body += &html::bar_chart(
            &format!("cost by {}", by.as_str()),
            &bars,
            &[("foreground", "fg"), ("background (jobs)", "bg")],
        );
        let calls: Vec<Bar> = report
            .groups
            .iter()
            .map(|g| Bar {
                label: g.label.clone().unwrap_or_else(|| g.key.clone()),
                parts: vec![
                    (g.foreground.calls as f64, "fg"),
                    (g.background.calls as f64, "bg"),
                ],
                shown: format!("{} calls ({} failed)", g.total.calls, g.total.failures),
            })
            .collect();
        body += &html::bar_chart(
            &format!("calls by {}", by.as_str()),
            &calls,
            &[("foreground", "fg"), ("background (jobs)", "bg")],
        );
        body += "</div>";
        body += "<table><thead><tr><th>key</th>";
        for (_, heading, _) in billing_columns(&report.total) {
            if let Some(heading) = heading {
                let _ = write!(body, "<th>{heading}</th>");
            }
        }
        body += "</tr></thead><tbody>";
        for g in report.groups.iter().chain([&report.total]) {
            let key = g
                .label
                .as_ref()
                .map_or_else(|| g.key.clone(), |l| format!("{l} ({})", g.key));
            let _ = write!(body, "<tr><td>{}</td>", esc(&key));
            for (_, heading, figure) in billing_columns(g) {
                if heading.is_some() {
                    let _ = write!(body, "<td>{}</td>", figure.shown(4));
                }
            }
            body += "</tr>";
        }
        body += "</tbody></table></section>";
    }
    Ok(("Billing".into(), body))
}

/// A billing figure: a count, an amount in decimal units, or milliseconds.
#[derive(Clone, Copy)]
enum Figure {
    Count(u64),
    Amount(f64),
    Ms(u64),
}

impl Figure {
    /// As shown, amounts with `digits` decimals (milliseconds with three).
    fn shown(self, digits: usize) -> String {
        match self {
            Figure::Count(n) => n.to_string(),
            Figure::Amount(x) => format!("{x:.digits$}"),
            Figure::Ms(us) => format!("{:.3}", us as f64 / 1000.0),
        }
    }
}

/// The billing table's columns, the page's and the CSV's alike, for group
/// `g`: the CSV's name, the page's heading (`None`: in the CSV only), and
/// the figure.
fn billing_columns(g: &billing::Group) -> [(&'static str, Option<&'static str>, Figure); 13] {
    use Figure::{Amount, Count, Ms};
    let (all, fg, bg) = (&g.total, &g.foreground, &g.background);
    [
        ("calls", Some("calls"), Count(all.calls)),
        ("failures", Some("failures"), Count(all.failures)),
        ("wall_ms", None, Ms(all.wall_us)),
        ("fuel", None, Count(all.fuel)),
        ("bytes_in", None, Count(all.bytes_in)),
        ("bytes_out", None, Count(all.bytes_out)),
        ("tool_cost", Some("tool cost"), Amount(all.tool_cost)),
        ("model_cost", Some("model cost"), Amount(all.model_cost)),
        ("cost", Some("cost"), Amount(all.cost)),
        ("foreground_calls", Some("fg calls"), Count(fg.calls)),
        ("foreground_cost", Some("fg cost"), Amount(fg.cost)),
        ("background_calls", Some("bg calls"), Count(bg.calls)),
        ("background_cost", Some("bg cost"), Amount(bg.cost)),
    ]
}

/// A CSV field: quoted, and a leading formula character defused.
fn csv_field(text: &str) -> String {
    let text = if text.starts_with(['=', '+', '-', '@', '\t', '\r']) {
        format!("'{text}")
    } else {
        text.to_string()
    };
    format!("\"{}\"", text.replace('"', "\"\""))
}

/// `GET /ui/billing.csv?by=role&from=&to=`.
pub async fn billing_csv(
    State(app): State<Arc<App>>,
    Extension(_): Extension<Operator>,
    Query(q): Query<BillingQuery>,
) -> Response {
    let by = match some(&q.by).unwrap_or("role").parse::<GroupBy>() {
        Ok(by) => by,
        Err(e) => return (StatusCode::BAD_REQUEST, format!("{e}\n")).into_response(),
    };
    let range = match range(&app, &q) {
        Ok(r) => r,
        Err((status, e)) => return (status, format!("{e}\n")).into_response(),
    };
    let result = crate::blocking(move || billing::report(app.gateway.sessions(), &range, by)).await;
    let report = match result {
        Ok(Ok(r)) => r,
        Ok(Err(e)) => return (StatusCode::INTERNAL_SERVER_ERROR, format!("{e}\n")).into_response(),
        Err(e) => return (StatusCode::INTERNAL_SERVER_ERROR, format!("{e:#}\n")).into_response(),
    };
    let mut out = String::from("by,key,label");
    for (name, _, _) in billing_columns(&report.total) {
        let _ = write!(out, ",{name}");
    }
    out.push('\n');
    for g in report.groups.iter().chain([&report.total]) {
        let label = g.label.as_deref().unwrap_or("");
        let _ = write!(
            out,
            "{},{},{}",
            by.as_str(),
            csv_field(&g.key),
            csv_field(label)
        );
        for (_, _, figure) in billing_columns(g) {
            let _ = write!(out, ",{}", figure.shown(6));
        }
        out.push('\n');
    }
    (
        [
            (header::CONTENT_TYPE, "text/csv; charset=utf-8".to_string()),
            (
                header::CONTENT_DISPOSITION,
                format!(
                    "attachment; filename=\"glovebox-billing-by-{}.csv\"",
                    by.as_str()
                ),
            ),
        ],
        out,
    )
        .into_response()
}

// ---------------------------------------------------------------- notifications

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
