//! The plain HTTP answers this layer gives itself (refusals, 404, 503).

use std::convert::Infallible;

use bytes::Bytes;
use http_body_util::{BodyExt, Full, combinators::BoxBody};

pub(super) type Response = hyper::Response<BoxBody<Bytes, Infallible>>;
pub(super) type Request = hyper::Request<glovebox_listener::TimedBody>;

/// 429: the principal holds what it may (the text names the quota).
pub(super) fn too_many(text: String) -> Response {
    tracing::info!(%text, "HTTP request refused (429)");
    plain(hyper::StatusCode::TOO_MANY_REQUESTS, format!("{text}\n"))
}

/// 401 with no detail (which principals exist, or why a token failed, is
/// not the caller's to learn).
pub(super) fn unauthorized() -> Response {
    let mut response = hyper::Response::new(Full::new(Bytes::new()).boxed());
    *response.status_mut() = hyper::StatusCode::UNAUTHORIZED;
    response.headers_mut().insert(
        hyper::header::WWW_AUTHENTICATE,
        hyper::header::HeaderValue::from_static("Bearer"),
    );
    response
}

/// A text answer with `status`.
pub(super) fn plain(status: hyper::StatusCode, text: String) -> Response {
    let mut response = hyper::Response::new(Full::new(Bytes::from(text)).boxed());
    *response.status_mut() = status;
    response
}

/// 503: the server is stopping and takes no new request.
pub(super) fn unavailable() -> Response {
    let mut response =
        hyper::Response::new(Full::new(Bytes::from_static(b"the server is stopping\n")).boxed());
    *response.status_mut() = hyper::StatusCode::SERVICE_UNAVAILABLE;
    response
}

pub(super) fn session_not_found() -> Response {
    let mut response = hyper::Response::new(
        Full::new(Bytes::from_static(b"Not Found: Session not found")).boxed(),
    );
    *response.status_mut() = hyper::StatusCode::NOT_FOUND;
    response
}

pub(super) fn not_found() -> hyper::Response<BoxBody<Bytes, Infallible>> {
    let mut response = hyper::Response::new(
        Full::new(Bytes::from_static(
            b"not found: Glovebox serves MCP at /mcp\n",
        ))
        .boxed(),
    );
    *response.status_mut() = hyper::StatusCode::NOT_FOUND;
    response
}
