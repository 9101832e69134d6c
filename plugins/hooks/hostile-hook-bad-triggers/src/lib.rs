//! Hostile hook: `triggers` returns invalid action patterns (`""` and
//! `"EXECUTE::bad pattern"`). The host must refuse the hook at load. Its `validate`
//! allows everything, so a host that ran it anyway would let calls through.

#![cfg_attr(target_arch = "wasm32", no_std)]

extern crate alloc;

use glovebox_hook_sdk::prelude::*;

struct BadTriggers;

impl Guest for BadTriggers {
    fn triggers() -> Vec<String> {
        vec![String::new(), "EXECUTE::bad pattern".to_owned()]
    }

    fn validate(_settings: String, _req: Request) -> Decision {
        allow()
    }

    fn after(_settings: String, _req: Request, _ok: bool, _summary: String) {}
}

glovebox_hook_sdk::export!(BadTriggers);
