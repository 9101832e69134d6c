//! `glovebox.toml`: the host configuration, and the plugins it lists.

use std::collections::HashMap;
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
use super::paths::{canonical, normalize, parent_dir, read_source, resolve_dir, show_beside};
use super::plugin::load_manifest;
use super::principal::{RawPrincipal, validate_principals};
use super::quotas::{RawQuotas, validate_quotas};
use super::schedule::{RawSchedule, RawTrigger, validate_schedules, validate_triggers};
use super::source::{self, SIZE_HINT, Source};
use super::units::{Millis, Size};
use super::{
    ConfigError, DurabilityMode, HostConfig, Limits, MAX_ADMISSION_QUEUE, MAX_CONCURRENT_CALLS,
    NatsStorage, PluginManifest, RuntimeConfig, StorageBackend, StorageConfig,
};

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
}

/// `[storage]`: the engine, the durability of the session log and the
/// checkpoint cadence; with `backend = "nats"`, where the store is.
#[derive(Default, Deserialize)]
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub(super) struct RawStorage {
    /// `"sled"`, `"sqlite"` or `"nats"` ([`operators/storage.md`](operators/storage.md));
    /// a data dir keeps the backend it was created with.
    #[cfg_attr(feature = "schemars", schemars(extend("default" = "sled")))]
    #[cfg_attr(feature = "schemars", schemars(extend("enum" = ["sled", "sqlite", "nats"])))]
    backend: Option<String>,
    /// `"flush"`: survives a killed process; `"strict"`: also `fdatasync`,
    /// survives a power cut.
    #[cfg_attr(feature = "schemars", schemars(extend("default" = "flush")))]
    #[cfg_attr(feature = "schemars", schemars(extend("enum" = ["flush", "strict"])))]
    durability: Option<String>,
    /// Checkpoint a session every this many events (and at every handoff
    /// and pause); `0`: only at handoffs, pauses and ends.
    #[cfg_attr(feature = "schemars", schemars(extend("default" = 256)))]
    checkpoint_every: Option<i64>,
    /// Free space the data dir's disk must keep, else new work is refused
    /// (`low_disk`); `0` turns it off.
    #[cfg_attr(feature = "schemars", schemars(extend("default" = "256 MiB")))]
    min_free: Option<Size>,
    /// A key (32+ bytes, mode 0600, outside the data dir) for HMAC-SHA256
    /// chains of new sessions.
    #[cfg_attr(feature = "schemars", schemars(extend("x-default" = "none (plain SHA-256)")))]
    chain_key_file: Option<String>,
    /// Sessions' states kept in memory (1 to 1,000,000); a session in use is
    /// never dropped.
    #[cfg_attr(feature = "schemars", schemars(extend("default" = 1024)))]
    session_cache: Option<i64>,
    // `backend = "nats"` only.
    /// `nats://host:4222`, or `tls://` for TLS; several servers
    /// comma-separated.
    #[cfg_attr(feature = "schemars", schemars(extend("x-default" = "(required with `nats`)")))]
    url: Option<String>,
    /// A `.creds` file for the host's NATS user; or `user` and `password`.
    #[cfg_attr(feature = "schemars", schemars(extend("x-default" = "none")))]
    creds: Option<String>,
    /// The host's NATS user, with `password` (instead of `creds`).
    #[cfg_attr(feature = "schemars", schemars(extend("x-default" = "none")))]
    user: Option<String>,
    /// The NATS user's password, with `user`.
    #[cfg_attr(feature = "schemars", schemars(extend("x-default" = "none")))]
    password: Option<String>,
    /// Starts every stream and bucket name: one per deployment (1 to 32
    /// letters, digits and `-`).
    #[cfg_attr(feature = "schemars", schemars(extend("default" = "glovebox")))]
    prefix: Option<String>,
    /// JetStream replicas (3 on a three-node cluster; 1 to 5).
    #[cfg_attr(feature = "schemars", schemars(extend("default" = 1)))]
    replicas: Option<i64>,
    /// This host's id.
    #[cfg_attr(feature = "schemars", schemars(extend("x-default" = "kept in `<data_dir>/node-id`")))]
    node: Option<String>,
    /// Where clients reach this host's MCP server (named in lease refusals).
    #[cfg_attr(feature = "schemars", schemars(extend("x-default" = "none")))]
    advertise: Option<String>,
    /// How long other hosts wait for a host that died (1s to 1h).
    #[cfg_attr(feature = "schemars", schemars(extend("default" = "15s")))]
    lease_ttl: Option<Millis>,
}

/// `[[plugin]]`: one tool plugin.
#[derive(Deserialize)]
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub(super) struct RawPluginEntry {
    /// The plugin's manifest file (see "A plugin's manifest" below).
    pub(super) manifest: String,
}

/// `[runtime]`: host-wide capacity.
#[derive(Default, Deserialize)]
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub(super) struct RawRuntime {
    /// Calls running at once, across all sessions (1 to 1000).
    #[cfg_attr(feature = "schemars", schemars(extend("default" = 16)))]
    max_concurrent_calls: Option<i64>,
    /// The sum of the memory limits of the calls running at once.
    #[cfg_attr(feature = "schemars", schemars(extend("default" = "4 GiB")))]
    memory_budget: Option<Size>,
    /// How long a call that finds no room waits before `busy`; never past
    /// its deadline; `"0s"` refuses at once.
    #[cfg_attr(feature = "schemars", schemars(extend("default" = "5s")))]
    admission_wait: Option<Millis>,
    /// Calls waiting at once; one more is `busy` at once (0 to 1,000,000).
    #[cfg_attr(feature = "schemars", schemars(extend("default" = 1024)))]
    admission_queue: Option<i64>,
    /// While others wait, the fraction of slots one principal may hold (at
    /// least one slot).
    #[cfg_attr(feature = "schemars", schemars(extend("default" = 0.5)))]
    principal_share: Option<f64>,
    /// A tool whose calls averaged this long (or not called yet) is slow.
    #[cfg_attr(feature = "schemars", schemars(extend("default" = "100ms")))]
    slow_call: Option<Millis>,
    /// The fraction of slots slow calls may hold; `1` turns this off.
    #[cfg_attr(feature = "schemars", schemars(extend("default" = 0.5)))]
    slow_share: Option<f64>,
    /// The largest input a call accepts.
    #[cfg_attr(feature = "schemars", schemars(extend("default" = "1 MiB")))]
    max_input_bytes: Option<Size>,
    /// Larger component files are refused before they are read.
    #[cfg_attr(feature = "schemars", schemars(extend("default" = "256 MiB")))]
    max_component_bytes: Option<Size>,
    /// The upper bound of any plugin's `memory`.
    #[cfg_attr(feature = "schemars", schemars(extend("default" = "4 GiB")))]
    max_memory_per_instance: Option<Size>,
    /// Compiled components and pre-initialized snapshots.
    #[cfg_attr(feature = "schemars", schemars(extend("x-default" = "`cache` in `data_dir`")))]
    cache_dir: Option<String>,
    /// SHA-256 records of every cached file; a cached file is used only if it matches.
    #[cfg_attr(feature = "schemars", schemars(extend("x-default" = "`digests` in `data_dir`")))]
    digests_dir: Option<String>,
    /// Bytes one session's scratch dir may hold (more than 100,000 entries
    /// counts as full).
    #[cfg_attr(feature = "schemars", schemars(extend("default" = "256 MiB")))]
    scratch_quota: Option<Size>,
}

/// Only the data dir of a config, for a config that may not load as a whole.
#[derive(Deserialize)]
struct RawDataDir {
    data_dir: Option<String>,
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

        let data_dir = match &raw.data_dir {
            Some(dir_text) => resolve_dir(&src, &dir, "data_dir", dir_text)?,
            None => default_data_dir(&abs_path, |var| std::env::var_os(var)).map_err(|problem| {
                src.invalid(
                    "data_dir",
                    problem,
                    format!(
                        "set `data_dir` in `{}`, or set `HOME` (or `XDG_STATE_HOME`) to the user's home (state) directory",
                        src.file
                    ),
                )
            })?,
        };
        let defaults = apply_limits(&src, "defaults", &raw.defaults, &Limits::default())?;
        let runtime = validate_runtime(&src, &raw.runtime, &dir)?;
        let storage = validate_storage(&src, &raw.storage, &dir)?;
        let detector = validate_detector(&src, &raw.detector)?;
        let context = validate_context(&src, &raw.context)?;
        let approvals = validate_approvals(&src, &raw.approvals)?;
        let handoffs = validate_handoffs(&src, &raw.handoffs)?;
        let quotas = validate_quotas(&src, &raw.quotas)?;
        let memory = validate_memory(&src, &raw.memory)?;
        let principals = validate_principals(&src, &dir, &raw.principal, raw.auth.has_oauth())?;
        let names: Vec<&str> = principals
            .iter()
            .map(|p| p.principal.name.as_str())
            .collect();
        let oauth = validate_auth(&src, &dir, &raw.auth, &names)?;
        let secret_files = [
            super::principal::secret_files(&dir, &raw.principal),
            super::notify::secret_files(&dir, &raw.notify),
            super::schedule::secret_files(&dir, &raw.trigger),
        ]
        .concat();
        let names: Vec<&str> = principals
            .iter()
            .map(|p| p.principal.name.as_str())
            .collect();
        let budgets = validate_budgets(&src, &raw.budgets, &names)?;
        let notify = validate_notify(&src, &dir, &raw.notify)?;
        let schedules = validate_schedules(&src, &raw.schedule, &notify)?;
        let triggers = validate_triggers(&src, &dir, &raw.trigger, &notify)?;
        let cap = MemoryCap::new(&runtime, &src.file);
        if let Some((problem, hint)) = cap.check(defaults.memory) {
            return Err(src.invalid("defaults.memory", problem, hint));
        }

        let mut plugins: Vec<PluginManifest> = Vec::new();
        let mut seen: HashMap<PathBuf, usize> = HashMap::new();
        for (i, entry) in raw.plugin.iter().enumerate() {
            let key = format!("plugin[{i}].manifest");
            let relative = Path::new(&entry.manifest);
            let shown = normalize(&display_dir.join(relative));
            if entry.manifest.trim().is_empty() {
                return Err(src.invalid(
                    &key,
                    "the manifest path is empty",
                    source::hint_for("manifest"),
                ));
            }
            if !dir.join(relative).is_file() {
                return Err(src.invalid(
                    &key,
                    format!("plugin manifest `{}` not found", entry.manifest),
                    format!(
                        "check the path; relative paths are resolved from the directory of `{}`",
                        src.file
                    ),
                ));
            }
            let manifest_path = canonical(&dir.join(relative), &shown.display().to_string())?;
            if let Some(first) = seen.insert(manifest_path.clone(), i) {
                return Err(src.invalid(
                    &key,
                    format!(
                        "plugin manifest `{}` is listed twice (also `plugin[{first}].manifest`)",
                        entry.manifest
                    ),
                    "remove one of the `[[plugin]]` entries",
                ));
            }
            let shown = shown.display().to_string();
            let plugin = load_manifest(&manifest_path, shown.clone(), &defaults, Some(&cap))?;
            if let Some(other) = plugins.iter().find(|p| p.name == plugin.name) {
                let other_file = other
                    .path
                    .as_deref()
                    .map(|p| show_beside(display_dir, &dir, p));
                return Err(src.invalid(
                    &key,
                    format!(
                        "plugin name `{}` is used by both `{}` and `{}`",
                        plugin.name,
                        other_file.unwrap_or_default(),
                        shown
                    ),
                    "give each plugin a unique `name` in its manifest",
                ));
            }
            plugins.push(plugin);
        }

        // Tools are named by the components, not the manifests: here a gate's
        // plugin must be listed; the host checks the tool when it loads them.
        let completion = validate_completion(&src, &raw.completion, |tool| {
            tool.split_once('.')
                .is_some_and(|(plugin, _)| plugins.iter().any(|p| p.name == plugin))
        })?;
        let hooks = validate_hooks(&src, &dir, &raw.hook, &cap)?;
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
            oauth,
            notify,
            completion,
            schedules,
            triggers,
            secret_files,
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
            oauth: None,
            notify: Vec::new(),
            completion: Vec::new(),
            schedules: Vec::new(),
            triggers: Vec::new(),
            secret_files: Vec::new(),
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
}

fn validate_storage(
    src: &Source,
    raw: &RawStorage,
    dir: &Path,
) -> Result<StorageConfig, ConfigError> {
    let mut storage = StorageConfig::default();
    match raw.backend.as_deref() {
        None => {}
        Some("sqlite") => storage.backend = StorageBackend::Sqlite,
        Some("sled") => storage.backend = StorageBackend::Sled,
        Some("nats") => storage.backend = StorageBackend::Nats,
        Some(other) => {
            return Err(src.invalid(
                "storage.backend",
                format!("`{other}` is not a storage backend"),
                "write `\"sqlite\"` (SQLite in WAL mode), `\"sled\"` or `\"nats\"` (NATS JetStream, shared by several hosts); see docs/durability.md for what each guarantees",
            ));
        }
    }
    storage.nats = validate_nats(src, raw, dir, storage.backend)?;
    match raw.durability.as_deref() {
        None | Some("flush") => {}
        Some("strict") => storage.durability = DurabilityMode::Strict,
        Some(other) => {
            return Err(src.invalid(
                "storage.durability",
                format!("`{other}` is not a durability mode"),
                "write `\"flush\"` (survives a killed process) or `\"strict\"` (also fdatasync, survives a power cut)",
            ));
        }
    }
    if let Some(text) = &raw.chain_key_file {
        if text.trim().is_empty() {
            return Err(src.invalid(
                "storage.chain_key_file",
                "`chain_key_file` is empty",
                "name the chain key file (at least 32 bytes, mode 0600, outside the data dir), or remove the key for a plain SHA-256 chain",
            ));
        }
        storage.chain_key_file = Some(normalize(&dir.join(text)));
    }
    if let Some(every) = raw.checkpoint_every {
        storage.checkpoint_every = u64::try_from(every).map_err(|_| {
            src.invalid(
                "storage.checkpoint_every",
                format!("{every} is negative"),
                "write a number of events, or 0 for checkpoints only at handoffs, pauses and ends",
            )
        })?;
    }
    if let Some(Size(min_free)) = raw.min_free {
        // Zero is meaningful: no watermark (the operator watches the disk).
        storage.min_free = min_free;
    }
    if let Some(size) = raw.session_cache {
        storage.session_cache = usize::try_from(size)
            .ok()
            .filter(|n| (1..=1_000_000).contains(n))
            .ok_or_else(|| {
                src.invalid(
                    "storage.session_cache",
                    format!("{size} is not a number of sessions from 1 to 1000000"),
                    "write how many sessions' states to keep in memory (default 1024); the least recently used are loaded again when used",
                )
            })?;
    }
    Ok(storage)
}

/// The keys of `[storage]` that only `backend = "nats"` reads.
fn validate_nats(
    src: &Source,
    raw: &RawStorage,
    dir: &Path,
    backend: StorageBackend,
) -> Result<Option<NatsStorage>, ConfigError> {
    let nats_keys = [
        ("url", raw.url.is_some()),
        ("creds", raw.creds.is_some()),
        ("user", raw.user.is_some()),
        ("password", raw.password.is_some()),
        ("prefix", raw.prefix.is_some()),
        ("replicas", raw.replicas.is_some()),
        ("node", raw.node.is_some()),
        ("advertise", raw.advertise.is_some()),
        ("lease_ttl", raw.lease_ttl.is_some()),
    ];
    if backend != StorageBackend::Nats {
        if let Some((key, _)) = nats_keys.iter().find(|(_, set)| *set) {
            return Err(src.invalid(
                &format!("storage.{key}"),
                format!("`{key}` is a setting of the nats backend, and the backend is {backend}"),
                format!("remove `{key}`, or set `backend = \"nats\"`"),
            ));
        }
        return Ok(None);
    }
    let url = raw.url.as_deref().unwrap_or_default().trim();
    if url.is_empty() {
        return Err(src.invalid(
            "storage.url",
            "`backend = \"nats\"` needs the NATS server's URL",
            "set `url = \"nats://host:4222\"` in `[storage]` (several servers: comma-separated; `tls://` for TLS)",
        ));
    }
    for one in url.split(',').map(str::trim) {
        if !(one.starts_with("nats://") || one.starts_with("tls://"))
            || one.contains(char::is_whitespace)
        {
            return Err(src.invalid(
                "storage.url",
                format!("`{one}` is not a NATS URL"),
                "write `nats://host:4222`, or `tls://host:4222` for TLS; several servers comma-separated",
            ));
        }
    }
    let creds = match raw.creds.as_deref() {
        None => None,
        Some(text) => {
            let path = dir.join(text);
            if !path.is_file() {
                return Err(src.invalid(
                    "storage.creds",
                    format!("credentials file `{text}` not found"),
                    "point `creds` at the `.creds` file `nsc` wrote for this host's NATS user (relative paths are resolved from the config file's directory)",
                ));
            }
            Some(path)
        }
    };
    match (&raw.user, &raw.password, &creds) {
        (Some(_), _, Some(_)) | (_, Some(_), Some(_)) => {
            let key = if raw.user.is_some() {
                "user"
            } else {
                "password"
            };
            return Err(src.invalid(
                &format!("storage.{key}"),
                "`creds` and `user`/`password` are two ways to log in; give one",
                format!("remove `{key}`, or `creds`"),
            ));
        }
        (Some(_), None, None) => {
            return Err(src.invalid(
                "storage.user",
                "`user` needs a `password`",
                "add `password`, or log in with a `creds` file",
            ));
        }
        (None, Some(_), None) => {
            return Err(src.invalid(
                "storage.password",
                "`password` needs a `user`",
                "add `user`, or log in with a `creds` file",
            ));
        }
        _ => {}
    }
    let prefix = raw.prefix.clone().unwrap_or_else(|| "glovebox".to_string());
    if prefix.is_empty()
        || prefix.len() > 32
        || !prefix
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-')
    {
        return Err(src.invalid(
            "storage.prefix",
            format!("`{prefix}` cannot start NATS stream and bucket names"),
            "use 1 to 32 letters, digits and `-` (no `_` or `.`), one prefix per deployment",
        ));
    }
    let replicas = match raw.replicas {
        None => 1,
        Some(n) => match u8::try_from(n) {
            Ok(n @ 1..=5) => n,
            _ => {
                return Err(src.invalid(
                    "storage.replicas",
                    format!("{n} is not a number of JetStream replicas"),
                    "write 1 (one NATS server) or 3 (a three-node cluster); JetStream keeps 1 to 5",
                ));
            }
        },
    };
    let node = match raw.node.as_deref().map(str::trim) {
        None => None,
        Some(node) if super::source::is_plain_name(node) => Some(node.to_string()),
        Some(node) => {
            return Err(src.invalid(
                "storage.node",
                format!("`{node}` is not a node id"),
                "use 1 to 64 letters, digits, `-`, `_` and `.`, one per host (e.g. its host name), or remove `node` to use the id kept in the data dir",
            ));
        }
    };
    let advertise = match raw.advertise.as_deref().map(str::trim) {
        None => None,
        Some(url)
            if (url.starts_with("http://") || url.starts_with("https://"))
                && !url.contains(char::is_whitespace) =>
        {
            Some(url.to_string())
        }
        Some(url) => {
            return Err(src.invalid(
                "storage.advertise",
                format!("`{url}` is not an http(s) URL"),
                "write the URL clients reach this host's MCP server at, e.g. `https://host-a.example:8443/mcp`",
            ));
        }
    };
    let lease_ttl = match raw.lease_ttl {
        None => NatsStorage::DEFAULT_LEASE_TTL,
        Some(Millis(ttl))
            if (std::time::Duration::from_secs(1)..=std::time::Duration::from_secs(3600))
                .contains(&ttl) =>
        {
            ttl
        }
        Some(Millis(ttl)) => {
            return Err(src.invalid(
                "storage.lease_ttl",
                format!("{ttl:?} is not a lease TTL"),
                "write 1s to 1h (default 15s): how long other hosts wait before taking over the sessions of a host that died",
            ));
        }
    };
    Ok(Some(NatsStorage {
        url: url.to_string(),
        creds,
        user: raw.user.clone(),
        password: raw.password.clone(),
        prefix,
        replicas,
        node,
        advertise,
        lease_ttl,
    }))
}

fn validate_runtime(
    src: &Source,
    raw: &RawRuntime,
    dir: &Path,
) -> Result<RuntimeConfig, ConfigError> {
    let mut runtime = RuntimeConfig::default();
    if let Some(calls) = raw.max_concurrent_calls {
        match u32::try_from(calls) {
            Ok(calls) if (1..=MAX_CONCURRENT_CALLS).contains(&calls) => {
                runtime.max_concurrent_calls = calls;
            }
            _ => {
                return Err(src.invalid(
                    "runtime.max_concurrent_calls",
                    format!("{calls} concurrent calls is out of range"),
                    "write an integer from 1 to 1000",
                ));
            }
        }
    }
    if let Some(Millis(wait)) = raw.admission_wait {
        runtime.admission_wait = wait;
    }
    if let Some(queue) = raw.admission_queue {
        match u32::try_from(queue) {
            Ok(queue) if queue <= MAX_ADMISSION_QUEUE => runtime.admission_queue = queue,
            _ => {
                return Err(src.invalid(
                    "runtime.admission_queue",
                    format!("{queue} waiting calls is out of range"),
                    "write an integer from 0 (no queue: busy at once) to 1000000",
                ));
            }
        }
    }
    if let Some(share) = raw.principal_share {
        if !(share > 0.0 && share <= 1.0) {
            return Err(src.invalid(
                "runtime.principal_share",
                format!("{share} is not a share of the call slots"),
                "write a fraction above 0 and at most 1, e.g. `principal_share = 0.5` (one principal holds at most half the slots while others wait)",
            ));
        }
        runtime.principal_share = share;
    }
    if let Some(Millis(slow)) = raw.slow_call {
        if slow.is_zero() {
            return Err(src.invalid(
                "runtime.slow_call",
                "0s would make every call slow".to_string(),
                "write a duration above zero, e.g. `slow_call = \"100ms\"` (tools whose calls average longer share `slow_share` of the slots while quicker calls wait)",
            ));
        }
        runtime.slow_call = slow;
    }
    if let Some(share) = raw.slow_share {
        if !(share > 0.0 && share <= 1.0) {
            return Err(src.invalid(
                "runtime.slow_share",
                format!("{share} is not a share of the call slots"),
                "write a fraction above 0 and at most 1, e.g. `slow_share = 0.5` (slow calls hold at most half the slots while quicker calls wait; 1 turns this off)",
            ));
        }
        runtime.slow_share = share;
    }
    let sizes = [
        (
            "memory_budget",
            raw.memory_budget,
            &mut runtime.memory_budget,
        ),
        (
            "max_input_bytes",
            raw.max_input_bytes,
            &mut runtime.max_input_bytes,
        ),
        (
            "max_component_bytes",
            raw.max_component_bytes,
            &mut runtime.max_component_bytes,
        ),
        (
            "max_memory_per_instance",
            raw.max_memory_per_instance,
            &mut runtime.max_memory_per_instance,
        ),
        (
            "scratch_quota",
            raw.scratch_quota,
            &mut runtime.scratch_quota,
        ),
    ];
    for (name, value, slot) in sizes {
        if let Some(Size(bytes)) = value {
            if bytes == 0 {
                return Err(src.invalid(
                    &format!("runtime.{name}"),
                    format!("`{name}` is zero"),
                    SIZE_HINT,
                ));
            }
            *slot = bytes;
        }
    }
    if let Some(cache) = &raw.cache_dir {
        runtime.cache_dir = Some(resolve_dir(src, dir, "runtime.cache_dir", cache)?);
    }
    if let Some(digests) = &raw.digests_dir {
        runtime.digests_dir = Some(resolve_dir(src, dir, "runtime.digests_dir", digests)?);
    }
    Ok(runtime)
}
