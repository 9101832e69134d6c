//! `glovebox.toml`: the host configuration, and the plugins it lists.
//!
//! Here: the file as written and [`HostConfig::load`], which checks each
//! table in turn; `[runtime]`, `[storage]` (and its keys of the nats backend)
//! and the `[[plugin]]` list are checked in their own files, the other
//! tables in the modules of the values they make.

mod builds;
mod nats;
mod plugins;
mod runtime;
mod storage;
mod trust;

use std::path::{Path, PathBuf};

use serde::Deserialize;

use super::approvals::{RawApprovals, validate_approvals};
use super::budgets::{RawBudgets, validate_budgets};
use super::completion::{RawCompletion, validate_completion};
use super::detector::{RawContext, RawDetector, validate_context, validate_detector};
use super::guest::MemoryCap;
use super::handoffs::{RawHandoffs, validate_handoffs};
use super::hooks::{RawHook, hooks_none, validate_hooks};
use super::limits::{RawLimits, apply_limits};
use super::memory::{RawMemory, validate_memory};
use super::notify::{RawNotify, validate_notify};
use super::oauth::{RawAuth, validate_auth};
use super::owned::default_data_dir;
use super::paths::{canonical, parent_dir, read_source, resolve_dir};
use super::principal::{RawPrincipal, validate_principals};
use super::quotas::{RawQuotas, validate_quotas};
use super::schedule::{RawSchedule, RawTrigger, validate_schedules, validate_triggers};
use super::source::Source;
use super::toolset::{RawRoleTools, RawToolset, validate_toolsets};
use super::{
    ComponentStore, ConfigError, HostConfig, Limits, OciReference, PluginManifest, RuntimeConfig,
    StorageConfig,
};

use nats::validate_nats;
use plugins::{Under, load_plugins};
use runtime::validate_runtime;
use storage::validate_storage;
use trust::validate_trust;

pub(super) use plugins::RawPluginEntry;
pub(super) use runtime::RawRuntime;
pub(super) use storage::RawStorage;
pub(super) use trust::RawTrust;
#[cfg(feature = "schemars")]
pub(super) use trust::RawTrustKeys;
pub use trust::{TrustPolicy, TrustedKey, key_id};

/// `glovebox.toml`: the operator's config. Every table is optional except
/// that the config lists `[[hook]]`s or says `hooks = "none"`.
#[derive(Deserialize)]
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub(super) struct RawHostConfig {
    /// Where session logs, checkpoints and the compile cache live
    /// ([`operators/storage.md`](operators/storage.md#the-data-dir)); no grant
    /// may reach it.
    #[cfg_attr(feature = "schemars", schemars(extend("x-default" = "`$XDG_STATE_HOME/glovebox/<dir>-<hash of the config path>`")))]
    data_dir: Option<String>,
    /// The limits of every call; a manifest's `[limits]` overrides them.
    #[serde(default)]
    defaults: RawLimits,
    /// Host-wide capacity.
    #[serde(default)]
    runtime: RawRuntime,
    /// The tool plugins, each named by its manifest.
    #[serde(default)]
    pub(super) plugin: Vec<RawPluginEntry>,
    /// `"none"` states that no hook judges calls; a config must list
    /// `[[hook]]`s or say this.
    #[cfg_attr(feature = "schemars", schemars(extend("x-default" = "none")))]
    #[cfg_attr(feature = "schemars", schemars(extend("enum" = ["none"])))]
    hooks: Option<String>,
    /// The permission hooks, in the order they judge calls.
    #[serde(default)]
    pub(super) hook: Vec<RawHook>,
    /// How sessions are kept.
    #[serde(default)]
    storage: RawStorage,
    /// Caps per role and spend ceilings.
    #[serde(default)]
    budgets: RawBudgets,
    /// The stuck-agent detector.
    #[serde(default)]
    detector: RawDetector,
    /// Who may write to the projects' context index.
    #[serde(default)]
    context: RawContext,
    /// How long a call waits for an operator's approval.
    #[serde(default)]
    approvals: RawApprovals,
    /// The routes of handoffs into other principals' sessions.
    #[serde(default)]
    handoffs: RawHandoffs,
    /// How much one agent principal, or one session, may hold.
    #[serde(default)]
    quotas: RawQuotas,
    /// The memory bank's bounds and who may propose to and review it.
    #[serde(default)]
    memory: RawMemory,
    /// Who may connect.
    #[serde(default)]
    principal: Vec<RawPrincipal>,
    /// Named lists of tools a principal or role may be narrowed to.
    #[serde(default)]
    toolset: Vec<RawToolset>,
    /// What every session of a role is given besides its budgets: its
    /// toolsets.
    #[serde(default)]
    #[cfg_attr(feature = "schemars", schemars(extend("x-key" = "<role>")))]
    role: std::collections::BTreeMap<String, RawRoleTools>,
    /// How HTTP callers may prove who they are besides a principal's own
    /// token.
    #[serde(default)]
    auth: RawAuth,
    /// The webhooks told about approvals, flags, budgets, jobs, rescues and sessions.
    #[serde(default)]
    notify: Vec<RawNotify>,
    /// The completion conditions required per role and project.
    #[serde(default)]
    completion: Vec<RawCompletion>,
    /// Work started on a cron expression.
    #[serde(default)]
    schedule: Vec<RawSchedule>,
    /// Work started when an event happens or a webhook comes.
    #[serde(default)]
    trigger: Vec<RawTrigger>,
    /// Credentials the host injects into plugins' requests at the egress
    /// (an `[[http]]` grant's `inject`); no guest ever holds them.
    #[serde(default)]
    secret: Vec<crate::secrets::RawSecret>,
    /// Checks run after each successful call of some tools in a session
    /// (a typecheck, a lint, a schema), their failures returned with the call.
    #[serde(default)]
    verify: Vec<crate::verify::RawVerify>,
    /// Git repositories whose sessions each get a worktree of their own,
    /// which plugins' `[[fs]]` grants reference by name
    /// ([`operators/workspaces.md`](operators/workspaces.md)).
    #[serde(default)]
    workspace: Vec<crate::workspace::RawWorkspace>,
    /// The minisign keys whose signatures plugins and hooks must carry to
    /// load ([`operators/trust.md`](operators/trust.md)); none: no
    /// signature is asked for.
    #[cfg_attr(feature = "schemars", schemars(extend("x-default" = "none")))]
    trust: Option<RawTrust>,
}

/// Only the data dir of a config, for a config that may not load as a whole.
#[derive(Deserialize)]
struct RawDataDir {
    data_dir: Option<String>,
}

/// The `oci://` components a config names, read before it loads
/// ([`HostConfig::oci_components`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OciComponents {
    /// Where they are pinned and kept.
    pub store: ComponentStore,
    /// Each reference once, in the order the config lists the plugins.
    pub references: Vec<OciReference>,
    /// `runtime.max_component_bytes`: the most a pull may bring.
    pub max_component_bytes: u64,
}

/// What [`HostConfig::oci_components`] reads of a config: where its cache
/// is and which manifests it lists.
#[derive(Deserialize)]
struct RawComponents {
    data_dir: Option<String>,
    runtime: Option<RawCacheDir>,
    #[serde(default)]
    plugin: Vec<RawManifestPath>,
}

#[derive(Deserialize)]
struct RawCacheDir {
    cache_dir: Option<String>,
    max_component_bytes: Option<crate::units::Size>,
}

#[derive(Deserialize)]
struct RawManifestPath {
    manifest: Option<String>,
}

/// A manifest's `component`, read alone.
#[derive(Deserialize)]
struct RawComponentOf {
    component: Option<String>,
}

impl HostConfig {
    /// The data dir the config at `path` names, read even when the rest of
    /// it does not load (an operator who broke the config of a running
    /// server still reaches that server: `glovebox reload` says what is
    /// wrong). Only a file that is not TOML, or a bad `data_dir`, fails.
    pub fn data_dir_of(path: &Path) -> Result<PathBuf, ConfigError> {
        let src = read_source(path, path.display().to_string())?;
        let raw: RawDataDir = src.deserialize()?;
        let abs_path = canonical(path, &src.file)?;
        match &raw.data_dir {
            Some(text) => resolve_dir(&src, &parent_dir(&abs_path), "data_dir", text),
            None => default_data_dir(&abs_path, |var| std::env::var_os(var))
                .map_err(|problem| src.invalid("data_dir", problem, "set `data_dir`")),
        }
    }

    /// Reads `glovebox.toml` and every plugin manifest it lists.
    pub fn load(path: &Path) -> Result<HostConfig, ConfigError> {
        let src = read_source(path, path.display().to_string())?;
        let raw: RawHostConfig = src.deserialize()?;
        let abs_path = canonical(path, &src.file)?;
        let dir = parent_dir(&abs_path);
        // Manifests are named in messages relative to how the operator named this file.
        let display_dir = path.parent().unwrap_or(Path::new(""));

        let data_dir = configured_data_dir(&src, &raw, &abs_path, &dir)?;
        let defaults = apply_limits(&src, "defaults", &raw.defaults, &Limits::default())?;
        let runtime = validate_runtime(&src, &raw.runtime, &dir)?;
        let mut storage = validate_storage(&src, &raw.storage, &dir)?;
        storage.nats = validate_nats(&src, &raw.storage, &dir, storage.backend)?;
        let detector = validate_detector(&src, &raw.detector)?;
        let context = validate_context(&src, &raw.context)?;
        let approvals = validate_approvals(&src, &raw.approvals)?;
        let handoffs = validate_handoffs(&src, &raw.handoffs)?;
        let quotas = validate_quotas(&src, &raw.quotas)?;
        let memory = validate_memory(&src, &raw.memory)?;
        let toolsets = validate_toolsets(&src, &raw.toolset, &raw.role)?;
        let principals =
            validate_principals(&src, &dir, &raw.principal, raw.auth.has_oauth(), &toolsets)?;
        let names: Vec<&str> = principals
            .iter()
            .map(|p| p.principal.name.as_str())
            .collect();
        let oauth = validate_auth(&src, &dir, &raw.auth, &names)?;
        let secret_files = secret_files(&dir, &raw);
        let secrets = crate::secrets::load_secrets(&src, &dir, &raw.secret)?;
        let budgets = validate_budgets(&src, &raw.budgets, &names)?;
        let notify = validate_notify(&src, &dir, &raw.notify)?;
        let schedules = validate_schedules(&src, &raw.schedule, &notify)?;
        let triggers = validate_triggers(&src, &dir, &raw.trigger, &notify)?;
        let workspaces =
            crate::workspace::validate_workspaces(&src, &dir, &raw.workspace, &data_dir)?;
        let cap = MemoryCap::new(&runtime, &src.file);
        if let Some((problem, hint)) = cap.check(defaults.memory) {
            return Err(src.invalid("defaults.memory", problem, hint));
        }

        let store = ComponentStore::new(
            &abs_path,
            &runtime
                .cache_dir
                .clone()
                .unwrap_or_else(|| data_dir.join("cache")),
        );
        let under = Under {
            defaults: &defaults,
            cap: &cap,
            secrets: &secrets,
            workspaces: &workspaces,
            store: &store,
        };
        let mut plugins = load_plugins(&src, &raw.plugin, &dir, display_dir, &under)?;

        // Tools are named by the components, not the manifests: here a gate's
        // plugin must be listed; the host checks the tool when it loads them.
        let completion = validate_completion(&src, &raw.completion, |tool| {
            tool.split_once('.')
                .is_some_and(|(plugin, _)| plugins.iter().any(|p| p.name == plugin))
        })?;
        let verify = crate::verify::validate_verify(&src, &raw.verify, |plugin| {
            plugins.iter().any(|p| p.name == plugin)
        })?;
        let mut hooks = validate_hooks(&src, &dir, &raw.hook, &cap)?;
        let trust = validate_trust(&src, &dir, raw.trust.as_ref(), &mut plugins, &mut hooks)?;
        let hooks_explicitly_none = hooks_none(&src, raw.hooks.as_deref(), hooks.len())?;

        let config = HostConfig {
            path: abs_path,
            data_dir,
            defaults,
            runtime,
            plugins,
            hooks,
            hooks_explicitly_none,
            storage,
            budgets,
            detector,
            context,
            approvals,
            handoffs,
            quotas,
            memory,
            principals,
            toolsets,
            oauth,
            notify,
            completion,
            schedules,
            triggers,
            secret_files,
            secrets,
            verify,
            workspaces,
            trust,
        };
        config.check_chain_key(&src)?;
        config.check_grants()?;
        Ok(config)
    }

    /// `[storage] chain_key_file` must lie outside the data dir: a key kept
    /// beside the log it seals protects nothing from whoever can write the
    /// log. (Its mode, owner and length are checked when the store opens.)
    fn check_chain_key(&self, src: &Source) -> Result<(), ConfigError> {
        let Some(key) = &self.storage.chain_key_file else {
            return Ok(());
        };
        let key = super::owned::canonical_lenient(key);
        let data = super::owned::canonical_lenient(&self.data_dir);
        if key.starts_with(&data) {
            return Err(src.invalid(
                "storage.chain_key_file",
                format!(
                    "the chain key file `{}` lies inside the data dir `{}`, where whoever can rewrite the log could read the key",
                    key.display(),
                    data.display()
                ),
                "keep the key outside the data dir, e.g. in `$HOME/.config/glovebox/` (`head -c 32 /dev/urandom > FILE && chmod 600 FILE`)",
            ));
        }
        Ok(())
    }

    /// A config with defaults everywhere and the given plugins, for tests and
    /// `glovebox plugin check`. `path` is left empty. It has no hooks, and says so
    /// (`hooks_explicitly_none`): a program that wants hooks pushes them onto
    /// `hooks` and clears the flag.
    pub fn from_plugins(data_dir: PathBuf, plugins: Vec<PluginManifest>) -> HostConfig {
        HostConfig {
            path: PathBuf::new(),
            data_dir,
            defaults: Limits::default(),
            runtime: RuntimeConfig::default(),
            plugins,
            hooks: Vec::new(),
            hooks_explicitly_none: true,
            storage: StorageConfig::default(),
            budgets: Default::default(),
            detector: Default::default(),
            context: Default::default(),
            approvals: Default::default(),
            handoffs: Default::default(),
            quotas: Default::default(),
            memory: Default::default(),
            principals: Vec::new(),
            toolsets: Default::default(),
            oauth: None,
            notify: Vec::new(),
            completion: Vec::new(),
            schedules: Vec::new(),
            triggers: Vec::new(),
            secret_files: Vec::new(),
            secrets: Default::default(),
            verify: Vec::new(),
            workspaces: Vec::new(),
            trust: None,
        }
    }

    /// Where the sessions' scratch directories live: `<data_dir>/scratch`.
    pub fn scratch_dir(&self) -> PathBuf {
        self.data_dir.join("scratch")
    }

    /// `runtime.digests_dir`, or `<data_dir>/digests` when unset: where the host
    /// records the digest of what it puts in the compile cache.
    pub fn digests_dir(&self) -> PathBuf {
        self.runtime
            .digests_dir
            .clone()
            .unwrap_or_else(|| self.data_dir.join("digests"))
    }

    /// `runtime.cache_dir`, or `<data_dir>/cache` when unset.
    pub fn cache_dir(&self) -> PathBuf {
        self.runtime
            .cache_dir
            .clone()
            .unwrap_or_else(|| self.data_dir.join("cache"))
    }

    /// Where this config's `oci://` components are pinned (`glovebox.lock`
    /// beside it) and kept once pulled (under the cache dir).
    pub fn component_store(&self) -> ComponentStore {
        ComponentStore::new(&self.path, &self.cache_dir())
    }

    /// The `oci://` components the config at `path` names (its plugins'
    /// manifests' `component`), with the store they are pinned and kept in:
    /// read before the config loads, so that they can be pulled first.
    /// Only a file that cannot be read, or a bad reference, fails; the rest
    /// of the config is checked when it loads.
    pub fn oci_components(path: &Path) -> Result<OciComponents, ConfigError> {
        let src = read_source(path, path.display().to_string())?;
        let raw: RawComponents = src.deserialize()?;
        let abs_path = canonical(path, &src.file)?;
        let dir = parent_dir(&abs_path);
        let data_dir = match &raw.data_dir {
            Some(text) => resolve_dir(&src, &dir, "data_dir", text)?,
            None => default_data_dir(&abs_path, |var| std::env::var_os(var))
                .map_err(|problem| src.invalid("data_dir", problem, "set `data_dir`"))?,
        };
        let cache = match raw.runtime.as_ref().and_then(|r| r.cache_dir.as_ref()) {
            Some(text) => resolve_dir(&src, &dir, "runtime.cache_dir", text)?,
            None => data_dir.join("cache"),
        };
        let mut references: Vec<OciReference> = Vec::new();
        for entry in &raw.plugin {
            let Some(manifest) = entry.manifest.as_deref() else {
                continue;
            };
            let Ok(manifest) = canonical(&dir.join(manifest), manifest) else {
                continue;
            };
            let Ok(msrc) = read_source(&manifest, manifest.display().to_string()) else {
                continue;
            };
            let Ok(component) = msrc.deserialize::<RawComponentOf>() else {
                continue;
            };
            let Some(text) = component.component.filter(|t| OciReference::is_oci(t)) else {
                continue;
            };
            let reference = OciReference::parse(text.trim()).map_err(|problem| {
                msrc.invalid(
                    "component",
                    problem,
                    "write `oci://REGISTRY/NAME:TAG` or `oci://REGISTRY/NAME@sha256:DIGEST`",
                )
            })?;
            if !references.contains(&reference) {
                references.push(reference);
            }
        }
        let max_component_bytes = raw
            .runtime
            .as_ref()
            .and_then(|r| r.max_component_bytes)
            .map_or(RuntimeConfig::default().max_component_bytes, |s| s.0);
        Ok(OciComponents {
            store: ComponentStore::new(&abs_path, &cache),
            references,
            max_component_bytes,
        })
    }
}

/// `data_dir` as written (from the config's directory `dir`), or the
/// default beside the user's state for the config at `abs_path`.
fn configured_data_dir(
    src: &Source,
    raw: &RawHostConfig,
    abs_path: &Path,
    dir: &Path,
) -> Result<PathBuf, ConfigError> {
    Ok(match &raw.data_dir {
        Some(dir_text) => resolve_dir(src, dir, "data_dir", dir_text)?,
        None => default_data_dir(abs_path, |var| std::env::var_os(var)).map_err(|problem| {
            src.invalid(
                "data_dir",
                problem,
                format!(
                    "set `data_dir` in `{}`, or set `HOME` (or `XDG_STATE_HOME`) to the user's home (state) directory",
                    src.file
                ),
            )
        })?,
    })
}

/// The secret files the config names (principals' tokens, notify targets'
/// and webhook triggers' secrets), resolved from its directory `dir`: no
/// grant may reach them.
fn secret_files(dir: &Path, raw: &RawHostConfig) -> Vec<super::SecretFile> {
    [
        super::SecretFile::named_by(dir, &raw.principal),
        super::SecretFile::named_by(dir, &raw.notify),
        super::SecretFile::named_by(dir, &raw.trigger),
        super::SecretFile::named_by(dir, &raw.secret),
    ]
    .concat()
}
