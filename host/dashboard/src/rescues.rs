//! The rescues page, `/ui/rescues`: the last 30 days' report and charts,
//! the open missions with their actions (assign, diagnose, inject, close:
//! the forms of `rescue_forms.rs`, posted to `rescue_actions.rs`), every
//! rescue the latest opened first (a page at a time with `?cursor=`), and
//! the newest active entries of the context index.
//!
//! Why pages: rescues are kept for good and an agent that keeps getting
//! stuck opens more of them, and the page (and its once-a-second live
//! check, `events.rs`) used to decode every rescue and every context entry
//! there ever was (threat 49). Now the report reads the rescues of its 30
//! days through their index and stops, and every table reads one page.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use axum::extract::Query;
use axum::http::StatusCode;
use axum::response::Response;
use glovebox::operations::OperationError;
use glovebox::page::{DEFAULT_PAGE, Page, PageRequest};
use glovebox::rescue::{Rescue, RescueError, Rescues, Tally};

use crate::App;
use crate::html::{self, Bar, badge, esc, url};
use crate::viewer::{Rendered, Viewer, internal, now_ms, session_link};

/// The days the report and the charts cover.
const DAYS: u64 = 30;
/// Rescues one page of the full listing shows.
const LISTED: usize = 50;
/// Resolved rescues the time-to-unblock chart shows (the latest).
const CHARTED: usize = 20;

#[derive(serde::Deserialize, Default)]
pub struct RescuesQuery {
    /// Where the previous page of the listing ended.
    cursor: Option<String>,
    /// The rescue an action just changed (its result is shown first).
    done: Option<String>,
}

/// `GET /ui/rescues`.
pub async fn rescues(viewer: Viewer, Query(q): Query<RescuesQuery>) -> Response {
    viewer
        .page("rescues", "rescues", move |app| {
            render(app, q.cursor, q.done.as_deref(), None)
        })
        .await
}

/// The page again after an action it refused, saying why, with the status
/// the refusal's class answers with on the HTTP API.
pub(crate) async fn refused(viewer: Viewer, e: OperationError) -> Response {
    viewer
        .page_with(
            crate::api::status(e.class),
            "rescues",
            "rescues",
            move |app| render(app, None, None, Some(&e.message)),
        )
        .await
}

/// The rescues of the data dir, with the operator's `[context]`.
pub(crate) fn of(app: &App) -> Rescues {
    let ledger = app.gateway.ledger();
    Rescues::new(
        ledger.sessions.clone(),
        ledger.storage.clone(),
        app.gateway.host().config().context.clone(),
    )
}

/// What the page shows first, and the live check watches: the first page
/// of the open missions, and a page of the listing.
pub(crate) struct Watched {
    pub open: Page<Rescue>,
    pub listed: Page<Rescue>,
}

pub(crate) fn watched(rescues: &Rescues, cursor: Option<String>) -> Result<Watched, RescueError> {
    Ok(Watched {
        open: rescues.open_rescues(&PageRequest::first(DEFAULT_PAGE))?,
        listed: rescues.list(&PageRequest {
            limit: Some(LISTED),
            cursor,
        })?,
    })
}

fn minutes(ms: u64) -> String {
    format!("{:.1} min", ms as f64 / 60_000.0)
}

fn render(app: &App, cursor: Option<String>, done: Option<&str>, error: Option<&str>) -> Rendered {
    let rescues = of(app);
    let bad = |e: RescueError| match e {
        RescueError::InvalidInput(_) => (StatusCode::BAD_REQUEST, e.to_string()),
        e => internal(e),
    };
    let shown = watched(&rescues, cursor.clone()).map_err(bad)?;
    let now = now_ms(app);
    let mut body = String::from("<h1>Rescues</h1>");
    if let Some(message) = error {
        let _ = write!(body, "<p class=\"error\" id=\"flash\">{}</p>", esc(message));
    }
    if let Some(r) = done.and_then(|id| rescues.get(id).ok()) {
        let _ = write!(
            body,
            "<p class=\"good\" id=\"flash\"><code>{}</code> in {}: {}{}</p>",
            esc(&r.id),
            session_link(&r.session, r.session_name.as_deref()),
            esc(r.status()),
            r.assignee
                .as_deref()
                .map(|a| format!(", assigned to {}", esc(a)))
                .unwrap_or_default()
        );
    }
    body += &last_days(&rescues).map_err(internal)?;
    let open = &shown.open;
    let more = open.next_cursor.is_some();
    let _ = write!(
        body,
        "<h2>Open missions ({}{})</h2>",
        open.items.len(),
        if more { "+" } else { "" }
    );
    if more {
        body += "<p class=\"muted\">the latest opened; <code>glovebox rescue list</code> lists every rescue</p>";
    }
    let rows: Vec<String> = open
        .items
        .iter()
        .map(|r| {
            format!(
                "<tr><td><code>{}</code></td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
                esc(&r.id),
                session_link(&r.session, r.session_name.as_deref()),
                esc(&r.project),
                badge(r.status()),
                html::duration(now.saturating_sub(r.opened_at_ms)),
                esc(&r.flags.join(", ")),
                diagnosis(r)
            )
        })
        .collect();
    body += &html::table_or_none(
        "rescues-open",
        &[
            "rescue",
            "session",
            "project",
            "status",
            "open for",
            "flags",
            "diagnosis",
        ],
        &rows,
    );
    if !open.items.is_empty() {
        body += "<h2>Act on an open rescue</h2>";
        for r in &open.items {
            body += &crate::rescue_forms::card(r);
        }
    }
    body += &listing(&shown.listed, cursor.is_some());
    body += &context_index(&rescues, now).map_err(internal)?;
    Ok(("Rescues".into(), body))
}

/// The report of the last [`DAYS`] days and its charts, from one walk of
/// the rescues opened in them (and no older one).
fn last_days(rescues: &Rescues) -> Result<String, RescueError> {
    let since = rescues.since(DAYS);
    let mut tally = Tally::new(DAYS, since);
    // (resolved at, time to unblock, session) of the latest resolved ones.
    let mut resolved: Vec<(u64, u64, String)> = Vec::new();
    let mut by_day: BTreeMap<String, (u64, u64)> = BTreeMap::new();
    rescues.each_since(since, |r| {
        tally.add(r);
        let (Some(at), Some(ttu)) = (r.resolved_at_ms, r.time_to_unblock_ms()) else {
            return;
        };
        let day = html::time(at).chars().take(10).collect::<String>();
        let slot = by_day.entry(day).or_default();
        slot.0 += ttu;
        slot.1 += 1;
        resolved.push((at, ttu, r.session_name.clone().unwrap_or(r.session.clone())));
        if resolved.len() > 2 * CHARTED {
            resolved.sort_by_key(|(at, _, _)| std::cmp::Reverse(*at));
            resolved.truncate(CHARTED);
        }
    })?;
    let report = tally.finish();
    resolved.sort_by_key(|(at, _, _)| std::cmp::Reverse(*at));
    resolved.truncate(CHARTED);
    resolved.reverse();
    let mut body = format!(
        "<p id=\"rescue-summary\">last {DAYS} days: <b>{}</b> rescues ({} open, {} resolved, {} re-escalated, {} abandoned) · mean time to diagnose <b>{}</b> · mean time to unblock <b>{}</b> · {} context updates · {} closed without a lesson</p>",
        report.rescues,
        report.open,
        report.resolved,
        report.re_escalated,
        report.abandoned,
        report
            .mean_time_to_diagnose_ms
            .map(minutes)
            .unwrap_or_else(|| "- (none diagnosed)".into()),
        report
            .mean_time_to_unblock_ms
            .map(minutes)
            .unwrap_or_else(|| "- (none resolved)".into()),
        report.context_updates,
        report
            .share_closed_without_enrichment
            .map(|share| format!(
                "{} ({:.0}%)",
                report.closed_without_enrichment,
                share * 100.0
            ))
            .unwrap_or_else(|| "-".into())
    );
    let bars: Vec<Bar> = resolved
        .iter()
        .map(|(at, ttu, session)| Bar {
            label: format!("{} {session}", html::time(*at)),
            parts: vec![(*ttu as f64, "fg")],
            shown: minutes(*ttu),
        })
        .collect();
    body += "<h2>Time to unblock</h2>";
    body += &html::bar_chart(
        "time to unblock of the last resolved rescues (opened in the last 30 days)",
        &bars,
        &[],
    );
    let bars: Vec<Bar> = by_day
        .iter()
        .map(|(day, (sum, n))| Bar {
            label: format!("{day} ({n})"),
            parts: vec![(*sum as f64 / *n as f64, "fg")],
            shown: minutes(sum / n),
        })
        .collect();
    body += &html::bar_chart(
        "mean time to unblock by day of resolution (rescues resolved that day)",
        &bars,
        &[],
    );
    let mut cats: Vec<_> = report.by_category.iter().collect();
    cats.sort_by(|a, b| b.1.cmp(a.1).then_with(|| a.0.cmp(b.0)));
    let bars: Vec<Bar> = cats
        .iter()
        .map(|(cat, n)| Bar {
            label: (*cat).clone(),
            parts: vec![(**n as f64, "bg")],
            shown: format!(
                "{n} ({:.0}%)",
                **n as f64 * 100.0 / report.rescues.max(1) as f64
            ),
        })
        .collect();
    body += "<h2>Root causes</h2>";
    body += &html::bar_chart("root causes, last 30 days", &bars, &[]);
    Ok(body)
}

/// One page of every rescue, the latest opened first, with its links.
fn listing(page: &Page<Rescue>, paged: bool) -> String {
    let mut body = String::from("<h2>Every rescue, the latest opened first</h2>");
    let rows: Vec<String> = page
        .items
        .iter()
        .map(|r| {
            format!(
                "<tr><td><code>{}</code></td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
                esc(&r.id),
                session_link(&r.session, r.session_name.as_deref()),
                html::time(r.opened_at_ms),
                badge(r.status()),
                r.time_to_unblock_ms()
                    .map(minutes)
                    .unwrap_or_else(|| "-".into()),
                diagnosis(r)
            )
        })
        .collect();
    body += &html::table_or_none(
        "rescues-all",
        &[
            "rescue",
            "session",
            "opened",
            "status",
            "time to unblock",
            "root cause",
        ],
        &rows,
    );
    let mut links = Vec::new();
    if paged {
        links.push("<a href=\"/ui/rescues\">latest</a>".to_string());
    }
    if let Some(next) = &page.next_cursor {
        links.push(format!(
            "<a id=\"rescues-next\" href=\"/ui/rescues?cursor={}\">older</a>",
            url(next)
        ));
    }
    if !links.is_empty() {
        let _ = write!(body, "<p>{}</p>", links.join(" · "));
    }
    body
}

/// The newest active entries of the context index (one page).
fn context_index(rescues: &Rescues, now: u64) -> Result<String, RescueError> {
    let entries = rescues
        .index()
        .list(None, false, &PageRequest::first(DEFAULT_PAGE))?;
    let mut body = format!(
        "<h2>Context index (active entries, the latest first{})</h2>",
        if entries.next_cursor.is_some() {
            "; `glovebox context list` lists them all"
        } else {
            ""
        }
    );
    let rows: Vec<String> = entries
        .items
        .iter()
        .map(|e| {
            format!(
                "<tr><td><code>{}</code></td><td>{}</td><td>{}{}</td><td>{}</td><td>{}</td></tr>",
                esc(&e.id),
                esc(&e.project),
                esc(e.writer.as_str()),
                e.rescue
                    .as_deref()
                    .map(|r| format!(" (<code>{}</code>)", esc(r)))
                    .unwrap_or_default(),
                html::when(e.added_at_ms, now),
                esc(&e.text)
            )
        })
        .collect();
    body += &html::table_or_none(
        "context-index",
        &["entry", "project", "writer", "added", "text"],
        &rows,
    );
    Ok(body)
}

/// A rescue's diagnosis as its tables show it: category and root cause.
fn diagnosis(r: &Rescue) -> String {
    r.diagnosis
        .as_ref()
        .map(|d| format!("{}: {}", esc(d.category.as_str()), esc(&d.root_cause)))
        .unwrap_or_else(|| "-".into())
}
