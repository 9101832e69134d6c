//! What every page shares: who it is served to and how it is laid out
//! around what its reader renders ([`Viewer`]), and the small helpers the
//! pages use alike (now by the ledger's clock, a link to a session, a
//! query parameter).

use std::sync::Arc;

use axum::Extension;
use axum::extract::FromRequestParts;
use axum::http::StatusCode;
use axum::http::request::Parts;
use axum::response::{Html, IntoResponse, Response};

use crate::App;
use crate::auth::Operator;
use crate::html::{self, Chrome, esc, url};

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

/// Pending approvals the nav's badge counts at most (a walk of the index
/// that stops there).
const PENDING_COUNTED: usize = 1000;

/// Now, by the ledger's clock (see `glovebox_ledger::clock`).
pub(crate) fn now_ms(app: &App) -> u64 {
    app.gateway.sessions().clock_ms()
}

/// A query parameter given and not blank, trimmed.
pub(crate) fn some(v: &Option<String>) -> Option<&str> {
    v.as_deref().map(str::trim).filter(|s| !s.is_empty())
}

pub(crate) fn session_link(id: &str, name: Option<&str>) -> String {
    format!(
        "<a href=\"/ui/sessions/{}\">{}</a>",
        url(id),
        esc(name.unwrap_or(id))
    )
}
