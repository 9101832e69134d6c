//! An admitted call: what the pipeline's first stage (`pipeline/admit.rs`)
//! makes of a request, and what every later stage, the hands
//! (`Host::execute`) and the jobs runner take. It sits
//! below both the pipeline and the host, which each name it.

use std::sync::Arc;

use crate::plugin::{LoadedPlugin, ToolInfo};

/// A call whose tool is known and whose input passed its checks.
#[derive(Clone)]
pub struct Admitted {
    plugin: Arc<LoadedPlugin>,
    tool: usize,
    input: String,
}

impl Admitted {
    /// Tool `tool` of `plugin`, with its input checked already (only
    /// `Host::admit` makes one).
    pub(crate) fn new(plugin: Arc<LoadedPlugin>, tool: usize, input: String) -> Admitted {
        Admitted {
            plugin,
            tool,
            input,
        }
    }

    /// The tool's full name, `plugin.tool`.
    pub fn name(&self) -> &str {
        &self.info().name
    }

    /// What the tool declares of itself (action, cost, destructive, idempotent).
    pub fn info(&self) -> &ToolInfo {
        &self.plugin.tools[self.tool]
    }

    /// The input as the guest will get it (JSON text).
    pub fn input(&self) -> &str {
        &self.input
    }

    /// The sha256 of the tool's component: an approval is for one build.
    pub fn component_digest(&self) -> &str {
        &self.plugin.digest
    }

    pub(crate) fn plugin(&self) -> &Arc<LoadedPlugin> {
        &self.plugin
    }

    /// May run while its write-ahead record is still being flushed: running it
    /// again after a crash is harmless (idempotent and not destructive).
    pub(crate) fn may_run_before_durable(&self) -> bool {
        let info = self.info();
        info.idempotent && !info.destructive
    }
}
