//! MCP over streamable HTTP, at `/mcp`.
//!
//! rmcp makes one handler per MCP session (`Mcp-Session-Id`, revisions up
//! to 2025-11-25) through the factory below, so each session gets its own
//! [`Connection`](super::Connection) and so its own bound session. A
//! 2026-07-28 request has no MCP session: rmcp serves it on a handler of
//! its own, made for it alone, and the session it runs in is the one its
//! `_meta` names or its principal's default (`stateless.rs`), so any node
//! answers it alike.
//!
//! Who is calling: when the config declares principals, every request must
//! carry `Authorization: Bearer <token>` of one of them; without it, or with
//! a token that is no one's, the answer is a bare 401 (nothing else happens).
//! Under `[auth.oauth]` an access token of the configured issuer may name a
//! declared principal instead (`oauth.rs`): then a 401 points at the
//! protected-resource metadata served at `/.well-known/oauth-protected-resource`.
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
use hyper::service::Service as _;
use hyper_util::service::TowerToHyperService;
use rmcp::transport::streamable_http_server::session::SessionManager as _;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::{StreamableHttpServerConfig, StreamableHttpService};
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;

use crate::answers::Answers;
use crate::server::McpServer;

mod auth;
mod claims;
mod held;
mod metrics;
mod oauth;
mod responses;
pub(crate) mod tool_scopes;

use auth::Auth;
use responses::{Request, not_found};

/// The largest request body served: twice the largest tool input (its
/// JSON-RPC envelope and escaping), and at least 4 MiB; rmcp refuses a
/// larger one with 413, and so does the scope check that reads it first.
pub(crate) fn max_request_body(runtime: &glovebox::manifest::RuntimeConfig) -> usize {
    usize::try_from(runtime.max_input_bytes)
        .unwrap_or(usize::MAX)
        .saturating_mul(2)
        .max(4 << 20)
}

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
        // Ends the MCP sessions once the calls in flight have drained.
        let sessions_end = CancellationToken::new();
        let (config, allowed_hosts) = self.mcp_config(&sessions_end);
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
            oauth: Default::default(),
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
                        if req.uri().path() == oauth::METADATA_PATH
                            || req
                                .uri()
                                .path()
                                .starts_with(&format!("{}/", oauth::METADATA_PATH))
                        {
                            return Ok::<_, Infallible>(auth.oauth_metadata());
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

    /// rmcp's configuration of the MCP service, and the `Host`s served.
    fn mcp_config(
        &self,
        sessions_end: &CancellationToken,
    ) -> (StreamableHttpServerConfig, Vec<String>) {
        // Leave room for an input up to the host's own limit, so an oversized
        // input gets the host's message rather than a bare 413.
        let max_body = max_request_body(&self.server.gateway().host().config().runtime);
        // The `Host`s served (rmcp checks them for MCP; `/metrics` here).
        let mut allowed_hosts: Vec<String> = Vec::new();
        let mut config = StreamableHttpServerConfig::default()
            .with_cancellation_token(sessions_end.clone())
            .with_max_request_body_bytes(max_body);
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
        (config, allowed_hosts)
    }
}

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

/// How long past the announced retry interval a stopping server waits for
/// a client to resume a broken answer stream.
const RESUME_MARGIN: std::time::Duration = std::time::Duration::from_secs(2);
