//! MCP over streamable HTTP, at `/mcp`.
//!
//! rmcp makes one handler per MCP session (`Mcp-Session-Id`) through the
//! factory below, so each session gets its own [`Connection`](super::Connection)
//! and so its own bound session. The server offers protocol revisions up to
//! 2025-11-25, which have sessions (2026-07-28 serves requests statelessly).

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::Arc;

use anyhow::Context;
use bytes::Bytes;
use http_body_util::{BodyExt, Full, combinators::BoxBody};
use hyper::body::Incoming;
use hyper::service::Service as _;
use hyper_util::rt::TokioIo;
use hyper_util::service::TowerToHyperService;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::{StreamableHttpServerConfig, StreamableHttpService};
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;

use super::McpServer;

/// The path MCP is served at.
pub const MCP_PATH: &str = "/mcp";

/// A bound HTTP listener serving MCP.
pub struct HttpServer {
    listener: TcpListener,
    server: McpServer,
    stop: CancellationToken,
}

impl HttpServer {
    /// Binds `addr` (port 0 picks a free port; see [`HttpServer::local_addr`]).
    pub async fn bind(server: McpServer, addr: SocketAddr) -> anyhow::Result<HttpServer> {
        let listener = TcpListener::bind(addr)
            .await
            .with_context(|| format!("cannot listen on {addr}"))?;
        Ok(HttpServer {
            listener,
            server,
            stop: CancellationToken::new(),
        })
    }

    pub fn local_addr(&self) -> anyhow::Result<SocketAddr> {
        Ok(self.listener.local_addr()?)
    }

    /// Cancelling this token stops the server and ends its MCP sessions.
    pub fn stop_token(&self) -> CancellationToken {
        self.stop.clone()
    }

    /// Serves until the stop token is cancelled.
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
        let mut config = StreamableHttpServerConfig::default()
            .with_cancellation_token(self.stop.child_token())
            .with_max_request_body_bytes(max_input.saturating_mul(2).max(4 << 20));
        if let Ok(addr) = self.listener.local_addr() {
            let hosts = [
                "localhost".to_string(),
                "127.0.0.1".to_string(),
                "::1".to_string(),
                addr.ip().to_string(),
                format!("localhost:{}", addr.port()),
                addr.to_string(),
            ];
            config = config.with_allowed_hosts(hosts);
        }
        let factory = {
            let server = self.server.clone();
            move || Ok(server.connection())
        };
        let mcp =
            StreamableHttpService::new(factory, Arc::new(LocalSessionManager::default()), config);
        let mcp = TowerToHyperService::new(mcp);
        loop {
            let (stream, peer) = tokio::select! {
                _ = self.stop.cancelled() => return Ok(()),
                accepted = self.listener.accept() => match accepted {
                    Ok(a) => a,
                    Err(e) => {
                        tracing::warn!(error = %e, "cannot accept an HTTP connection");
                        continue;
                    }
                },
            };
            let _ = stream.set_nodelay(true);
            let mcp = mcp.clone();
            let stop = self.stop.clone();
            tokio::spawn(async move {
                let service = hyper::service::service_fn(move |req: hyper::Request<Incoming>| {
                    let mcp = mcp.clone();
                    async move {
                        if req.uri().path() == MCP_PATH {
                            mcp.call(req).await
                        } else {
                            Ok::<_, Infallible>(not_found())
                        }
                    }
                });
                let conn = hyper::server::conn::http1::Builder::new()
                    .serve_connection(TokioIo::new(stream), service);
                let mut conn = std::pin::pin!(conn);
                tokio::select! {
                    r = conn.as_mut() => {
                        if let Err(e) = r {
                            tracing::debug!(%peer, error = %e, "HTTP connection ended with an error");
                        }
                    }
                    _ = stop.cancelled() => {
                        conn.as_mut().graceful_shutdown();
                        let _ = conn.as_mut().await;
                    }
                }
            });
        }
    }
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
