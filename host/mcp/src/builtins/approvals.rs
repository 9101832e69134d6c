//! The built-ins that give or read a settlement: a judge's
//! `session_verdict` and `approval_status`.

use rmcp::ErrorData;
use rmcp::model::{CallToolResult, JsonObject};

use super::parse::parse;
use super::target::not_bound;
use crate::connection::Connection;
use crate::results;
use crate::tools::{ApprovalArg, Verdict, VerdictArgs};
use glovebox::Principal;
use glovebox::session::VerdictInput;

impl Connection {
    /// `session_verdict`.
    pub(super) async fn session_verdict(
        &self,
        caller: &Principal,
        tool: &str,
        args: JsonObject,
    ) -> Result<CallToolResult, ErrorData> {
        let scope = self.shared().gateway.scope(caller);
        let a: VerdictArgs = parse(tool, args)?;
        let pass = a.verdict == Verdict::Pass;
        let Some(judge) = self.bound().await else {
            return Ok(not_bound(tool));
        };
        let input = VerdictInput {
            pass,
            reasons: a.reasons,
            handoff_seq: a.handoff_seq,
        };
        let judged = scope.verdict(&judge, &a.session, input).await;
        Ok(results::session(judged))
    }

    /// `approval_status`.
    pub(super) async fn approval_status(
        &self,
        caller: &Principal,
        tool: &str,
        args: JsonObject,
    ) -> Result<CallToolResult, ErrorData> {
        let scope = self.shared().gateway.scope(caller);
        let a: ApprovalArg = parse(tool, args)?;
        Ok(match scope.approval(&a.id).await {
            Ok(Some(approval)) => results::ok(&approval),
            Ok(None) => results::failure(
                "approval_not_found",
                format!(
                    "no approval `{}`: its id is in the `awaiting_approval` result of the call that waits for it",
                    a.id
                ),
            ),
            Err(e) => results::session_failure(&e),
        })
    }
}
