//! `GET /ui/approvals`: the approvals inbox (the pending ones as cards,
//! `approval.rs`, and the latest settled), and the Approve and Deny forms'
//! answers.

use std::fmt::Write as _;

use axum::Form;
use axum::extract::{Path as UrlPath, Query};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Redirect, Response};
use glovebox::approvals::ApprovalStatus;
use glovebox::operations::{self, Approve, ApproveArgs, Deny, DenyArgs};
use glovebox::page::PageRequest;
use glovebox::session::SessionError;

use crate::App;
use crate::html::{self, badge, esc, url};
use crate::viewer::{Rendered, Viewer, internal, now_ms, session_link};

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

/// `POST /ui/approvals/ID/approve`: the operation `approvals.approve`, as
/// the signed-in operator.
pub async fn approve(viewer: Viewer, UrlPath(id): UrlPath<String>) -> Response {
    tracing::info!(approval = %id, principal = %viewer.op.0.name, "dashboard: approve");
    let scope = viewer.app.gateway.scope(&viewer.op.0);
    match operations::run::<Approve>(scope, ApproveArgs { id: id.clone() }).await {
        Ok(_) => Redirect::to(&format!("/ui/approvals?done={}", url(&id))).into_response(),
        Err(e) => approvals_refused(viewer, e.message).await,
    }
}

#[derive(serde::Deserialize)]
pub struct DenyForm {
    #[serde(default)]
    reason: String,
}

/// `POST /ui/approvals/ID/deny`: the operation `approvals.deny`, as the
/// signed-in operator.
pub async fn deny(
    viewer: Viewer,
    UrlPath(id): UrlPath<String>,
    Form(form): Form<DenyForm>,
) -> Response {
    tracing::info!(approval = %id, principal = %viewer.op.0.name, "dashboard: deny");
    let scope = viewer.app.gateway.scope(&viewer.op.0);
    let args = DenyArgs {
        id: id.clone(),
        reason: form.reason.trim().to_string(),
    };
    match operations::run::<Deny>(scope, args).await {
        Ok(_) => Redirect::to(&format!("/ui/approvals?done={}", url(&id))).into_response(),
        Err(e) => approvals_refused(viewer, e.message).await,
    }
}
