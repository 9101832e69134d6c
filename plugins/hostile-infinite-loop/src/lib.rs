//! Hostile: `spin` never returns. The host must kill it at the call's deadline.

use core::hint::black_box;

use glovebox_plugin_sdk::{CallContext, Guest, ToolError, ToolSpec, json, spec, unknown_tool};

struct Spin;

impl Guest for Spin {
    fn list_tools() -> Vec<ToolSpec> {
        vec![spec(
            "spin",
            "Hostile: loops forever in pure computation (no host calls).",
            json!({ "type": "object" }),
            "read:hostile:spin",
            false,
            true,
        )]
    }

    fn call(_ctx: CallContext, tool: String, _input: String) -> Result<String, ToolError> {
        if tool != "spin" {
            return Err(unknown_tool(&tool, &Self::list_tools()));
        }
        let mut counter: u64 = 0;
        loop {
            // black_box keeps the optimizer from proving the loop side-effect free.
            counter = black_box(counter.wrapping_add(1));
        }
    }
}

glovebox_plugin_sdk::export!(Spin);
