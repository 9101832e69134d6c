//! What the operator writes: the host config (`glovebox.toml`) and plugin manifests,
//! and the value types they name (session [`Role`]s, budget caps: [`BudgetCaps`],
//! [`Cap`]), with the few value types the crates above share ([`Captured`]).
//!
//! The bottom crate of Glovebox: every other glovebox crate may depend on it, it
//! depends on none of them. It owns the operator's configuration and the words and
//! values that configuration is written in; the host re-exports it as
//! `glovebox::manifest` (and these value types from where they used to live, e.g.
//! `glovebox::session::Role`, `glovebox::budget::BudgetCaps`).
//!
//! It must never import wasmtime (or anything else that runs components), any
//! storage engine (sled, rusqlite, `glovebox-store`), tokio, or the other glovebox
//! crates (`glovebox`, ...): it is serde and toml only, so `glovebox plugin check`
//! and tests can read configs without an engine, and so the crates above can share
//! it without a cycle. `tests/all/architecture.rs` (in the workspace root) fails if
//! such an edge appears.
//!
//! This crate only parses and validates. Structure is checked by serde
//! (`deny_unknown_fields` everywhere, so a typo is an error, not a silently ignored key),
//! values afterwards, and every error names the file, the key and the fix.
//!
//! Relative paths are resolved from the directory of the file that contains them.

#![forbid(unsafe_code)]

mod approvals;
mod budget_caps;
mod budgets;
mod build;
mod caller;
mod cap;
mod captured;
mod ceilings;
mod completion;
mod detector;
#[cfg(feature = "schemars")]
pub mod docs;
mod error;
mod guest;
mod handoffs;
mod hooks;
mod host_config;
mod http;
mod http_inject;
mod http_path;
mod http_rules;
mod limits;
mod memory;
mod micros;
mod names;
mod notify;
mod oauth;
mod oci;
mod owned;
mod paths;
mod plugin;
mod principal;
mod quotas;
mod role;
mod schedule;
#[cfg(feature = "schemars")]
pub mod schema;
mod secrets;
mod source;
mod toolset;
mod units;
mod verify;
mod workspace;

#[cfg(test)]
mod tests;

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use serde::Deserialize;

pub use approvals::{ApprovalsConfig, NestedApproval};
pub use budget_caps::BudgetCaps;
pub use budgets::BudgetsConfig;
pub use build::DEFAULT_WATCH;
pub use caller::{CallerFsGrant, GrantCaller, Only, PathTemplate};
pub use cap::Cap;
pub use captured::Captured;
pub use ceilings::{
    CeilingLimits, Ceilings, Measure, Period, PeriodCeilings, Scope, ScopeKind, Window,
};
pub use completion::{
    Completion, CompletionError, CompletionRule, Gate, GateMismatch, MAX_GATES,
    required as required_completion,
};
pub use detector::{
    ContextConfig, ContextWriter, DEFAULT_HANDOFF_AFTER_EVENTS, DetectorConfig,
    RULES as DETECTOR_RULES, Severity,
};
pub use error::ConfigError;
pub use guest::valid_plugin_name;
pub use handoffs::{HandoffRoute, HandoffsConfig};
pub use host_config::{OciComponents, TrustPolicy, TrustedKey, key_id};
pub use http::{GrantUrlError, HostError, HttpGrant, HttpScheme};
pub use http_inject::{HttpInjection, InjectError};
pub use http_path::{PathRefusal, RequestPath};
pub use http_rules::{
    HttpRules, MAX_METHODS as MAX_HTTP_METHODS, MAX_PATTERN_BYTES as MAX_HTTP_PATTERN_BYTES,
    MAX_PATTERNS as MAX_HTTP_PATHS, PathPattern, PatternError, RuleError,
};
pub use memory::{MemoryConfig, MemoryScopeKind};
pub use micros::{CostError, to_micros, units};
pub use names::UnknownWord;
pub use notify::{NotifyFormat, NotifyKind, NotifyTarget};
pub use oauth::{JwksSource, OAuthConfig};
pub use oci::{
    ComponentStore, LOCK_FILE, LockedComponent, OCI_SCHEME, OciLock, OciReference, ReferenceError,
};
use owned::NamesSecretFile;
pub use owned::{OwnedPath, SecretFile};
pub use plugin::ManifestIdentity;
pub use principal::{
    AgentCard, ApproveBy, CARD_DESCRIPTION_MAX, CARD_FIELD_MAX, LOCAL_PRINCIPAL, Principal,
    PrincipalConfig, PrincipalKind, PrincipalNameError, authenticate, card_text_ok,
    check_principal_name, credential_of, pinned_tags,
};
pub use quotas::{MAX_WAIT_IDS, QuotaLimit, QuotasConfig};
pub use role::Role;
pub use schedule::{
    Action, AlertIf, AlertIfError, Cmp, CronExpr, CronExprError, HandoffNote, Run, ScheduleConfig,
    SessionTarget, TriggerConfig, TriggerOn,
};
pub use secrets::{MAX_SECRET_BYTES, MIN_SECRET_BYTES, Secret, SecretSource, SecretValue, Secrets};
pub use toolset::{Toolset, ToolsetsConfig, is_tool_pattern, tool_pattern_matches};
pub use units::{
    DurationError, SizeError, approximate_size, format_size, parse_duration, parse_size,
};
pub use verify::{DEFAULT_FLAG_AFTER, MissingField, VerifyRule};
pub use workspace::{DEFAULT_BRANCH_PREFIX, WorkspaceConfig, WorkspaceGrant};

const KIB: u64 = 1 << 10;
const MIB: u64 = 1 << 20;
const GIB: u64 = 1 << 30;

/// The most calls a host may run at once, whatever the config says.
pub const MAX_CONCURRENT_CALLS: u32 = 1000;
/// The most calls `runtime.admission_queue` lets wait for a slot at once.
pub const MAX_ADMISSION_QUEUE: u32 = 1_000_000;

/// The host configuration, read from `glovebox.toml`.
#[derive(Clone, Debug)]
pub struct HostConfig {
    /// The file it was read from (absolute); empty when built by [`HostConfig::from_plugins`].
    pub path: PathBuf,
    /// Where sessions, logs and caches live (absolute).
    pub data_dir: PathBuf,
    /// Limits every plugin gets unless its manifest overrides them.
    pub defaults: Limits,
    pub runtime: RuntimeConfig,
    /// The plugins listed by `[[plugin]]`, in order, each loaded and validated.
    pub plugins: Vec<PluginManifest>,
    /// The permission hooks listed by `[[hook]]`, in the order they judge calls.
    pub hooks: Vec<HookConfig>,
    /// `hooks = "none"`: the operator states that no permission hooks run. A config
    /// with neither this nor a `[[hook]]` is refused, so running without hooks is
    /// always a choice, never an omission.
    pub hooks_explicitly_none: bool,
    /// `[storage]`: how sessions are kept.
    pub storage: StorageConfig,
    /// `[budgets]`: hard caps per session of a role, spend ceilings per
    /// principal, project and role and period, and when to warn.
    pub budgets: BudgetsConfig,
    /// `[detector]`: the stuck-agent detector's thresholds.
    pub detector: DetectorConfig,
    /// `[context]`: who may write to the projects' context index.
    pub context: ContextConfig,
    /// `[approvals]`: how long a call waits for an operator's approval.
    pub approvals: ApprovalsConfig,
    /// `[handoffs]`: the routes into other principals' sessions.
    pub handoffs: HandoffsConfig,
    /// `[quotas]`: how much one principal or session may hold at a time.
    pub quotas: QuotasConfig,
    /// `[memory]`: the memory bank's bounds and who may propose to it.
    pub memory: MemoryConfig,
    /// `[[principal]]`: who may connect (empty: every connection is the
    /// built-in agent `local`, and HTTP serves loopback only).
    pub principals: Vec<PrincipalConfig>,
    /// `[[toolset]]` and `[role.<role>] toolsets`: the named lists of tools
    /// principals and roles are narrowed to (empty: nobody is narrowed).
    pub toolsets: ToolsetsConfig,
    /// `[auth.oauth]`: an OAuth 2.1 authorization server whose access
    /// tokens name declared principals over HTTP (`None`: only the
    /// principals' own tokens).
    pub oauth: Option<OAuthConfig>,
    /// `[[notify]]`: the webhooks told about approvals, flags, budgets, jobs,
    /// rescues and sessions (see [`NotifyTarget`]). The only URLs the host's
    /// delivery worker ever contacts.
    pub notify: Vec<NotifyTarget>,
    /// `[[completion]]`: the completion conditions the operator requires per
    /// role and project (see [`Completion`]).
    pub completion: Vec<CompletionRule>,
    /// `[[schedule]]`: work started on a cron expression.
    pub schedules: Vec<ScheduleConfig>,
    /// `[[trigger]]`: work started when an event happens or a webhook comes.
    pub triggers: Vec<TriggerConfig>,
    /// The files the `[[principal]]`, `[[notify]]`, `[[trigger]]` and
    /// `[[secret]]` entries read their secrets from (resolved): no grant may
    /// reach them (see [`HostConfig::secret_files`], which adds `[storage]`'s).
    pub secret_files: Vec<SecretFile>,
    /// `[[secret]]`: the credentials the host injects at the egress, values read.
    pub secrets: Secrets,
    /// `[[verify]]`: checks run after each successful call of some tools in a session.
    pub verify: Vec<VerifyRule>,
    /// `[[workspace]]`: the git repositories plugins' grants may reference,
    /// each session getting its own worktree of them.
    pub workspaces: Vec<WorkspaceConfig>,
    /// `[trust]`: the keys whose signatures plugins and hooks must carry;
    /// `None`: no signature is asked for. Each plugin's and hook's own keys
    /// are also on it (`signers`).
    pub trust: Option<TrustPolicy>,
}

/// `[storage]`: the engine, durability of the session log and checkpoint cadence.
#[derive(Clone, Debug, PartialEq)]
pub struct StorageConfig {
    /// `backend = "sqlite"` (default) or `"sled"`.
    pub backend: StorageBackend,
    /// `durability = "flush"` (default) or `"strict"`.
    pub durability: DurabilityMode,
    /// A checkpoint every this many events of a session (0: only at handoffs,
    /// pauses and ends). Default 256.
    pub checkpoint_every: u64,
    /// Where the store is with `backend = "nats"` (`None` for the embedded
    /// backends, which keep it in the data dir).
    pub nats: Option<NatsStorage>,
    /// Bytes free on the data dir's file system below which new work (calls,
    /// jobs, sessions) is refused, so the store never meets a full disk
    /// mid-write; 0 turns the check off.
    pub min_free: u64,
    /// `chain_key_file`: a key (at least 32 bytes, mode 0600, the user's
    /// own, outside the data dir) under which new sessions' logs are chained
    /// with HMAC-SHA256 instead of SHA-256, so that whoever can write the
    /// data dir but not read the key cannot re-seal an altered log. Resolved
    /// from the config file's directory. None (default): plain SHA-256.
    pub chain_key_file: Option<PathBuf>,
    /// `session_cache`: how many sessions' states the host keeps in memory,
    /// the least recently used evicted first (loaded again from their
    /// newest checkpoint when used). At least 1; default 1024.
    pub session_cache: usize,
}

/// `[storage] session_cache` when the config does not say: the live
/// sessions of 16 agents at their default quota of 64 stay loaded, and
/// 1024 states of short sessions are a few MiB.
pub const DEFAULT_SESSION_CACHE: usize = 1024;

/// `[storage]` with `backend = "nats"`: the JetStream server (or cluster)
/// that holds the store, shared by every host with the same `prefix`.
#[derive(Clone, PartialEq)]
pub struct NatsStorage {
    /// `url`: `nats://host:4222`, several comma-separated; `tls://` for TLS.
    pub url: String,
    /// `creds`: a `.creds` file (user JWT and NKey seed), resolved from the
    /// config file's directory.
    pub creds: Option<PathBuf>,
    /// `user` and `password`, the other way to log in.
    pub user: Option<String>,
    pub password: Option<String>,
    /// `prefix`: starts every stream and bucket name (default `glovebox`),
    /// so deployments can share a cluster.
    pub prefix: String,
    /// `replicas`: copies JetStream keeps (1 for one server, 3 for a cluster).
    pub replicas: u8,
    /// `node`: this host's id among the hosts sharing the store, as the
    /// session leases name it. None: an id generated once and kept in the
    /// data dir (`<data_dir>/node-id`, the host name and a random suffix).
    pub node: Option<String>,
    /// `advertise`: the URL clients reach this host's MCP server at, told
    /// to a client whose call another host refuses because this one drives
    /// the session. None: the refusal names the node only.
    pub advertise: Option<String>,
    /// `lease_ttl`: how long a session's lease lasts without a renewal
    /// (default 15 s): the time other hosts wait before taking over the
    /// sessions of a host that died.
    pub lease_ttl: Duration,
}

impl NatsStorage {
    pub const DEFAULT_LEASE_TTL: Duration = Duration::from_secs(15);
}

impl std::fmt::Debug for NatsStorage {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NatsStorage")
            .field("url", &self.url)
            .field("creds", &self.creds)
            .field("user", &self.user)
            .field("password", &self.password.as_ref().map(|_| "…"))
            .field("prefix", &self.prefix)
            .field("replicas", &self.replicas)
            .field("node", &self.node)
            .field("advertise", &self.advertise)
            .field("lease_ttl", &self.lease_ttl)
            .finish()
    }
}

impl Default for StorageConfig {
    fn default() -> Self {
        StorageConfig {
            backend: StorageBackend::DEFAULT,
            durability: DurabilityMode::Flush,
            checkpoint_every: 256,
            nats: None,
            min_free: 256 * MIB,
            chain_key_file: None,
            session_cache: DEFAULT_SESSION_CACHE,
        }
    }
}

/// The storage engine the store is kept in (see `docs/durability.md`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StorageBackend {
    /// SQLite in WAL mode, in the data dir.
    Sqlite,
    /// sled 0.34, in the data dir.
    Sled,
    /// NATS JetStream, on a server or cluster (see [`NatsStorage`]).
    Nats,
}

impl StorageBackend {
    /// The backend of a config that names none.
    pub const DEFAULT: StorageBackend = StorageBackend::Sled;

    pub fn as_str(self) -> &'static str {
        match self {
            StorageBackend::Sqlite => "sqlite",
            StorageBackend::Sled => "sled",
            StorageBackend::Nats => "nats",
        }
    }
}

impl std::fmt::Display for StorageBackend {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What "acknowledged" survives.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DurabilityMode {
    /// Written out of the process before acknowledging (survives a killed
    /// process, not a power cut).
    Flush,
    /// Also synced to the disk (fdatasync) before acknowledging.
    Strict,
}

/// `[runtime]`: host-wide capacity settings.
#[derive(Clone, Debug, PartialEq)]
pub struct RuntimeConfig {
    /// How many calls may run at once (1 to [`MAX_CONCURRENT_CALLS`]).
    pub max_concurrent_calls: u32,
    /// Bytes: the sum of the memory caps of the calls running at once (admission control).
    pub memory_budget: u64,
    /// How long a call (or a hook run) waits for a slot or for room in the
    /// memory budget before it is refused as busy; zero refuses at once.
    pub admission_wait: Duration,
    /// How many calls may wait for a slot at once; one more is refused as
    /// busy at once (0 to [`MAX_ADMISSION_QUEUE`]).
    pub admission_queue: u32,
    /// The fraction of the slots one principal may hold while others wait
    /// (more than 0, at most 1; at least one slot).
    pub principal_share: f64,
    /// A tool whose recent calls ran this long on average is slow: its
    /// calls hold at most `slow_share` of the slots while quicker calls wait.
    pub slow_call: Duration,
    /// The fraction of the slots slow calls may hold while quicker calls
    /// wait (more than 0, at most 1; at least one slot).
    pub slow_share: f64,
    /// Bytes: the largest input a call accepts.
    pub max_input_bytes: u64,
    /// Bytes: bigger component files are refused before they are read.
    pub max_component_bytes: u64,
    /// Bytes: the upper bound of any plugin's `memory` limit (the pool's slot size).
    pub max_memory_per_instance: u64,
    /// The compiled-component cache; `None` means `<data_dir>/cache`.
    pub cache_dir: Option<PathBuf>,
    /// Where the digests of the cache's files are recorded, the trust anchor of
    /// the cache; `None` means `<data_dir>/digests`. Hosts that share a compile
    /// cache may share this too, so they trust each other's compiled files.
    pub digests_dir: Option<PathBuf>,
    /// Bytes: how much one session's scratch directory may hold; a call
    /// writes at most what is left of it.
    pub scratch_quota: u64,
}

impl Default for RuntimeConfig {
    fn default() -> Self {
        RuntimeConfig {
            max_concurrent_calls: 16,
            memory_budget: 4 * GIB,
            admission_wait: Duration::from_secs(5),
            admission_queue: 1024,
            principal_share: 0.5,
            slow_call: Duration::from_millis(100),
            slow_share: 0.5,
            max_input_bytes: MIB,
            max_component_bytes: 256 * MIB,
            max_memory_per_instance: 4 * GIB,
            cache_dir: None,
            digests_dir: None,
            scratch_quota: 256 * MIB,
        }
    }
}

/// What one call of a plugin may use.
#[derive(Clone, Debug, PartialEq)]
pub struct Limits {
    /// Bytes of linear memory (and tables) per instance.
    pub memory: u64,
    /// Wall-clock time per call.
    pub deadline: Duration,
    /// Bytes: the largest JSON result a call may return.
    pub output: u64,
    /// Bytes kept per stream (stdout, stderr); the rest is dropped.
    pub stdio: u64,
    /// Fuel per call; `None` turns fuel metering off.
    pub fuel: Option<u64>,
    /// Bytes of native stack wasm code may use.
    pub max_wasm_stack: u64,
    /// Bytes one call may write into its read-write grants and scratch
    /// directory (0: no writes at all); past it a write fails with
    /// "no space" and the call with a `quota` error.
    pub write: u64,
    /// Bytes: the largest result kept whole when it passes `output` in a
    /// session (its head is answered, with where the whole is); 0 keeps
    /// none, and such a result is an `output_too_large` error.
    pub stored_output: u64,
    /// Tools one call may call from inside its run (the `tools` import of
    /// `wit/plugin.wit`, "code mode"); 0, the default, allows none.
    pub nested_calls: u32,
    /// How deep calls may nest below a call of this plugin: at 1, the
    /// default, the tools it calls may not call tools themselves (a runner
    /// may not call itself or another runner).
    pub nested_depth: u32,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            memory: 64 * MIB,
            deadline: Duration::from_secs(10),
            output: MIB,
            stdio: 64 * KIB,
            fuel: None,
            max_wasm_stack: 512 * KIB,
            write: 64 * MIB,
            stored_output: 16 * MIB,
            nested_calls: 0,
            nested_depth: 1,
        }
    }
}

/// `[[hook]]`: one permission hook, as the operator configured it.
///
/// The component file need not exist when the config is read: a hook that cannot
/// be loaded denies every call at call time (hooks fail closed), it does not stop
/// the host from starting.
#[derive(Clone, Debug, PartialEq)]
pub struct HookConfig {
    /// `[a-z0-9][a-z0-9_-]*`, unique among the hooks; names the hook in decisions.
    pub name: String,
    /// The component file (absolute, normalized; not checked for existence).
    pub component: PathBuf,
    /// The expected SHA-256 of the component file, as 64 lowercase hex digits.
    pub sha256: Option<String>,
    /// `[hook.settings]` as JSON (an object; `{}` when absent), passed to every
    /// `validate` and `after` call of the hook.
    pub settings: serde_json::Value,
    /// Wall-clock time per evaluation, instantiation included. Default 100 ms.
    pub deadline: Duration,
    /// Bytes of linear memory per evaluation. Default 16 MiB.
    pub memory: u64,
    /// Fuel per evaluation; `None` meters none.
    pub fuel: Option<u64>,
    /// Whether the hook's `after` is called, in a fresh instance, once a
    /// call it allowed has ended (`after = true` in its `[[hook]]`). Off by
    /// default: a hook reaches only clocks and random, so its `after` can
    /// change nothing and report nothing but its own failure, and telling
    /// every hook of every call cost as much as judging it again (measured
    /// in docs/benchmarks-history.md). For hook authors who test their `after`.
    pub after: bool,
    /// How many evaluations one instance of the hook may serve, for one
    /// principal's calls (`reuse` in its `[[hook]]`); 1, the default: a
    /// fresh instance for every evaluation. More declares the hook pure (it
    /// keeps nothing between evaluations that changes a decision): the host
    /// then keeps a few instances per hook, each serving only the principal
    /// it first served, dropped after a fault or this many evaluations.
    pub reuse: u32,
    /// The keys one of which must have signed this hook's component
    /// (`[trust]`); `None`: it loads unsigned, as without `[trust]`.
    pub signers: Option<Vec<TrustedKey>>,
}

impl HookConfig {
    /// The deadline of a hook that sets none.
    pub const DEFAULT_DEADLINE: Duration = Duration::from_millis(100);
    /// The memory cap of a hook that sets none.
    pub const DEFAULT_MEMORY: u64 = 16 * MIB;

    /// A hook with the defaults and empty settings, for tests and programs that
    /// build a [`HostConfig`] without a file.
    pub fn new(name: impl Into<String>, component: impl Into<PathBuf>) -> HookConfig {
        HookConfig {
            name: name.into(),
            component: component.into(),
            sha256: None,
            settings: serde_json::Value::Object(serde_json::Map::new()),
            deadline: HookConfig::DEFAULT_DEADLINE,
            memory: HookConfig::DEFAULT_MEMORY,
            fuel: None,
            after: false,
            reuse: 1,
            signers: None,
        }
    }

    /// The most `reuse` may be.
    pub const MAX_REUSE: u32 = 1_000_000;
}

/// A tool plugin and everything the operator grants it, read from its manifest.
#[derive(Clone, Debug, PartialEq)]
pub struct PluginManifest {
    /// The manifest file (absolute), when read from one.
    pub path: Option<PathBuf>,
    /// The tool prefix: tools are called `name.tool`.
    pub name: String,
    /// The component file (absolute).
    pub component: PathBuf,
    /// The expected SHA-256 of the component file, as 64 lowercase hex digits.
    pub sha256: Option<String>,
    /// The host defaults with this manifest's `[limits]` applied.
    pub limits: Limits,
    pub fs: Vec<FsGrant>,
    /// The `[[fs]]` grants that name a `[[workspace]]` instead of a host
    /// directory: each session calling the plugin sees its own worktree.
    pub workspaces: Vec<WorkspaceGrant>,
    /// The `[[fs]]` grants that depend on the caller: a host path naming
    /// `{principal}`, `{project}` or `{session}`, or an `only` limit.
    pub per_caller: Vec<CallerFsGrant>,
    /// Names of host environment variables passed through; values are read at call time.
    pub env: Vec<String>,
    pub http: Vec<HttpGrant>,
    /// Where the guest sees the calling session's scratch directory (`/scratch`), if
    /// the operator grants one: a read-write directory of its own per session, kept
    /// across calls, pauses and restarts, removed when the session is archived.
    pub scratch: Option<String>,
    /// Operator overrides of what tools say of themselves, by tool name.
    pub tools: BTreeMap<String, ToolOverride>,
    /// The SHA-256 of the manifest file as it was read (lowercase hex), when
    /// read from one: what a signature of the plugin covers with its component.
    pub manifest_sha256: Option<String>,
    /// The keys one of which must have signed this plugin (`[trust]`);
    /// `None`: it loads unsigned, as without `[trust]`.
    pub signers: Option<Vec<TrustedKey>>,
    /// How `glovebox dev` rebuilds the component when its sources change
    /// (the manifest's `[build]`); nothing else runs it.
    pub build: Option<PluginBuild>,
    /// The registry pin of a component named `oci://…` (from the config's
    /// `glovebox.lock`); `component` is then its file in the cache, and
    /// `sha256` its digest.
    pub oci: Option<LockedComponent>,
}

/// A plugin's `[build]`: the command that makes its component, and the
/// sources whose change calls for it. Only `glovebox dev` runs it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PluginBuild {
    /// A shell command (`sh -c`), run in [`PluginBuild::dir`].
    pub command: String,
    /// Glob patterns of the sources, relative to [`PluginBuild::dir`]
    /// (`src/**`, `Cargo.toml`); each checked to be relative, without `..`.
    pub watch: Vec<String>,
    /// The manifest's directory (absolute): where the command runs and the
    /// patterns start.
    pub dir: PathBuf,
}

/// A listed plugin's `[build]` and what it makes, read from the config's
/// manifests without loading them ([`HostConfig::builds_of`]): so
/// `glovebox dev` can build a component that does not exist yet, before the
/// config (which needs it) loads.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ListedBuild {
    /// The plugin's name, as its manifest says it (not checked here).
    pub plugin: String,
    /// The manifest file (absolute).
    pub manifest: PathBuf,
    /// The component the manifest names (absolute; it may not exist yet).
    pub component: PathBuf,
    /// The manifest's `[build]`, checked as a load checks it.
    pub build: PluginBuild,
}

/// A host directory made visible to the plugin.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FsGrant {
    /// An existing directory (absolute, canonical).
    pub host: PathBuf,
    /// Where the guest sees it: absolute, normalized (`/data`), never `/`.
    pub guest: String,
    pub access: Access,
}

/// How a granted directory may be used.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Deserialize)]
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
#[serde(rename_all = "kebab-case")]
pub enum Access {
    #[default]
    ReadOnly,
    ReadWrite,
}

/// `[tools.<name>]`: what the operator says about a tool; wins over what the plugin says.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ToolOverride {
    /// The action as a colon path, e.g. `write:file`.
    pub action: Option<String>,
    pub destructive: Option<bool>,
    pub idempotent: Option<bool>,
    /// Whether a call only reads (`read_only`): only such tools are offered
    /// to a read-only principal or session. `None`: the plugin's claim, and
    /// a tool that makes none is not read-only.
    pub read_only: Option<bool>,
    /// Estimated cost of one call, for hooks.
    pub cost: Option<f64>,
    /// Which input fields hold the HTTP request a call makes (`http`), so
    /// that hooks see its method and path.
    pub http: Option<HttpFields>,
}

/// `[tools.<name>] http`: the top-level input fields that hold the URL and the
/// method of the HTTP request a call of the tool makes. The host reads them
/// for the hooks (the 0.2.0 request's `http`); the egress still judges the
/// request the guest actually sends.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HttpFields {
    /// The field holding the absolute URL.
    pub url: String,
    /// The field holding the method, if the tool takes one.
    pub method: Option<String>,
    /// The method when the input gives none (uppercase; default `GET`).
    pub default_method: String,
}
