//! Glovebox: safe hands for AI agents.
//!
//! Every tool an agent calls is a WebAssembly component (WASI 0.2). Each call
//! runs in a fresh instance that reaches only what the operator granted in the
//! plugin's manifest (named directories, environment variables, HTTP hosts)
//! under a memory cap, a deadline and an output cap. This crate is the host:
//! [`Host`] loads plugins from a [`HostConfig`] and serves [`Host::call`].
//! Calls made in a session ([`Scope::call_in_session`], a caller's [`Gateway::scope`]) are written to the
//! session's append-only, hash-chained log in the data dir ([`session`],
//! [`storage`]), so a session resumes after a crash with nothing acknowledged
//! lost. Events that need a person (an approval, a flag, a budget, a job, a
//! rescue) go to the operator's `[[notify]]` webhooks through a persisted
//! outbox ([`notify`]).
//!
//! This crate is the gateway: it owns the hands (`glovebox-runtime`) and the
//! ledger (`glovebox-ledger`) together and runs the one call pipeline over
//! them. It is the embedding API, so it knows no protocol and no command line:
//! it never imports MCP (`glovebox-mcp` adapts it), an HTTP server or clap
//! (the `glovebox` binary, the root package, is a thin CLI over both).

#![forbid(unsafe_code)]

pub mod actions;
mod admission;
mod admitted;
pub mod background;
mod chain_key;
pub mod children;
mod config_file;
pub mod doctor;
mod gateway;
mod host;
mod in_session;
pub mod jobs;
mod ledger;
pub mod metrics;
mod nested;
mod nesting;
pub mod notices;
pub mod operations;
mod pipeline;
mod principals;
pub mod replay;
pub mod schedule;
mod scope;
pub mod settled;
pub mod shown;
pub mod store_admin;
pub mod stored;
pub mod sweep;
pub mod tasks;
mod tool_names;
pub mod tool_text;
pub mod trace;
pub mod triggers;
pub mod watermark;
pub mod workspaces;

/// What the operator writes: the host config and plugin manifests (the
/// `glovebox-manifest` crate).
pub use glovebox_manifest as manifest;
pub use glovebox_oci as oci;
/// Durable storage: the trait and its backends (the `glovebox-store` crate).
pub use glovebox_store as storage;

// The durable record of agent work: sessions and their logs, approvals, job
// records, budgets, the stuck-agent detector, rescues and the context index,
// the memory bank, billing (the `glovebox-ledger` crate). Its modules keep their old paths here;
// `jobs` adds the runner to the ledger's job records.
pub use glovebox_ledger::{
    approvals, billing, budget, ceilings, clock, detect, memory, page, rescue, session, spend,
};
/// Notifications: the outbox (the ledger's) and its delivery worker.
pub mod notify;
pub mod offer;

// The hands: the engine, the sandbox, loading and running tools and hooks (the
// `glovebox-runtime` crate). Its public modules keep their old paths here; the
// rest of the host names the others by their old paths too.
pub(crate) use glovebox_runtime::{bindings, call, error, plugin, runtime};
pub use glovebox_runtime::{fault_injection, hooks, scratch, signature, trust};

pub use admitted::Admitted;
pub use chain_key::read_chain_key;
pub use config_file::{load_config, load_config_blocking, pull_components};
pub use gateway::{Gateway, InFlight};
pub use glovebox_runtime::{
    CallContext, CallError, CallReport, Captured, LoadError, LoadedPlugin, Metering, ToolInfo,
    Verified, compiled_dir,
};
pub use host::Host;
pub use jobs::{
    JobError, JobErrorInfo, JobInfo, JobResult, JobStatus, JobSummary, Jobs, JobsConfig, WaitMode,
    WaitOutcome,
};
pub use ledger::{Durable, backend_of, open_sessions, open_store, store_dir};
pub use manifest::{HostConfig, Limits, PluginManifest, Principal, PrincipalKind};
pub use offer::Offer;
pub use principals::{NameTheAgent, Principals, cli_operator};
pub use scope::{ApprovalScope, JobScope, Scope};
pub use session::{SessionError, Sessions};
