//! The host: plugins and hooks loaded from a config, admission control, and
//! the pipeline's execute stage (a call in fresh hands). The other stages are
//! in `pipeline/`; the host with its ledger is the [`crate::Gateway`].
//! Admission control is `host/admissions.rs`; the admission of hook runs and
//! the hook chain's judgement of a call, `host/hook_gate.rs`.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context, Result};

use crate::admission::{Key, Refused, Short, WaitObserver};

use crate::admitted::Admitted;
use crate::bindings::tool::glovebox::plugin::types::{CallContext as WitCallContext, ToolError};
use crate::call::{CallContext, CallReport, Hands, Metering, RunLimits};
use crate::error::CallError;
use crate::hooks::{HookChain, HookStatus};
use crate::manifest::{Captured, HostConfig};
use crate::plugin::{LoadedPlugin, ToolInfo, load_plugin};
use crate::runtime::Runtime;

/// What a run calls other tools through (`sandbox::tools`; made per run by
/// `nested.rs`).
pub(crate) type ToolCallsHandle = Arc<dyn glovebox_runtime::sandbox::tools::ToolCalls>;

mod admissions;
mod hook_gate;
mod workspace_dirs;

use admissions::{Admissions, MIB};

/// Whether a host loads its config's plugins (see [`Host::without_tools`]).
#[derive(Clone, Copy, PartialEq, Eq)]
enum Tools {
    Loaded,
    Left,
}

/// A Glovebox host: one engine, the configured plugins and hooks, admission control.
pub struct Host {
    config: HostConfig,
    runtime: Arc<Runtime>,
    plugins: Vec<Arc<LoadedPlugin>>,
    hooks: Arc<HookChain>,
    /// `plugin.tool` → (plugin index, tool index).
    index: BTreeMap<String, (usize, usize)>,
    /// Admission control, shared across reloads.
    admission: Admissions,
    /// The tools held until an operator accepts their text (`tool_text`):
    /// set by the gateway, which has the store.
    held: std::sync::RwLock<Arc<BTreeMap<String, crate::tool_text::Hold>>>,
}

impl Host {
    /// Reads `glovebox.toml` at `path` and loads every plugin it lists.
    pub async fn from_config_file(path: &Path) -> Result<Host> {
        let config = crate::load_config(path).await?;
        Host::load(config).await
    }

    /// Loads every plugin of `config`. Any plugin that fails to load fails the
    /// whole host: an operator must not believe a tool is there when it is not.
    pub async fn load(config: HostConfig) -> Result<Host> {
        let runtime = Arc::new(Runtime::new(&config)?);
        let admission = Admissions::new(&config);
        Host::assemble(config, runtime, admission, Tools::Loaded).await
    }

    /// `config`'s host without its plugins: for work on the data dir that
    /// runs no tool (an operator's rescue commands at the command line), so
    /// a plugin that cannot load does not stop it. Every tool is unknown to
    /// it, so a call through it is refused before anything runs; its hooks
    /// are loaded as ever (a broken one denies).
    pub async fn without_tools(config: HostConfig) -> Result<Host> {
        let runtime = Arc::new(Runtime::new(&config)?);
        let admission = Admissions::new(&config);
        Host::assemble(config, runtime, admission, Tools::Left).await
    }

    /// The same host with its config, plugins and hooks read again from its
    /// config file (`glovebox reload`). The engine and admission control are
    /// this host's, so calls admitted before and after share one pool and
    /// one compiled-code cache; what those depend on (`[runtime]`,
    /// `data_dir`, `[storage]`) cannot change without a restart, and a
    /// config that changes them is refused, as is one that does not load.
    pub async fn reloaded(&self) -> Result<Host> {
        let path = &self.config.path;
        let config = crate::load_config(path).await?;
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
            self.admission.clone(),
            Tools::Loaded,
        )
        .await
    }

    /// A host from a loaded config on an engine and admission pool.
    async fn assemble(
        config: HostConfig,
        runtime: Arc<Runtime>,
        admission: Admissions,
        tools: Tools,
    ) -> Result<Host> {
        let mut plugins = Vec::new();
        let mut index = BTreeMap::new();
        let manifests = match tools {
            Tools::Loaded => config.plugins.clone(),
            Tools::Left => Vec::new(),
        };
        for manifest in manifests {
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
        if tools == Tools::Loaded {
            crate::tool_names::check(&config, &plugins, &index)?;
        }
        // Hooks never fail the load: a broken hook denies every call instead.
        let hooks =
            Arc::new(HookChain::load(runtime.engine(), runtime.compiled(), &config.hooks).await);
        for hook in hooks.hooks() {
            if let HookStatus::Broken(reason) = &hook.status {
                tracing::error!(hook = %hook.name, %reason, "permission hook cannot be loaded: every call is denied");
            }
        }
        Ok(Host {
            config,
            runtime,
            plugins,
            hooks,
            index,
            admission,
            held: Default::default(),
        })
    }

    /// The tools held until an operator accepts their text, with why.
    pub fn held(&self) -> Arc<BTreeMap<String, crate::tool_text::Hold>> {
        self.held
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone()
    }

    /// Holds these tools (and no others) from now on.
    pub(crate) fn set_held(&self, held: BTreeMap<String, crate::tool_text::Hold>) {
        *self
            .held
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = Arc::new(held);
    }

    pub fn config(&self) -> &HostConfig {
        &self.config
    }

    /// Every tool the host offers, sorted by name.
    /// The tools offered to callers: every configured tool but those held
    /// until an operator accepts their text ([`Host::held`]).
    pub fn tools(&self) -> Vec<&ToolInfo> {
        let held = self.held();
        self.index
            .iter()
            .filter(|(name, _)| !held.contains_key(*name))
            .map(|(_, &(p, t))| &self.plugins[p].tools[t])
            .collect()
    }

    /// Every configured tool, held ones too.
    pub fn all_tools(&self) -> Vec<&ToolInfo> {
        self.index
            .values()
            .map(|&(p, t)| &self.plugins[p].tools[t])
            .collect()
    }

    pub fn plugins(&self) -> &[Arc<LoadedPlugin>] {
        &self.plugins
    }

    /// The loaded plugin called `name` (its manifest's `name`).
    pub fn plugin_named(&self, name: &str) -> Option<&Arc<LoadedPlugin>> {
        self.plugins.iter().find(|p| p.manifest.name == name)
    }

    /// Finds a tool by `plugin.tool`, or by its bare name when only one plugin offers it.
    pub fn resolve(&self, name: &str) -> Result<&ToolInfo, CallError> {
        self.find(name).map(|(p, t)| &self.plugins[p].tools[t])
    }

    /// The plugin offering tool `name` and the tool's index in it.
    pub(crate) fn locate(&self, name: &str) -> Result<(Arc<LoadedPlugin>, usize), CallError> {
        let (p, t) = self.find(name)?;
        let tool = &self.plugins[p].tools[t].name;
        if let Some(hold) = self.held().get(tool) {
            return Err(CallError::Denied {
                tool: tool.clone(),
                hook: "tool-text".into(),
                pattern: tool.clone(),
                reason: hold.reason(tool),
                alternatives: vec![format!(
                    "ask an operator to review and accept the change: `glovebox plugin accept {}`",
                    self.plugins[p].manifest.name
                )],
            });
        }
        Ok((self.plugins[p].clone(), t))
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

    /// The memory the calls running now reserve (each its plugin's whole
    /// cap, at admission), in bytes.
    pub fn memory_reserved(&self) -> u64 {
        self.admission.calls.units_in_use().saturating_mul(MIB)
    }

    /// The calls running now, foreground and background (admission
    /// control's slots in use; shared across reloads).
    pub fn calls_in_flight(&self) -> usize {
        self.admission.calls.in_use()
    }

    /// The calls, and the hook runs, waiting for a slot now.
    pub fn admission_waiting(&self) -> (usize, usize) {
        (
            self.admission.calls.waiting(),
            self.admission.hooks.waiting(),
        )
    }

    /// Reports each admission's wait to `observe` (the first observer set
    /// stays: the admission is shared across reloads).
    pub(crate) fn observe_admission_waits(&self, observe: WaitObserver) {
        let _ = self.admission.waits.set(observe);
    }

    /// Runs an admitted call in fresh hands, past admission control: the
    /// pipeline's execute stage (of a call outside any session: its run
    /// may call no tools).
    pub(crate) async fn execute(&self, call: Admitted, ctx: CallContext) -> CallReport {
        self.execute_calling(call, ctx, None).await
    }

    /// [`Host::execute`], the run calling tools through `calls` when it
    /// has them (`nested.rs`).
    pub(crate) async fn execute_calling(
        &self,
        call: Admitted,
        ctx: CallContext,
        calls: Option<ToolCallsHandle>,
    ) -> CallReport {
        let plugin = call.plugin().clone();
        let info = call.info();
        let name = info.name.clone();
        // Who calls, as the plugin's grants read it (`{project}`, `only`):
        // decided here, in the caller's task, where its principal is known.
        let caller = crate::manifest::GrantCaller {
            principal: crate::session::actor::current().to_string(),
            role: ctx.role.clone(),
            project: ctx.project.clone(),
            session: ctx.session().map(str::to_string),
        };
        // The session's worktrees of the workspaces the plugin's grants
        // name, made on first use, decided before the sandbox opens them.
        let workspace_dirs = match self.workspace_dirs(&plugin, &name, &caller).await {
            Ok(dirs) => dirs,
            Err(error) => return CallReport::refused(&name, error),
        };

        // Admission: a slot and the plugin's whole memory cap, up front, so
        // calls at their caps can never add up to more than the budget. A
        // call that finds no room waits its turn (fair between principals
        // and their sessions), up to `runtime.admission_wait` and never past
        // its own deadline.
        let mib = plugin.manifest.limits.memory.div_ceil(MIB);
        let wait = self
            .config
            .runtime
            .admission_wait
            .min(plugin.manifest.limits.deadline);
        let run_times = self.admission.run_times.clone();
        let slow = run_times.is_slow(&name, self.config.runtime.slow_call);
        let key = Key::new(crate::session::actor::current(), ctx.session_id.as_str()).slow(slow);
        let start = Instant::now();
        let principal_queue =
            usize::try_from(self.config.quotas.queued_calls_per_principal).unwrap_or(usize::MAX);
        let admitted = self
            .admission
            .calls
            .acquire_within(key, mib, wait, principal_queue)
            .await;
        self.admission.observe("calls", start.elapsed());
        let slot = match admitted {
            Ok(slot) => slot,
            Err(refused) => {
                return CallReport::refused(
                    &name,
                    CallError::Busy {
                        reason: self.refusal(refused, mib, wait),
                    },
                );
            }
        };

        let runtime = self.runtime.clone();
        let tool_name = info.tool.clone();
        let input = call.input().to_string();
        let task_name = name.clone();
        // Contained, so a panic in host glue ends this call only, and
        // dropped with this future (a cancelled job): its store goes. A
        // quick call runs in the caller's task, sparing two thread hand-offs;
        // a slow call's guest runs on threads of its own (see `SlowLane`).
        let run = async move {
            let started = Instant::now();
            let call = RunCall {
                name: &task_name,
                tool: &tool_name,
                workspace_dirs,
                caller,
            };
            let report = run_call(&runtime, &plugin, call, input, ctx, calls).await;
            drop(slot);
            run_times.record(&task_name, started.elapsed());
            report
        };
        let ended = if slow {
            self.admission.slow_lane.owned(run).join().await
        } else {
            crate::tasks::contained(Box::pin(run)).await
        };
        match ended {
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

impl Host {
    /// Why admission refused a call needing `mib` MiB after waiting up to
    /// `wait`: what was full and the keys that size it.
    fn refusal(&self, refused: Refused, mib: u64, wait: Duration) -> String {
        let runtime = &self.config.runtime;
        let budget = runtime.memory_budget / MIB;
        let short = |short: Short| match short {
            Short::Slots => format!(
                "{} calls are already running (`runtime.max_concurrent_calls`)",
                runtime.max_concurrent_calls
            ),
            Short::Units => format!(
                "running calls already reserve the memory budget of {budget} MiB (`runtime.memory_budget`); this call needs {mib} MiB"
            ),
            Short::Share => format!(
                "its principal already holds its share of the {} call slots (`runtime.principal_share` = {}) while other principals wait",
                runtime.max_concurrent_calls, runtime.principal_share
            ),
            Short::Slow => format!(
                "its tool's calls have been taking {:?} or more (`runtime.slow_call`; or it was not called yet), and slow calls already hold their share of the {} call slots (`runtime.slow_share` = {}; the rest are kept for quicker calls)",
                runtime.slow_call, runtime.max_concurrent_calls, runtime.slow_share
            ),
        };
        match refused {
            Refused::TooBig => format!(
                "this call needs {mib} MiB, more than the whole memory budget of {budget} MiB (`runtime.memory_budget`): raise the budget, or lower the plugin's `memory` limit"
            ),
            Refused::Full(what) => format!(
                "{}, and calls do not wait for room (`runtime.admission_wait` is 0s)",
                short(what)
            ),
            Refused::QueueFull(what) => format!(
                "{}, and {} more calls already wait for room (`runtime.admission_queue`)",
                short(what),
                runtime.admission_queue
            ),
            Refused::PrincipalQueueFull(what) => format!(
                "{}, and {} calls of its principal already wait for room ({}): wait for them to finish before sending more",
                short(what),
                self.config.quotas.queued_calls_per_principal,
                self.config.quotas.limit("queued_calls_per_principal")
            ),
            Refused::TimedOut(what) => format!(
                "{}, and this call waited {wait:?} for room (`runtime.admission_wait`, or the tool's deadline when shorter)",
                short(what)
            ),
        }
    }
}

/// What one call runs: the tool's full and own names, the directories
/// decided for this call besides the plugin's grants (its session's
/// worktrees), and who calls (what the grants that depend on it read).
struct RunCall<'a> {
    name: &'a str,
    tool: &'a str,
    workspace_dirs: Vec<crate::manifest::FsGrant>,
    caller: crate::manifest::GrantCaller,
}

#[tracing::instrument(skip_all, fields(tool = %call.name, call_id = %ctx.call_id))]
async fn run_call(
    runtime: &Runtime,
    plugin: &LoadedPlugin,
    call: RunCall<'_>,
    input: String,
    ctx: CallContext,
    calls: Option<ToolCallsHandle>,
) -> CallReport {
    let RunCall {
        name,
        tool,
        workspace_dirs,
        caller,
    } = call;
    crate::fault_injection::maybe_panic(name);
    let mut limits = plugin.run_limits();
    // Only a session's call has somewhere to keep a large result whole.
    let keep = ctx.session().map(|session| crate::stored::Keep {
        scratch: runtime.scratch(),
        session: session.to_string(),
        call_id: ctx.call_id.clone(),
    });
    if keep.is_none() {
        limits.stored_output = 0;
    }
    let bytes_in = input.len() as u64;
    let start = Instant::now();
    // Kept until the call ends: a throwaway directory is removed on drop.
    let grants = match plugin.grants.with_dirs(workspace_dirs).for_caller(caller) {
        Ok(grants) => grants,
        Err(reason) => {
            return CallReport::refused(
                name,
                CallError::NotOffered {
                    tool: name.to_string(),
                    reason,
                },
            );
        }
    };
    let (_scratch, mut hands) = match hands_for(runtime, &grants, ctx.session(), &limits) {
        Ok(prepared) => prepared,
        Err(message) => {
            return CallReport::refused(
                name,
                CallError::Internal {
                    tool: name.to_string(),
                    message,
                },
            );
        }
    };
    hands.allow_tool_calls(&plugin.manifest.name, calls, limits.nested_calls);
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
    // No secret's value leaves in what the call reports (threat 60).
    let egress = plugin.grants.egress();
    let masked = |mut captured: Captured| {
        if !egress.is_empty() {
            captured.text = egress.mask(&captured.text).into_owned();
        }
        captured
    };
    let stderr = masked(hands.stderr());
    let ran = match egress.is_empty() {
        true => ran,
        false => ran.map(|returned| masked_answer(egress, returned)),
    };
    let (outcome, bytes_out) = match ran {
        Err(ended) => (Err(ended.into_call_error(name, &limits, &stderr)), 0),
        Ok(returned) => tool_answer(name, &limits, returned, keep).await,
    };
    // A write past the budget failed as "no space" in the guest, which may
    // have carried on, or failed in its own words: the call is a quota error.
    let outcome = match hands.quota_hit() {
        Some(hit) => Err(CallError::quota(name, &hit)),
        None => outcome,
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
        stdout: masked(hands.stdout()),
        stderr,
        http_denials: hands.http_denials(),
        verification: Vec::new(),
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

/// Fresh hands for one call with `grants`, and the scratch directory they
/// mount if the plugin wants one (kept by the caller until the call ends);
/// what failed, worded, when either cannot be made.
fn hands_for(
    runtime: &Runtime,
    grants: &glovebox_runtime::sandbox::Grants,
    session: Option<&str>,
    limits: &RunLimits,
) -> Result<(Option<crate::scratch::CallScratch>, Hands), String> {
    let scratch = match grants.wants_scratch() {
        true => Some(
            runtime
                .scratch()
                .for_call(session, limits.write)
                .map_err(|e| {
                    format!(
                        "cannot prepare the scratch directory under `{}`: {e}",
                        runtime.scratch().root().display()
                    )
                })?,
        ),
        false => None,
    };
    let hands = Hands::new(runtime, grants, scratch.as_ref(), limits)
        .map_err(|e| format!("cannot prepare the sandbox: {e:#}"))?;
    Ok((scratch, hands))
}

/// A tool's own answer with every secret value the host injected for it
/// masked (threat 60).
fn masked_answer(
    egress: &glovebox_runtime::sandbox::egress::Egress,
    returned: Result<String, ToolError>,
) -> Result<String, ToolError> {
    match returned {
        Ok(output) => Ok(egress.mask(&output).into_owned()),
        Err(ToolError::InvalidInput(why)) => {
            Err(ToolError::InvalidInput(egress.mask(&why).into_owned()))
        }
        Err(ToolError::Failed(why)) => Err(ToolError::Failed(egress.mask(&why).into_owned())),
    }
}

/// What tool `name`'s own answer makes of its call: its output read as
/// JSON (with its size in bytes), or the error the tool returned. An
/// output past `limits.output` is kept whole where the call can keep it
/// (`keep`, up to `limits.stored_output`), and refused otherwise.
async fn tool_answer(
    name: &str,
    limits: &RunLimits,
    returned: Result<String, ToolError>,
    keep: Option<crate::stored::Keep<'_>>,
) -> (Result<serde_json::Value, CallError>, u64) {
    match returned {
        Err(ToolError::InvalidInput(reason)) => (
            Err(CallError::InvalidInput {
                tool: name.to_string(),
                reason,
            }),
            0,
        ),
        Err(ToolError::Failed(reason)) => (
            Err(CallError::ToolFailed {
                tool: name.to_string(),
                reason,
            }),
            0,
        ),
        Ok(output) => {
            let size = output.len() as u64;
            if size > limits.output {
                match keep {
                    Some(keep) if size <= limits.stored_output => {
                        crate::stored::keep(name, output, limits, keep).await
                    }
                    _ => (
                        Err(CallError::OutputTooLarge {
                            tool: name.to_string(),
                            limit: limits.output.max(limits.stored_output),
                        }),
                        0,
                    ),
                }
            } else {
                (
                    serde_json::from_str(&output).map_err(|e| CallError::ToolFailed {
                        tool: name.to_string(),
                        reason: format!("the tool returned invalid JSON: {e}"),
                    }),
                    size,
                )
            }
        }
    }
}
