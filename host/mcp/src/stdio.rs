//! Serving one client over stdin/stdout.

use std::time::Duration;

use anyhow::Context;
use rmcp::ServiceExt;
use tokio_util::sync::CancellationToken;

use crate::connection::removed_message;
use crate::server::McpServer;
use glovebox::Principal;

impl McpServer {
    /// Serves one client over stdin/stdout until it closes stdin, as
    /// `principal`.
    pub async fn serve_stdio(&self, principal: Principal) -> anyhow::Result<()> {
        self.serve_stdio_until(principal, CancellationToken::new(), Duration::ZERO)
            .await
    }

    /// [`McpServer::serve_stdio`] until the client closes stdin or `stop` is
    /// cancelled; then the server drains for up to `grace` (see
    /// [`McpServer::drain`]) while the client still gets its answers.
    pub async fn serve_stdio_until(
        &self,
        principal: Principal,
        stop: CancellationToken,
        grace: Duration,
    ) -> anyhow::Result<()> {
        tracing::info!(principal = %principal, "serving MCP over stdio");
        let name = principal.name.clone();
        let connection = self.connection(Some(principal));
        let running = tokio::select! {
            running = connection.clone().serve(rmcp::transport::stdio()) => {
                running.context("the MCP handshake over stdio failed")?
            }
            () = stop.cancelled() => {
                // Stopped before a client said hello: the jobs still drain.
                self.drain(grace).await;
                return Ok(());
            }
        };
        let cancel = running.cancellation_token();
        let mut waiting = std::pin::pin!(running.waiting());
        let removed = connection.state.removed.clone();
        let mut reloads = self.gateway().reloads();
        let waited = loop {
            tokio::select! {
                waited = waiting.as_mut() => break waited,
                () = stop.cancelled() => {
                    self.drain(grace).await;
                    cancel.cancel();
                    break waiting.await;
                }
                // A reload that removed the principal ends the connection
                // now, not at its next request.
                changed = reloads.changed() => {
                    if changed.is_err() {
                        reloads = self.gateway().reloads();
                    } else if self.gateway().principals().current(&name).is_none() {
                        removed.cancel();
                    }
                }
                () = removed.cancelled() => {
                    // The client sees its stdout close (EOF) after any
                    // answer already written; the process exits non-zero.
                    tracing::error!(principal = %name, "{}", removed_message(&name));
                    cancel.cancel();
                    let _ = waiting.await;
                    connection.gone().await;
                    anyhow::bail!("{}; stopped serving MCP over stdio", removed_message(&name));
                }
            }
        };
        // The client is gone: its default session must not stay active.
        connection.gone().await;
        waited.context("the MCP stdio service stopped")?;
        Ok(())
    }
}
