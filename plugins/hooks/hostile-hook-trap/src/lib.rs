//! Hostile hook: `validate` panics, which traps (the SDK's panic handler is
//! `unreachable`). The host must deny the call, naming the hook.

#![cfg_attr(target_arch = "wasm32", no_std)]

extern crate alloc;

use glovebox_hook_sdk::prelude::*;

struct Trap;

impl Guest for Trap {
    fn triggers() -> Vec<String> {
        vec!["*".to_owned()]
    }

    fn validate(_settings: String, _req: Request) -> Decision {
        panic!("hostile hook panicked on purpose")
    }

    fn after(_settings: String, _req: Request, _ok: bool, _summary: String) {}
}

glovebox_hook_sdk::export!(Trap);
