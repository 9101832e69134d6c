//! Hostile hook: `validate` loops forever (pure computation, no host call). The host's
//! deadline must stop it and deny the call, naming the hook.

#![cfg_attr(target_arch = "wasm32", no_std)]

extern crate alloc;

use glovebox_hook_sdk::prelude::*;

struct Loop;

impl Guest for Loop {
    fn triggers() -> Vec<String> {
        vec!["*".to_owned()]
    }

    fn validate(_settings: String, _req: Request) -> Decision {
        let mut n: u64 = 0;
        loop {
            n = core::hint::black_box(n.wrapping_add(1));
        }
    }

    fn after(_settings: String, _req: Request, _ok: bool, _summary: String) {}
}

glovebox_hook_sdk::export!(Loop);
