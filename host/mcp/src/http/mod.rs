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
//! The token is checked against the config served now at every request, so
//! a reload reaches open MCP sessions at their next request (a removed
//! principal gets 401, and its MCP sessions are ended at the reload). The
//! principal rides in the request's extensions to the handler, and each
//! MCP session is pinned to the principal that opened it: another
//! principal's requests on it are answered as for an unknown session (404).
//! With no principals declared every request is the built-in agent `local`,
//! only loopback addresses may be bound, and only connections of the
//! server's own user are served (the peer socket's owner; another user, or
//! one that cannot be told, gets 403). `Host` and `Origin` are checked
//! (rmcp): loopback names and origins on the bound port, and those the
//! operator adds.
//!
//! What one principal may hold (`held.rs`): MCP sessions and requests in
//! flight are capped per principal (`[quotas]`), so one principal cannot
//! take every slot from the others.

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::Arc;

use anyhow::Context;
use bytes::Bytes;
use http_body_util::{BodyExt, Full, combinators::BoxBody};
use hyper::service::Service as _;
use hyper_util::service::TowerToHyperService;
use rmcp::transport::streamable_http_server::session::SessionManager as _;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::{StreamableHttpServerConfig, StreamableHttpService};
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;

use super::answers::Answers;
use super::server::McpServer;
use glovebox::Principal;

mod held;

pub use held::MAX_MCP_SESSIONS;

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
            if !server.gateway().principals().declared() {
                anyhow::bail!(
                    "refusing to serve MCP on {addr}: it is not a loopback address, and the config declares no principals, so anyone who reaches it would be served without a token; declare principals (`glovebox principal add NAME ...`), then pass --allow-remote, with TLS terminated in front (see docs/operators/serving.md)"
                );
            }
            if !options.allow_remote {
                anyhow::bail!(
                    "refusing to serve MCP on {addr}: it is not a loopback address; pass --allow-remote to serve it (every request then needs a principal's token), with TLS terminated in front (see docs/operators/serving.md)"
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

    /// Cancelling this token stops the server: it takes no new request
    /// (503), lets the calls in flight finish and answer (up to
    /// [`HttpOptions::grace`]; an answer whose stream broke may be resumed
    /// meanwhile, see `answers.rs`), then ends its MCP sessions.
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
            move || Ok(server.connection(None))
        };
        // A client whose answer stream broke reconnects after the retry
        // interval announced on it: the drain waits that long (and a little)
        // for it to resume (`answers.rs`).
        let linger = config.sse_retry.unwrap_or_default() + RESUME_MARGIN;
        let pins = Arc::new(held::Pins::new(LocalSessionManager::default()));
        let mcp = StreamableHttpService::new(factory, pins.clone(), config);
        let mcp = TowerToHyperService::new(mcp);
        let auth = Arc::new(Auth {
            server: self.server.clone(),
            pins: pins.clone(),
            requests: held::Requests::default(),
            stopping: std::sync::atomic::AtomicBool::new(false),
            answers: Answers::new(linger),
            allowed_hosts,
        });
        let _removals =
            glovebox::tasks::owned(end_removed_principals(self.server.gateway().clone(), pins));
        let limits = glovebox_listener::Limits {
            max_connections: self.options.max_connections,
            ..Default::default()
        };
        // Connections are accepted until the sessions end, the drain
        // included: a request that comes while the server stops is answered
        // (503 for new work, the resumption of an answer it owes), never
        // left waiting in the listen backlog until the process exits.
        let listener = self.listener;
        let accepting = sessions_end.clone();
        let serving = auth.clone();
        let accept = tokio::spawn(async move {
            let auth = serving;
            glovebox_listener::accept_until(&listener, limits, &accepting, &accepting, |peer| {
                let mcp = mcp.clone();
                let auth = auth.clone();
                hyper::service::service_fn(move |mut req: Request| {
                    let mcp = mcp.clone();
                    let auth = auth.clone();
                    req.extensions_mut().insert(peer.clone());
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
            })
            .await
        });
        self.stop.cancelled().await;
        // Stopping: no new request (503; a resumption of an answer owed and
        // a session's DELETE still pass); the calls in flight finish and
        // their answers go out; then the MCP sessions end and the
        // connections close.
        auth.stopping
            .store(true, std::sync::atomic::Ordering::SeqCst);
        let started = std::time::Instant::now();
        self.server.drain(self.options.grace).await;
        // A call that just finished has its answer on its way into the
        // request's stream, and a client whose stream broke may be about to
        // resume it: ending the sessions now could lose that answer. Wait
        // (within the grace, at least a second) until every answer stream
        // has ended and none may still be resumed.
        let settle = self
            .options
            .grace
            .saturating_sub(started.elapsed())
            .max(std::time::Duration::from_secs(1));
        auth.answers
            .delivered(tokio::time::Instant::now() + settle)
            .await;
        sessions_end.cancel();
        match accept.await {
            Ok(connections) => {
                connections.close();
                let _ = tokio::time::timeout(std::time::Duration::from_secs(5), connections.wait())
                    .await;
            }
            Err(e) => tracing::error!(error = %e, "the MCP accept loop failed"),
        }
        Ok(())
    }
}

type Response = hyper::Response<BoxBody<Bytes, Infallible>>;
type Request = hyper::Request<glovebox_listener::TimedBody>;

/// At every reload, ends the MCP sessions of the principals the config no
/// longer declares (their next request would get 401 anyway; an open
/// stream of theirs closes now). Runs until dropped.
async fn end_removed_principals(gateway: glovebox::Gateway, pins: Arc<held::Pins>) {
    let mut reloads = gateway.reloads();
    while reloads.changed().await.is_ok() {
        let gone = pins.owned_by_none_of(|name| gateway.principals().current(name).is_some());
        for id in gone {
            tracing::info!(mcp_session = %id, "ending an MCP session: its principal is no longer declared (reload)");
            if let Err(e) = pins.close_session(&id.into()).await {
                tracing::warn!(error = %e, "cannot end the MCP session of a removed principal");
            }
        }
    }
}

/// Authentication, the pinning of MCP sessions to principals, and what
/// each principal may hold.
struct Auth {
    server: McpServer,
    /// rmcp's MCP sessions, each pinned to the principal that opened it.
    pins: Arc<held::Pins>,
    /// Requests in flight by principal (open streams included).
    requests: held::Requests,
    /// Set once the server stops: new requests get 503.
    stopping: std::sync::atomic::AtomicBool,
    /// The answer streams still open or resumable, which the drain waits for.
    answers: Arc<Answers>,
    /// The `Host` values served (a page that rebinds a name to loopback is not).
    allowed_hosts: Vec<String>,
}

const SESSION_HEADER: &str = "mcp-session-id";
/// Sent by a client resuming a stream (server-sent events).
const LAST_EVENT_ID_HEADER: &str = "last-event-id";
/// How long past the announced retry interval a stopping server waits for
/// a client to resume a broken answer stream.
const RESUME_MARGIN: std::time::Duration = std::time::Duration::from_secs(2);

/// Why a request has no principal.
enum Refused {
    /// No valid token (401, with no detail).
    Token,
    /// No principals are declared and the peer is not the server's own
    /// user, or cannot be told to be (403, saying why).
    NotOwnUser(String),
}

impl Refused {
    fn response(self) -> Response {
        match self {
            Refused::Token => unauthorized(),
            Refused::NotOwnUser(why) => plain(hyper::StatusCode::FORBIDDEN, format!("{why}\n")),
        }
    }
}

impl Auth {
    /// The principal of a request, as the config served now declares it:
    /// the one whose token it carries, or, when no principal is declared,
    /// the built-in `local` agent for a connection of the server's own user.
    async fn principal<B>(&self, req: &hyper::Request<B>) -> Result<Principal, Refused> {
        let gateway = self.server.gateway();
        if !gateway.principals().declared() {
            return match req.extensions().get::<glovebox_listener::Peer>() {
                Some(peer) => own_user(peer).await.map(|()| Principal::local()),
                None => Err(Refused::NotOwnUser(
                    "refused: the connection's peer is unknown".into(),
                )),
            };
        }
        let token = req
            .headers()
            .get(hyper::header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.split_once(' '))
            .filter(|(scheme, _)| scheme.eq_ignore_ascii_case("bearer"))
            .map(|(_, token)| token.trim());
        token
            .and_then(|token| gateway.principals().authenticate(token))
            .ok_or(Refused::Token)
    }

    async fn serve<F, Fut>(&self, mut req: Request, inner: F) -> Result<Response, Infallible>
    where
        F: FnOnce(Request) -> Fut,
        Fut: std::future::Future<Output = Result<Response, Infallible>>,
    {
        // A resuming GET asks again for the answer to a request the server
        // took before it began to stop: it is owed, not new work.
        let resuming =
            req.method() == hyper::Method::GET && req.headers().contains_key(LAST_EVENT_ID_HEADER);
        if self.stopping.load(std::sync::atomic::Ordering::SeqCst)
            && req.method() != hyper::Method::DELETE
            && !resuming
        {
            return Ok(unavailable());
        }
        let principal = match self.principal(&req).await {
            Ok(principal) => principal,
            Err(refused) => {
                tracing::info!(method = %req.method(), "HTTP request refused: no valid token, or not the server's own user");
                return Ok(refused.response());
            }
        };
        let quotas = self.server.gateway().host().config().quotas.clone();
        let cap = |key: &str| usize::try_from(quotas.limit(key).value).unwrap_or(usize::MAX);
        // Counted until its answer's body ends (an open stream included).
        let Some(in_flight) = self
            .requests
            .enter(&principal.name, cap("connections_per_principal"))
        else {
            return Ok(too_many(format!(
                "quota reached: {principal} has {} requests in flight on this server, open streams included ({}); close some (idle streams, MCP sessions it no longer uses), or ask the operator to raise it",
                quotas.limit("connections_per_principal").value,
                quotas.limit("connections_per_principal")
            )));
        };
        let session = req
            .headers()
            .get(SESSION_HEADER)
            .and_then(|v| v.to_str().ok())
            .map(str::to_string);
        let mut opening = None;
        match &session {
            // An MCP session this layer never saw opened, or another
            // principal's: unknown, as rmcp answers for one it does not have.
            Some(id) if self.pins.owner(id).as_deref() != Some(principal.name.as_str()) => {
                return Ok(session_not_found());
            }
            Some(_) => {}
            // A POST without a session opens one (`initialize`): reserved
            // against the caps before rmcp makes it.
            None if req.method() == hyper::Method::POST => {
                let cap = cap("mcp_sessions_per_principal");
                match self.pins.reserve(&principal.name, cap) {
                    Ok(reserved) => opening = Some(reserved),
                    Err(held::Full::Principal) => {
                        return Ok(too_many(format!(
                            "quota reached: {principal} holds {cap} MCP sessions on this server ({}); end one (DELETE it, or close its client), or ask the operator to raise it",
                            quotas.limit("mcp_sessions_per_principal")
                        )));
                    }
                    Err(held::Full::Server) => {
                        return Ok(too_many(format!(
                            "this server holds {MAX_MCP_SESSIONS} MCP sessions, its most: try again when some end"
                        )));
                    }
                }
            }
            None => {}
        }
        let deleting = req.method() == hyper::Method::DELETE;
        let posting = req.method() == hyper::Method::POST;
        req.extensions_mut().insert(principal);
        let mut response = inner(req).await?;
        // rmcp answers a DELETE it honoured with 202; clients (the official
        // Python SDK among them) expect 200 or 204 and warn otherwise.
        if deleting && response.status() == hyper::StatusCode::ACCEPTED {
            *response.status_mut() = hyper::StatusCode::NO_CONTENT;
        }
        if let Some(opening) = opening
            && let Some(id) = response
                .headers()
                .get(SESSION_HEADER)
                .and_then(|v| v.to_str().ok())
        {
            opening.claim(id);
        }
        // The principal's request counts until its body ends or is dropped
        // (the guard lives in the body's frame mapper); an answer stream is
        // also counted for the drain (see `answers.rs`).
        response = response.map(move |body| {
            body.map_frame(move |frame| {
                let _ = &in_flight;
                frame
            })
            .boxed()
        });
        if posting || resuming {
            let answers = self.answers.clone();
            response = response.map(move |body| answers.track(body));
        }
        Ok(response)
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
        let principal = match self.principal(req).await {
            Ok(principal) => principal,
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

/// Refuses a connection that is not of the server's own user (a server
/// without principals serves only the user who started it).
async fn own_user(peer: &glovebox_listener::Peer) -> Result<(), Refused> {
    let own = glovebox_listener::own_uid();
    match peer.is_own_user().await {
        Ok(true) => Ok(()),
        Ok(false) => {
            let uid = peer.uid().await.unwrap_or(u32::MAX);
            tracing::warn!(peer = %peer.addr, uid, "refused a connection of another user: the config declares no principals, so only the server's own user is served");
            Err(Refused::NotOwnUser(format!(
                "refused: this server declares no principals, so it serves only the user who started it (uid {own}), and this connection is uid {uid}'s; declare principals (`glovebox principal add NAME`) to serve others with a token"
            )))
        }
        Err(why) => {
            tracing::warn!(peer = %peer.addr, %why, "refused a connection whose user cannot be told");
            Err(Refused::NotOwnUser(format!(
                "refused: this server declares no principals, so it serves only the user who started it (uid {own}), and this connection's user cannot be told ({why}); declare principals (`glovebox principal add NAME`) and use a token"
            )))
        }
    }
}

/// 429: the principal holds what it may (the text names the quota).
fn too_many(text: String) -> Response {
    tracing::info!(%text, "HTTP request refused (429)");
    plain(hyper::StatusCode::TOO_MANY_REQUESTS, format!("{text}\n"))
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
