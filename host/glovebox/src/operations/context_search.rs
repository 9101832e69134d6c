//! `context.search`: the projects' context index, searched by word.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::sizes::{CURSOR_MAX, PROJECT_MAX, QUERY_MAX};
use super::{Audience, Operation, OperationError, Route};
use crate::page::{MAX_PAGE, PageRequest};
use crate::rescue::IndexEntry;
use crate::scope::Scope;

pub struct SearchContext;

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SearchContextArgs {
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

/// A page of the index's entries.
#[derive(Debug, Serialize, JsonSchema)]
pub struct ContextFound {
    pub entries: Vec<IndexEntry>,
    /// The `cursor` of the next page; null at the end.
    pub next_cursor: Option<String>,
}

impl Operation for SearchContext {
    const NAME: &'static str = "context.search";
    const SUMMARY: &'static str = "Search the projects' context index (what sessions of a project start with: rules, decisions, lessons from rescues): the live entries with every word of `query`, in `project` or in every project you may touch.";
    const DESCRIPTION: &'static str = "A project the caller may not touch is refused; entries of such projects are left out of a page (its cursor still goes on past them).";
    const AUDIENCE: Audience = Audience::Anyone;
    const HTTP: Option<Route> = Some(Route::get("/context"));
    const MCP: Option<&'static str> = Some("context_search");
    type Args = SearchContextArgs;
    type Output = ContextFound;

    async fn run(
        scope: Scope<'_>,
        args: SearchContextArgs,
    ) -> Result<ContextFound, OperationError> {
        let page = PageRequest {
            limit: args.limit,
            cursor: args.cursor,
        };
        let found = scope
            .context_search(&args.query, args.project.as_deref(), &page)
            .await?;
        Ok(ContextFound {
            entries: found.items,
            next_cursor: found.next_cursor,
        })
    }
}
