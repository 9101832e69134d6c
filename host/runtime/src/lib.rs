//! The hands: every tool call and every permission-hook evaluation runs here, in
//! a fresh, capability-restricted instance of a WebAssembly component (WASI 0.2),
//! under limits (memory, deadline, fuel, output), and ends as a typed outcome.
//!
//! This crate owns the wasmtime engine and its epoch ticker ([`Runtime`]), the
//! `bindgen!` bindings of `wit/plugin.wit` ([`bindings`]), loading tool plugins
//! ([`load_plugin`], with pre-initialization of components that export
//! `wizer-initialize`) and running them ([`call`]), permission hooks ([`hooks`]),
//! per-session scratch directories ([`scratch`]) and the errors of loading and
//! calling ([`CallError`], [`LoadError`]). An instance reaches only what the
//! operator granted in the plugin's manifest: the single place that grants
//! ambient authority (directories, environment variables, HTTP hosts, stdio) is
//! the [`sandbox`] module; hooks get clocks and random only.
//!
//! The host (`glovebox`) sits on top and re-exports what it needs; this crate
//! depends on `glovebox-manifest` only, among the glovebox crates. It must never
//! import any storage engine (sled, rusqlite), `glovebox-store`, the session log
//! or ledger, or the MCP adapter: what a call did is recorded by the host, above
//! it, so the hands stay testable and reusable without a data dir.
//! `tests/all/architecture.rs` (in the workspace root) fails if such an edge
//! appears.

pub mod bindings;
mod cache_file;
pub mod call;
mod component_file;
pub mod error;
pub mod fault_injection;
pub mod hooks;
pub mod plugin;
mod preinit;
pub mod private_dir;
pub mod runtime;
pub mod sandbox;
pub mod scratch;
pub mod signature;
pub mod trust;

// The operator's config, under the name the modules of this crate use for it.
use glovebox_manifest as manifest;

pub use call::{CallContext, CallReport, Metering, Verified};
pub use error::{CallError, CompileError, LoadError};
pub use plugin::{LoadedPlugin, ToolInfo, load_plugin};
pub use runtime::{Runtime, compiled_dir};
pub use sandbox::capture::Captured;
