//! The built-in tools: sessions, background jobs, the context index and
//! the memory bank. Each parses its arguments into its struct in
//! `tools/`, the one whose schema `tools/list` gives for it.
//!
//! One file per family of built-ins, each holding its handlers (their
//! arguments are in `tools/`); `Connection::builtin` only dispatches.

mod approvals;
mod children;
mod jobs;
mod judge;
mod log;
mod memory;
mod parse;
mod sessions;
mod target;

use rmcp::ErrorData;
use rmcp::model::{CallToolResult, JsonObject};

use crate::connection::Connection;
use crate::tools::*;
use glovebox::Principal;

impl Connection {
    /// A built-in tool, on behalf of `caller`: the gateway enforces what is
    /// the caller's (another's session or job is "not found").
    pub(crate) async fn builtin(
        &self,
        caller: &Principal,
        tool: &str,
        args: JsonObject,
    ) -> Result<CallToolResult, ErrorData> {
        match tool {
            SESSION_START => self.session_start(caller, tool, args).await,
            SESSION_RESUME => self.session_resume(caller, tool, args).await,
            SESSION_STATUS => self.session_status(caller, tool, args).await,
            SESSION_HANDOFF => self.session_handoff(caller, tool, args).await,
            SESSION_END => self.session_end(caller, tool, args).await,
            JOB_SPAWN | JOB_WAIT | JOB_STATUS | JOB_CANCEL | JOB_LIST => {
                self.job(caller, tool, args).await
            }
            SESSION_NOTE => self.session_note(caller, tool, args).await,
            SESSION_USAGE => self.session_usage(caller, tool, args).await,
            SESSION_PAUSE => self.session_pause(caller, tool, args).await,
            SESSION_LIST => self.session_list(caller, tool, args).await,
            SESSION_LOG => self.session_log(caller, tool, args).await,
            SESSION_RERUN => self.session_rerun(caller, tool, args).await,
            SESSION_SPAWN => self.session_spawn(caller, tool, args).await,
            SESSION_VERDICT => self.session_verdict(caller, tool, args).await,
            SESSION_WAIT => self.session_wait(caller, tool, args).await,
            APPROVAL_STATUS => self.approval_status(caller, tool, args).await,
            CONTEXT_SEARCH => self.context_search(caller, tool, args).await,
            MEMORY_PROPOSE => self.memory_propose(caller, tool, args).await,
            MEMORY_SEARCH => self.memory_search(caller, tool, args).await,
            other => Err(unknown_builtin(other)),
        }
    }
}

/// The refusal of a tool name that is no built-in.
fn unknown_builtin(tool: &str) -> ErrorData {
    ErrorData::invalid_params(format!("unknown built-in tool `{tool}`"), None)
}
