//! What every connection shares: the gateway, the jobs runner and the tool
//! list; and how a stopping server drains.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use rmcp::model::Tool;

use crate::tools;
use glovebox::Gateway;
use glovebox::jobs::{Jobs, JobsConfig};

/// What every connection shares: the gateway (the host and its ledger), the jobs runner
/// and the tool list (made again after a reload).
#[derive(Clone)]
pub struct McpServer {
    pub(crate) inner: Arc<Shared>,
}

pub(crate) struct Shared {
    pub(crate) gateway: Gateway,
    pub(crate) jobs: Arc<Jobs>,
    /// The tool list, and the host and its held tools it was made from.
    tools: std::sync::Mutex<(Arc<glovebox::Host>, Held, Arc<Vec<Tool>>)>,
    /// The host's own work while it serves (`glovebox::background`),
    /// stopped with the server.
    _background: Option<glovebox::background::Background>,
}

impl McpServer {
    /// Loads the host from `config`, opens its durable store and starts the
    /// host's own work while it serves (`glovebox::background`: the jobs
    /// runner, re-queueing the jobs a previous run left, the sweeps,
    /// notifications, schedules and triggers).
    pub async fn open(config: &Path) -> anyhow::Result<McpServer> {
        let gateway = Gateway::open(config).await?;
        let background =
            glovebox::background::Background::start(&gateway, JobsConfig::default()).await?;
        let jobs = background.jobs().clone();
        Ok(McpServer::build(gateway, jobs, Some(background)))
    }

    pub fn new(gateway: Gateway, jobs: Arc<Jobs>) -> McpServer {
        McpServer::build(gateway, jobs, None)
    }

    fn build(
        gateway: Gateway,
        jobs: Arc<Jobs>,
        background: Option<glovebox::background::Background>,
    ) -> McpServer {
        let host = gateway.host();
        let tools = tool_list(&host);
        let held = host.held();
        McpServer {
            inner: Arc::new(Shared {
                gateway,
                jobs,
                tools: std::sync::Mutex::new((host, held, tools)),
                _background: background,
            }),
        }
    }

    pub fn gateway(&self) -> &Gateway {
        &self.inner.gateway
    }

    pub fn jobs(&self) -> &Arc<Jobs> {
        &self.inner.jobs
    }

    /// For a server that stops: the requests, calls and jobs in flight get
    /// until `grace` to finish (a request waiting for an operator's approval
    /// is answered "awaiting approval" at once); queued jobs stay queued for
    /// the next start; jobs still running then are stopped and recorded as
    /// interrupted (or re-queued, if idempotent; see [`Jobs::shutdown`]).
    pub async fn drain(&self, grace: Duration) {
        let gateway = self.gateway();
        let (idle, stopped) = tokio::join!(gateway.wait_idle(grace), self.jobs().shutdown(grace));
        if !stopped.is_empty() {
            tracing::warn!(
                jobs = stopped.len(),
                "stopping: jobs still running after the grace period were stopped and recorded as interrupted"
            );
        }
        if !idle {
            tracing::warn!(
                calls = gateway.host().calls_in_flight(),
                "stopping: calls still running after {}s are cut off (they are marked interrupted at the next start)",
                grace.as_secs()
            );
        }
    }
}

/// The tools a host holds for their text, as [`glovebox::Host::held`] gives them.
type Held = Arc<std::collections::BTreeMap<String, glovebox::tool_text::Hold>>;

/// The tools a host offers over MCP: its plugins' tools, then the built-ins.
fn tool_list(host: &glovebox::Host) -> Arc<Vec<Tool>> {
    let mut tools: Vec<Tool> = host.tools().into_iter().map(tools::plugin_tool).collect();
    tools.extend(tools::builtin_tools());
    Arc::new(tools)
}

impl Shared {
    /// The tool list of the host served now (made again after a reload, or
    /// once an operator accepted a held tool's text).
    pub(crate) fn tools(&self) -> Arc<Vec<Tool>> {
        let host = self.gateway.host();
        let held = host.held();
        let mut cached = self
            .tools
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if !Arc::ptr_eq(&cached.0, &host) || !Arc::ptr_eq(&cached.1, &held) {
            *cached = (host.clone(), held, tool_list(&host));
        }
        cached.2.clone()
    }
}
