//! MCP over streamable HTTP, at `/mcp`.
//!
//! rmcp makes one handler per MCP session (`Mcp-Session-Id`) through the
//! factory below, so each session gets its own [`Connection`](super::Connection)
//! and so its own bound session. The server offers protocol revisions up to
//! 2025-11-25, which have sessions (2026-07-28 serves requests statelessly):
//! a 2026-07-28 `server/discover` probe is answered with those revisions, so
//! a client negotiates down to `initialize` without an error.
//!
//! Who is calling: when the config declares principals, every request must
//! carry `Authorization: Bearer <token>` of one of them; without it, or with
//! a token that is no one's, the answer is a bare 401 (nothing else happens).
//! The principal rides in the request's extensions to the handler, and each
//! MCP session is pinned to the principal that opened it: another
//! principal's requests on it are answered as for an unknown session (404).
//! With no principals declared every request is the built-in agent `local`,
//! and only loopback addresses may be bound. `Host` and `Origin` are
//! checked (rmcp): loopback names and origins on the bound port, and those
//! the operator adds.

use std::collections::HashMap;
use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex, PoisonError};

use anyhow::Context;
use bytes::Bytes;
use http_body_util::{BodyExt, Full, combinators::BoxBody};
use hyper::body::Incoming;
use hyper::service::Service as _;
use hyper_util::service::TowerToHyperService;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::{StreamableHttpServerConfig, StreamableHttpService};
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;

use super::McpServer;
use glovebox::Principal;

/// The path MCP is served at.
pub const MCP_PATH: &str = "/mcp";
/// The path the metrics are served at (Prometheus text format): an
/// operator's token when principals are declared.
pub const METRICS_PATH: &str = "/metrics";

pub use glovebox_listener::DEFAULT_MAX_CONNECTIONS;

/// How long a stopping server lets the calls and jobs in flight finish, by
/// default (`serve --grace`).
pub const DEFAULT_GRACE: std::time::Duration = std::time::Duration::from_secs(30);

/// What the operator allows beyond the defaults.
#[derive(Clone, Debug)]
pub struct HttpOptions {
    /// Connections served at once; further ones wait in the listen backlog
    /// until one ends ([`DEFAULT_MAX_CONNECTIONS`]).
    pub max_connections: usize,
    /// Serve on an address that is not loopback (needs declared principals).
    pub allow_remote: bool,
    /// `Host` values accepted besides loopback names and the bound address
    /// (the public name a TLS proxy in front forwards).
    pub allowed_hosts: Vec<String>,
    /// Browser `Origin`s accepted besides loopback ones on the bound port.
    pub allowed_origins: Vec<String>,
    /// How long a stopping server lets the calls and jobs in flight finish
    /// ([`DEFAULT_GRACE`]); see [`McpServer::drain`].
    pub grace: std::time::Duration,
}

impl Default for HttpOptions {
    fn default() -> Self {
        HttpOptions {
            max_connections: DEFAULT_MAX_CONNECTIONS,
            allow_remote: false,
            allowed_hosts: Vec::new(),
            allowed_origins: Vec::new(),
            grace: DEFAULT_GRACE,
        }
    }
}

/// A bound HTTP listener serving MCP.
pub struct HttpServer {
    listener: TcpListener,
    server: McpServer,
    options: HttpOptions,
    stop: CancellationToken,
}

impl HttpServer {
    /// Binds `addr` (port 0 picks a free port; see [`HttpServer::local_addr`]),
    /// a loopback address, with the default options.
    pub async fn bind(server: McpServer, addr: SocketAddr) -> anyhow::Result<HttpServer> {
        HttpServer::bind_with(server, addr, HttpOptions::default()).await
    }

    /// Binds `addr`. An address that is not loopback is refused unless the
    /// config declares principals (so every request needs a token) and the
    /// operator allows it (`allow_remote`).
    pub async fn bind_with(
        server: McpServer,
        addr: SocketAddr,
        options: HttpOptions,
    ) -> anyhow::Result<HttpServer> {
        if !addr.ip().is_loopback() {
            if !server.gateway().has_principals() {
                anyhow::bail!(
                    "refusing to serve MCP on {addr}: it is not a loopback address, and the config declares no principals, so anyone who reaches it would be served without a token; declare principals (`glovebox principal add NAME ...`), then pass --allow-remote, with TLS terminated in front (see the README)"
                );
            }
            if !options.allow_remote {
                anyhow::bail!(
                    "refusing to serve MCP on {addr}: it is not a loopback address; pass --allow-remote to serve it (every request then needs a principal's token), with TLS terminated in front (see the README)"
                );
            }
        }
        let listener = TcpListener::bind(addr)
            .await
            .with_context(|| format!("cannot listen on {addr}"))?;
        Ok(HttpServer {
            listener,
            server,
            options,
            stop: CancellationToken::new(),
        })
    }

    pub fn local_addr(&self) -> anyhow::Result<SocketAddr> {
        Ok(self.listener.local_addr()?)
    }

    /// Cancelling this token stops the server: it takes no new connection
    /// or request, lets the calls in flight finish and answer (up to
    /// [`HttpOptions::grace`]), then ends its MCP sessions.
    pub fn stop_token(&self) -> CancellationToken {
        self.stop.clone()
    }

    /// Serves until the stop token is cancelled, then drains (see
    /// [`HttpServer::stop_token`]) before it returns.
    pub async fn run(self) -> anyhow::Result<()> {
        // Leave room for an input up to the host's own limit, so an oversized
        // input gets the host's message rather than a bare 413.
        let max_input = usize::try_from(
            self.server
                .gateway()
                .host()
                .config()
                .runtime
                .max_input_bytes,
        )
        .unwrap_or(usize::MAX);
        // Ends the MCP sessions once the calls in flight have drained.
        let sessions_end = CancellationToken::new();
        // The `Host`s served (rmcp checks them for MCP; `/metrics` here).
        let mut allowed_hosts: Vec<String> = Vec::new();
        let mut config = StreamableHttpServerConfig::default()
            .with_cancellation_token(sessions_end.clone())
            .with_max_request_body_bytes(max_input.saturating_mul(2).max(4 << 20));
        if let Ok(addr) = self.listener.local_addr() {
            let mut hosts = vec![
                "localhost".to_string(),
                "127.0.0.1".to_string(),
                "::1".to_string(),
                addr.ip().to_string(),
                format!("localhost:{}", addr.port()),
                addr.to_string(),
            ];
            hosts.extend(self.options.allowed_hosts.iter().cloned());
            allowed_hosts.clone_from(&hosts);
            config = config.with_allowed_hosts(hosts);
            // A browser page may reach a loopback server (DNS rebinding, a
            // malicious page): only pages of this server's own origin, and
            // those the operator lists, are served; requests without an
            // Origin (MCP clients that are not browsers) pass.
            let port = addr.port();
            let mut origins = vec![
                format!("http://localhost:{port}"),
                format!("http://127.0.0.1:{port}"),
                format!("http://[::1]:{port}"),
            ];
            origins.extend(self.options.allowed_origins.iter().cloned());
            config = config
                .with_allowed_origins(origins)
                .enforce_origin_validation();
        }
        let factory = {
            let server = self.server.clone();
            move || Ok(server.connection())
        };
        let mcp =
            StreamableHttpService::new(factory, Arc::new(LocalSessionManager::default()), config);
        let mcp = TowerToHyperService::new(mcp);
        let auth = Arc::new(Auth {
            server: self.server.clone(),
            sessions: Mutex::new(HashMap::new()),
            stopping: std::sync::atomic::AtomicBool::new(false),
            answering: Arc::new(std::sync::atomic::AtomicUsize::new(0)),
            allowed_hosts,
        });
        let limits = glovebox_listener::Limits {
            max_connections: self.options.max_connections,
            ..Default::default()
        };
        let connections = glovebox_listener::accept_until(
            &self.listener,
            limits,
            &self.stop,
            &sessions_end,
            |_| {
                let mcp = mcp.clone();
                let auth = auth.clone();
                hyper::service::service_fn(move |req: hyper::Request<Incoming>| {
                    let mcp = mcp.clone();
                    let auth = auth.clone();
                    async move {
                        if req.uri().path() == METRICS_PATH {
                            return Ok::<_, Infallible>(auth.metrics(&req).await);
                        }
                        if req.uri().path() != MCP_PATH {
                            return Ok::<_, Infallible>(not_found());
                        }
                        auth.serve(req, |req| mcp.call(req)).await
                    }
                })
            },
        )
        .await;
        // Stopping: no new connection (above) and no new request (503);
        // the calls in flight finish and their answers go out; then the MCP
        // sessions end and the connections close.
        auth.stopping
            .store(true, std::sync::atomic::Ordering::SeqCst);
        let started = std::time::Instant::now();
        self.server.drain(self.options.grace).await;
        // A call that just finished has its answer on its way into the
        // request's stream: ending the sessions now could cut that stream
        // before the answer is written. Wait (within the grace) until every
        // request's stream has ended.
        let settle = self
            .options
            .grace
            .saturating_sub(started.elapsed())
            .max(std::time::Duration::from_secs(1));
        let _ = tokio::time::timeout(settle, auth.answered()).await;
        sessions_end.cancel();
        connections.close();
        let _ = tokio::time::timeout(std::time::Duration::from_secs(5), connections.wait()).await;
        Ok(())
    }
}

type Response = hyper::Response<BoxBody<Bytes, Infallible>>;

/// Authentication and the pinning of MCP sessions to principals.
struct Auth {
    server: McpServer,
    /// MCP session id → the name of the principal that opened it.
    sessions: Mutex<HashMap<String, String>>,
    /// Set once the server stops: new requests get 503.
    stopping: std::sync::atomic::AtomicBool,
    /// POST answers whose body (a request's stream) has not ended yet.
    answering: Arc<std::sync::atomic::AtomicUsize>,
    /// The `Host` values served (a page that rebinds a name to loopback is not).
    allowed_hosts: Vec<String>,
}

const SESSION_HEADER: &str = "mcp-session-id";

impl Auth {
    /// The principal of a request: the one whose token it carries, or the
    /// built-in `local` agent when no principal is declared. `None`: 401.
    fn principal<B>(&self, req: &hyper::Request<B>) -> Option<Principal> {
        let gateway = self.server.gateway();
        if !gateway.has_principals() {
            return Some(Principal::local());
        }
        let value = req
            .headers()
            .get(hyper::header::AUTHORIZATION)?
            .to_str()
            .ok()?;
        let (scheme, token) = value.split_once(' ')?;
        if !scheme.eq_ignore_ascii_case("bearer") {
            return None;
        }
        gateway.authenticate(token.trim())
    }

    async fn serve<F, Fut>(
        &self,
        mut req: hyper::Request<Incoming>,
        inner: F,
    ) -> Result<Response, Infallible>
    where
        F: FnOnce(hyper::Request<Incoming>) -> Fut,
        Fut: std::future::Future<Output = Result<Response, Infallible>>,
    {
        if self.stopping.load(std::sync::atomic::Ordering::SeqCst)
            && req.method() != hyper::Method::DELETE
        {
            return Ok(unavailable());
        }
        let Some(principal) = self.principal(&req) else {
            tracing::info!(method = %req.method(), "HTTP request without a valid token refused (401)");
            return Ok(unauthorized());
        };
        let session = req
            .headers()
            .get(SESSION_HEADER)
            .and_then(|v| v.to_str().ok())
            .map(str::to_string);
        if let Some(id) = &session {
            let owner = self.pins().get(id).cloned();
            // An MCP session this layer never saw opened, or another
            // principal's: unknown, as rmcp answers for one it does not have.
            if owner.as_deref() != Some(principal.name.as_str()) {
                return Ok(session_not_found());
            }
        }
        let deleting = req.method() == hyper::Method::DELETE;
        let posting = req.method() == hyper::Method::POST;
        let name = principal.name.clone();
        req.extensions_mut().insert(principal);
        let mut response = inner(req).await?;
        // rmcp answers a DELETE it honoured with 202; clients (the official
        // Python SDK among them) expect 200 or 204 and warn otherwise.
        if deleting && response.status() == hyper::StatusCode::ACCEPTED {
            *response.status_mut() = hyper::StatusCode::NO_CONTENT;
        }
        match &session {
            None => {
                if let Some(id) = response
                    .headers()
                    .get(SESSION_HEADER)
                    .and_then(|v| v.to_str().ok())
                {
                    self.pins().insert(id.to_string(), name);
                }
            }
            Some(id) if deleting && response.status().is_success() => {
                self.pins().remove(id);
            }
            Some(_) => {}
        }
        if posting {
            // Counted until the body ends or is dropped (the guard lives in
            // the body's frame mapper).
            let guard = Answering::new(&self.answering);
            response = response.map(move |body| {
                body.map_frame(move |frame| {
                    let _ = &guard;
                    frame
                })
                .boxed()
            });
        }
        Ok(response)
    }

    /// Returns once no POST answer is still being streamed.
    async fn answered(&self) {
        while self.answering.load(std::sync::atomic::Ordering::SeqCst) > 0 {
            tokio::time::sleep(std::time::Duration::from_millis(10)).await;
        }
    }

    /// `GET /metrics`: an operator's (401 without a valid token, 403 for an
    /// agent's); anyone on a loopback server without principals.
    async fn metrics<B>(&self, req: &hyper::Request<B>) -> Response {
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
        let Some(principal) = self.principal(req) else {
            return unauthorized();
        };
        if self.server.gateway().has_principals() && !principal.is_operator() {
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

    fn pins(&self) -> std::sync::MutexGuard<'_, HashMap<String, String>> {
        self.sessions.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// One POST answer still being streamed, counted in `Auth::answering`.
struct Answering(Arc<std::sync::atomic::AtomicUsize>);

impl Answering {
    fn new(count: &Arc<std::sync::atomic::AtomicUsize>) -> Self {
        count.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        Self(count.clone())
    }
}

impl Drop for Answering {
    fn drop(&mut self) {
        self.0.fetch_sub(1, std::sync::atomic::Ordering::SeqCst);
    }
}

/// 401 with no detail (which principals exist, or why a token failed, is
/// not the caller's to learn).
fn unauthorized() -> Response {
    let mut response = hyper::Response::new(Full::new(Bytes::new()).boxed());
    *response.status_mut() = hyper::StatusCode::UNAUTHORIZED;
    response.headers_mut().insert(
        hyper::header::WWW_AUTHENTICATE,
        hyper::header::HeaderValue::from_static("Bearer"),
    );
    response
}

/// A text answer with `status`.
fn plain(status: hyper::StatusCode, text: String) -> Response {
    let mut response = hyper::Response::new(Full::new(Bytes::from(text)).boxed());
    *response.status_mut() = status;
    response
}

/// 503: the server is stopping and takes no new request.
fn unavailable() -> Response {
    let mut response =
        hyper::Response::new(Full::new(Bytes::from_static(b"the server is stopping\n")).boxed());
    *response.status_mut() = hyper::StatusCode::SERVICE_UNAVAILABLE;
    response
}

fn session_not_found() -> Response {
    let mut response = hyper::Response::new(
        Full::new(Bytes::from_static(b"Not Found: Session not found")).boxed(),
    );
    *response.status_mut() = hyper::StatusCode::NOT_FOUND;
    response
}

fn not_found() -> hyper::Response<BoxBody<Bytes, Infallible>> {
    let mut response = hyper::Response::new(
        Full::new(Bytes::from_static(
            b"not found: Glovebox serves MCP at /mcp\n",
        ))
        .boxed(),
    );
    *response.status_mut() = hyper::StatusCode::NOT_FOUND;
    response
}
