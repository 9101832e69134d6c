//! A hook of the 0.1.0 `hook-plugin` world (`wit/plugin.wit`), the one every hook
//! was built against before 0.2.0 added the caller to the request. The host serves
//! both worlds; this hook is how its tests show that one built against the older
//! world still loads and judges.
//!
//! It denies a call whose tool is named in its settings (`{"deny": ["text.upper"]}`),
//! saying which session and role asked, and allows every other call.

#![cfg_attr(target_arch = "wasm32", no_std)]

extern crate alloc;

use alloc::format;
use alloc::string::String;
use alloc::vec;
use alloc::vec::Vec;

// The allocator, panic handler and `cabi_realloc` every hook links.
use glovebox_hook_rt as _;

wit_bindgen::generate!({
    path: "../../../wit",
    world: "hook-plugin",
});

use exports::glovebox::plugin::permission_hook::{Decision, Denial, Guest, Request};

struct Compat;

impl Guest for Compat {
    fn triggers() -> Vec<String> {
        vec![String::from("*")]
    }

    fn validate(settings: String, req: Request) -> Decision {
        // The settings are `{"deny": [...]}`; a tool name is quoted in them when listed.
        if settings.contains(&format!("\"{}\"", req.tool)) {
            Decision::Deny(Denial {
                reason: format!(
                    "a 0.1.0 hook denies {} (session {}, role {})",
                    req.tool, req.session, req.role
                ),
                alternatives: Vec::new(),
            })
        } else {
            Decision::Allow
        }
    }

    fn after(_settings: String, _req: Request, _ok: bool, _summary: String) {}
}

export!(Compat);
