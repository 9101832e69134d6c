//! Hostile: exports `wizer-initialize` (world `preinit-tool-plugin`), so the host runs
//! it once at load with no grants, and misbehaves there: it looks for a granted
//! directory or an environment variable (there are none at initialization), then
//! panics with a message naming what it wanted. The host must refuse to load it, say
//! why (with that message), and never snapshot it. Its tool is never reached.

use glovebox_plugin_sdk::{CallContext, ToolError, ToolSpec, json, spec};

mod bindings {
    wit_bindgen::generate!({
        path: "../../wit",
        world: "preinit-tool-plugin",
        with: { "glovebox:plugin/types@0.1.0": glovebox_plugin_sdk::glovebox::plugin::types },
    });
}

struct PreInit;

impl bindings::Guest for PreInit {
    fn wizer_initialize() {
        // Initialization runs with no grants: no files, no environment.
        let home = std::env::var("HOME").ok();
        let root = std::fs::read_dir("/").ok().map(|d| d.count());
        panic!(
            "hostile-preinit: wanted a config file at initialization, found HOME={home:?}, / entries={root:?}"
        );
    }
}

impl bindings::exports::glovebox::plugin::tool::Guest for PreInit {
    fn list_tools() -> Vec<ToolSpec> {
        vec![spec(
            "never",
            "Hostile: never loads.",
            json!({ "type": "object" }),
            "read:hostile:never",
            false,
            true,
        )]
    }

    fn call(_ctx: CallContext, _tool: String, _input: String) -> Result<String, ToolError> {
        Ok("{}".to_string())
    }
}

bindings::export!(PreInit with_types_in bindings);
