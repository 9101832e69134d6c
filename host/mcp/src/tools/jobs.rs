//! The arguments of the background job built-ins.

use rmcp::model::JsonObject;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::sizes::*;
use super::words::{job_statuses, some_word};
use glovebox::jobs::JobStatus;
use glovebox::manifest::MAX_WAIT_IDS;
use glovebox::page::MAX_PAGE;

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

/// `job_status`, `job_cancel`.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct JobArg {
    /// The job id (`job_spawn` returns it).
    #[schemars(length(max = ID_MAX))]
    pub id: String,
}

/// `job_list`.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct ListArgs {
    /// Session id or name.
    #[schemars(length(max = SESSION_REF_MAX))]
    pub session: Option<String>,
    #[serde(default, deserialize_with = "some_word")]
    #[schemars(schema_with = "job_statuses")]
    pub status: Option<JobStatus>,
    /// Jobs in this page: 100 when absent, 500 at most.
    #[schemars(range(min = 1, max = MAX_PAGE))]
    pub limit: Option<usize>,
    /// The `next_cursor` of the previous page; absent for the first page.
    pub cursor: Option<String>,
}
