//! Calling the session's other tools from inside a call ("code mode"), over the
//! `tools` import of `wit/plugin.wit`. Behind the feature `tools`: a plugin built
//! with it imports the interface, and the host lets its calls through only when the
//! operator sets `limits.nested_calls` in its manifest (otherwise each fails with the
//! kind `nested_limit`, naming that key).
//!
//! ```ignore
//! use glovebox_plugin_sdk::{json, tools};
//!
//! let upper = tools::call("text.upper", &json!({ "text": "hi" }))?;
//! match tools::call("files.write", &json!({ "path": "/data/x", "content": "x" })) {
//!     Err(e) if e.is_denied() => { /* e.message, e.alternatives */ }
//!     Err(e) if e.approval_id.is_some() => { /* a human must approve it first */ }
//!     other => { other?; }
//! }
//! ```
//!
//! Each call is a call of the session that made this one: admitted, checked against
//! the tool's schema, judged by the hooks with the session's role, budgeted and logged
//! with a link to this call.

use crate::{Value, failed};

/// The `tools` import alone: a world of this crate's own that imports it, so a
/// plugin built without the feature imports nothing more.
mod bindings {
    wit_bindgen::generate!({
        inline: "package glovebox:sdk-tools;\nworld tools-import { import glovebox:plugin/tools@0.1.0; }",
        path: "../../wit",
        world: "tools-import",
        generate_all,
    });
}

use bindings::glovebox::plugin::tools as host;
pub use bindings::glovebox::plugin::tools::{CallFailure, OfferedTool};

impl CallFailure {
    /// A hook or the session's budget refused the call.
    pub fn is_denied(&self) -> bool {
        self.kind == "denied" || self.kind == "budget"
    }
}

impl From<CallFailure> for crate::ToolError {
    /// The failure of a nested call as this call's own failure.
    fn from(e: CallFailure) -> Self {
        failed(format!("{} ({})", e.message, e.kind))
    }
}

/// Calls `tool` (`plugin.tool`) with `input` and returns its JSON result.
pub fn call(tool: &str, input: &Value) -> Result<Value, CallFailure> {
    let result = call_text(tool, &input.to_string())?;
    serde_json::from_str(&result).map_err(|e| CallFailure {
        kind: "tool_failed".into(),
        message: format!("`{tool}` returned something that is not JSON: {e}"),
        alternatives: Vec::new(),
        approval_id: None,
    })
}

/// Calls `tool` with `input` as JSON text; its result as JSON text.
pub fn call_text(tool: &str, input: &str) -> Result<String, CallFailure> {
    host::call(tool, input)
}

/// The tools this session may call now, with their schemas (JSON text).
pub fn list() -> Vec<OfferedTool> {
    host::list_tools()
}
