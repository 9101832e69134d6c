//! The host: plugins and hooks loaded from a config, admission control, and
//! the pipeline's execute stage (a call in fresh hands). The other stages are
//! in `pipeline/`; the host with its ledger is the [`crate::Gateway`].

use std::collections::{BTreeMap, HashMap};
use std::path::Path;
use std::sync::Arc;
use std::time::Instant;

use anyhow::{Context, Result};
use tokio::sync::Semaphore;

use crate::bindings::tool::glovebox::plugin::types::{CallContext as WitCallContext, ToolError};
use crate::call::{CallContext, CallReport, Hands, Metering};
use crate::error::CallError;
use crate::hooks::{HookChain, HookStatus};
use crate::manifest::HostConfig;
use crate::pipeline::Admitted;
use crate::plugin::{LoadedPlugin, ToolInfo, load_plugin};
use crate::runtime::Runtime;

/// A Glovebox host: one engine, the configured plugins and hooks, admission control.
pub struct Host {
    config: HostConfig,
    runtime: Arc<Runtime>,
    plugins: Vec<Arc<LoadedPlugin>>,
    hooks: Arc<HookChain>,
    /// `plugin.tool` → (plugin index, tool index).
    index: BTreeMap<String, (usize, usize)>,
    /// Each tool's estimated cost in micros, for the budget.
    tool_costs: Arc<HashMap<String, u64>>,
    calls: Arc<Semaphore>,
    /// Memory budget in MiB, reserved per call at its plugin's memory cap.
    memory: Arc<Semaphore>,
}

impl Host {
    /// Reads `glovebox.toml` at `path` and loads every plugin it lists.
    pub async fn from_config_file(path: &Path) -> Result<Host> {
        let config = HostConfig::load(path)?;
        Host::load(config).await
    }

    /// Loads every plugin of `config`. Any plugin that fails to load fails the
    /// whole host: an operator must not believe a tool is there when it is not.
    pub async fn load(config: HostConfig) -> Result<Host> {
        let runtime = Arc::new(Runtime::new(&config)?);
        let calls = Arc::new(Semaphore::new(config.runtime.max_concurrent_calls as usize));
        let budget_mib = usize::try_from(config.runtime.memory_budget / MIB).unwrap_or(usize::MAX);
        let memory = Arc::new(Semaphore::new(budget_mib.min(Semaphore::MAX_PERMITS)));
        Host::assemble(config, runtime, calls, memory).await
    }

    /// The same host with its config, plugins and hooks read again from its
    /// config file (`glovebox reload`). The engine and admission control are
    /// this host's, so calls admitted before and after share one pool and
    /// one compiled-code cache; what those depend on (`[runtime]`,
    /// `data_dir`, `[storage]`) cannot change without a restart, and a
    /// config that changes them is refused, as is one that does not load.
    pub async fn reloaded(&self) -> Result<Host> {
        let path = &self.config.path;
        let config = HostConfig::load(path)?;
        let fixed = [
            ("data_dir", config.data_dir != self.config.data_dir),
            ("[storage]", config.storage != self.config.storage),
            ("[runtime]", config.runtime != self.config.runtime),
        ];
        if let Some((what, _)) = fixed.iter().find(|(_, changed)| *changed) {
            anyhow::bail!(
                "`{}` changes {what}, which a running server cannot change: put it back to reload the rest, or restart the server (`glovebox serve`) to apply it",
                path.display()
            );
        }
        Host::assemble(
            config,
            self.runtime.clone(),
            self.calls.clone(),
            self.memory.clone(),
        )
        .await
    }

    /// A host from a loaded config on an engine and admission pool.
    async fn assemble(
        config: HostConfig,
        runtime: Arc<Runtime>,
        calls: Arc<Semaphore>,
        memory: Arc<Semaphore>,
    ) -> Result<Host> {
        let mut plugins = Vec::new();
        let mut index = BTreeMap::new();
        for manifest in config.plugins.clone() {
            let origin = manifest
                .path
                .as_ref()
                .map(|p| format!(" (manifest `{}`)", p.display()))
                .unwrap_or_default();
            let plugin = load_plugin(&runtime, &config, manifest)
                .await
                .with_context(|| {
                    format!(
                        "cannot load the plugins of `{}`{origin}",
                        config.path.display()
                    )
                })?;
            let p = plugins.len();
            for (t, tool) in plugin.tools.iter().enumerate() {
                index.insert(tool.name.clone(), (p, t));
            }
            plugins.push(Arc::new(plugin));
        }
        // Hooks never fail the load: a broken hook denies every call instead.
        let hooks = Arc::new(HookChain::load(runtime.engine(), &config.hooks).await);
        for hook in hooks.hooks() {
            if let HookStatus::Broken(reason) = &hook.status {
                tracing::error!(hook = %hook.name, %reason, "permission hook cannot be loaded: every call is denied");
            }
        }
        let tool_costs = plugins
            .iter()
            .flat_map(|p| &p.tools)
            .filter_map(|t| Some((t.name.clone(), crate::manifest::to_micros(t.cost?).ok()?)))
            .collect();
        Ok(Host {
            config,
            runtime,
            plugins,
            hooks,
            index,
            tool_costs: Arc::new(tool_costs),
            calls,
            memory,
        })
    }

    pub fn config(&self) -> &HostConfig {
        &self.config
    }

    /// Every tool the host offers, sorted by name.
    pub fn tools(&self) -> Vec<&ToolInfo> {
        self.index
            .values()
            .map(|&(p, t)| &self.plugins[p].tools[t])
            .collect()
    }

    pub fn plugins(&self) -> &[Arc<LoadedPlugin>] {
        &self.plugins
    }

    /// Finds a tool by `plugin.tool`, or by its bare name when only one plugin offers it.
    pub fn resolve(&self, name: &str) -> Result<&ToolInfo, CallError> {
        self.find(name).map(|(p, t)| &self.plugins[p].tools[t])
    }

    /// The plugin offering tool `name` and the tool's index in it.
    pub(crate) fn locate(&self, name: &str) -> Result<(Arc<LoadedPlugin>, usize), CallError> {
        self.find(name).map(|(p, t)| (self.plugins[p].clone(), t))
    }

    fn find(&self, name: &str) -> Result<(usize, usize), CallError> {
        if let Some(&found) = self.index.get(name) {
            return Ok(found);
        }
        let matches: Vec<(&String, &(usize, usize))> = self
            .index
            .iter()
            .filter(|(_, (p, t))| self.plugins[*p].tools[*t].tool == name)
            .collect();
        match matches.as_slice() {
            [(_, found)] => Ok(**found),
            [] => Err(CallError::UnknownTool {
                name: name.to_string(),
                known: self.index.keys().cloned().collect(),
            }),
            many => Err(CallError::AmbiguousTool {
                name: name.to_string(),
                candidates: many.iter().map(|(n, _)| (*n).clone()).collect(),
            }),
        }
    }

    /// The hook chain every call passes.
    /// The calls running now, foreground and background (admission
    /// control's slots in use; shared across reloads).
    /// The memory the calls running now reserve (each its plugin's whole
    /// cap, at admission), in bytes.
    pub fn memory_reserved(&self) -> u64 {
        let budget_mib = usize::try_from(self.config.runtime.memory_budget / MIB)
            .unwrap_or(usize::MAX)
            .min(Semaphore::MAX_PERMITS);
        (budget_mib.saturating_sub(self.memory.available_permits()) as u64).saturating_mul(MIB)
    }

    pub fn calls_in_flight(&self) -> usize {
        (self.config.runtime.max_concurrent_calls as usize)
            .saturating_sub(self.calls.available_permits())
    }

    pub fn hooks(&self) -> &HookChain {
        &self.hooks
    }

    /// The hook chain, shared (the `after` notifications outlive the call).
    pub(crate) fn hook_chain(&self) -> Arc<HookChain> {
        self.hooks.clone()
    }

    /// The estimated cost of each tool, in micros (tools without a cost left
    /// out): what the budget counts for calls in flight.
    pub(crate) fn tool_costs(&self) -> &Arc<HashMap<String, u64>> {
        &self.tool_costs
    }

    /// Runs an admitted call in fresh hands, past admission control: the
    /// pipeline's execute stage.
    pub(crate) async fn execute(&self, call: Admitted, ctx: CallContext) -> CallReport {
        let plugin = call.plugin().clone();
        let info = call.info();
        let name = info.name.clone();

        // Admission: a slot and the plugin's whole memory cap, up front, so
        // calls at their caps can never add up to more than the budget.
        let Ok(slot) = self.calls.clone().try_acquire_owned() else {
            return CallReport::refused(
                &name,
                CallError::Busy {
                    reason: format!(
                        "{} calls are already running (`runtime.max_concurrent_calls`)",
                        self.config.runtime.max_concurrent_calls
                    ),
                },
            );
        };
        let mib = u32::try_from(plugin.manifest.limits.memory.div_ceil(MIB)).unwrap_or(u32::MAX);
        let Ok(reserved) = self.memory.clone().try_acquire_many_owned(mib) else {
            return CallReport::refused(
                &name,
                CallError::Busy {
                    reason: format!(
                        "running calls already reserve the memory budget of {} MiB (`runtime.memory_budget`); this call needs {mib} MiB",
                        self.config.runtime.memory_budget / MIB
                    ),
                },
            );
        };

        let runtime = self.runtime.clone();
        let tool_name = info.tool.clone();
        let input = call.input().to_string();
        let task_name = name.clone();
        // A task of its own, so a panic in host glue ends this call only.
        // Aborted if this future is dropped (a cancelled job): its store goes.
        let task = crate::tasks::owned(async move {
            let report = run_call(&runtime, &plugin, &task_name, &tool_name, input, ctx).await;
            drop((slot, reserved));
            report
        });
        match task.join().await {
            Ok(report) => report,
            Err(why) => {
                let message = format!("the host's task serving the call ended: {why}");
                tracing::error!(tool = %name, %message, "call failed inside the host");
                CallReport::refused(
                    &name,
                    CallError::Internal {
                        tool: name.clone(),
                        message,
                    },
                )
            }
        }
    }
}

const MIB: u64 = 1024 * 1024;

#[tracing::instrument(skip_all, fields(tool = %name, call_id = %ctx.call_id))]
async fn run_call(
    runtime: &Runtime,
    plugin: &LoadedPlugin,
    name: &str,
    tool: &str,
    input: String,
    ctx: CallContext,
) -> CallReport {
    crate::fault_injection::maybe_panic(name);
    let limits = plugin.run_limits();
    let bytes_in = input.len() as u64;
    let start = Instant::now();
    // Kept until the call ends: a throwaway directory is removed on drop.
    let scratch = if plugin.grants.wants_scratch() {
        match runtime.scratch().for_call(ctx.session()) {
            Ok(s) => Some(s),
            Err(e) => {
                return CallReport::refused(
                    name,
                    CallError::Internal {
                        tool: name.to_string(),
                        message: format!(
                            "cannot prepare the scratch directory under `{}`: {e}",
                            runtime.scratch().root().display()
                        ),
                    },
                );
            }
        }
    } else {
        None
    };
    let scratch_path = scratch.as_ref().map(|s| s.path());
    let mut hands = match Hands::new(runtime, &plugin.grants, scratch_path, &limits) {
        Ok(h) => h,
        Err(e) => {
            return CallReport::refused(
                name,
                CallError::Internal {
                    tool: name.to_string(),
                    message: format!("cannot prepare the sandbox: {e:#}"),
                },
            );
        }
    };
    let wit_ctx = WitCallContext {
        session_id: ctx.session_id,
        session_name: ctx.session_name,
        role: ctx.role,
        call_id: ctx.call_id,
        job_id: ctx.job_id,
    };
    let ran = hands
        .run(&plugin.pre, limits.deadline, async |p, store| {
            p.glovebox_plugin_tool()
                .call_call(store, &wit_ctx, tool, &input)
                .await
        })
        .await;
    let wall = start.elapsed();
    let stderr = hands.stderr();
    let mut bytes_out = 0;
    let outcome = match ran {
        Err(ended) => Err(ended.into_call_error(name, &limits, &stderr)),
        Ok(Err(ToolError::InvalidInput(reason))) => Err(CallError::InvalidInput {
            tool: name.to_string(),
            reason,
        }),
        Ok(Err(ToolError::Failed(reason))) => Err(CallError::ToolFailed {
            tool: name.to_string(),
            reason,
        }),
        Ok(Ok(output)) => {
            let size = output.len() as u64;
            if size > plugin.manifest.limits.output {
                Err(CallError::OutputTooLarge {
                    tool: name.to_string(),
                    limit: plugin.manifest.limits.output,
                })
            } else {
                bytes_out = size;
                serde_json::from_str(&output).map_err(|e| CallError::ToolFailed {
                    tool: name.to_string(),
                    reason: format!("the tool returned invalid JSON: {e}"),
                })
            }
        }
    };
    let report = CallReport {
        tool: name.to_string(),
        metering: Metering {
            wall,
            fuel: hands.fuel_used(),
            peak_memory_bytes: hands.peak_memory(),
            bytes_in,
            bytes_out,
        },
        stdout: hands.stdout(),
        stderr,
        http_denials: hands.http_denials(),
        outcome,
    };
    // The store is dropped here, whatever happened: hands are never reused.
    drop(hands);
    match &report.outcome {
        Ok(_) => tracing::debug!(
            wall_ms = report.metering.wall.as_secs_f64() * 1e3,
            "call finished"
        ),
        Err(e) => tracing::info!(kind = e.kind(), error = %e, "call failed"),
    }
    report
}
