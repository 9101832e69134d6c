//! The arguments of the background job built-ins.

use rmcp::model::JsonObject;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;

use super::sizes::*;

/// `job_spawn`.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct SpawnArgs {
    /// A tool of tools/list, as `plugin.tool`.
    #[schemars(length(max = ID_MAX))]
    pub tool: String,
    /// The tool's input; it must fit the tool's schema.
    // Any JSON here, so that a non-object gets its own error.
    #[schemars(with = "JsonObject")]
    pub input: Value,
}
