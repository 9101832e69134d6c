//! Hostile: `grow` allocates 16 MiB chunks, touching every page and keeping them alive,
//! towards 4 GiB. Under the host's memory cap, `memory.grow` fails, the allocator
//! aborts and the call traps.

use core::hint::black_box;

use glovebox_plugin_sdk::{
    CallContext, Guest, Input, ToolError, ToolSpec, json, output, spec, unknown_tool,
};

const CHUNK: usize = 16 * 1024 * 1024;
const PAGE: usize = 64 * 1024;

struct Grow;

impl Guest for Grow {
    fn list_tools() -> Vec<ToolSpec> {
        vec![spec(
            "grow",
            "Hostile: allocates 16 MiB chunks (pages touched, kept alive) until `mib` MiB \
             (default 4096) are held or allocation fails.",
            json!({
                "type": "object",
                "properties": { "mib": { "type": "integer", "minimum": 0, "default": 4096 } },
                "additionalProperties": false
            }),
            "read:hostile:grow",
            false,
            true,
        )]
    }

    fn call(_ctx: CallContext, tool: String, input: String) -> Result<String, ToolError> {
        if tool != "grow" {
            return Err(unknown_tool(&tool, &Self::list_tools()));
        }
        let mib = Input::parse_strict(&input, &["mib"])?
            .opt_u64("mib")?
            .unwrap_or(4096);
        let chunks = mib.div_ceil(16);
        let mut held: Vec<Vec<u8>> = Vec::new();
        for _ in 0..chunks {
            // An infallible allocation: when memory.grow is refused, this aborts (traps).
            let mut chunk = vec![0u8; CHUNK];
            for page in (0..CHUNK).step_by(PAGE) {
                chunk[page] = 1;
            }
            held.push(black_box(chunk));
        }
        let allocated_mib = held.len() * 16;
        black_box(&held);
        output(&json!({ "allocated_mib": allocated_mib }))
    }
}

glovebox_plugin_sdk::export!(Grow);
