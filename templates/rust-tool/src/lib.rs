//! `{{name}}`: a Glovebox tool plugin with one tool, `{{name}}.greet`, which greets
//! someone by name. Each call runs in a fresh sandboxed instance that sees only what
//! the manifest (`{{name}}.toml`) grants: here, nothing.

use glovebox_plugin_sdk::{
    CallContext, Guest, Input, ToolError, ToolSpec, invalid, json, output, spec, unknown_tool,
};

struct Plugin;

impl Guest for Plugin {
    fn list_tools() -> Vec<ToolSpec> {
        vec![spec(
            "greet",
            "Greets someone by name.",
            json!({
                "type": "object",
                "properties": { "name": { "type": "string", "description": "Who to greet." } },
                "required": ["name"],
                "additionalProperties": false
            }),
            // What the call does, as a colon path: permission hooks match on it.
            "read:greeting",
            // Destructive: no. Idempotent: yes.
            false,
            true,
        )]
    }

    fn call(ctx: CallContext, tool: String, input: String) -> Result<String, ToolError> {
        match tool.as_str() {
            "greet" => greet(&ctx, &input),
            _ => Err(unknown_tool(&tool, &Self::list_tools())),
        }
    }
}

/// `{{name}}.greet`: the host has checked the input against the schema already;
/// what a schema cannot say is checked here, with a message that names the field.
fn greet(ctx: &CallContext, input: &str) -> Result<String, ToolError> {
    let input = Input::parse(input)?;
    let name = input.str("name")?.trim();
    if name.is_empty() {
        return Err(invalid(
            "`name` is blank: give the name of someone to greet",
        ));
    }
    output(&json!({ "greeting": format!("hello, {name}"), "role": ctx.role }))
}

glovebox_plugin_sdk::export!(Plugin);
