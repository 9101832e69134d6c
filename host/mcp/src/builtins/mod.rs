//! The built-in tools: sessions, background jobs, approvals, the context
//! index and the memory bank.
//!
//! Those the operation registry serves (`glovebox::operations`: an
//! operation with an MCP name) run from there, with the connection's bound
//! session as the session the caller acts from ([`Connection::operation`]).
//! The others are written here, one file per family of built-ins, each
//! parsing its arguments into its struct in `tools/`, the one whose schema
//! `tools/list` gives for it; `Connection::builtin` only dispatches.

mod children;
mod jobs;
mod judge;
mod log;
mod parse;
mod sessions;
mod target;

use rmcp::ErrorData;
use rmcp::model::{CallToolResult, JsonObject};
use serde_json::Value;

use crate::connection::Connection;
use crate::results;
use crate::tools::*;
use glovebox::Principal;
use glovebox::operations::{self, Entry, OperationError};

impl Connection {
    /// A built-in tool, on behalf of `caller`: the gateway enforces what is
    /// the caller's (another's session or job is "not found").
    pub(crate) async fn builtin(
        &self,
        caller: &Principal,
        tool: &str,
        args: JsonObject,
    ) -> Result<CallToolResult, ErrorData> {
        if let Some(entry) = operations::for_tool(tool) {
            return self.operation(caller, tool, entry, args).await;
        }
        match tool {
            SESSION_START => self.session_start(caller, tool, args).await,
            SESSION_RESUME => self.session_resume(caller, tool, args).await,
            SESSION_HANDOFF => self.session_handoff(caller, tool, args).await,
            SESSION_END => self.session_end(caller, tool, args).await,
            JOB_SPAWN => self.job_spawn(caller, tool, args).await,
            SESSION_PAUSE => self.session_pause(caller, tool, args).await,
            SESSION_LIST => self.session_list(caller, tool, args).await,
            SESSION_RERUN => self.session_rerun(caller, tool, args).await,
            SESSION_SPAWN => self.session_spawn(caller, tool, args).await,
            other => Err(unknown_builtin(other)),
        }
    }
}

impl Connection {
    /// Built-in `tool`, served by the registry's operation `entry`.
    async fn operation(
        &self,
        caller: &Principal,
        tool: &str,
        entry: &Entry,
        args: JsonObject,
    ) -> Result<CallToolResult, ErrorData> {
        match self
            .run_operation(caller, tool, entry, Value::Object(args))
            .await
        {
            Ok(output) => Ok(results::ok_value(output)),
            Err(e) => results::operation_failure(e),
        }
    }

    /// Runs the registry's operation `entry`, called `called` (the MCP
    /// name the client used), on behalf of `caller`, acting from the bound
    /// session (if any), with the server's jobs runner: how every
    /// operation this connection serves (built-ins, resources) is run.
    pub(crate) async fn run_operation(
        &self,
        caller: &Principal,
        called: &str,
        entry: &Entry,
        args: Value,
    ) -> Result<Value, OperationError> {
        let bound = if entry.call_session {
            match self.session_for_call(caller).await {
                Ok(id) => Some(id),
                Err(e) => return Err(OperationError::from(e)),
            }
        } else {
            self.bound().await
        };
        let shared = self.shared();
        let scope = shared
            .gateway
            .scope(caller)
            .acting_from(bound.as_deref())
            .with_jobs(&shared.jobs);
        entry.call_as(called, scope, args).await
    }
}

/// The refusal of a tool name that is no built-in.
fn unknown_builtin(tool: &str) -> ErrorData {
    ErrorData::invalid_params(format!("unknown built-in tool `{tool}`"), None)
}
