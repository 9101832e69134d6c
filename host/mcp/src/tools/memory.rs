//! The arguments of what sessions know: the projects' context index and
//! the memory bank.

use schemars::JsonSchema;
use serde::Deserialize;

use super::sizes::*;
use glovebox::memory::SEARCH_LIMIT_MAX;
use glovebox::page::MAX_PAGE;

/// `context_search`.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct ContextSearchArgs {
    /// Words that must all appear (case-insensitive).
    #[schemars(length(max = QUERY_MAX))]
    pub query: String,
    /// Only this project (one you may touch).
    #[schemars(length(max = PROJECT_MAX))]
    pub project: Option<String>,
    /// Entries in this page (the latest added first): 100 when absent,
    /// 500 at most.
    #[schemars(range(min = 1, max = MAX_PAGE))]
    pub limit: Option<usize>,
    /// The `next_cursor` of the previous page of the same search.
    #[serde(default)]
    #[schemars(length(max = CURSOR_MAX))]
    pub cursor: Option<String>,
}

/// `memory_propose`.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct MemoryProposeArgs {
    /// `project`, `user` or `role` (the bound session's project, your
    /// principal, the session's role), or in full: `project:NAME` (a project
    /// you may touch), `user:YOU`, `role:ROLE` (the session's).
    #[schemars(length(max = SCOPE_MAX))]
    pub scope: String,
    /// The entry; at most `[memory] max_entry_bytes` (4 KiB by default).
    #[schemars(length(min = 1, max = MEMORY_TEXT_MAX))]
    pub text: String,
}

/// `memory_search`.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct MemorySearchArgs {
    /// Words to look for (any case).
    #[schemars(length(max = QUERY_MAX))]
    pub query: String,
    #[serde(default = "search_limit_default")]
    #[schemars(range(min = 1, max = SEARCH_LIMIT_MAX))]
    pub limit: usize,
    /// The `next_cursor` of the previous page of the same query, for the
    /// entries ranked after it.
    #[serde(default)]
    #[schemars(length(max = CURSOR_MAX))]
    pub cursor: Option<String>,
}

fn search_limit_default() -> usize {
    SEARCH_LIMIT_DEFAULT
}
