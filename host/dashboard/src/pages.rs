//! The answers that are not a page of the ledger: the embedded assets, the
//! redirect to the dashboard, the fallback, and `/metrics`. The pages are
//! each in a file of their own (`sessions.rs`, `inbox.rs`, `billing.rs`,
//! `notify.rs`, `jobs.rs`, ...), read off the async threads
//! ([`crate::blocking`]) through the `glovebox` crate's public API, and
//! laid out by [`crate::viewer::Viewer`]; each escapes everything it shows.

use std::sync::Arc;

use axum::Extension;
use axum::extract::State;
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Redirect, Response};

use crate::App;
use crate::auth::Operator;

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
