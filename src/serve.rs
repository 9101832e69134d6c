//! `glovebox serve`: the MCP server, over stdio or streamable HTTP.

use std::net::SocketAddr;
use std::path::Path;
use std::process::ExitCode;

use anyhow::{Result, bail};
use clap::Args;
use glovebox_mcp::{HttpOptions, HttpServer, McpServer};

#[derive(Args)]
pub struct ServeArgs {
    /// Serve streamable HTTP on this address (e.g. `127.0.0.1:8080`; MCP at
    /// `/mcp`) instead of stdio. Every request needs a principal's token when
    /// the config declares principals.
    #[arg(long, value_name = "ADDR")]
    http: Option<SocketAddr>,
    /// Over stdio: the principal this connection is (default: the config's
    /// one agent principal, or the built-in agent `local` when it has none).
    #[arg(long = "as", value_name = "NAME", conflicts_with = "http")]
    as_principal: Option<String>,
    /// With `--http`: serve an address that is not loopback. Needs declared
    /// principals; terminate TLS in front (see the README).
    #[arg(long, requires = "http")]
    allow_remote: bool,
    /// With `--http`: also accept this `Host` (the public name a proxy in
    /// front forwards); repeatable.
    #[arg(long, value_name = "HOST", requires = "http")]
    allow_host: Vec<String>,
    /// With `--http`: also accept requests from pages of this browser
    /// origin (`https://app.example.com:443`); repeatable.
    #[arg(long, value_name = "ORIGIN", requires = "http")]
    allow_origin: Vec<String>,
}

pub async fn run(config: &Path, args: ServeArgs) -> Result<ExitCode> {
    let server = McpServer::open(config).await?;
    match args.http {
        None => {
            let gateway = server.gateway();
            let principal = match &args.as_principal {
                Some(name) => match gateway.principal(name) {
                    Some(p) => p,
                    None => bail!(
                        "no principal `{name}` in the config: `glovebox principal list` shows them, `glovebox principal add` declares one"
                    ),
                },
                None => gateway
                    .default_stdio_principal()
                    .map_err(anyhow::Error::msg)?,
            };
            // stdout is the MCP channel: everything else goes to stderr.
            server.serve_stdio(principal).await?;
        }
        Some(addr) => {
            let options = HttpOptions {
                allow_remote: args.allow_remote,
                allowed_hosts: args.allow_host,
                allowed_origins: args.allow_origin,
            };
            let http = HttpServer::bind_with(server, addr, options).await?;
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
