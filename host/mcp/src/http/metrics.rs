//! `GET /metrics`, beside MCP on the same listener.

use super::auth::Auth;
use super::responses::{Response, plain};

impl Auth {
    /// `GET /metrics`: an operator's (401 without a valid token, 403 for an
    /// agent's); anyone on a loopback server without principals.
    pub(super) async fn metrics<B>(&self, req: &hyper::Request<B>) -> Response {
        let host = req
            .headers()
            .get(hyper::header::HOST)
            .and_then(|h| h.to_str().ok())
            .unwrap_or_default();
        if !self.allowed_hosts.iter().any(|h| h == host) {
            return plain(
                hyper::StatusCode::FORBIDDEN,
                "this Host is not served (`serve --allow-host` adds one)\n".into(),
            );
        }
        let principal = match self.principal(req).await {
            Ok((principal, _)) => principal,
            Err(refused) => return refused.response(),
        };
        if self.server.gateway().principals().declared() && !principal.is_operator() {
            return plain(
                hyper::StatusCode::FORBIDDEN,
                "the metrics are an operator's: use an operator principal's token\n".into(),
            );
        }
        if req.method() != hyper::Method::GET {
            return plain(
                hyper::StatusCode::METHOD_NOT_ALLOWED,
                "GET /metrics\n".into(),
            );
        }
        match self.server.gateway().metrics_text().await {
            Ok(text) => {
                let mut response = plain(hyper::StatusCode::OK, text);
                response.headers_mut().insert(
                    hyper::header::CONTENT_TYPE,
                    hyper::header::HeaderValue::from_static(glovebox::metrics::CONTENT_TYPE),
                );
                response
            }
            Err(e) => plain(
                hyper::StatusCode::INTERNAL_SERVER_ERROR,
                format!("cannot read the ledger for the metrics: {e}\n"),
            ),
        }
    }
}
