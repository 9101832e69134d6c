//! Test a Glovebox plugin from your own tests: a tool or permission-hook
//! component, given the grants, limits, session and hooks an operator would
//! give it, called from `cargo test`, with the JSON result or the typed error
//! to assert on.
//!
//! ```no_run
//! use glovebox_test::{Access, CallLimits, Expect, Harness, Role};
//! use serde_json::json;
//! use std::time::Duration;
//!
//! let files = Harness::new("target/wasm32-wasip2/release/my_tool.wasm")
//!     .grant_dir("tests/fixtures", "/data", Access::ReadOnly)
//!     .limits(CallLimits::new().deadline(Duration::from_secs(2)))
//!     .session(Role::Workagent);
//! let out = files.call("read", json!({"path": "/data/a.txt"})).unwrap();
//! assert_eq!(out["content"], "hello\n");
//! files.call("read", json!({"path": "/etc/passwd"})).expect_kind("tool_failed");
//! ```
//!
//! Why the real host and not a mock: what a plugin author needs to know is
//! what the operator's host will do with the component, and every part of
//! that lives in the host. So a [`Harness`] writes the plugin manifest and
//! host config an operator would write for what it was told (a
//! `[[fs]]` grant per [`Harness::grant_dir`], `env`, `[limits]`, `[[hook]]`s),
//! reads them back with the manifest crate's own loader (the same validation:
//! a grant an operator could not write is refused here too), opens the host
//! on them (`glovebox::Gateway`: the runtime, the sandbox, the hook chain, the
//! session log in a data dir of the harness's own) and makes each call
//! through the one call pipeline `glovebox call` uses. Nothing is stubbed.
//!
//! The harness is synchronous and owns its async runtime: call it from plain
//! `#[test]` functions, not from inside another runtime (`#[tokio::test]`).
//!
//! [`cases`] runs a file of cases (a tool, an input, the output fragment or
//! error kind expected) on a harness: `glovebox plugin test --cases`.

#![forbid(unsafe_code)]

pub mod cases;
mod config;
mod decision;
mod expect;
mod harness;
mod limits;
mod matching;

pub use decision::{Decision, HookCall};
pub use expect::{Denial, Expect, assert_denied};
pub use harness::Harness;
pub use limits::CallLimits;
pub use matching::{Mismatch, subset};

/// How a granted directory may be used (`access` of a manifest's `[[fs]]`).
pub use glovebox::manifest::Access;
/// The part a session plays (`session start --role`); hooks see it.
pub use glovebox::session::Role;
/// The typed error of a call, and the whole report of one (output,
/// metering, captured stdout and stderr).
pub use glovebox::{CallError, CallReport};
