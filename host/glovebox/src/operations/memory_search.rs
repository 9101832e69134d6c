//! `memory.search`: the approved entries of the memory bank in the caller's
//! scopes, best first, from the session it acts from (logged there).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::sizes::{CURSOR_MAX, QUERY_MAX, SEARCH_LIMIT_DEFAULT};
use super::{Audience, Operation, OperationError, Route, bound_session};
use crate::memory::{Ranked, SEARCH_LIMIT_MAX};
use crate::page::PageRequest;
use crate::scope::Scope;

pub struct SearchMemory;

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SearchMemoryArgs {
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

/// A page of the entries found, and where the search is in the session's log.
#[derive(Debug, Serialize, JsonSchema)]
pub struct MemoryFound {
    pub entries: Vec<Ranked>,
    /// The search's event in the session's log.
    pub seq: u64,
    /// The `cursor` of the next page; null at the end.
    pub next_cursor: Option<String>,
}

impl Operation for SearchMemory {
    const NAME: &'static str = "memory.search";
    const SUMMARY: &'static str = "Search the approved entries of the memory bank in your scopes (your projects, your user, the bound session's role), best first: most query words matched, then most hits, then newest.";
    const DESCRIPTION: &'static str = "A page at a time: `next_cursor`, when present, is the `cursor` of the next page. Needs a bound session: the search is logged there.";
    const AUDIENCE: Audience = Audience::Anyone;
    const HTTP: Option<Route> = None;
    const MCP: Option<&'static str> = Some("memory_search");
    type Args = SearchMemoryArgs;
    type Output = MemoryFound;

    async fn run(scope: Scope<'_>, args: SearchMemoryArgs) -> Result<MemoryFound, OperationError> {
        let session = bound_session::<Self>(scope)?;
        let page = PageRequest {
            limit: Some(args.limit),
            cursor: args.cursor,
        };
        let (found, event) = scope.memory_search(session, &args.query, &page).await?;
        Ok(MemoryFound {
            entries: found.items,
            seq: event.seq,
            next_cursor: found.next_cursor,
        })
    }
}
