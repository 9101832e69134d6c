//! Hostile: `flood` writes `mib` MiB (default 2048) to stdout and as much to stderr, in
//! 64 KiB chunks, ignoring write errors. The host must bound what it captures.

use std::io::Write;

use glovebox_plugin_sdk::{
    CallContext, Guest, Input, ToolError, ToolSpec, json, output, spec, unknown_tool,
};

const CHUNK: usize = 64 * 1024;

struct Flood;

impl Guest for Flood {
    fn list_tools() -> Vec<ToolSpec> {
        vec![spec(
            "flood",
            "Hostile: writes `mib` MiB (default 2048) to stdout and the same to stderr, then returns {\"done\": true}.",
            json!({
                "type": "object",
                "properties": { "mib": { "type": "integer", "minimum": 0, "default": 2048 } },
                "additionalProperties": false
            }),
            "read:hostile:flood",
            false,
            true,
        )]
    }

    fn call(_ctx: CallContext, tool: String, input: String) -> Result<String, ToolError> {
        if tool != "flood" {
            return Err(unknown_tool(&tool, &Self::list_tools()));
        }
        let mib = Input::parse_strict(&input, &["mib"])?
            .opt_u64("mib")?
            .unwrap_or(2048);
        let chunks = mib.saturating_mul((1024 * 1024 / CHUNK) as u64);
        let out_chunk = vec![b'o'; CHUNK];
        let err_chunk = vec![b'e'; CHUNK];
        let mut stdout = std::io::stdout().lock();
        let mut stderr = std::io::stderr().lock();
        for _ in 0..chunks {
            let _ = stdout.write_all(&out_chunk);
            let _ = stderr.write_all(&err_chunk);
        }
        let _ = stdout.flush();
        let _ = stderr.flush();
        output(&json!({ "done": true }))
    }
}

glovebox_plugin_sdk::export!(Flood);
