//! Shared glue for Glovebox permission hooks written in Rust, without `std`.
//!
//! A hook runs with no capabilities at all: its component may import nothing but
//! `wasi:clocks/*` and `wasi:random/*`. Rust's `std` on wasm32-wasip2 imports wasi:cli,
//! wasi:io and wasi:filesystem, so a hook is `#![no_std]`. This crate supplies what such a
//! component needs:
//!
//! - the bindings for the 0.2.0 `hook-plugin` world (`wit/v0.2/plugin.wit`: the request
//!   names the calling principal and the session's project), generated once: a hook
//!   implements [`Guest`] and exports it with [`export!`](crate::export);
//! - on wasm32, through `glovebox-hook-rt`, a global allocator (a bump arena in the
//!   initial memory, then dlmalloc over `memory.grow`: see that crate for why) and a
//!   panic handler that traps, which the host turns into a deny (hooks fail closed);
//! - [`Settings`] for the operator's JSON settings, with errors that name the bad key;
//! - [`allow`], [`deny`], [`ask`] and [`invalid_settings`] to build decisions;
//! - [`pattern`]: tool-name patterns (`files.*`, `files.read`, `*`).
//!
//! ```ignore
//! #![cfg_attr(target_arch = "wasm32", no_std)] // std natively, for unit tests
//! extern crate alloc;
//! use glovebox_hook_sdk::prelude::*;
//!
//! struct Hook;
//! impl Guest for Hook {
//!     fn triggers() -> Vec<String> { vec!["*".into()] }
//!     fn validate(settings: String, req: Request) -> Decision { allow() }
//!     fn after(_: String, _: Request, _: bool, _: String) {}
//! }
//! glovebox_hook_sdk::export!(Hook);
//! ```
//!
//! Unit tests of a hook's logic run natively:
//! `cargo test -p NAME --target x86_64-unknown-linux-gnu` (your host triple).

#![no_std]

extern crate alloc;

wit_bindgen::generate!({
    path: "../../../wit/v0.2",
    world: "hook-plugin",
    pub_export_macro: true,
    default_bindings_module: "glovebox_hook_sdk",
    additional_derives: [PartialEq],
});

pub mod path;
pub mod pattern;
mod settings;
pub mod testing;

// The allocator, panic handler and `cabi_realloc` every hook links.
use glovebox_hook_rt as _;

pub use exports::glovebox::plugin::permission_hook::{
    Decision, Denial, Guest, HttpRequest, Request,
};
pub use serde_json::{self, Map, Value};
pub use settings::{Settings, kind_of, strings};

use alloc::string::String;
use alloc::vec::Vec;

/// Everything a hook usually needs, including the `alloc` names `std` would give.
pub mod prelude {
    pub use crate::{
        Decision, Denial, Guest, Map, Request, Settings, Value, allow, ask, deny, invalid_settings,
        kind_of, path, pattern, serde_json, strings,
    };
    pub use alloc::borrow::ToOwned;
    pub use alloc::format;
    pub use alloc::string::{String, ToString};
    pub use alloc::vec;
    pub use alloc::vec::Vec;
}

/// `decision::allow`.
pub fn allow() -> Decision {
    Decision::Allow
}

/// `decision::deny`: the reason and the safer alternatives the agent may try instead.
pub fn deny<I, S>(reason: impl Into<String>, alternatives: I) -> Decision
where
    I: IntoIterator<Item = S>,
    S: Into<String>,
{
    Decision::Deny(Denial {
        reason: reason.into(),
        alternatives: alternatives.into_iter().map(Into::into).collect::<Vec<_>>(),
    })
}

/// `decision::ask`: pause the session until a human approves or denies; `reason` says
/// what the human is asked to approve.
pub fn ask(reason: impl Into<String>) -> Decision {
    Decision::Ask(reason.into())
}

/// The deny for settings this hook cannot use: a hook fails closed rather than guess.
/// `problem` names the bad key (see [`Settings`]).
pub fn invalid_settings(problem: &str) -> Decision {
    deny(
        alloc::format!("invalid hook settings: {problem}"),
        ["ask the operator to fix this hook's settings in the host config"],
    )
}
