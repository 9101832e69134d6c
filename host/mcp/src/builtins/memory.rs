//! What sessions know: the projects' context index and the memory bank.

use rmcp::ErrorData;
use rmcp::model::{CallToolResult, JsonObject};
use serde_json::json;

use super::parse::parse;
use super::target::not_bound;
use crate::connection::Connection;
use crate::results;
use crate::tools::{ContextSearchArgs, MemoryProposeArgs, MemorySearchArgs};
use glovebox::Principal;
use glovebox::memory::MemoryError;
use glovebox::page::PageRequest;

/// A memory bank refusal, as a tool error: its own words name the rule
/// and the fix; nothing was written.
fn memory_failure(e: &MemoryError) -> CallToolResult {
    results::failure(e.kind(), e.to_string())
}

impl Connection {
    /// `context_search`.
    pub(super) async fn context_search(
        &self,
        caller: &Principal,
        tool: &str,
        args: JsonObject,
    ) -> Result<CallToolResult, ErrorData> {
        let scope = self.shared().gateway.scope(caller);
        let a: ContextSearchArgs = parse(tool, args)?;
        let page = PageRequest {
            limit: a.limit,
            cursor: a.cursor,
        };
        Ok(
            match scope
                .context_search(&a.query, a.project.as_deref(), &page)
                .await
            {
                Ok(found) => results::ok(&serde_json::json!({
                    "entries": found.items,
                    "next_cursor": found.next_cursor,
                })),
                Err(e) => results::session_failure(&e),
            },
        )
    }

    /// `memory_propose`.
    pub(super) async fn memory_propose(
        &self,
        caller: &Principal,
        tool: &str,
        args: JsonObject,
    ) -> Result<CallToolResult, ErrorData> {
        let scope = self.shared().gateway.scope(caller);
        let a: MemoryProposeArgs = parse(tool, args)?;
        let Some(id) = self.bound().await else {
            return Ok(not_bound(tool));
        };
        Ok(match scope.memory_propose(&id, &a.scope, &a.text).await {
            Ok((entry, event)) => results::ok_value(json!({"entry": entry, "seq": event.seq})),
            Err(e) => memory_failure(&e),
        })
    }

    /// `memory_search`.
    pub(super) async fn memory_search(
        &self,
        caller: &Principal,
        tool: &str,
        args: JsonObject,
    ) -> Result<CallToolResult, ErrorData> {
        let scope = self.shared().gateway.scope(caller);
        let a: MemorySearchArgs = parse(tool, args)?;
        let Some(id) = self.bound().await else {
            return Ok(not_bound(tool));
        };
        let page = PageRequest {
            limit: Some(a.limit),
            cursor: a.cursor,
        };
        Ok(match scope.memory_search(&id, &a.query, &page).await {
            Ok((found, event)) => results::ok_value(json!({
                "entries": found.items,
                "seq": event.seq,
                "next_cursor": found.next_cursor,
            })),
            Err(e) => memory_failure(&e),
        })
    }
}
