//! What clients were told of the built-ins' schemas before they were derived.

use serde_json::{Value, json};

use super::super::*;

/// Every built-in's properties (`name:type`) and required fields, as
/// the hand-written schemas gave them to clients before the schemas were
/// derived. A field added to an argument struct is added here; one that
/// is renamed, dropped or made required breaks clients: think twice.
pub(super) const SHAPES: [(&str, &[&str], &[&str]); 24] = [
    (
        SESSION_START,
        &[
            "budget:object",
            "completion:object",
            "expected_duration:string",
            "read_only:boolean",
            "name:string",
            "project:string",
            "role:string",
            "tags:array",
        ],
        &["role", "project"],
    ),
    (SESSION_RESUME, &["session:string"], &["session"]),
    (SESSION_STATUS, &["session:string"], &[]),
    (
        SESSION_HANDOFF,
        &[
            "blockers:array",
            "current_phase:string",
            "files:array",
            "kind:string",
            "next_steps:array",
            "objective:string",
            "requirements:array",
            "success_criteria:array",
            "to:string",
            "work_completed:array",
        ],
        &["kind", "objective"],
    ),
    (
        SESSION_END,
        &["cancel_children:boolean", "outcome:string"],
        &[],
    ),
    (SESSION_NOTE, &["session:string", "text:string"], &["text"]),
    (
        SESSION_USAGE,
        &[
            "context_limit:integer",
            "context_tokens:integer",
            "cost:number",
            "model:string",
            "session:string",
            "tokens_in:integer",
            "tokens_out:integer",
        ],
        &[],
    ),
    (
        SESSION_PAUSE,
        &["reason:string", "session:string"],
        &["reason"],
    ),
    (
        SESSION_FLAG,
        &[
            "needs:string",
            "reason:string",
            "session:string",
            "severity:string",
        ],
        &["reason"],
    ),
    (
        SESSION_LIST,
        &[
            "children:boolean",
            "cursor:string",
            "limit:integer",
            "session:string",
            "status:string",
            "tags:array",
        ],
        &[],
    ),
    (
        SESSION_SPAWN,
        &[
            // A child's task takes every note a handoff does.
            "blockers:array",
            "budget:object",
            "completion:object",
            "current_phase:string",
            "expected_duration:string",
            "read_only:boolean",
            "files:array",
            "name:string",
            "next_steps:array",
            "objective:string",
            "requirements:array",
            "role:string",
            "session:string",
            "success_criteria:array",
            "tags:array",
            "work_completed:array",
        ],
        &["role", "objective"],
    ),
    (SESSION_WAIT, &["session:string", "timeout_ms:integer"], &[]),
    (
        SESSION_VERDICT,
        &[
            "handoff_seq:integer",
            "reasons:array",
            "session:string",
            "verdict:string",
        ],
        &["session", "verdict"],
    ),
    (
        SESSION_LOG,
        &["from_seq:integer", "limit:integer", "session:string"],
        &[],
    ),
    (
        SESSION_RERUN,
        &["call_id:string", "session:string"],
        &["call_id"],
    ),
    (APPROVAL_STATUS, &["id:string"], &["id"]),
    (
        CONTEXT_SEARCH,
        &[
            "cursor:string",
            "limit:integer",
            "project:string",
            "query:string",
        ],
        &["query"],
    ),
    (
        MEMORY_PROPOSE,
        &["scope:string", "text:string"],
        &["scope", "text"],
    ),
    (
        MEMORY_SEARCH,
        &["cursor:string", "limit:integer", "query:string"],
        &["query"],
    ),
    (
        JOB_SPAWN,
        &["input:object", "tool:string"],
        &["tool", "input"],
    ),
    (
        JOB_WAIT,
        &["ids:array", "mode:string", "timeout_ms:integer"],
        &["ids"],
    ),
    (JOB_STATUS, &["id:string"], &["id"]),
    (JOB_CANCEL, &["id:string"], &["id"]),
    (
        JOB_LIST,
        &[
            "cursor:string",
            "limit:integer",
            "session:string",
            "status:string",
        ],
        &[],
    ),
];

/// The words, limits, defaults and closed objects clients were told
/// (JSON pointers into a built-in's schema); an `enum` may gain words,
/// everything else must stay as it is.
pub(super) fn pins() -> Vec<(&'static str, &'static str, Value)> {
    vec![
        (
            SESSION_START,
            "/properties/budget/additionalProperties",
            json!(false),
        ),
        (
            SESSION_START,
            "/properties/budget/properties/calls/minimum",
            json!(0),
        ),
        (
            SESSION_START,
            "/properties/budget/properties/cost/minimum",
            json!(0),
        ),
        (
            SESSION_START,
            "/properties/budget/properties/tokens/minimum",
            json!(0),
        ),
        (
            SESSION_START,
            "/properties/completion/additionalProperties",
            json!(false),
        ),
        (
            SESSION_START,
            "/properties/completion/properties/gates/items/additionalProperties",
            json!(false),
        ),
        (
            SESSION_START,
            "/properties/completion/properties/gates/items/required",
            json!(["tool"]),
        ),
        (
            SESSION_START,
            "/properties/completion/properties/gates/maxItems",
            json!(16),
        ),
        (
            SESSION_START,
            "/properties/completion/properties/judge/default",
            json!(false),
        ),
        (SESSION_START, "/properties/project/minLength", json!(1)),
        (
            SESSION_START,
            "/properties/role/enum",
            json!(["orchestrator", "supervisor", "workagent", "judge"]),
        ),
        (
            SESSION_HANDOFF,
            "/properties/kind/enum",
            json!([
                "orchestrator_to_supervisor",
                "supervisor_to_workagent",
                "workagent_completion",
                "supervisor_to_orchestrator",
                "continuation"
            ]),
        ),
        (SESSION_HANDOFF, "/properties/objective/minLength", json!(1)),
        (
            SESSION_END,
            "/properties/cancel_children/default",
            json!(false),
        ),
        (
            SESSION_END,
            "/properties/outcome/default",
            json!("completed"),
        ),
        (
            SESSION_END,
            "/properties/outcome/enum",
            json!(["completed", "interrupted", "exit"]),
        ),
        (SESSION_NOTE, "/properties/text/maxLength", json!(16384)),
        (SESSION_NOTE, "/properties/text/minLength", json!(1)),
        (SESSION_USAGE, "/properties/cost/minimum", json!(0)),
        (SESSION_USAGE, "/properties/model/maxLength", json!(256)),
        (SESSION_USAGE, "/properties/tokens_in/minimum", json!(0)),
        (SESSION_USAGE, "/properties/tokens_out/minimum", json!(0)),
        (SESSION_USAGE, "/properties/context_limit/minimum", json!(1)),
        (
            SESSION_USAGE,
            "/properties/context_tokens/minimum",
            json!(0),
        ),
        (SESSION_PAUSE, "/properties/reason/maxLength", json!(16384)),
        (SESSION_PAUSE, "/properties/reason/minLength", json!(1)),
        (SESSION_FLAG, "/properties/reason/maxLength", json!(2048)),
        (SESSION_FLAG, "/properties/reason/minLength", json!(1)),
        (
            SESSION_FLAG,
            "/properties/severity/default",
            json!("warning"),
        ),
        (
            SESSION_FLAG,
            "/properties/severity/enum",
            json!(["info", "warning", "critical"]),
        ),
        (SESSION_LIST, "/properties/children/default", json!(false)),
        (SESSION_LIST, "/properties/limit/maximum", json!(500)),
        (SESSION_LIST, "/properties/limit/minimum", json!(1)),
        (
            SESSION_LIST,
            "/properties/status/enum",
            json!(["created", "active", "paused", "completed", "archived"]),
        ),
        (
            SESSION_SPAWN,
            "/properties/budget/additionalProperties",
            json!(false),
        ),
        (
            SESSION_SPAWN,
            "/properties/budget/properties/calls/minimum",
            json!(0),
        ),
        (
            SESSION_SPAWN,
            "/properties/budget/properties/cost/minimum",
            json!(0),
        ),
        (
            SESSION_SPAWN,
            "/properties/completion/additionalProperties",
            json!(false),
        ),
        (
            SESSION_SPAWN,
            "/properties/completion/properties/gates/items/additionalProperties",
            json!(false),
        ),
        (
            SESSION_SPAWN,
            "/properties/completion/properties/gates/items/required",
            json!(["tool"]),
        ),
        (
            SESSION_SPAWN,
            "/properties/completion/properties/gates/maxItems",
            json!(16),
        ),
        (
            SESSION_SPAWN,
            "/properties/completion/properties/judge/default",
            json!(false),
        ),
        (SESSION_SPAWN, "/properties/objective/minLength", json!(1)),
        (
            SESSION_SPAWN,
            "/properties/role/enum",
            json!(["orchestrator", "supervisor", "workagent"]),
        ),
        (
            SESSION_WAIT,
            "/properties/timeout_ms/maximum",
            json!(600000),
        ),
        (SESSION_WAIT, "/properties/timeout_ms/minimum", json!(0)),
        (SESSION_VERDICT, "/properties/handoff_seq/minimum", json!(1)),
        (
            SESSION_VERDICT,
            "/properties/reasons/items/maxLength",
            json!(2048),
        ),
        (SESSION_VERDICT, "/properties/reasons/maxItems", json!(32)),
        (
            SESSION_VERDICT,
            "/properties/verdict/enum",
            json!(["pass", "fail"]),
        ),
        (SESSION_LOG, "/properties/from_seq/minimum", json!(1)),
        (SESSION_LOG, "/properties/limit/maximum", json!(500)),
        (SESSION_LOG, "/properties/limit/minimum", json!(1)),
        (MEMORY_PROPOSE, "/properties/text/minLength", json!(1)),
        (MEMORY_SEARCH, "/properties/limit/default", json!(10)),
        (MEMORY_SEARCH, "/properties/limit/maximum", json!(50)),
        (MEMORY_SEARCH, "/properties/limit/minimum", json!(1)),
        (JOB_WAIT, "/properties/ids/minItems", json!(1)),
        (JOB_WAIT, "/properties/mode/default", json!("all")),
        (JOB_WAIT, "/properties/mode/enum", json!(["all", "first"])),
        (JOB_WAIT, "/properties/timeout_ms/minimum", json!(0)),
        (JOB_LIST, "/properties/limit/maximum", json!(500)),
        (JOB_LIST, "/properties/limit/minimum", json!(1)),
        (
            JOB_LIST,
            "/properties/status/enum",
            json!([
                "queued",
                "running",
                "completed",
                "failed",
                "timeout",
                "cancelled",
                "interrupted",
                "awaiting_approval"
            ]),
        ),
    ]
}
