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
pub const SESSION_NOTE: &str = "session_note";
pub const SESSION_USAGE: &str = "session_usage";
pub const SESSION_PAUSE: &str = "session_pause";
pub const SESSION_LIST: &str = "session_list";
pub const SESSION_LOG: &str = "session_log";
pub const SESSION_RERUN: &str = "session_rerun";
pub const SESSION_SPAWN: &str = "session_spawn";
pub const SESSION_WAIT: &str = "session_wait";
pub const SESSION_VERDICT: &str = "session_verdict";
pub const APPROVAL_STATUS: &str = "approval_status";
pub const CONTEXT_SEARCH: &str = "context_search";
pub const MEMORY_PROPOSE: &str = "memory_propose";
pub const MEMORY_SEARCH: &str = "memory_search";
pub const JOB_SPAWN: &str = "job_spawn";
pub const JOB_WAIT: &str = "job_wait";
pub const JOB_STATUS: &str = "job_status";
pub const JOB_CANCEL: &str = "job_cancel";
pub const JOB_LIST: &str = "job_list";

pub const BUILTINS: [&str; 23] = [
    SESSION_START,
    SESSION_RESUME,
    SESSION_STATUS,
    SESSION_HANDOFF,
    SESSION_END,
    SESSION_NOTE,
    SESSION_USAGE,
    SESSION_PAUSE,
    SESSION_LIST,
    SESSION_LOG,
    SESSION_RERUN,
    SESSION_SPAWN,
    SESSION_WAIT,
    SESSION_VERDICT,
    APPROVAL_STATUS,
    CONTEXT_SEARCH,
    MEMORY_PROPOSE,
    MEMORY_SEARCH,
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
    let session = json!({"type": "string", "description": "Session id or name; the bound session when absent."});
    let completion = json!({
        "type": "object",
        "description": "What must hold before the session ends as `completed` (the operator's `[[completion]]` for its role and project is added): gates, tool calls run at every `session_end completed` whose JSON result must hold every `expect` field; and/or `judge`, a `judge` session of another principal must pass its latest handoff (`session_verdict`).",
        "properties": {
            "gates": {
                "type": "array",
                "maxItems": 16,
                "items": {
                    "type": "object",
                    "properties": {
                        "tool": {"type": "string", "description": "`plugin.tool`."},
                        "input": {"type": "object"},
                        "expect": {"type": "object", "description": "Fields the result must have, with these values."},
                    },
                    "required": ["tool"],
                    "additionalProperties": false,
                },
            },
            "judge": {"type": "boolean", "default": false},
        },
        "additionalProperties": false,
    });
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
                    "role": {"type": "string", "enum": ["orchestrator", "supervisor", "workagent", "judge"]},
                    "project": {"type": "string", "minLength": 1},
                    "name": {"type": "string", "description": "Unique among live sessions; resume it by this name later."},
                    "tags": strings.clone(),
                    "expected_duration": {"type": "string", "description": "How long the work should take, e.g. \"45m\" or \"2h\" (the detector compares)."},
                    "budget": {
                        "type": "object",
                        "description": "The session's own caps; its role's caps still hold, so these only tighten them.",
                        "properties": {
                            "cost": {"type": "number", "minimum": 0, "description": "Cost cap in decimal units (tool costs and reported model cost)."},
                            "calls": {"type": "integer", "minimum": 0, "description": "Call count cap."},
                            "wall": {"type": "string", "description": "Wall-time cap, e.g. \"30m\"."},
                        },
                        "additionalProperties": false,
                    },
                    "completion": completion.clone(),
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
            "End the bound session and unbind this connection (the next call starts a new default session). `completed` runs the session's completion gates again (each a call in the session) and is refused, with the failing gate's output, until every gate passes and, where a judge is required, a judge passed its latest handoff. Wait for its background jobs first: ending with jobs still queued or running, or with results nobody read, is recorded, and the result carries a `warning` naming them. A session with live child sessions is not ended unless `cancel_children` ends them (as interrupted) first.",
            json!({
                "type": "object",
                "properties": {
                    "outcome": {"type": "string", "enum": ["completed", "interrupted", "exit"], "default": "completed"},
                    "cancel_children": {"type": "boolean", "default": false, "description": "End the session's live child sessions first, as interrupted."},
                },
                "additionalProperties": false,
            }),
        ),
        tool(
            SESSION_NOTE,
            "Write a progress note (a thought, a step done) into the bound session's log (the connection's default session when none is bound). It counts as progress for the stuck-session detector.",
            json!({
                "type": "object",
                "properties": {"text": {"type": "string", "minLength": 1, "maxLength": 16384}},
                "required": ["text"],
                "additionalProperties": false,
            }),
        ),
        tool(
            SESSION_USAGE,
            "Report the model's usage (tokens in and out, model, model cost) into the bound session (the default session when none is bound): the cost counts toward the session's cost cap and its bill.",
            json!({
                "type": "object",
                "properties": {
                    "tokens_in": {"type": "integer", "minimum": 0},
                    "tokens_out": {"type": "integer", "minimum": 0},
                    "model": {"type": "string", "maxLength": 256},
                    "cost": {"type": "number", "minimum": 0, "description": "Model cost in decimal units."},
                },
                "additionalProperties": false,
            }),
        ),
        tool(
            SESSION_PAUSE,
            "Pause a session of yours (the bound one when `session` is absent) for your own reasons: calls in it are refused until `session_resume` lifts the pause.",
            json!({
                "type": "object",
                "properties": {
                    "reason": {"type": "string", "minLength": 1, "maxLength": 16384},
                    "session": session.clone(),
                },
                "required": ["reason"],
                "additionalProperties": false,
            }),
        ),
        tool(
            SESSION_LIST,
            "List your sessions, optionally by status and by tags (each given tag must be on the session); with `children`, the child sessions of a session (the bound one when `session` is absent) instead, with their status, outcome, carved budget and latest handoff to the parent.",
            json!({
                "type": "object",
                "properties": {
                    "status": {"type": "string", "enum": ["created", "active", "paused", "completed", "archived"]},
                    "tags": strings.clone(),
                    "children": {"type": "boolean", "default": false},
                    "session": session.clone(),
                },
                "additionalProperties": false,
            }),
        ),
        tool(
            SESSION_SPAWN,
            "Spawn a child session of the bound session (or `session`): a role at or below its own, a task (objective, success criteria, context), and caps carved out of the parent's budget (the children's caps plus the parent's own use stay within the parent's caps). The connection stays bound to the parent; the child's agent binds with `session_resume`, which returns the task.",
            json!({
                "type": "object",
                "properties": {
                    "role": {"type": "string", "enum": ["orchestrator", "supervisor", "workagent"]},
                    "name": {"type": "string", "description": "Unique among live sessions."},
                    "tags": strings.clone(),
                    "expected_duration": {"type": "string", "description": "e.g. \"45m\"."},
                    "budget": {
                        "type": "object",
                        "description": "The child's caps, carved out of the parent's: required for each cap the parent has.",
                        "properties": {
                            "cost": {"type": "number", "minimum": 0},
                            "calls": {"type": "integer", "minimum": 0},
                            "wall": {"type": "string", "description": "e.g. \"30m\"."},
                        },
                        "additionalProperties": false,
                    },
                    "objective": {"type": "string", "minLength": 1, "description": "What the child is to do."},
                    "success_criteria": strings.clone(),
                    "requirements": strings.clone(),
                    "files": strings.clone(),
                    "next_steps": strings.clone(),
                    "current_phase": {"type": "string"},
                    "session": {"type": "string", "description": "The parent (id or name); the bound session when absent."},
                    "completion": completion.clone(),
                },
                "required": ["role", "objective"],
                "additionalProperties": false,
            }),
        ),
        tool(
            SESSION_WAIT,
            "Wait until every child session of the bound session (or `session`) has posted a handoff to it or ended, up to a timeout (30 s when absent, 600 s at most; never forever). Returns each child's status, outcome and latest handoff, the pending ones and whether the wait timed out.",
            json!({
                "type": "object",
                "properties": {
                    "timeout_ms": {"type": "integer", "minimum": 0, "maximum": 600000},
                    "session": {"type": "string", "description": "The parent (id or name); the bound session when absent."},
                },
                "additionalProperties": false,
            }),
        ),
        tool(
            SESSION_VERDICT,
            "From the bound session, which must be of role `judge`: pass or fail another principal's session's latest handoff (its completion claim). A failing verdict needs reasons; the worker's `session_end completed` is refused until a judge passes its latest handoff, and a new handoff needs a new verdict.",
            json!({
                "type": "object",
                "properties": {
                    "session": {"type": "string", "description": "The worker's session (id or name)."},
                    "verdict": {"type": "string", "enum": ["pass", "fail"]},
                    "reasons": {"type": "array", "items": {"type": "string", "maxLength": 2048}, "maxItems": 32},
                    "handoff_seq": {"type": "integer", "minimum": 1, "description": "The handoff judged (its seq in the worker's log); refused if it is no longer the latest."},
                },
                "required": ["session", "verdict"],
                "additionalProperties": false,
            }),
        ),
        tool(
            SESSION_LOG,
            "A page of a session's log (the bound one when `session` is absent): events from `from_seq` (1 when absent), at most `limit` (100 when absent, 500 at most). `next_seq` is where the next page starts, null at the end.",
            json!({
                "type": "object",
                "properties": {
                    "session": session.clone(),
                    "from_seq": {"type": "integer", "minimum": 1},
                    "limit": {"type": "integer", "minimum": 1, "maximum": 500},
                },
                "additionalProperties": false,
            }),
        ),
        tool(
            SESSION_RERUN,
            "Re-run a call of a session (the bound one when `session` is absent) that the host's stop interrupted, with its original idempotency key: only calls of idempotent tools; `session_resume` lists them.",
            json!({
                "type": "object",
                "properties": {
                    "call_id": {"type": "string"},
                    "session": session.clone(),
                },
                "required": ["call_id"],
                "additionalProperties": false,
            }),
        ),
        tool(
            APPROVAL_STATUS,
            "Where an approval of one of your calls stands: pending, approved or denied (with the reason).",
            json!({
                "type": "object",
                "properties": {"id": {"type": "string", "description": "The approval id of an `awaiting_approval` result."}},
                "required": ["id"],
                "additionalProperties": false,
            }),
        ),
        tool(
            CONTEXT_SEARCH,
            "Search the projects' context index (what sessions of a project start with: rules, decisions, lessons from rescues): the live entries with every word of `query`, in `project` or in every project you may touch.",
            json!({
                "type": "object",
                "properties": {
                    "query": {"type": "string", "description": "Words that must all appear (case-insensitive)."},
                    "project": {"type": "string", "description": "Only this project (one you may touch)."},
                },
                "required": ["query"],
                "additionalProperties": false,
            }),
        ),
        tool(
            MEMORY_PROPOSE,
            "Propose an entry to the memory bank from the bound session (needs one: the proposal is logged there): a fact, rule or lesson for later sessions of a scope. It reaches new sessions only once an operator approves it (`glovebox memory review`).",
            json!({
                "type": "object",
                "properties": {
                    "scope": {"type": "string", "description": "`project`, `user` or `role` (the bound session's project, your principal, the session's role), or in full: `project:NAME` (a project you may touch), `user:YOU`, `role:ROLE` (the session's)."},
                    "text": {"type": "string", "minLength": 1, "description": "The entry; at most `[memory] max_entry_bytes` (4 KiB by default)."},
                },
                "required": ["scope", "text"],
                "additionalProperties": false,
            }),
        ),
        tool(
            MEMORY_SEARCH,
            "Search the approved entries of the memory bank in your scopes (your projects, your user, the bound session's role), best first: most query words matched, then most hits, then newest. Needs a bound session: the search is logged there.",
            json!({
                "type": "object",
                "properties": {
                    "query": {"type": "string", "description": "Words to look for (any case)."},
                    "limit": {"type": "integer", "minimum": 1, "maximum": 50, "default": 10},
                },
                "required": ["query"],
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
