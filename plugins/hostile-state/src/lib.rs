//! Hostile: `count` increments a static counter and returns it. Every call runs in a
//! fresh instance, so the host must always answer `{"count": 1}`; anything else means
//! state leaked from one call to the next.

use std::sync::atomic::{AtomicU64, Ordering};

use glovebox_plugin_sdk::{
    CallContext, Guest, ToolError, ToolSpec, json, output, spec, unknown_tool,
};

static COUNTER: AtomicU64 = AtomicU64::new(0);

struct State;

impl Guest for State {
    fn list_tools() -> Vec<ToolSpec> {
        vec![spec(
            "count",
            "Hostile: counts calls in a static variable and returns {\"count\": n}.",
            json!({ "type": "object" }),
            "read:hostile:count",
            false,
            false,
        )]
    }

    fn call(_ctx: CallContext, tool: String, _input: String) -> Result<String, ToolError> {
        if tool != "count" {
            return Err(unknown_tool(&tool, &Self::list_tools()));
        }
        let count = COUNTER.fetch_add(1, Ordering::SeqCst) + 1;
        output(&json!({ "count": count }))
    }
}

glovebox_plugin_sdk::export!(State);
