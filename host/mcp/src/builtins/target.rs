//! The session a built-in acts on, and the answer when there is none.

use rmcp::model::CallToolResult;

use crate::connection::Connection;
use crate::results;
use glovebox::Principal;

impl Connection {
    /// The answer of a built-in that needs a session when the request has
    /// none: bound to the connection (2025-11-25), or named in its `_meta`
    /// (2026-07-28, see `stateless.rs`).
    pub(super) fn not_bound(&self, tool: &str) -> CallToolResult {
        let message = if self.state.stateless {
            format!(
                "`{tool}` needs a session: this request names none; under MCP 2026-07-28 name it in the request's `_meta` as `{}` (an id, or a name of yours: your default session is `{}`)",
                crate::stateless::SESSION_META,
                crate::stateless::DEFAULT_NAME
            )
        } else {
            format!(
                "`{tool}` needs a session: this connection is bound to none; call `session_start` or `session_resume` first"
            )
        };
        results::failure("no_session", message)
    }

    /// A refusal (as the tool's result) when the bound session is a child and
    /// `key` is a session outside its family and every route: the caller's
    /// scope decides (`Scope::reach`).
    pub(super) async fn family_guard(
        &self,
        caller: &Principal,
        key: &str,
    ) -> Option<CallToolResult> {
        let bound = self.bound().await;
        let scope = self.shared().gateway.scope(caller);
        let refused = scope.acting_from(bound.as_deref()).reach(key).await.err()?;
        Some(results::session_failure(&refused))
    }

    /// The session a built-in acts on: the one it names, else the bound one
    /// (`Scope::target`). `Err` holds the answer when there is none, or when
    /// the caller's family may not reach it.
    pub(super) async fn target(
        &self,
        caller: &Principal,
        tool: &str,
        named: Option<String>,
    ) -> Result<String, CallToolResult> {
        let bound = self.bound().await;
        let scope = self.shared().gateway.scope(caller);
        match scope.acting_from(bound.as_deref()).target(named).await {
            Ok(Some(key)) => Ok(key),
            Ok(None) => Err(self.not_bound(tool)),
            Err(refused) => Err(results::session_failure(&refused)),
        }
    }
}
