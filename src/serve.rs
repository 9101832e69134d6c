//! `glovebox serve`: the MCP server, over stdio or streamable HTTP.

use crate::exit::Exit;
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
    /// Also serve the operator's admin listener on this address (e.g.
    /// `127.0.0.1:8081`): the dashboard at `/ui` and `/metrics`, for an
    /// operator principal's token (or a login with it). Works with stdio
    /// and with `--http`.
    #[arg(long, value_name = "ADDR")]
    admin: Option<SocketAddr>,
    /// With `--http` or `--admin`: serve an address that is not loopback.
    /// Needs declared principals; terminate TLS in front (see docs/operators/serving.md).
    #[arg(long)]
    allow_remote: bool,
    /// With `--http`: the connections served at once; more wait to be
    /// accepted until one ends.
    #[arg(long, value_name = "N", default_value_t = glovebox_mcp::DEFAULT_MAX_CONNECTIONS, requires = "http")]
    max_connections: usize,
    /// With `--http` or `--admin`: also accept this `Host` (the public name
    /// a proxy in front forwards); repeatable.
    #[arg(long, value_name = "HOST")]
    allow_host: Vec<String>,
    /// With `--http` or `--admin`: also accept requests from pages of this
    /// browser origin (`https://app.example.com:443`); repeatable.
    #[arg(long, value_name = "ORIGIN")]
    allow_origin: Vec<String>,
    /// On SIGTERM or Ctrl-C: how long the calls and jobs in flight get to
    /// finish before the server stops the rest (recording them as
    /// interrupted) and exits 0. A second signal stops at once.
    #[arg(long, value_name = "DURATION", value_parser = humantime::parse_duration, default_value = "30s")]
    grace: std::time::Duration,
}

pub async fn run(config: &Path, args: ServeArgs) -> Result<ExitCode> {
    serve_with(config, args, |_| None).await
}

/// [`run`], with `beside` started on the server's gateway once it is open:
/// a task that lives as long as the server serves (`glovebox dev`'s
/// watcher, `dev/`).
pub(crate) async fn serve_with(
    config: &Path,
    args: ServeArgs,
    beside: impl FnOnce(glovebox::Gateway) -> Option<glovebox::tasks::Owned<()>>,
) -> Result<ExitCode> {
    if args.http.is_none()
        && args.admin.is_none()
        && (args.allow_remote || !args.allow_host.is_empty() || !args.allow_origin.is_empty())
    {
        bail!(
            "--allow-remote, --allow-host and --allow-origin are settings of the HTTP listeners: use them with --http or --admin"
        );
    }
    let server = McpServer::open(config).await?;
    // The operator's commands reach this server on its control socket, and
    // SIGHUP reloads the config; both stop with the server.
    let _control = match crate::control::listen(server.gateway().clone(), server.jobs().clone()) {
        Ok(listener) => Some(listener),
        // Serving matters more: the operator is told what cannot work.
        Err(e) => {
            eprintln!(
                "glovebox: warning: {e:#}; operator commands (`glovebox approve`, `billing`, ...) cannot reach this server and are refused while it holds the data dir"
            );
            None
        }
    };
    let _reloads = reload_on_hangup(server.gateway().clone());
    let _beside = beside(server.gateway().clone());
    // The operator's admin listener (the dashboard and `/metrics`), beside
    // whichever MCP transport serves; it stops with the process.
    let _admin = match args.admin {
        Some(addr) => {
            let options = glovebox_dashboard::AdminOptions {
                allow_remote: args.allow_remote,
                allowed_hosts: args.allow_host.clone(),
                allowed_origins: args.allow_origin.clone(),
            };
            let admin = glovebox_dashboard::AdminServer::bind(
                server.gateway().clone(),
                server.jobs().clone(),
                addr,
                options,
            )
            .await?;
            eprintln!(
                "glovebox: serving the dashboard at http://{}/ui (and /metrics)",
                admin.local_addr()?
            );
            Some(glovebox::tasks::owned(async move {
                if let Err(e) = admin.run(shutdown_signal()).await {
                    tracing::error!(error = %format!("{e:#}"), "the admin listener stopped");
                }
            }))
        }
        None => None,
    };
    match args.http {
        None => {
            let gateway = server.gateway();
            let principal = match &args.as_principal {
                Some(name) => match gateway.principals().named(name) {
                    Some(p) => p,
                    None => bail!(
                        "no principal `{name}` in the config: `glovebox principal list` shows them, `glovebox principal add` declares one"
                    ),
                },
                None => gateway.principals().default_stdio()?,
            };
            // stdout is the MCP channel: everything else goes to stderr.
            let served = server
                .serve_stdio_until(principal, stop_on_signal(), args.grace)
                .await;
            if let Some(control) = &_control {
                control.answered(std::time::Duration::from_secs(5)).await;
            }
            served?;
        }
        Some(addr) => {
            let options = HttpOptions {
                max_connections: args.max_connections,
                allow_remote: args.allow_remote,
                allowed_hosts: args.allow_host,
                allowed_origins: args.allow_origin,
                grace: args.grace,
            };
            let http = HttpServer::bind_with(server, addr, options).await?;
            let stop = http.stop_token();
            eprintln!("glovebox: serving MCP at http://{}/mcp", http.local_addr()?);
            let signalled = stop_on_signal();
            tokio::spawn(async move {
                signalled.cancelled().await;
                stop.cancel();
            });
            http.run().await?;
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// `glovebox reload`, inside the server it was sent to.
pub async fn reload(config: &Path) -> Result<ExitCode> {
    let Some(gateway) = crate::reach::served() else {
        bail!(
            "no glovebox server is running on the data dir of `{}`: `glovebox reload` re-reads the config of a running `glovebox serve` (a server that starts reads it anyway)",
            config.display()
        );
    };
    match gateway.reload().await {
        Ok(reloaded) => {
            out!(
                "reloaded `{}`: {} tools, {} hooks",
                reloaded.config.display(),
                reloaded.tools.len(),
                reloaded.hooks.len()
            );
            for (hook, digest) in &reloaded.hooks {
                match digest {
                    Some(digest) => out!("  hook {hook}  sha256 {digest}"),
                    None => out!(
                        "  hook {hook}  NOT LOADED: it denies every call (see the server's log)"
                    ),
                }
            }
            Ok(ExitCode::SUCCESS)
        }
        Err(e) => {
            err!("error: {e:#}");
            err!("  nothing was reloaded: the server keeps serving the config it had");
            Ok(Exit::Usage.into())
        }
    }
}

/// Reloads the config on every SIGHUP, for as long as the handle lives; a
/// config that does not load is logged and the current one keeps serving.
fn reload_on_hangup(gateway: glovebox::Gateway) -> Option<glovebox::tasks::Owned<()>> {
    use tokio::signal::unix::{SignalKind, signal};
    let mut hangups = match signal(SignalKind::hangup()) {
        Ok(s) => s,
        Err(e) => {
            tracing::warn!(error = %e, "cannot listen for SIGHUP: reload with `glovebox reload`");
            return None;
        }
    };
    Some(glovebox::tasks::owned(async move {
        while hangups.recv().await.is_some() {
            if let Err(e) = gateway.reload().await {
                tracing::error!(error = %format!("{e:#}"), "SIGHUP: the config was not reloaded; the server keeps serving the config it had");
            }
        }
    }))
}

/// A token cancelled at the first SIGTERM or Ctrl-C (the server drains);
/// at the second the process exits at once, with 130.
fn stop_on_signal() -> tokio_util::sync::CancellationToken {
    let stop = tokio_util::sync::CancellationToken::new();
    let token = stop.clone();
    tokio::spawn(async move {
        shutdown_signal().await;
        eprintln!(
            "glovebox: stopping: the calls and jobs in flight may finish (signal again to stop at once)"
        );
        token.cancel();
        shutdown_signal().await;
        eprintln!("glovebox: stopped at once by a second signal");
        std::process::exit(130);
    });
    stop
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
