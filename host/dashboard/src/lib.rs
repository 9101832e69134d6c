//! The operator's admin listener: a second HTTP listener of `glovebox serve
//! --admin ADDR`, for people. It serves the dashboard at `/ui` (server-rendered
//! HTML, a stylesheet and a little JavaScript embedded in the binary, live
//! updates by server-sent events at `/ui/events`), `GET /metrics`, and the
//! signed webhooks of `[[trigger]] on = "webhook"` at `POST /hooks/<name>`,
//! and the HTTP API for operators' automation at `/api/v1` (`api.rs`: the
//! operation registry's routes, and its OpenAPI document).
//!
//! This crate owns the admin listener's HTTP side: binding (loopback only
//! unless the config declares principals and the operator passes
//! `--allow-remote`), the `Host` check against DNS rebinding, who is asking
//! (an operator principal's token as `Authorization: Bearer`, or a login at
//! `/ui/login` that sets a cookie holding a random session id, never the
//! token), the same-origin check of every POST (CSRF), and the pages. What it
//! shows it reads through the `glovebox` crate's public API, the one the
//! command line uses; what it does (approve, deny, review memory, act on a
//! rescue) runs the same operations of the registry as `glovebox approve`,
//! `deny`, `memory ...` and `rescue ...`, recording the operator principal.
//!
//! It must never import wasmtime, sled or MCP: it knows the gateway
//! (`glovebox::Gateway`) and the jobs runner (`glovebox::Jobs`) only.

#![forbid(unsafe_code)]

mod api;
mod approval;
mod auth;
mod billing;
mod budget;
mod card;
mod doctor;
mod events;
mod hooks;
mod html;
mod inbox;
mod jobs;
mod memory;
mod notify;
pub mod openapi;
mod pages;
mod plugin_actions;
mod principals;
mod rescue_actions;
mod rescue_forms;
mod rescues;
mod sessions;
mod timeline;
mod trend;
mod viewer;
mod workspaces;

use std::net::SocketAddr;
use std::sync::Arc;

use anyhow::Context as _;
use axum::Router;
use axum::routing::{get, post};
use glovebox::{Gateway, Jobs};
use tokio::net::TcpListener;

/// The path the dashboard is served under.
pub const UI_PATH: &str = "/ui";
/// Connections the admin listener serves at once (operators' browsers and
/// a scraper); more wait to be accepted.
pub const MAX_CONNECTIONS: usize = 64;
/// Where the HTTP API is served (`api.rs`).
pub const API_PATH: &str = "/api/v1";
/// The path the metrics are served at on the admin listener.
pub const METRICS_PATH: &str = "/metrics";
/// Where the webhooks are served (`hooks.rs`).
pub(crate) const HOOKS_PATH: &str = "/hooks/";

/// What the operator allows beyond the defaults.
#[derive(Clone, Debug, Default)]
pub struct AdminOptions {
    /// Serve on an address that is not loopback (needs declared principals).
    pub allow_remote: bool,
    /// `Host` values accepted besides loopback names and the bound address
    /// (the public name a TLS proxy in front forwards).
    pub allowed_hosts: Vec<String>,
    /// Origins accepted for POSTs besides this listener's own (the public
    /// origin a TLS proxy in front serves, `https://ops.example.com`).
    pub allowed_origins: Vec<String>,
}

/// What the handlers share.
pub(crate) struct App {
    pub gateway: Gateway,
    pub jobs: Arc<Jobs>,
    /// `Host` values served.
    pub hosts: Vec<String>,
    /// Origins whose POSTs are accepted.
    pub origins: Vec<String>,
    /// Logged-in browsers: session id → operator.
    pub logins: auth::Logins,
    /// Failed logins and tokens per address.
    pub failures: auth::Failures,
}

/// A bound admin listener.
pub struct AdminServer {
    listener: TcpListener,
    app: Arc<App>,
}

impl AdminServer {
    /// Binds `addr` (port 0 picks a free port; see
    /// [`AdminServer::local_addr`]). An address that is not loopback is
    /// refused unless the config declares principals (so every request needs
    /// an operator's token) and the operator allows it (`allow_remote`).
    pub async fn bind(
        gateway: Gateway,
        jobs: Arc<Jobs>,
        addr: SocketAddr,
        options: AdminOptions,
    ) -> anyhow::Result<AdminServer> {
        if !addr.ip().is_loopback() {
            if !gateway.principals().declared() {
                anyhow::bail!(
                    "refusing to serve the admin listener on {addr}: it is not a loopback address, and the config declares no principals, so anyone who reaches it would act as the operator without a token; declare an operator principal (`glovebox principal add NAME --kind operator`), then pass --allow-remote, with TLS terminated in front (see docs/operators/serving.md)"
                );
            }
            if !options.allow_remote {
                anyhow::bail!(
                    "refusing to serve the admin listener on {addr}: it is not a loopback address; pass --allow-remote to serve it (every request then needs an operator principal's token), with TLS terminated in front (see docs/operators/serving.md)"
                );
            }
        }
        let listener = TcpListener::bind(addr)
            .await
            .with_context(|| format!("cannot listen on {addr} (the admin listener)"))?;
        let bound = listener.local_addr()?;
        let port = bound.port();
        let mut hosts = vec![
            "localhost".to_string(),
            "127.0.0.1".to_string(),
            "::1".to_string(),
            "[::1]".to_string(),
            format!("localhost:{port}"),
            format!("127.0.0.1:{port}"),
            format!("[::1]:{port}"),
            bound.ip().to_string(),
            bound.to_string(),
        ];
        hosts.extend(options.allowed_hosts.iter().cloned());
        let mut origins = vec![
            format!("http://localhost:{port}"),
            format!("http://127.0.0.1:{port}"),
            format!("http://[::1]:{port}"),
            format!("http://{bound}"),
        ];
        origins.extend(
            options
                .allowed_origins
                .iter()
                .map(|o| o.trim_end_matches('/').to_string()),
        );
        Ok(AdminServer {
            listener,
            app: Arc::new(App {
                gateway,
                jobs,
                hosts,
                origins,
                logins: auth::Logins::default(),
                failures: auth::Failures::default(),
            }),
        })
    }

    pub fn local_addr(&self) -> anyhow::Result<SocketAddr> {
        Ok(self.listener.local_addr()?)
    }

    /// Serves until `stop` completes, within the same transport limits as
    /// the MCP listener (a connection cap, a header-read timeout, back-off
    /// on accept errors: `glovebox-listener`). Open pages' live-update
    /// streams are then cut after a moment.
    pub async fn run(
        self,
        stop: impl std::future::Future<Output = ()> + Send + 'static,
    ) -> anyhow::Result<()> {
        let service = hyper_util::service::TowerToHyperService::new(router(self.app));
        let (stopping, close) = (
            tokio_util::sync::CancellationToken::new(),
            tokio_util::sync::CancellationToken::new(),
        );
        let token = stopping.clone();
        tokio::spawn(async move {
            stop.await;
            token.cancel();
        });
        let limits = glovebox_listener::Limits {
            max_connections: MAX_CONNECTIONS,
            ..Default::default()
        };
        let connections =
            glovebox_listener::accept_until(&self.listener, limits, &stopping, &close, |peer| {
                let service = service.clone();
                hyper::service::service_fn(
                    move |mut req: hyper::Request<glovebox_listener::TimedBody>| {
                        // Who is asking: the failed-login bound keys on the
                        // address, and without principals only this server's
                        // own user is served (`auth.rs`).
                        req.extensions_mut().insert(auth::Peer(peer.addr.ip()));
                        req.extensions_mut().insert(peer.clone());
                        hyper::service::Service::call(&service, req)
                    },
                )
            })
            .await;
        close.cancel();
        connections.close();
        let _ = tokio::time::timeout(std::time::Duration::from_secs(2), connections.wait()).await;
        Ok(())
    }
}

fn router(app: Arc<App>) -> Router {
    api::routes(Router::new())
        .route("/api/v1", get(api::not_found).post(api::not_found))
        .route("/api/v1/{*rest}", get(api::not_found).post(api::not_found))
        .route(METRICS_PATH, get(pages::metrics))
        .route("/", get(pages::to_ui))
        .route(UI_PATH, get(sessions::sessions))
        .route("/ui/", get(sessions::sessions))
        .route("/ui/login", get(auth::login_page).post(auth::login))
        .route("/ui/logout", post(auth::logout))
        .route("/ui/static/style.css", get(pages::style))
        .route("/ui/static/app.js", get(pages::script))
        .route("/ui/static/icon.svg", get(pages::icon))
        .route("/ui/events", get(events::events))
        .route("/ui/sessions", get(sessions::sessions))
        .route("/ui/sessions/{id}", get(sessions::session))
        .route("/ui/approvals", get(inbox::approvals))
        .route("/ui/approvals/{id}/input", get(approval::input))
        .route("/ui/approvals/{id}/approve", post(inbox::approve))
        .route("/ui/approvals/{id}/deny", post(inbox::deny))
        .route("/ui/jobs", get(jobs::jobs))
        .route("/ui/jobs/{id}", get(jobs::job))
        .route("/ui/billing", get(billing::billing))
        .route("/ui/billing.csv", get(billing::billing_csv))
        .route("/ui/budget", get(budget::budget))
        .route("/ui/budget/lift", post(budget::lift))
        .route("/ui/budget/raise", post(budget::raise))
        .route("/ui/rescues", get(rescues::rescues))
        .route("/ui/rescues/{id}/assign", post(rescue_actions::assign))
        .route("/ui/rescues/{id}/diagnose", post(rescue_actions::diagnose))
        .route("/ui/rescues/{id}/inject", post(rescue_actions::inject))
        .route("/ui/rescues/{id}/resolve", post(rescue_actions::resolve))
        .route("/ui/memory", get(memory::memory))
        .route("/ui/doctor", get(doctor::doctor))
        .route("/ui/plugins/{plugin}/accept", post(plugin_actions::accept))
        .route("/ui/principals", get(principals::principals))
        .route("/ui/memory/{id}/approve", post(memory::approve))
        .route("/ui/memory/{id}/reject", post(memory::reject))
        .route("/ui/memory/{id}/retire", post(memory::retire))
        .route("/ui/notify", get(notify::notify))
        .route("/ui/workspaces", get(workspaces::workspaces))
        .route("/ui/workspaces/{session}/merge", post(workspaces::merge))
        .route(
            "/ui/workspaces/{session}/abandon",
            post(workspaces::abandon),
        )
        .route("/hooks/{name}", post(hooks::webhook))
        .fallback(pages::not_found)
        .layer(axum::middleware::from_fn_with_state(
            app.clone(),
            auth::guard,
        ))
        .with_state(app)
}

/// Runs blocking ledger work off the async threads, as the signed-in
/// operator (`glovebox::tasks::blocking` carries who acts).
pub(crate) async fn blocking<T: Send + 'static>(
    work: impl FnOnce() -> T + Send + 'static,
) -> anyhow::Result<T> {
    glovebox::tasks::blocking(
        move || Ok(work()),
        |why| anyhow::anyhow!("the dashboard's work: {why}"),
    )
    .await
}
