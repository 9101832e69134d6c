//! Hostile: `panic` panics. On wasm a panic aborts: the call traps (after the panic
//! message goes to stderr). The host must fail that call and keep serving.

use glovebox_plugin_sdk::{CallContext, Guest, ToolError, ToolSpec, json, spec, unknown_tool};

struct Panic;

impl Guest for Panic {
    fn list_tools() -> Vec<ToolSpec> {
        vec![spec(
            "panic",
            "Hostile: panics on purpose.",
            json!({ "type": "object" }),
            "read:hostile:panic",
            false,
            true,
        )]
    }

    fn call(_ctx: CallContext, tool: String, _input: String) -> Result<String, ToolError> {
        if tool != "panic" {
            return Err(unknown_tool(&tool, &Self::list_tools()));
        }
        panic!("hostile plugin panicked on purpose")
    }
}

glovebox_plugin_sdk::export!(Panic);
