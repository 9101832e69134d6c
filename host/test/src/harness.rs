//! [`Harness`]: one plugin under test, in a host of its own.
//!
//! The builder methods only record what the test wants; the first call
//! writes the config files (`config.rs`), opens the host on them
//! (`Gateway::open`, as `glovebox call` does), starts the session when one
//! was asked for, and keeps all of it for the harness's later calls. The
//! data dir is a temporary directory the harness owns and removes when it
//! is dropped.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use anyhow::{Context, Result, anyhow};
use glovebox::hooks::HookRequest;
use glovebox::manifest::Access;
use glovebox::session::{Role, StartSession};
use glovebox::{CallContext, CallError, CallReport, Gateway, Principal};
use serde_json::Value;

use crate::config::{self, Grant, Hook, Plugin, Setup};
use crate::decision::{Decision, HookCall};
use crate::limits::CallLimits;

/// One tool or hook component under test, run by the real host.
///
/// Build it with [`Harness::new`] (a bare component) or
/// [`Harness::from_manifest`] (an operator's manifest), say what the
/// operator grants, then [`call`](Harness::call) its tools or, for a hook,
/// ask it for a decision with [`hook_request`](Harness::hook_request).
pub struct Harness {
    setup: Setup,
    role: Option<Role>,
    loaded: Mutex<Option<Arc<Loaded>>>,
}

/// The host a harness opened, and what it started.
struct Loaded {
    /// Dropped inside the runtime (see `Drop`).
    gateway: Option<Gateway>,
    /// The session calls are made in, when the harness has a role.
    session: Option<String>,
    /// The role hook requests are made with by default.
    role: Role,
    /// Whether the component under test is a permission hook.
    is_hook: bool,
    operator: Principal,
    runtime: Option<tokio::runtime::Runtime>,
    /// The config files and the data dir; removed last.
    _dir: tempfile::TempDir,
}

impl Drop for Loaded {
    fn drop(&mut self) {
        if let Some(runtime) = self.runtime.take() {
            // The gateway's tasks belong to this runtime: let go of them in it.
            let guard = runtime.enter();
            drop(self.gateway.take());
            drop(guard);
            runtime.shutdown_background();
        }
    }
}

impl Harness {
    /// A harness for a bare component (`.wasm`): a tool plugin, named after
    /// its file stem as `glovebox plugin check` names it (`tool_files.wasm`
    /// → tools `tool-files.<tool>`), with no grants until they are given;
    /// or a permission hook, which [`hook_request`](Harness::hook_request)
    /// then asks. A relative path is taken from the current directory.
    pub fn new(component: impl AsRef<Path>) -> Harness {
        Harness::with(Plugin::Component(component.as_ref().to_path_buf()))
    }

    /// A harness for an operator's plugin manifest (`.toml`), used as
    /// written: its grants, `env` and `[limits]` are the manifest's own, so
    /// [`grant_dir`](Harness::grant_dir), [`env`](Harness::env) and
    /// [`limits`](Harness::limits) are refused on it (edit the manifest).
    pub fn from_manifest(manifest: impl AsRef<Path>) -> Harness {
        Harness::with(Plugin::Manifest(manifest.as_ref().to_path_buf()))
    }

    /// A harness for `path`: a manifest when it ends in `.toml`, else a
    /// component (what `glovebox plugin check` and `plugin test` take).
    pub fn for_path(path: impl AsRef<Path>) -> Harness {
        let path = path.as_ref();
        if path.extension().is_some_and(|e| e == "toml") {
            Harness::from_manifest(path)
        } else {
            Harness::new(path)
        }
    }

    fn with(plugin: Plugin) -> Harness {
        Harness {
            setup: Setup {
                plugin,
                grants: Vec::new(),
                env: Vec::new(),
                limits: CallLimits::default(),
                hooks: Vec::new(),
                settings: serde_json::json!({}),
                cache_dir: default_cache_dir(),
            },
            role: None,
            loaded: Mutex::new(None),
        }
    }

    /// Grants the host directory `host` (it must exist) to the plugin at
    /// the guest path `guest` (absolute, not `/`): a `[[fs]]` grant of the
    /// manifest, read-only or read-write.
    pub fn grant_dir(
        mut self,
        host: impl AsRef<Path>,
        guest: impl Into<String>,
        access: Access,
    ) -> Harness {
        self.setup.grants.push(Grant {
            host: host.as_ref().to_path_buf(),
            guest: guest.into(),
            access,
        });
        self
    }

    /// Lets the plugin read the environment variable `name` (the
    /// manifest's `env`). As in the host, its value is read from this
    /// process's environment at each call, and a variable that is not set
    /// is not passed: set it in the test's environment (`K=v cargo test`,
    /// or `[env]` in `.cargo/config.toml`).
    pub fn env(mut self, name: impl Into<String>) -> Harness {
        self.setup.env.push(name.into());
        self
    }

    /// The plugin's `[limits]`: the deadline, memory, fuel, output, write
    /// and stdio caps of each call; those left unset are the host's defaults.
    pub fn limits(mut self, limits: CallLimits) -> Harness {
        self.setup.limits = limits;
        self
    }

    /// Makes every call in a session of this role (started at the first
    /// call, in the harness's own data dir and logged there), so hooks that
    /// judge by role see it. Without it, calls are standalone, as
    /// `glovebox call` without `--session` makes them (role `operator`).
    pub fn session(mut self, role: Role) -> Harness {
        self.role = Some(role);
        self
    }

    /// Puts the permission hook `component` in front of the plugin's calls
    /// with empty settings (a `[[hook]]`; hooks judge in the order added).
    pub fn hook(self, component: impl AsRef<Path>) -> Harness {
        self.hook_with(component, serde_json::json!({}))
    }

    /// [`hook`](Harness::hook) with the hook's settings (`[hook.settings]`,
    /// a JSON object).
    pub fn hook_with(mut self, component: impl AsRef<Path>, settings: Value) -> Harness {
        self.setup.hooks.push(Hook {
            component: component.as_ref().to_path_buf(),
            settings,
        });
        self
    }

    /// The settings of the component under test when it is a permission
    /// hook (its `[hook.settings]`, a JSON object; default `{}`).
    pub fn settings(mut self, settings: Value) -> Harness {
        self.setup.settings = settings;
        self
    }

    /// Keeps compiled components in `dir` (its `cache` and `digests`)
    /// instead of the user's cache (`$XDG_CACHE_HOME/glovebox`, else
    /// `~/.cache/glovebox`, which `glovebox plugin check` uses too).
    pub fn cache_dir(mut self, dir: impl AsRef<Path>) -> Harness {
        self.setup.cache_dir = Some(dir.as_ref().to_path_buf());
        self
    }

    /// Calls `tool` (`plugin.tool`, or the tool's name alone) with `input`
    /// and returns its JSON result or the typed error of the call.
    ///
    /// Panics when the harness cannot start (the component does not load, a
    /// grant is refused) or the session refuses the call: a test set up
    /// wrong, with the reason. [`report`](Harness::report) returns those.
    pub fn call(&self, tool: &str, input: Value) -> Result<Value, CallError> {
        match self.report(tool, &input) {
            Ok(report) => report.outcome,
            Err(e) => panic!("the harness cannot call `{tool}`: {e:#}"),
        }
    }

    /// The whole report of a call of `tool` with `input`: the outcome, the
    /// metering, the captured stdout and stderr; `Err` when the harness
    /// cannot start or the session refuses the call.
    pub fn report(&self, tool: &str, input: &Value) -> Result<CallReport> {
        let loaded = self.loaded()?;
        if loaded.is_hook {
            return Err(anyhow!(
                "the component under test is a permission hook, which has no tools to call: ask it with `hook_request`"
            ));
        }
        let gateway = loaded.gateway.as_ref().expect("held until dropped");
        let runtime = loaded.runtime.as_ref().expect("held until dropped");
        let input = input.to_string();
        let work = async {
            match &loaded.session {
                None => Ok(gateway
                    .host()
                    .call(tool, &input, CallContext::standalone())
                    .await),
                Some(session) => gateway
                    .scope(&loaded.operator)
                    .call_in_session(session, tool, &input)
                    .await
                    .map_err(|e| anyhow!("the session refused the call: {e}")),
            }
        };
        runtime.block_on(glovebox::tasks::acting(loaded.operator.name.clone(), work))
    }

    /// Asks the harness's hooks (the component under test when it is a
    /// hook, and those added with [`hook`](Harness::hook)) for their
    /// decision on `call`, as the host would before running it; nothing
    /// runs. Its role is the harness's session role unless `call` names one.
    ///
    /// Panics when the harness cannot start.
    pub fn hook_request(&self, call: HookCall) -> Decision {
        let loaded = match self.loaded() {
            Ok(loaded) => loaded,
            Err(e) => panic!("the harness cannot ask its hooks: {e:#}"),
        };
        let gateway = loaded.gateway.as_ref().expect("held until dropped");
        let runtime = loaded.runtime.as_ref().expect("held until dropped");
        let request: HookRequest = call.into_request(
            loaded.role,
            loaded.session.as_deref().unwrap_or("s-plugin-test"),
        );
        let host = gateway.host();
        let outcome = runtime.block_on(host.hooks().evaluate(&request));
        Decision::from_outcome(outcome)
    }

    /// Whether the host is open (a call was made, or tried and it opened).
    pub(crate) fn started(&self) -> bool {
        self.loaded
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .is_some()
    }

    /// The host, opened once.
    fn loaded(&self) -> Result<Arc<Loaded>> {
        let mut slot = self.loaded.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(loaded) = slot.as_ref() {
            return Ok(loaded.clone());
        }
        let loaded = Arc::new(self.open()?);
        *slot = Some(loaded.clone());
        Ok(loaded)
    }

    fn open(&self) -> Result<Loaded> {
        if matches!(self.setup.plugin, Plugin::Manifest(_)) && self.setup.changes_manifest() {
            return Err(anyhow!(
                "a harness from a manifest takes the manifest's own grants, env and limits: write them in the manifest, or start from the component with `Harness::new`"
            ));
        }
        let dir = tempfile::Builder::new()
            .prefix("glovebox-test-")
            .tempdir()
            .context("cannot make the harness's data dir")?;
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .context("cannot start the harness's async runtime")?;
        let operator = glovebox::cli_operator();
        let (gateway, is_hook) = runtime.block_on(async {
            let path = config::write(dir.path(), &self.setup, false)?;
            match Gateway::open(&path).await {
                Ok(gateway) => Ok((gateway, false)),
                // One loader for both kinds, as `plugin check` does: a
                // component of the hook world is loaded as a hook.
                Err(e) if is_hook(&e) && matches!(self.setup.plugin, Plugin::Component(_)) => {
                    let path = config::write(dir.path(), &self.setup, true)?;
                    Ok((Gateway::open(&path).await?, true))
                }
                Err(e) => Err(e),
            }
        })?;
        if is_hook {
            let host = gateway.host();
            for hook in host.hooks().hooks() {
                if let glovebox::hooks::HookStatus::Broken(reason) = &hook.status {
                    return Err(anyhow!("hook `{}` cannot be loaded: {reason}", hook.name));
                }
            }
        }
        let session = match self.role {
            None => None,
            Some(role) => {
                let start = StartSession {
                    role,
                    project: "plugin-test".into(),
                    name: None,
                    tags: Vec::new(),
                    expected_duration: None,
                    budget: Default::default(),
                    completion: Default::default(),
                };
                let started = runtime
                    .block_on(gateway.scope(&operator).start_session(start))
                    .context("cannot start the harness's session")?;
                Some(started.header.id)
            }
        };
        Ok(Loaded {
            gateway: Some(gateway),
            session,
            role: self.role.unwrap_or(Role::Workagent),
            is_hook,
            operator,
            runtime: Some(runtime),
            _dir: dir,
        })
    }
}

/// The load failed because the component is of the hook world.
fn is_hook(e: &anyhow::Error) -> bool {
    e.chain().any(|c| {
        matches!(
            c.downcast_ref::<glovebox::LoadError>(),
            Some(glovebox::LoadError::WrongWorld { found, .. })
                if found.iter().any(|f| glovebox::hooks::is_hook_interface(f))
        )
    })
}

/// The user's compile cache, shared with `glovebox plugin check`:
/// `$XDG_CACHE_HOME/glovebox`, else `~/.cache/glovebox`; none (each
/// harness compiles into its own data dir) when neither is set.
fn default_cache_dir() -> Option<PathBuf> {
    std::env::var_os("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .filter(|p| p.is_absolute())
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache")))
        .map(|base| base.join("glovebox"))
}
