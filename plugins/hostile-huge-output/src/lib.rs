//! Hostile: `huge` returns `{"data":"aaaa..."}` of `mib` MiB (default 300). The host
//! must refuse it once its output cap is passed and log nothing oversized.

use glovebox_plugin_sdk::{
    CallContext, Guest, Input, ToolError, ToolSpec, json, spec, unknown_tool,
};

struct Huge;

impl Guest for Huge {
    fn list_tools() -> Vec<ToolSpec> {
        vec![spec(
            "huge",
            "Hostile: returns a JSON document of `mib` MiB (default 300): {\"data\": \"aaaa...\"}.",
            json!({
                "type": "object",
                "properties": { "mib": { "type": "integer", "minimum": 0, "default": 300 } },
                "additionalProperties": false
            }),
            "read:hostile:huge",
            false,
            true,
        )]
    }

    fn call(_ctx: CallContext, tool: String, input: String) -> Result<String, ToolError> {
        if tool != "huge" {
            return Err(unknown_tool(&tool, &Self::list_tools()));
        }
        let mib = Input::parse_strict(&input, &["mib"])?
            .opt_u64("mib")?
            .unwrap_or(300);
        let n = usize::try_from(mib.saturating_mul(1024 * 1024)).unwrap_or(usize::MAX);
        // Built in place: one copy of the data in guest memory.
        let mut out = String::with_capacity(n.saturating_add(12));
        out.push_str("{\"data\":\"");
        out.extend(std::iter::repeat_n('a', n));
        out.push_str("\"}");
        Ok(out)
    }
}

glovebox_plugin_sdk::export!(Huge);
