//! The memory review page (`/ui/memory`): what agents and rescues proposed
//! for later sessions, waiting for an operator, with Approve and Reject
//! buttons; the approved entries (what new sessions are handed), with
//! Retire; and the last entries settled.
//!
//! The buttons act through the memory bank exactly as `glovebox memory
//! approve|reject|retire` does, recording the operator who pressed them.

use std::fmt::Write as _;

use axum::extract::{Form, Path as UrlPath, Query};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Redirect, Response};
use glovebox::memory::{MemoryBank, MemoryEntry, MemoryError, MemoryFilter, MemoryState};
use glovebox::operations::{
    self, ApproveMemory, ApproveMemoryArgs, RejectMemory, RejectMemoryArgs, RetireMemory,
    RetireMemoryArgs,
};
use glovebox::page::{Page, PageRequest};

use crate::App;
use crate::html::{self, badge, esc, url};
use crate::viewer::{Rendered, Viewer, now_ms, session_link};

/// Settled (rejected or retired) entries shown at most.
const SETTLED_SHOWN: usize = 50;

#[derive(serde::Deserialize, Default)]
pub struct MemoryQuery {
    done: Option<String>,
    /// Where the page of proposed entries starts.
    cursor: Option<String>,
    /// Where the page of approved entries starts.
    approved: Option<String>,
}

/// `GET /ui/memory`.
pub async fn memory(viewer: Viewer, Query(q): Query<MemoryQuery>) -> Response {
    viewer
        .page("memory", "memory", move |app| render(app, &q, None))
        .await
}

/// One page of the entries in `state` after `cursor`.
fn state_page(
    bank: &MemoryBank,
    state: MemoryState,
    cursor: Option<String>,
) -> Result<Page<MemoryEntry>, (StatusCode, String)> {
    let filter = MemoryFilter {
        state: Some(state),
        ..Default::default()
    };
    bank.page(
        &filter,
        &PageRequest {
            limit: None,
            cursor,
        },
    )
    .map_err(|e| match e {
        MemoryError::InvalidInput(why) => (StatusCode::BAD_REQUEST, why),
        e => crate::viewer::internal(e),
    })
}

/// The link to the next page of a section, when there is one: the page's
/// own query with `key` set to `cursor`.
fn next_link(q: &MemoryQuery, key: &str, cursor: Option<&str>) -> String {
    let Some(cursor) = cursor else {
        return String::new();
    };
    let mut query = vec![(key, cursor)];
    for (k, v) in [("cursor", &q.cursor), ("approved", &q.approved)] {
        if k != key
            && let Some(v) = v
        {
            query.push((k, v.as_str()));
        }
    }
    let query: Vec<String> = query
        .iter()
        .map(|(k, v)| format!("{k}={}", url(v)))
        .collect();
    format!(
        "<p class=\"more\"><a id=\"next-{key}\" href=\"/ui/memory?{}\">next page</a></p>",
        query.join("&amp;")
    )
}

fn render(app: &App, q: &MemoryQuery, error: Option<&str>) -> Rendered {
    let bank = app.gateway.memory_bank();
    let proposed = state_page(&bank, MemoryState::Proposed, q.cursor.clone())?;
    let approved = state_page(&bank, MemoryState::Approved, q.approved.clone())?;
    let settled = bank
        .closed(&PageRequest::first(SETTLED_SHOWN))
        .map_err(crate::viewer::internal)?
        .items;
    let done = q.done.as_deref();
    let now = now_ms(app);
    let mut body = String::from("<h1>Memory</h1>");
    if let Some(message) = error {
        let _ = write!(body, "<p class=\"error\" id=\"flash\">{}</p>", esc(message));
    }
    if let Some(e) = done.and_then(|id| bank.get(id).ok()) {
        let _ = write!(
            body,
            "<p class=\"good\" id=\"flash\"><code>{}</code> ({}) is now {}</p>",
            esc(&e.id),
            esc(&e.scope.to_string()),
            e.state.as_str()
        );
    }
    body += "<h2>Proposed</h2><p class=\"muted\">Nothing proposed reaches a session until it is approved here (or with <code>glovebox memory approve</code>).</p>";
    let mut any = false;
    for e in &proposed.items {
        any = true;
        let _ = write!(
            body,
            "<article class=\"approval\" id=\"memory-{id}\">\
             <h2><code>{scope}</code> <span class=\"muted\">proposed {when} by {by}{from}</span></h2>\
             {text}\
             <div class=\"actions\"><form method=\"post\" action=\"/ui/memory/{uid}/approve\" class=\"inline\">\
             <button type=\"submit\" class=\"approve\" id=\"approve-{id}\">Approve</button></form>\
             <form method=\"post\" action=\"/ui/memory/{uid}/reject\" class=\"inline\">\
             <input name=\"reason\" required placeholder=\"what is wrong with it\" id=\"reason-{id}\"> \
             <button type=\"submit\" class=\"deny\" id=\"reject-{id}\">Reject</button></form></div></article>",
            id = esc(&e.id),
            uid = url(&e.id),
            scope = esc(&e.scope.to_string()),
            when = html::when(e.proposed_at_ms, now),
            by = esc(&e.provenance.by),
            from = provenance(e),
            text = html::pre(&e.text, 8 * 1024),
        );
    }
    if !any {
        body += "<p class=\"muted\" id=\"no-proposed\">no proposed entries</p>";
    }
    body += &next_link(q, "cursor", proposed.next_cursor.as_deref());
    body += "<h2>Approved</h2><table id=\"approved\"><thead><tr><th>entry</th><th>scope</th><th>text</th><th>approved</th><th></th></tr></thead><tbody>";
    for e in &approved.items {
        let _ = write!(
            body,
            "<tr><td><code>{id}</code></td><td><code>{scope}</code></td><td>{text}</td><td>{when} by {by}</td>\
             <td><form method=\"post\" action=\"/ui/memory/{uid}/retire\" class=\"inline\">\
             <button type=\"submit\" id=\"retire-{id}\">Retire</button></form></td></tr>",
            id = esc(&e.id),
            uid = url(&e.id),
            scope = esc(&e.scope.to_string()),
            text = esc(html::cut(&e.text, 200).0),
            when = html::when(e.approved_at_ms(), now),
            by = esc(e.approved.as_ref().map_or("-", |s| s.by.as_str())),
        );
    }
    body += "</tbody></table>";
    body += &next_link(q, "approved", approved.next_cursor.as_deref());
    if !settled.is_empty() {
        body += "<h2>Settled</h2><table id=\"settled\"><thead><tr><th>entry</th><th>scope</th><th>state</th><th>by</th><th>reason</th></tr></thead><tbody>";
        for e in &settled {
            let stamp = e.rejected.as_ref().or(e.retired.as_ref());
            let _ = write!(
                body,
                "<tr><td><code>{}</code></td><td><code>{}</code></td><td>{}</td><td>{}</td><td>{}</td></tr>",
                esc(&e.id),
                esc(&e.scope.to_string()),
                badge(e.state.as_str()),
                esc(stamp.map_or("-", |s| s.by.as_str())),
                esc(stamp.and_then(|s| s.reason.as_deref()).unwrap_or(""))
            );
        }
        body += "</tbody></table>";
    }
    Ok(("Memory".into(), body))
}

fn provenance(e: &MemoryEntry) -> String {
    match (&e.provenance.session, &e.provenance.rescue) {
        (Some(session), _) => format!(" in {}", session_link(session, None)),
        (None, Some(rescue)) => format!(" from rescue <code>{}</code>", esc(rescue)),
        (None, None) => String::new(),
    }
}

#[derive(serde::Deserialize)]
pub struct ReasonForm {
    #[serde(default)]
    reason: String,
}

/// What a button does to an entry.
#[derive(Clone, Copy)]
enum Act {
    Approve,
    Reject,
    Retire,
}

/// A review button: the operation `memory.approve`, `memory.reject` or
/// `memory.retire`, as the signed-in operator.
async fn act(viewer: Viewer, id: String, act: Act, reason: String) -> Response {
    let scope = viewer.app.gateway.scope(&viewer.op.0);
    let target = id.clone();
    let result = match act {
        Act::Approve => {
            operations::run::<ApproveMemory>(scope, ApproveMemoryArgs { id: target }).await
        }
        Act::Reject => {
            operations::run::<RejectMemory>(scope, RejectMemoryArgs { id: target, reason }).await
        }
        Act::Retire => {
            let reason = Some(reason);
            operations::run::<RetireMemory>(scope, RetireMemoryArgs { id: target, reason }).await
        }
    }
    .map_err(|e| e.message);
    match result {
        Ok(entry) => {
            tracing::info!(memory = %entry.id, principal = %viewer.op.0.name, state = entry.state.as_str(), "dashboard: memory review");
            Redirect::to(&format!("/ui/memory?done={}", url(&id))).into_response()
        }
        Err(message) => {
            viewer
                .page_with(StatusCode::CONFLICT, "memory", "memory", move |app| {
                    render(app, &MemoryQuery::default(), Some(&message))
                })
                .await
        }
    }
}

/// `POST /ui/memory/ID/approve`: as `glovebox memory approve ID`.
pub async fn approve(viewer: Viewer, UrlPath(id): UrlPath<String>) -> Response {
    act(viewer, id, Act::Approve, String::new()).await
}

/// `POST /ui/memory/ID/reject`: as `glovebox memory reject ID --reason ...`.
pub async fn reject(
    viewer: Viewer,
    UrlPath(id): UrlPath<String>,
    Form(form): Form<ReasonForm>,
) -> Response {
    act(viewer, id, Act::Reject, form.reason).await
}

/// `POST /ui/memory/ID/retire`: as `glovebox memory retire ID`.
pub async fn retire(
    viewer: Viewer,
    UrlPath(id): UrlPath<String>,
    Form(form): Form<ReasonForm>,
) -> Response {
    act(viewer, id, Act::Retire, form.reason).await
}
