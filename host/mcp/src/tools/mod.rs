//! What `tools/list` offers: every configured plugin tool, then the built-in
//! session and job tools, each with a JSON schema for its input.
//!
//! A built-in's arguments are parsed into a struct of this file, and its
//! input schema is derived from that struct (schemars): a field, its words,
//! limits, default and description are written once, so what a client is
//! told and what the server accepts cannot drift apart. The schemas are
//! inlined (no `$ref`, which some clients do not follow) and offer no `null`
//! (an optional field is left out), as the hand-written ones before them.

mod children;
mod docs;
pub(crate) mod fields;
mod jobs;
mod schema;
mod sessions;
pub(crate) mod sizes;
#[cfg(test)]
mod tests;
mod words;

use std::sync::Arc;

use rmcp::model::{Tool, ToolAnnotations};
use serde_json::{Value, json};

use glovebox::ToolInfo;

// The built-ins' arguments, one struct per tool (`job_status` and
// `job_cancel` share one). A field's doc comment is its description in the
// schema clients read, so it is written for them; notes for this code's
// readers are `//` comments. A description that two tools give word for word
// is written once, as a const.
//
// `session_start` and `session_spawn` repeat the new session's fields, and
// `session_handoff` the ledger's `Handoff` fields, instead of
// `#[serde(flatten)]`ing a shared struct: serde parses a flattened struct
// from a buffered copy of the arguments, so a bad field's error would no
// longer name it (`budget.cost: invalid type ...`), nor would an unknown
// field's list the fields the tool takes.
pub(crate) use children::*;
pub use docs::builtins_tables;
pub(crate) use jobs::*;
use schema::{builtin, object, operation};
pub(crate) use sessions::*;

/// Built-in tool names.
pub const SESSION_START: &str = "session_start";
pub const SESSION_RESUME: &str = "session_resume";
pub const SESSION_STATUS: &str = "session_status";
pub const SESSION_HANDOFF: &str = "session_handoff";
pub const SESSION_END: &str = "session_end";
pub const SESSION_NOTE: &str = "session_note";
pub const SESSION_USAGE: &str = "session_usage";
pub const SESSION_PAUSE: &str = "session_pause";
pub const SESSION_FLAG: &str = "session_flag";
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

pub const BUILTINS: [&str; 24] = [
    SESSION_START,
    SESSION_RESUME,
    SESSION_STATUS,
    SESSION_HANDOFF,
    SESSION_END,
    SESSION_NOTE,
    SESSION_USAGE,
    SESSION_PAUSE,
    SESSION_FLAG,
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
    Tool::new(info.name.clone(), description, Arc::new(schema)).with_annotations({
        let annotations = ToolAnnotations::new()
            .destructive(info.destructive)
            .idempotent(info.idempotent);
        // `readOnlyHint` only where the operator annotated the tool, so
        // the list of a host that annotates none reads as before.
        if info.read_only {
            annotations.read_only(true)
        } else {
            annotations
        }
    })
}

/// The built-in tools, in [`BUILTINS`]' order: those the operation
/// registry serves (`glovebox::operations`, an operation with an MCP name)
/// from their operation, the others from [`written_tools`].
pub fn builtin_tools() -> Vec<Tool> {
    let mut written = written_tools();
    BUILTINS
        .iter()
        .filter_map(|name| match glovebox::operations::for_tool(name) {
            Some(entry) => Some(operation(name, entry)),
            None => {
                let at = written.iter().position(|t| t.name == *name)?;
                Some(written.swap_remove(at))
            }
        })
        .collect()
}

/// The built-in tools not yet in the operation registry, each with the
/// schema of the struct its arguments parse into (`builtins/` parses them).
fn written_tools() -> Vec<Tool> {
    vec![
        builtin::<StartArgs>(
            SESSION_START,
            "Start a session and bind this connection to it: later tool calls and jobs run and are logged in it.",
        ),
        builtin::<SessionArg>(
            SESSION_RESUME,
            "Resume a session by id or name and bind this connection to it. Returns its state, its latest handoff and the calls interrupted when the host stopped.",
        ),
        builtin::<HandoffArgs>(
            SESSION_HANDOFF,
            "Write a handoff from the bound session: a structured note to another role (or to itself, `continuation`). With `to`, that session receives a copy its resume returns.",
        ),
        builtin::<EndArgs>(
            SESSION_END,
            "End the bound session and unbind this connection (the next call starts a new default session). `completed` runs the session's completion gates again (each a call in the session) and is refused, with the failing gate's output, until every gate passes and, where a judge is required, a judge passed its latest handoff. Wait for its background jobs first: ending with jobs still queued or running, or with results nobody read, is recorded, and the result carries a `warning` naming them. A session with live child sessions is not ended unless `cancel_children` ends them (as interrupted) first.",
        ),
        builtin::<PauseArgs>(
            SESSION_PAUSE,
            "Pause a session of yours (the bound one when `session` is absent) for your own reasons: calls in it are refused until `session_resume` lifts the pause.",
        ),
        builtin::<SessionListArgs>(
            SESSION_LIST,
            "List your sessions, newest first, optionally by status and by tags (each given tag must be on the session); with `children`, the child sessions of a session (the bound one when `session` is absent) instead, oldest first, with their status, outcome, carved budget and latest handoff to the parent. A page holds at most `limit` (100 when absent, 500 at most); `next_cursor` is the `cursor` of the next page, null at the end (a filtered page may hold fewer, even none, and still have one).",
        ),
        builtin::<SessionSpawnArgs>(
            SESSION_SPAWN,
            "Spawn a child session of the bound session (or `session`): a role at or below its own, a task (objective, success criteria, context), and caps carved out of the parent's budget (the children's caps plus the parent's own use stay within the parent's caps). The connection stays bound to the parent; the child's agent binds with `session_resume`, which returns the task.",
        ),
        builtin::<RerunArgs>(
            SESSION_RERUN,
            "Re-run a call of a session (the bound one when `session` is absent) that the host's stop interrupted, with its original idempotency key: only calls of idempotent tools; `session_resume` lists them.",
        ),
        builtin::<SpawnArgs>(
            JOB_SPAWN,
            "Run a tool call in the background in the bound session: returns a job id at once. The call takes the same path as a direct call (hooks, sandbox, log).",
        ),
    ]
}
