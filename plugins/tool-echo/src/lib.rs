//! `echo`: returns its input unchanged. The simplest useful tool plugin, and the one the
//! host's tests use to check the happy path end to end.

use glovebox_plugin_sdk::{
    CallContext, Guest, Input, ToolError, ToolSpec, json, spec, unknown_tool,
};

struct Echo;

impl Guest for Echo {
    fn list_tools() -> Vec<ToolSpec> {
        vec![spec(
            "echo",
            "Returns its input unchanged. Useful to check that tool calls work.",
            json!({
                "type": "object",
                "properties": {
                    "message": { "type": "string", "description": "Any text to echo back." }
                },
                "additionalProperties": true
            }),
            "read:echo",
            false,
            true,
        )]
    }

    fn call(_ctx: CallContext, tool: String, input: String) -> Result<String, ToolError> {
        if tool != "echo" {
            return Err(unknown_tool(&tool, &Self::list_tools()));
        }
        let parsed = Input::parse(&input)?;
        // Validate the documented field, then hand back the caller's exact text (key
        // order and formatting included).
        parsed.opt_str("message")?;
        Ok(input)
    }
}

glovebox_plugin_sdk::export!(Echo);
