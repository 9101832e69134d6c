//! Hostile: `env` dumps every environment variable and argument the plugin can see. A
//! tool must see only the variables its manifest names, never the host's environment.

use glovebox_plugin_sdk::{
    CallContext, Guest, Map, ToolError, ToolSpec, Value, json, output, spec, unknown_tool,
};

struct Env;

impl Guest for Env {
    fn list_tools() -> Vec<ToolSpec> {
        vec![spec(
            "env",
            "Hostile: returns {\"vars\": {name: value}, \"args\": [...]} for everything visible.",
            json!({ "type": "object" }),
            "read:hostile:env",
            false,
            true,
        )]
    }

    fn call(_ctx: CallContext, tool: String, _input: String) -> Result<String, ToolError> {
        if tool != "env" {
            return Err(unknown_tool(&tool, &Self::list_tools()));
        }
        let vars: Map<String, Value> = std::env::vars_os()
            .map(|(k, v)| {
                (
                    k.to_string_lossy().into_owned(),
                    Value::String(v.to_string_lossy().into_owned()),
                )
            })
            .collect();
        let args: Vec<String> = std::env::args_os()
            .map(|a| a.to_string_lossy().into_owned())
            .collect();
        output(&json!({ "vars": vars, "args": args }))
    }
}

glovebox_plugin_sdk::export!(Env);
