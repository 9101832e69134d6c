//! Hostile hook: `validate` returns a malformed answer: a deny with an empty reason and
//! 10,000 alternatives (`alternative 0` ... `alternative 9999`). The host must treat it
//! as a fault and deny, with the cause in the reason, rather than pass it on.

#![cfg_attr(target_arch = "wasm32", no_std)]

extern crate alloc;

use glovebox_hook_sdk::prelude::*;

/// How many alternatives the deny carries.
const ALTERNATIVES: usize = 10_000;

struct Malformed;

impl Guest for Malformed {
    fn triggers() -> Vec<String> {
        vec!["*".to_owned()]
    }

    fn validate(_settings: String, _req: Request) -> Decision {
        deny(
            String::new(),
            (0..ALTERNATIVES).map(|i| format!("alternative {i}")),
        )
    }

    fn after(_settings: String, _req: Request, _ok: bool, _summary: String) {}
}

glovebox_hook_sdk::export!(Malformed);
