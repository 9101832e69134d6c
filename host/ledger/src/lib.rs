//! The ledger: the durable record of agent work.
//!
//! This crate owns what Glovebox keeps of the work agents do, and the rules that
//! record obeys: sessions and their append-only, hash-chained logs, checkpoints
//! and recovery ([`session`]), pending approvals ([`approvals`]), background
//! jobs' records ([`jobs`]), budgets and their caps ([`budget`]), the spend
//! tallies across sessions kept in the store ([`spend`]) and what sessions
//! do at a ceiling ([`ceilings`]), the stuck-agent
//! detector and the escalation ladder ([`detect`]), rescues and the projects'
//! context index ([`rescue`]), billing reports over the logs ([`billing`]), and
//! the notifications the operator's `[[notify]]` targets get, derived from
//! appended events and kept in a persisted outbox ([`notify`]), and the
//! governed memory bank agents propose to and operators review ([`memory`]).
//! Every listing answers a [`page`] at a time.
//! Everything here is synchronous and goes through the storage trait
//! (`glovebox_store::Storage`); async callers run it with `spawn_blocking`.
//!
//! The host (`glovebox`) sits on top and re-exports these modules at their old
//! paths (`glovebox::session`, `glovebox::jobs`, ...); it runs the calls and
//! hands the ledger what to record. This crate depends on `glovebox-manifest`
//! (the config and its value types) and `glovebox-store` (the trait) only, among
//! the glovebox crates. It must never import wasmtime or anything else that runs
//! components, the runtime (`glovebox-runtime`), the MCP adapter, an async
//! runtime, or a specific storage engine (sled, rusqlite: the store's backends
//! are the host's choice), so the record can be read, checked and tested without
//! an engine. `tests/all/architecture.rs` (in the workspace root) fails if such an
//! edge appears.
//!
//! Time comes from one clock ([`clock`]), injectable for tests.
//!
//! Inside, the modules depend one way: the value types the session state holds
//! (`values`: budget state, escalation steps, context entries), the context
//! index's records, the memory bank's records (`memory/records.rs`), the
//! approvals' records (`approvals/records.rs`), the places counted per
//! principal (`tally`) and the spend tallies ([`spend`], which the sessions
//! charge) sit at the bottom; [`session`] builds on them; [`budget`],
//! [`ceilings`], [`detect`],
//! [`rescue`], [`billing`], [`approvals`], [`jobs`] and the memory bank's
//! operations ([`memory`]) build on [`session`], never the other way.

#![forbid(unsafe_code)]

pub mod approvals;
pub mod billing;
pub mod budget;
pub mod ceilings;
pub mod clock;
mod context_index;
pub mod detect;
pub mod jobs;
pub mod memory;
mod newest;
pub mod notify;
pub mod page;
pub mod rescue;
#[cfg(all(test, feature = "schemars"))]
mod schema_truth;
pub mod session;
pub mod spend;
mod tally;
mod values;

// The config and the storage trait, under the names the modules of this crate
// use for them.
use glovebox_manifest as manifest;
use glovebox_store as storage;
