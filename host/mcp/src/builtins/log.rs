//! What a session reads of its record: the listing of sessions and the
//! re-run of an interrupted call. (Notes and usage reports are the
//! registry's `sessions.note` and `sessions.usage`.)

use rmcp::ErrorData;
use rmcp::model::{CallToolResult, JsonObject};
use serde_json::json;

use super::parse::parse;
use crate::connection::Connection;
use crate::results::{self, bad_arguments};
use crate::tools::{RerunArgs, SessionListArgs};
use glovebox::Principal;
use glovebox::session::SessionFilter;

impl Connection {
    /// `session_list`.
    pub(super) async fn session_list(
        &self,
        caller: &Principal,
        tool: &str,
        args: JsonObject,
    ) -> Result<CallToolResult, ErrorData> {
        let scope = self.shared().gateway.scope(caller);
        let a: SessionListArgs = parse(tool, args)?;
        // The registry's rule for a page, the same on every surface.
        let page = glovebox::operations::page_request(a.limit, a.cursor)
            .map_err(|e| bad_arguments(tool, e.message))?;
        if a.children {
            let key = match self.target(caller, tool, a.session).await {
                Ok(key) => key,
                Err(answer) => return Ok(answer),
            };
            return Ok(match scope.children(&key, page).await {
                Ok(page) => results::ok_value(
                    json!({"children": page.items, "next_cursor": page.next_cursor}),
                ),
                Err(e) => results::session_failure(&e),
            });
        }
        if a.session.is_some() {
            return Err(bad_arguments(
                tool,
                "`session` names the parent whose children to list: give it with `children: true`",
            ));
        }
        let filter = SessionFilter {
            status: a.status,
            tags: a.tags,
            ..Default::default()
        };
        Ok(match scope.list_sessions(filter, page).await {
            Ok(page) => {
                results::ok_value(json!({"sessions": page.items, "next_cursor": page.next_cursor}))
            }
            Err(e) => results::session_failure(&e),
        })
    }

    /// `session_rerun`.
    pub(super) async fn session_rerun(
        &self,
        caller: &Principal,
        tool: &str,
        args: JsonObject,
    ) -> Result<CallToolResult, ErrorData> {
        let scope = self.shared().gateway.scope(caller);
        let a: RerunArgs = parse(tool, args)?;
        let key = match self.target(caller, tool, a.session).await {
            Ok(key) => key,
            Err(answer) => return Ok(answer),
        };
        Ok(match scope.rerun_interrupted(&key, &a.call_id).await {
            Ok(report) => results::report(report),
            Err(e) => results::session_failure(&e),
        })
    }
}
