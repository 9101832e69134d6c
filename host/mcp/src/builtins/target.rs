//! The session a built-in acts on, and the answer when there is none.

use rmcp::model::CallToolResult;

use crate::connection::Connection;
use crate::results;
use glovebox::Principal;

pub(super) fn not_bound(tool: &str) -> CallToolResult {
    results::failure(
        "no_session",
        format!(
            "`{tool}` needs a session: this connection is bound to none; call `session_start` or `session_resume` first"
        ),
    )
}

impl Connection {
    /// A refusal (as the tool's result) when the bound session is a child and
    /// `key` is a session outside its family and every route (see
    /// `glovebox_ledger::session::check_addressable`).
    pub(super) async fn family_guard(
        &self,
        caller: &Principal,
        key: &str,
    ) -> Option<CallToolResult> {
        let bound = self.bound().await?;
        if bound == key {
            return None;
        }
        match self
            .shared()
            .gateway
            .scope(caller)
            .check_addressable(&bound, key)
            .await
        {
            // "Not found" is the action's own answer to give.
            Ok(()) | Err(glovebox::session::SessionError::NotFound(_)) => None,
            Err(e) => Some(results::session_failure(&e)),
        }
    }

    /// The session a built-in acts on: the one it names, else the bound one.
    /// `Err` holds the answer when there is none, or when the caller's family
    /// may not reach it (see [`Self::family_guard`]).
    pub(super) async fn target(
        &self,
        caller: &Principal,
        tool: &str,
        named: Option<String>,
    ) -> Result<String, CallToolResult> {
        let Some(key) = named.or(self.bound().await) else {
            return Err(not_bound(tool));
        };
        match self.family_guard(caller, &key).await {
            Some(refused) => Err(refused),
            None => Ok(key),
        }
    }
}
