//! What `tools/list` offers: every configured plugin tool, then the built-in
//! session and job tools, each with a JSON schema for its input.

use std::sync::Arc;

use rmcp::model::{JsonObject, Tool, ToolAnnotations};
use serde_json::{Value, json};

use glovebox::ToolInfo;

/// Built-in tool names.
pub const SESSION_START: &str = "session_start";
pub const SESSION_RESUME: &str = "session_resume";
pub const SESSION_STATUS: &str = "session_status";
pub const SESSION_HANDOFF: &str = "session_handoff";
pub const SESSION_END: &str = "session_end";
pub const JOB_SPAWN: &str = "job_spawn";
pub const JOB_WAIT: &str = "job_wait";
pub const JOB_STATUS: &str = "job_status";
pub const JOB_CANCEL: &str = "job_cancel";
pub const JOB_LIST: &str = "job_list";

pub const BUILTINS: [&str; 10] = [
    SESSION_START,
    SESSION_RESUME,
    SESSION_STATUS,
    SESSION_HANDOFF,
    SESSION_END,
    JOB_SPAWN,
    JOB_WAIT,
    JOB_STATUS,
    JOB_CANCEL,
    JOB_LIST,
];

/// A plugin tool as MCP describes it. A schema that is not an object (a bare
/// `true`) becomes "any object": MCP requires an object schema.
pub fn plugin_tool(info: &ToolInfo) -> Tool {
    let schema = match &info.input_schema {
        Value::Object(o) if o.contains_key("type") => o.clone(),
        Value::Object(o) => {
            let mut o = o.clone();
            o.insert("type".into(), json!("object"));
            o
        }
        _ => object(json!({"type": "object"})),
    };
    let description = format!(
        "{} [action `{}`{}{}]",
        info.description,
        info.action,
        if info.destructive {
            ", destructive"
        } else {
            ""
        },
        if info.idempotent { ", idempotent" } else { "" }
    );
    Tool::new(info.name.clone(), description, Arc::new(schema)).with_annotations(
        ToolAnnotations::new()
            .destructive(info.destructive)
            .idempotent(info.idempotent),
    )
}

/// The built-in session and job tools.
pub fn builtin_tools() -> Vec<Tool> {
    let strings = json!({"type": "array", "items": {"type": "string"}});
    let tool = |name: &'static str, description: &'static str, schema: Value| {
        Tool::new(name, description, Arc::new(object(schema)))
    };
    vec![
        tool(
            SESSION_START,
            "Start a session and bind this connection to it: later tool calls and jobs run and are logged in it.",
            json!({
                "type": "object",
                "properties": {
                    "role": {"type": "string", "enum": ["orchestrator", "supervisor", "workagent"]},
                    "project": {"type": "string", "minLength": 1},
                    "name": {"type": "string", "description": "Unique among live sessions; resume it by this name later."},
                    "tags": strings.clone(),
                },
                "required": ["role", "project"],
                "additionalProperties": false,
            }),
        ),
        tool(
            SESSION_RESUME,
            "Resume a session by id or name and bind this connection to it. Returns its state, its latest handoff and the calls interrupted when the host stopped.",
            json!({
                "type": "object",
                "properties": {"session": {"type": "string", "description": "Session id or name."}},
                "required": ["session"],
                "additionalProperties": false,
            }),
        ),
        tool(
            SESSION_STATUS,
            "The state of a session (by id or name), or of the session this connection is bound to.",
            json!({
                "type": "object",
                "properties": {"session": {"type": "string", "description": "Session id or name; the bound session when absent."}},
                "additionalProperties": false,
            }),
        ),
        tool(
            SESSION_HANDOFF,
            "Write a handoff from the bound session: a structured note to another role (or to itself, `continuation`). With `to`, that session receives a copy its resume returns.",
            json!({
                "type": "object",
                "properties": {
                    "kind": {"type": "string", "enum": [
                        "orchestrator_to_supervisor", "supervisor_to_workagent", "workagent_completion",
                        "supervisor_to_orchestrator", "continuation"
                    ]},
                    "objective": {"type": "string", "minLength": 1},
                    "requirements": strings.clone(),
                    "files": strings.clone(),
                    "success_criteria": strings.clone(),
                    "work_completed": strings.clone(),
                    "current_phase": {"type": "string"},
                    "next_steps": strings.clone(),
                    "blockers": strings.clone(),
                    "to": {"type": "string", "description": "The receiving session (id or name)."},
                },
                "required": ["kind", "objective"],
                "additionalProperties": false,
            }),
        ),
        tool(
            SESSION_END,
            "End the bound session and unbind this connection (the next call starts a new default session).",
            json!({
                "type": "object",
                "properties": {"outcome": {"type": "string", "enum": ["completed", "interrupted", "exit"], "default": "completed"}},
                "additionalProperties": false,
            }),
        ),
        tool(
            JOB_SPAWN,
            "Run a tool call in the background in the bound session: returns a job id at once. The call takes the same path as a direct call (hooks, sandbox, log).",
            json!({
                "type": "object",
                "properties": {
                    "tool": {"type": "string", "description": "A tool of tools/list, as `plugin.tool`."},
                    "input": {"type": "object", "description": "The tool's input; it must fit the tool's schema."},
                },
                "required": ["tool", "input"],
                "additionalProperties": false,
            }),
        ),
        tool(
            JOB_WAIT,
            "Wait for jobs: all of them, or the first to finish, up to a timeout (the configured default when absent; never forever).",
            json!({
                "type": "object",
                "properties": {
                    "ids": {"type": "array", "items": {"type": "string"}, "minItems": 1},
                    "mode": {"type": "string", "enum": ["all", "first"], "default": "all"},
                    "timeout_ms": {"type": "integer", "minimum": 0},
                },
                "required": ["ids"],
                "additionalProperties": false,
            }),
        ),
        tool(
            JOB_STATUS,
            "A job's status and, once it ended, its result: output, captured logs, error and metering.",
            json!({
                "type": "object",
                "properties": {"id": {"type": "string"}},
                "required": ["id"],
                "additionalProperties": false,
            }),
        ),
        tool(
            JOB_CANCEL,
            "Cancel a queued or running job.",
            json!({
                "type": "object",
                "properties": {"id": {"type": "string"}},
                "required": ["id"],
                "additionalProperties": false,
            }),
        ),
        tool(
            JOB_LIST,
            "List jobs of a session (the bound one when `session` is absent; all sessions when nothing is bound), optionally by status.",
            json!({
                "type": "object",
                "properties": {
                    "session": {"type": "string", "description": "Session id or name."},
                    "status": {"type": "string", "enum": [
                        "queued", "running", "completed", "failed", "timeout", "cancelled", "interrupted"
                    ]},
                },
                "additionalProperties": false,
            }),
        ),
    ]
}

fn object(v: Value) -> JsonObject {
    match v {
        Value::Object(o) => o,
        _ => JsonObject::new(),
    }
}
