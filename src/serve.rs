//! `glovebox serve`: the MCP server, over stdio or streamable HTTP.

use std::net::SocketAddr;
use std::path::Path;
use std::process::ExitCode;

use anyhow::Result;
use clap::Args;
use glovebox_mcp::{HttpServer, McpServer};

#[derive(Args)]
pub struct ServeArgs {
    /// Serve streamable HTTP on this address (e.g. `127.0.0.1:8080`; MCP at
    /// `/mcp`) instead of stdio.
    #[arg(long, value_name = "ADDR")]
    http: Option<SocketAddr>,
}

pub async fn run(config: &Path, args: ServeArgs) -> Result<ExitCode> {
    let server = McpServer::open(config).await?;
    match args.http {
        None => {
            // stdout is the MCP channel: everything else goes to stderr.
            server.serve_stdio().await?;
        }
        Some(addr) => {
            let http = HttpServer::bind(server, addr).await?;
            let stop = http.stop_token();
            eprintln!("glovebox: serving MCP at http://{}/mcp", http.local_addr()?);
            tokio::spawn(async move {
                shutdown_signal().await;
                stop.cancel();
            });
            http.run().await?;
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// Ctrl-C, or SIGTERM on Unix.
async fn shutdown_signal() {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        match signal(SignalKind::terminate()) {
            Ok(mut term) => {
                tokio::select! {
                    _ = tokio::signal::ctrl_c() => {}
                    _ = term.recv() => {}
                }
            }
            Err(_) => {
                let _ = tokio::signal::ctrl_c().await;
            }
        }
    }
    #[cfg(not(unix))]
    {
        let _ = tokio::signal::ctrl_c().await;
    }
}
