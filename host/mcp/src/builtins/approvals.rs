//! The built-in that gives a settlement: a judge's `session_verdict`
//! (`approval_status` is the registry's `approvals.show`).

use rmcp::ErrorData;
use rmcp::model::{CallToolResult, JsonObject};

use super::parse::parse;
use super::target::not_bound;
use crate::connection::Connection;
use crate::results;
use crate::tools::{Verdict, VerdictArgs};
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
}
