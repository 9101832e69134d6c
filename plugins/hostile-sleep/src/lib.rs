//! Hostile: `sleep` blocks inside a host call (a monotonic-clock pollable) for an hour.
//! The host must cancel it at the call's deadline even though no guest code runs.

use glovebox_plugin_sdk::{
    CallContext, Guest, Input, ToolError, ToolSpec, json, output, spec, unknown_tool,
};
use wasip2::clocks::monotonic_clock;

struct Sleep;

impl Guest for Sleep {
    fn list_tools() -> Vec<ToolSpec> {
        vec![spec(
            "sleep",
            "Hostile: blocks in wasi:io/poll on a monotonic-clock timer (default 3600 seconds).",
            json!({
                "type": "object",
                "properties": { "seconds": { "type": "integer", "minimum": 0, "default": 3600 } },
                "additionalProperties": false
            }),
            "read:hostile:sleep",
            false,
            true,
        )]
    }

    fn call(_ctx: CallContext, tool: String, input: String) -> Result<String, ToolError> {
        if tool != "sleep" {
            return Err(unknown_tool(&tool, &Self::list_tools()));
        }
        let seconds = Input::parse_strict(&input, &["seconds"])?
            .opt_u64("seconds")?
            .unwrap_or(3600);
        let nanos = seconds.saturating_mul(1_000_000_000);
        monotonic_clock::subscribe_duration(nanos).block();
        output(&json!({ "slept_seconds": seconds }))
    }
}

glovebox_plugin_sdk::export!(Sleep);
