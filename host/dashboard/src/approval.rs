//! One pending approval as the inbox shows it, and the download of its
//! input (threat 55). The gateway renders the approval
//! (`Host::show_approval`): the keys a hook named and the tool's schema
//! order first, every value whole (past 64 KiB a preview of every key, the
//! whole input a download away with its SHA-256), every invisible or
//! display-changing character written as a mark (`<U+202E>`) with a
//! legend. This file lays that out in HTML and highlights the marks.

use axum::extract::Path as UrlPath;
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use glovebox::shown::{ShownApproval, WHOLE_BYTES};
use std::fmt::Write as _;

use crate::html::{self, esc, marked, url};
use crate::viewer::{Viewer, session_link};

/// The `<article>` of one pending approval, with its Approve and Deny forms.
pub(crate) fn card(a: &ShownApproval, now: u64) -> String {
    let mut fields = String::new();
    for f in &a.input.fields {
        let notes = f.notes();
        let notes = if notes.is_empty() {
            String::new()
        } else {
            format!("<p class=\"muted\">{}</p>", esc(&notes.join("; ")))
        };
        let _ = write!(
            fields,
            "<tr{}><th><code dir=\"ltr\">{}</code></th><td><pre dir=\"ltr\">{}</pre>{notes}</td></tr>",
            if f.named { " class=\"named\"" } else { "" },
            f.key.as_deref().map(marked).unwrap_or_default(),
            marked(&f.value),
        );
    }
    if a.input.more_fields > 0 {
        let _ = write!(
            fields,
            "<tr><td colspan=\"2\" class=\"muted\">… and {} more keys: download the whole input</td></tr>",
            a.input.more_fields
        );
    }
    let whole = if a.input.whole {
        String::new()
    } else {
        format!(
            "<p class=\"warn\" id=\"cut-{id}\">the input is longer than {} KiB: each value is cut above. \
             <a href=\"/ui/approvals/{uid}/input\" download id=\"download-{id}\">Download the whole input</a> \
             ({} bytes, sha256 <code>{}</code>)</p>",
            WHOLE_BYTES / 1024,
            a.input.bytes,
            esc(&a.sha256),
            id = esc(&a.id),
            uid = url(&a.id),
        )
    };
    let legend = legend(a);
    format!(
        "<article class=\"approval\" id=\"approval-{id}\" data-approval=\"{id}\">\
         <h2><b>{tool}</b> in {session} <span class=\"muted\">requested {when}</span></h2>\
         <p class=\"question\">hook <b>{hook}</b> (<code>{pattern}</code>) asks: {reason}</p>\
         <dl><dt>approval</dt><dd><code>{id}</code></dd><dt>call</dt><dd><code>{call}</code></dd>\
         <dt>action</dt><dd><code>{action}</code></dd><dt>tool digest</dt><dd><code>{digest}</code></dd>\
         <dt>input sha256</dt><dd><code>{hash}</code></dd></dl>\
         <p>exact input, {bytes} bytes ({order}):</p>\
         <table class=\"input\" id=\"input-{id}\"><tbody>{fields}</tbody></table>{whole}{legend}\
         <div class=\"actions\"><form method=\"post\" action=\"/ui/approvals/{uid}/approve\" class=\"inline\">\
         <button type=\"submit\" class=\"approve\" id=\"approve-{id}\">Approve</button></form>\
         <form method=\"post\" action=\"/ui/approvals/{uid}/deny\" class=\"inline\">\
         <input name=\"reason\" required placeholder=\"why not\" id=\"reason-{id}\"> \
         <button type=\"submit\" class=\"deny\" id=\"deny-{id}\">Deny</button></form></div></article>",
        id = esc(&a.id),
        uid = url(&a.id),
        tool = marked(&a.tool),
        session = session_link(&a.session, a.session_name.as_deref()),
        when = html::when(a.requested_at_ms, now),
        hook = marked(&a.hook),
        pattern = marked(&a.pattern),
        reason = marked(&a.reason),
        call = marked(&a.call_id),
        action = marked(&a.action),
        digest = esc(&a.tool_digest),
        hash = esc(&a.sha256),
        bytes = a.input.bytes,
        order = esc(a.input.order_words()),
    )
}

/// What each mark in the card stands for; empty when there is none.
fn legend(a: &ShownApproval) -> String {
    if a.legend.is_empty() {
        return String::new();
    }
    let mut out = format!(
        "<div class=\"legend\" id=\"legend-{}\"><p>{}</p><ul>",
        esc(&a.id),
        esc(glovebox::shown::LEGEND_TITLE)
    );
    for (mark, name) in a.legend.entries() {
        let _ = write!(out, "<li>{} {}</li>", marked(&mark), esc(name));
    }
    out += "</ul></div>";
    out
}

/// `GET /ui/approvals/ID/input`: the approval's input exactly as the tool
/// gets it, as a download; its SHA-256 is the one the card shows. A
/// secret's value in it is masked (threat 60), and then the download says
/// so (`x-glovebox-secrets-masked`) and its SHA-256 is not that one.
pub async fn input(viewer: Viewer, UrlPath(id): UrlPath<String>) -> Response {
    let app = viewer.app.clone();
    let lookup = id.clone();
    let found = crate::blocking(move || app.gateway.ledger().approvals.get(&lookup)).await;
    let approval = match found {
        Ok(Ok(a)) => a,
        Ok(Err(e)) => return (StatusCode::NOT_FOUND, format!("{e}\n")).into_response(),
        Err(e) => return (StatusCode::INTERNAL_SERVER_ERROR, format!("{e:#}\n")).into_response(),
    };
    let shown = viewer
        .app
        .gateway
        .host()
        .config()
        .secrets
        .mask(&approval.input)
        .into_owned();
    let masked = shown != approval.input;
    (
        [
            (header::CONTENT_TYPE, "application/octet-stream".to_string()),
            (
                header::HeaderName::from_static("x-glovebox-secrets-masked"),
                masked.to_string(),
            ),
            (
                header::CONTENT_DISPOSITION,
                format!("attachment; filename=\"{}-input.json\"", url(&id)),
            ),
            (
                header::HeaderName::from_static("x-content-sha256"),
                approval.input_hash.clone(),
            ),
        ],
        shown,
    )
        .into_response()
}
