//! The arguments of the background job built-ins.

use rmcp::model::JsonObject;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::sizes::*;

use glovebox::manifest::MAX_WAIT_IDS;

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

/// `job_wait`.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct WaitArgs {
    #[schemars(length(min = 1, max = MAX_WAIT_IDS), inner(length(max = ID_MAX)))]
    pub ids: Vec<String>,
    #[serde(default)]
    pub mode: WaitFor,
    #[schemars(range(max = JOB_WAIT_MAX_MS))]
    pub timeout_ms: Option<u64>,
}

/// What `job_wait` waits for: every job, or the first to end.
#[derive(Clone, Copy, Default, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub(crate) enum WaitFor {
    #[default]
    All,
    First,
}
