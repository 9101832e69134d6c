//! Hostile: unbounded, non-tail recursion. Must end in a stack-overflow trap, not a
//! crash of the host.
//!
//! - `recurse` uses small frames, so it exhausts the *wasm* call stack (Wasmtime's
//!   `max_wasm_stack`): trap "call stack exhausted".
//! - `recurse-big-frames` keeps a 4 KiB array per frame on the shadow stack in linear
//!   memory, so it runs off the bottom of the 1 MiB shadow stack: an out-of-bounds
//!   memory access trap.

use core::hint::black_box;

use glovebox_plugin_sdk::{CallContext, Guest, ToolError, ToolSpec, json, spec, unknown_tool};

struct Recursion;

impl Guest for Recursion {
    fn list_tools() -> Vec<ToolSpec> {
        vec![
            spec(
                "recurse",
                "Hostile: recurses without bound (small frames: exhausts the wasm call stack).",
                json!({ "type": "object" }),
                "read:hostile:recurse",
                false,
                true,
            ),
            spec(
                "recurse-big-frames",
                "Hostile: recurses without bound with 4 KiB per frame (exhausts the shadow stack in linear memory).",
                json!({ "type": "object" }),
                "read:hostile:recurse",
                false,
                true,
            ),
        ]
    }

    fn call(_ctx: CallContext, tool: String, _input: String) -> Result<String, ToolError> {
        let depth = match tool.as_str() {
            "recurse" => small_frames(black_box(0)),
            "recurse-big-frames" => big_frames(black_box(0)),
            _ => return Err(unknown_tool(&tool, &Self::list_tools())),
        };
        Ok(json!({ "depth": depth }).to_string())
    }
}

#[inline(never)]
fn small_frames(depth: u64) -> u64 {
    // Never true, but the compiler cannot know: keeps the recursion "conditional".
    if black_box(depth == u64::MAX) {
        return depth;
    }
    // Not a tail call: the result is used after the call returns.
    small_frames(black_box(depth + 1)).wrapping_mul(3) ^ depth
}

#[inline(never)]
fn big_frames(depth: u64) -> u64 {
    if black_box(depth == u64::MAX) {
        return depth;
    }
    let mut frame = [0u8; 4096];
    frame[(depth % 4096) as usize] = depth as u8;
    let frame = black_box(frame);
    big_frames(black_box(depth + 1)).wrapping_add(u64::from(frame[(depth % 4096) as usize]))
}

glovebox_plugin_sdk::export!(Recursion);
