//! Hostile hook: it keeps state between evaluations, which a hook must not
//! rely on. It counts the evaluations its instance has made and remembers
//! the principals it judged, and denies every call saying both: "evaluation 2
//! of this instance; principals judged before: `alice`". With a fresh
//! instance per evaluation (the default) every reason says "evaluation 1";
//! with `reuse` above 1 the host's tests read from it that an instance never
//! serves two principals and is dropped after `reuse` evaluations.

#![cfg_attr(target_arch = "wasm32", no_std)]

extern crate alloc;

use core::cell::RefCell;

use glovebox_hook_sdk::prelude::*;

/// What the instance remembers. A component instance runs one evaluation
/// at a time, on one thread.
struct Memory(RefCell<(u32, Vec<String>)>);

// SAFETY: a wasm32 component instance has one thread.
unsafe impl Sync for Memory {}

static MEMORY: Memory = Memory(RefCell::new((0, Vec::new())));

struct State;

impl Guest for State {
    fn triggers() -> Vec<String> {
        vec!["*".to_owned()]
    }

    fn validate(_settings: String, req: Request) -> Decision {
        let mut memory = MEMORY.0.borrow_mut();
        memory.0 += 1;
        let before = match memory.1.is_empty() {
            true => "none".to_owned(),
            false => memory
                .1
                .iter()
                .map(|p| format!("`{p}`"))
                .collect::<Vec<_>>()
                .join(", "),
        };
        let reason = format!(
            "evaluation {} of this instance; principals judged before: {before}",
            memory.0
        );
        if !memory.1.contains(&req.principal) {
            memory.1.push(req.principal.clone());
        }
        Decision::Deny(Denial {
            reason,
            alternatives: Vec::new(),
        })
    }

    fn after(_settings: String, _req: Request, _ok: bool, _summary: String) {}
}

glovebox_hook_sdk::export!(State);
