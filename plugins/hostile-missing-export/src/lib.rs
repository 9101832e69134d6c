//! Hostile: exports `glovebox:plugin/tool@0.1.0` without its `call` function (see
//! wit/plugin.wit in this crate). The host must refuse it at load time, naming the
//! plugin and the missing export.

wit_bindgen::generate!({
    path: "wit",
    world: "tool-plugin",
});

use exports::glovebox::plugin::tool::Guest;
use glovebox::plugin::types::ToolSpec;

struct MissingCall;

impl Guest for MissingCall {
    fn list_tools() -> Vec<ToolSpec> {
        vec![ToolSpec {
            name: "ghost".to_owned(),
            description: "Hostile: listed, but this component has no `call` export.".to_owned(),
            input_schema: r#"{"type":"object"}"#.to_owned(),
            action: "read:hostile:ghost".to_owned(),
            destructive: false,
            idempotent: true,
        }]
    }
}

export!(MissingCall);
