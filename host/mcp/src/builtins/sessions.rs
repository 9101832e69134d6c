//! The session built-ins: start, resume, status, handoff, end and pause.

use rmcp::ErrorData;
use rmcp::model::{CallToolResult, JsonObject};
use serde_json::json;

use super::parse::{parse, start_extras, text_arg};
use crate::connection::Connection;
use crate::results;
use crate::tools::{EndArgs, HandoffArgs, PauseArgs, SessionArg, StartArgs};
use glovebox::Principal;
use glovebox::manifest::Completion;
use glovebox::session::{Handoff, StartSession};

impl Connection {
    /// A refusal (as the tool's result) of the completion condition given
    /// to `session_start` or `session_spawn`, when the gateway's
    /// `check_completion` does not pass it.
    pub(super) fn completion_refused(&self, completion: &Completion) -> Option<CallToolResult> {
        let e = self.shared().gateway.check_completion(completion).err()?;
        Some(results::session_failure(&e))
    }

    /// `session_start`.
    pub(super) async fn session_start(
        &self,
        caller: &Principal,
        tool: &str,
        args: JsonObject,
    ) -> Result<CallToolResult, ErrorData> {
        let scope = self.shared().gateway.scope(caller);
        let a: StartArgs = parse(tool, args)?;
        let (expected_duration, budget) =
            start_extras(tool, a.new.expected_duration.as_deref(), &a.budget)?;
        let completion = a.completion;
        if let Some(refused) = self.completion_refused(&completion) {
            return Ok(refused);
        }
        let read_only = a.new.read_only;
        let start = StartSession {
            role: a.role,
            project: a.project,
            name: a.new.name,
            tags: a.new.tags,
            expected_duration,
            budget,
            completion,
        };
        Ok(match scope.start_read_only(start, read_only).await {
            Ok(state) => {
                self.bind(Some(state.header.id.clone())).await;
                self.bound_answer(&state, &state.header.id)
            }
            Err(e) => results::session_failure(&e),
        })
    }

    /// `session_resume`.
    pub(super) async fn session_resume(
        &self,
        caller: &Principal,
        tool: &str,
        args: JsonObject,
    ) -> Result<CallToolResult, ErrorData> {
        let scope = self.shared().gateway.scope(caller);
        let a: SessionArg = parse(tool, args)?;
        if let Some(refused) = self.family_guard(caller, &a.session).await {
            return Ok(refused);
        }
        Ok(match scope.resume_session(&a.session).await {
            Ok(resumed) => {
                self.bind(Some(resumed.state.header.id.clone())).await;
                self.bound_answer(&resumed, &resumed.state.header.id)
            }
            Err(e) => results::session_failure(&e),
        })
    }

    /// `session_handoff`.
    pub(super) async fn session_handoff(
        &self,
        caller: &Principal,
        tool: &str,
        args: JsonObject,
    ) -> Result<CallToolResult, ErrorData> {
        let scope = self.shared().gateway.scope(caller);
        let a: HandoffArgs = parse(tool, args)?;
        let Some(id) = self.bound().await else {
            return Ok(self.not_bound(tool));
        };
        let result = match scope.session(&id).await {
            Ok(state) => {
                let mut h = Handoff::new(a.kind, state.header.role, a.objective);
                h.notes = a.notes;
                h.target_session = a.to;
                scope.handoff(&state.header.id, h).await
            }
            Err(e) => Err(e),
        };
        Ok(results::session(result))
    }

    /// `session_end`.
    pub(super) async fn session_end(
        &self,
        caller: &Principal,
        tool: &str,
        args: JsonObject,
    ) -> Result<CallToolResult, ErrorData> {
        let scope = self.shared().gateway.scope(caller);
        let a: EndArgs = parse(tool, args)?;
        let Some(id) = self.bound().await else {
            return Ok(self.not_bound(tool));
        };
        let cancelled = if a.cancel_children {
            match scope.cancel_children(&id).await {
                Ok(ids) => ids,
                Err(e) => return Ok(results::session_failure(&e)),
            }
        } else {
            Vec::new()
        };
        Ok(match scope.end_checked(&id, a.outcome).await {
            Ok(ended) => {
                self.bind(None).await;
                // The state, with a `warning` when jobs of the
                // session's own were left unwaited (`glovebox doctor`).
                let mut value =
                    serde_json::to_value(&ended.state).unwrap_or(serde_json::Value::Null);
                if let (Some(warning), Some(map)) = (ended.warning(), value.as_object_mut()) {
                    map.insert("warning".into(), warning.into());
                }
                if let (false, Some(map)) = (cancelled.is_empty(), value.as_object_mut()) {
                    map.insert("cancelled_children".into(), json!(cancelled));
                }
                results::ok(&value)
            }
            Err(e) => results::session_failure(&e),
        })
    }

    /// `session_pause`.
    pub(super) async fn session_pause(
        &self,
        caller: &Principal,
        tool: &str,
        args: JsonObject,
    ) -> Result<CallToolResult, ErrorData> {
        let scope = self.shared().gateway.scope(caller);
        let a: PauseArgs = parse(tool, args)?;
        text_arg(tool, "reason", &a.reason)?;
        let key = match self.target(caller, tool, a.session).await {
            Ok(key) => key,
            Err(answer) => return Ok(answer),
        };
        Ok(results::session(
            scope.pause_by_agent(&key, &a.reason).await,
        ))
    }
}
