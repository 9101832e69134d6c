//! Hostile hook: `validate` allows, `after` fails. By default `after` traps; with the
//! settings `{"after": "loop"}` it loops forever instead, until the host's deadline.
//! Either way the failure must be logged and change nothing: the call keeps its outcome.

#![cfg_attr(target_arch = "wasm32", no_std)]

extern crate alloc;

use glovebox_hook_sdk::prelude::*;

struct SlowAfter;

impl Guest for SlowAfter {
    fn triggers() -> Vec<String> {
        vec!["*".to_owned()]
    }

    fn validate(_settings: String, _req: Request) -> Decision {
        allow()
    }

    fn after(settings: String, _req: Request, _ok: bool, _summary: String) {
        let wants_loop = Settings::parse(&settings, &["after"])
            .ok()
            .and_then(|s| s.opt_str("after").ok().flatten().map(|m| m == "loop"))
            .unwrap_or(false);
        if wants_loop {
            let mut n: u64 = 0;
            loop {
                n = core::hint::black_box(n.wrapping_add(1));
            }
        }
        panic!("hostile hook's after() panicked on purpose")
    }
}

glovebox_hook_sdk::export!(SlowAfter);
