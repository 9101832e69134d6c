//! `POST /hooks/<name>`: a webhook that fires the `[[trigger]]` of that
//! name (`on = "webhook"`). It is another system's request, so it carries
//! no operator token: the trigger's shared secret signs it (checked by the
//! gateway, `glovebox::triggers`), and an address that sends bad
//! signatures is held off like one that guesses tokens; a signed request
//! sent again within its window is refused (409), not run twice. The
//! trigger runs as its own principal, never as an operator; the answer is its outcome.

use std::sync::Arc;

use axum::Extension;
use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use glovebox::triggers::{WEBHOOK_MAX_BODY, WebhookRefusal};

use crate::App;
use crate::auth::{Peer, too_many};

pub async fn webhook(
    State(app): State<Arc<App>>,
    Path(name): Path<String>,
    peer: Option<Extension<Peer>>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let peer = peer.map(|Extension(Peer(ip))| ip);
    if body.len() > WEBHOOK_MAX_BODY {
        return (
            StatusCode::PAYLOAD_TOO_LARGE,
            format!("a webhook body is at most {WEBHOOK_MAX_BODY} bytes\n"),
        )
            .into_response();
    }
    let signature = headers
        .get("x-glovebox-signature")
        .and_then(|v| v.to_str().ok());
    let now = crate::viewer::now_ms(&app) / 1000;
    match glovebox::triggers::fire_webhook(&app.gateway, &name, signature, &body, now).await {
        Ok(outcome) => {
            let status = if outcome.ok {
                StatusCode::OK
            } else {
                StatusCode::UNPROCESSABLE_ENTITY
            };
            let body = serde_json::to_string(&outcome).unwrap_or_default();
            (
                status,
                [(axum::http::header::CONTENT_TYPE, "application/json")],
                body,
            )
                .into_response()
        }
        // Signed right, so no guess: not counted against the address.
        Err(WebhookRefusal::Replayed(why)) => {
            tracing::info!(trigger = %name, %why, "admin listener: a replayed webhook refused (409)");
            (StatusCode::CONFLICT, format!("refused: {why}\n")).into_response()
        }
        Err(WebhookRefusal::Busy(why)) => {
            tracing::warn!(trigger = %name, %why, "admin listener: a webhook refused (503)");
            (
                StatusCode::SERVICE_UNAVAILABLE,
                [(axum::http::header::RETRY_AFTER, "10")],
                format!("refused: {why}\n"),
            )
                .into_response()
        }
        Err(refusal) => {
            // A rightly signed webhook is never held back by others'
            // failures from the same address (a proxy's).
            if let Some(peer) = peer
                && let Some(wait) = app.failures.wrong(peer)
            {
                return too_many(wait);
            }
            // Unknown and unsigned look alike: a guesser learns no names.
            if let WebhookRefusal::Unsigned(why) = &refusal {
                tracing::info!(trigger = %name, %why, "admin listener: a webhook refused (401)");
            }
            (
                StatusCode::UNAUTHORIZED,
                "refused: no webhook trigger of that name takes this request; sign it with the trigger's secret (`X-Glovebox-Signature: t=<unix seconds>,v1=<hex HMAC-SHA256 of \"<t>.<body>\">`)\n",
            )
                .into_response()
        }
    }
}
