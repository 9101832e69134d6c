//! What `tools/list` offers: every configured plugin tool, then the built-in
//! session and job tools, each with a JSON schema for its input.
//!
//! A built-in's arguments are parsed into a struct of this file, and its
//! input schema is derived from that struct (schemars): a field, its words,
//! limits, default and description are written once, so what a client is
//! told and what the server accepts cannot drift apart. The schemas are
//! inlined (no `$ref`, which some clients do not follow) and offer no `null`
//! (an optional field is left out), as the hand-written ones before them.

use std::collections::HashMap;
use std::str::FromStr;
use std::sync::{Arc, LazyLock};

use rmcp::model::{JsonObject, Tool, ToolAnnotations};
use schemars::generate::SchemaSettings;
use schemars::transform::RecursiveTransform;
use schemars::{JsonSchema, Schema, SchemaGenerator, json_schema};
use serde::de::Error as _;
use serde::{Deserialize, Deserializer, Serialize};
use serde_json::{Value, json};

use glovebox::ToolInfo;
use glovebox::jobs::JobStatus;
use glovebox::manifest::{Completion, MAX_WAIT_IDS};
use glovebox::memory::SEARCH_LIMIT_MAX;
use glovebox::page::MAX_PAGE;
use glovebox::session::{EndOutcome, HandoffKind, HandoffNotes, Role, SessionStatus, WAIT_MAX};

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

/// The built-in session and job tools, each with the schema of the struct
/// its arguments parse into (`builtins.rs` parses them).
pub fn builtin_tools() -> Vec<Tool> {
    vec![
        builtin::<StartArgs>(
            SESSION_START,
            "Start a session and bind this connection to it: later tool calls and jobs run and are logged in it.",
        ),
        builtin::<SessionArg>(
            SESSION_RESUME,
            "Resume a session by id or name and bind this connection to it. Returns its state, its latest handoff and the calls interrupted when the host stopped.",
        ),
        builtin::<OptionalSessionArg>(
            SESSION_STATUS,
            "The state of a session (by id or name), or of the session this connection is bound to.",
        ),
        builtin::<HandoffArgs>(
            SESSION_HANDOFF,
            "Write a handoff from the bound session: a structured note to another role (or to itself, `continuation`). With `to`, that session receives a copy its resume returns.",
        ),
        builtin::<EndArgs>(
            SESSION_END,
            "End the bound session and unbind this connection (the next call starts a new default session). `completed` runs the session's completion gates again (each a call in the session) and is refused, with the failing gate's output, until every gate passes and, where a judge is required, a judge passed its latest handoff. Wait for its background jobs first: ending with jobs still queued or running, or with results nobody read, is recorded, and the result carries a `warning` naming them. A session with live child sessions is not ended unless `cancel_children` ends them (as interrupted) first.",
        ),
        builtin::<NoteArgs>(
            SESSION_NOTE,
            "Write a progress note (a thought, a step done) into the bound session's log (the connection's default session when none is bound). It counts as progress for the stuck-session detector.",
        ),
        builtin::<UsageArgs>(
            SESSION_USAGE,
            "Report the model's usage (tokens in and out, model, model cost) into the bound session (the default session when none is bound): the cost counts toward the session's cost cap and its bill.",
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
        builtin::<SessionWaitArgs>(
            SESSION_WAIT,
            "Wait until every child session of the bound session (or `session`) has posted a handoff to it or ended, up to a timeout (30 s when absent, 600 s at most; never forever). Returns each child's status, outcome and latest handoff, the pending ones and whether the wait timed out.",
        ),
        builtin::<VerdictArgs>(
            SESSION_VERDICT,
            "From the bound session, which must be of role `judge`: pass or fail another principal's session's latest handoff (its completion claim). A failing verdict needs reasons; the worker's `session_end completed` is refused until a judge passes its latest handoff, and a new handoff needs a new verdict.",
        ),
        builtin::<LogArgs>(
            SESSION_LOG,
            "A page of a session's log (the bound one when `session` is absent): events from `from_seq` (1 when absent), at most `limit` (100 when absent, 500 at most). `next_seq` is where the next page starts, null at the end.",
        ),
        builtin::<RerunArgs>(
            SESSION_RERUN,
            "Re-run a call of a session (the bound one when `session` is absent) that the host's stop interrupted, with its original idempotency key: only calls of idempotent tools; `session_resume` lists them.",
        ),
        builtin::<ApprovalArg>(
            APPROVAL_STATUS,
            "Where an approval of one of your calls stands: pending, approved or denied (with the reason).",
        ),
        builtin::<ContextSearchArgs>(
            CONTEXT_SEARCH,
            "Search the projects' context index (what sessions of a project start with: rules, decisions, lessons from rescues): the live entries with every word of `query`, in `project` or in every project you may touch.",
        ),
        builtin::<MemoryProposeArgs>(
            MEMORY_PROPOSE,
            "Propose an entry to the memory bank from the bound session (needs one: the proposal is logged there): a fact, rule or lesson for later sessions of a scope. It reaches new sessions only once an operator approves it (`glovebox memory review`).",
        ),
        builtin::<MemorySearchArgs>(
            MEMORY_SEARCH,
            "Search the approved entries of the memory bank in your scopes (your projects, your user, the bound session's role), best first: most query words matched, then most hits, then newest. A page at a time: `next_cursor`, when present, is the `cursor` of the next page. Needs a bound session: the search is logged there.",
        ),
        builtin::<SpawnArgs>(
            JOB_SPAWN,
            "Run a tool call in the background in the bound session: returns a job id at once. The call takes the same path as a direct call (hooks, sandbox, log).",
        ),
        builtin::<WaitArgs>(
            JOB_WAIT,
            "Wait for jobs: all of them, or the first to finish, up to a timeout (the configured default when absent; never forever).",
        ),
        builtin::<JobArg>(
            JOB_STATUS,
            "A job's status and, once it ended, its result: output, captured logs, error and metering.",
        ),
        builtin::<JobArg>(JOB_CANCEL, "Cancel a queued or running job."),
        builtin::<ListArgs>(
            JOB_LIST,
            "List jobs of a session (the bound one when `session` is absent; all sessions when nothing is bound), optionally by status, oldest first, a page at a time: `limit` jobs (100 when absent, 500 at most) after `cursor`; `next_cursor` is there when more may follow. A job shows its input's and output's sizes and SHA-256, not their text: `job_status` returns those.",
        ),
    ]
}

/// The built-ins' compiled schemas and property names, by tool name: what
/// names a bad field serde cannot (see [`locate`]).
pub(crate) static SCHEMAS: LazyLock<HashMap<String, (jsonschema::Validator, Vec<String>)>> =
    LazyLock::new(|| {
        builtin_tools()
            .into_iter()
            .filter_map(|tool| {
                let schema = Value::Object((*tool.input_schema).clone());
                let fields = schema["properties"]
                    .as_object()
                    .map(|p| p.keys().cloned().collect())
                    .unwrap_or_default();
                let validator = jsonschema::validator_for(&schema).ok()?;
                Some((tool.name.to_string(), (validator, fields)))
            })
            .collect()
    });

/// Where built-in `tool`'s `args` break its schema, as serde would name
/// the field (`tags[0]`), and what is wrong there; `None` when no field is
/// at fault. For a field of a group flattened into the arguments
/// ([`NewSessionArgs`], [`HandoffNotes`]), which serde's error cannot
/// name. A `null` is passed over: serde takes it for an optional field,
/// which the schema leaves out instead.
pub(crate) fn locate(tool: &str, args: &Value) -> Option<String> {
    let (validator, _) = SCHEMAS.get(tool)?;
    let error = validator
        .iter_errors(args)
        .find(|e| !e.instance().is_null() && e.instance_path().as_str() != "")?;
    let field = field_of(error.instance_path().as_str());
    Some(format!("`{field}`: {error}"))
}

/// A JSON pointer into the arguments as serde names the field (`tags[0]`,
/// `budget.cost`).
pub(crate) fn field_of(pointer: &str) -> String {
    let mut field = String::new();
    for part in pointer.split('/').skip(1) {
        let part = part.replace("~1", "/").replace("~0", "~");
        if part.parse::<usize>().is_ok() {
            field.push_str(&format!("[{part}]"));
        } else {
            if !field.is_empty() {
                field.push('.');
            }
            field.push_str(&part);
        }
    }
    field
}

/// The fields built-in `tool` takes, as an unknown field's error lists them.
pub(crate) fn fields_of(tool: &str) -> Option<String> {
    let (_, fields) = SCHEMAS.get(tool)?;
    Some(
        fields
            .iter()
            .map(|f| format!("`{f}`"))
            .collect::<Vec<_>>()
            .join(", "),
    )
}

/// A built-in whose arguments parse into `T`.
fn builtin<T: JsonSchema>(name: &'static str, description: &'static str) -> Tool {
    Tool::new(name, description, Arc::new(input_schema::<T>()))
}

/// `T`'s schema as an MCP input schema: an object schema with every
/// subschema inlined, no `$schema`, and no root `title` or `description`
/// (the struct's name and doc; the tool's description says what it does).
fn input_schema<T: JsonSchema>() -> JsonObject {
    let schema = SchemaSettings::draft2020_12()
        .with(|s| {
            s.inline_subschemas = true;
            s.meta_schema = None;
        })
        .with_transform(RecursiveTransform(as_clients_know_it))
        .into_generator()
        .into_root_schema_for::<T>();
    let mut schema = object(schema.to_value());
    schema.remove("title");
    schema.remove("description");
    schema
}

/// What schemars writes differently from the schemas clients had: an
/// `Option` field also allows `null` and defaults to it (the field is
/// optional: leave it out); a number has its Rust type as `format`
/// (`uint64`, `double`: no JSON Schema format, and some clients refuse a
/// tool with a format they do not know; `minimum` says what matters); and a
/// doc comment's line breaks stay in its description (they are the
/// source's wrapping, not the text's).
fn as_clients_know_it(schema: &mut Schema) {
    let Some(o) = schema.as_object_mut() else {
        return;
    };
    if let Some(Value::Array(types)) = o.get_mut("type") {
        types.retain(|t| t != "null");
        if let [only] = types.as_slice() {
            let only = only.clone();
            o.insert("type".into(), only);
        }
    }
    if let Some(Value::Array(words)) = o.get_mut("enum") {
        words.retain(|w| !w.is_null());
    }
    if o.get("default").is_some_and(Value::is_null) {
        o.remove("default");
    }
    if matches!(
        o.get("type").and_then(Value::as_str),
        Some("integer" | "number")
    ) {
        o.remove("format");
    }
    if let Some(Value::String(text)) = o.get_mut("description") {
        *text = text
            .split("\n\n")
            .map(|p| p.split('\n').map(str::trim).collect::<Vec<_>>().join(" "))
            .collect::<Vec<_>>()
            .join("\n\n");
    }
}

/// A string schema whose value is one of `words`. The words of a field
/// that [`word`] reads come from its type's `ALL`, so the schema lists what
/// the parse takes (less what the tool refuses whatever the parse says).
fn words<'a>(words: impl IntoIterator<Item = &'a str>) -> Schema {
    let words: Vec<&str> = words.into_iter().collect();
    json_schema!({"type": "string", "enum": words})
}

fn roles(_: &mut SchemaGenerator) -> Schema {
    words(Role::ALL.map(Role::as_str))
}

/// A child is never a judge (a judge is started, by another principal).
fn child_roles(_: &mut SchemaGenerator) -> Schema {
    words(
        Role::ALL
            .into_iter()
            .filter(|r| *r != Role::Judge)
            .map(Role::as_str),
    )
}

/// A `task` handoff is `session_spawn`'s to write.
fn handoff_kinds(_: &mut SchemaGenerator) -> Schema {
    words(
        HandoffKind::ALL
            .into_iter()
            .filter(|k| *k != HandoffKind::Task)
            .map(HandoffKind::as_str),
    )
}

fn end_outcomes(_: &mut SchemaGenerator) -> Schema {
    words(EndOutcome::ALL.map(EndOutcome::as_str))
}

fn session_statuses(_: &mut SchemaGenerator) -> Schema {
    words(SessionStatus::ALL.map(SessionStatus::as_str))
}

fn job_statuses(_: &mut SchemaGenerator) -> Schema {
    words(JobStatus::ALL.map(JobStatus::as_str))
}

/// One of a closed set of words (a role, a status), through the type's
/// `FromStr`: it takes `-` for `_`, and its error lists the words.
fn word<'de, D: Deserializer<'de>, T: FromStr<Err: std::fmt::Display>>(
    d: D,
) -> Result<T, D::Error> {
    String::deserialize(d)?.parse().map_err(D::Error::custom)
}

/// [`word`], for a field that may be left out (or null).
fn some_word<'de, D: Deserializer<'de>, T: FromStr<Err: std::fmt::Display>>(
    d: D,
) -> Result<Option<T>, D::Error> {
    Option::<String>::deserialize(d)?
        .map(|w| w.parse().map_err(D::Error::custom))
        .transpose()
}

/// The most events one `session_log` page holds.
pub(crate) const LOG_PAGE_MAX: usize = 500;
/// The events of a `session_log` page when `limit` is left out.
const LOG_PAGE_DEFAULT: usize = 100;
/// The entries `memory_search` returns when `limit` is left out.
const SEARCH_LIMIT_DEFAULT: usize = 10;
/// The longest note or pause reason.
pub(crate) const TEXT_MAX: usize = 16 * 1024;
/// The longest `session_wait` timeout, in milliseconds.
const WAIT_MAX_MS: u64 = WAIT_MAX.as_millis() as u64;
/// The longest model name a usage report may give (the ledger refuses more).
const MODEL_MAX: usize = 256;
/// The reasons a verdict may give, and the longest one (the ledger refuses more).
const REASONS_MAX: usize = 32;
const REASON_MAX_BYTES: usize = 2048;
/// The longest session id or name an argument may give (names have at most
/// 128 characters; ids are 34).
const SESSION_REF_MAX: usize = 128;
/// The longest project name.
const PROJECT_MAX: usize = 128;
/// The longest tag, and the most tags one argument may give (the ledger's
/// `quotas.tags_per_session` holds a session to fewer).
const TAG_MAX: usize = 64;
const TAGS_MAX: usize = 1024;
/// The longest id of a job, an approval or a call, or a tool's name.
const ID_MAX: usize = 256;
/// The longest duration written in words (`"45m"`, `"2h 30m"`).
const DURATION_MAX: usize = 64;
/// The longest objective of a handoff or a child's task (the rest of a
/// handoff is held by `quotas.handoff_bytes` and `handoff_items`).
const OBJECTIVE_MAX: usize = TEXT_MAX;
/// The longest search query (the memory bank refuses more too).
const QUERY_MAX: usize = glovebox::memory::MAX_QUERY_BYTES;
/// The longest memory scope (`project:NAME`).
const SCOPE_MAX: usize = 256;
/// The longest memory entry any config allows (`[memory] max_entry_bytes`
/// is at most 1 MiB; it holds entries to its own, smaller, size).
const MEMORY_TEXT_MAX: usize = 1 << 20;
/// The longest page cursor.
const CURSOR_MAX: usize = 1024;
/// The longest `job_wait` timeout, in milliseconds (an hour).
const JOB_WAIT_MAX_MS: u64 = 3_600_000;

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

/// The description of `completion`, the same condition in `session_start`
/// and `session_spawn`.
const COMPLETION: &str = "What must hold before the session ends as `completed` (the operator's \
    `[[completion]]` for its role and project is added): gates, tool calls run at every \
    `session_end completed` whose JSON result must hold every `expect` field; and/or `judge`, \
    a `judge` session of another principal must pass its latest handoff (`session_verdict`).";

/// `session_start`.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct StartArgs {
    #[serde(deserialize_with = "word")]
    #[schemars(schema_with = "roles")]
    pub role: Role,
    #[schemars(length(min = 1, max = PROJECT_MAX))]
    pub project: String,
    #[serde(flatten)]
    pub new: NewSessionArgs,
    /// The session's own caps; its role's caps still hold, so these only
    /// tighten them.
    #[serde(default)]
    pub budget: CapsArgs,
    #[serde(default)]
    #[schemars(description = COMPLETION)]
    pub completion: Completion,
}

/// What `session_start` and `session_spawn` both take for the new session
/// besides its role (flattened into each: a field's error is located by
/// the tool's schema, see `builtins::parse`).
#[derive(Deserialize, JsonSchema)]
pub(crate) struct NewSessionArgs {
    /// Unique among live sessions: resume or address the session by it later.
    #[schemars(length(min = 1, max = SESSION_REF_MAX))]
    pub name: Option<String>,
    #[serde(default)]
    #[schemars(length(max = TAGS_MAX), inner(length(min = 1, max = TAG_MAX)))]
    pub tags: Vec<String>,
    /// How long the work should take, e.g. "45m" or "2h" (the detector
    /// compares).
    #[schemars(length(max = DURATION_MAX))]
    pub expected_duration: Option<String>,
}

/// A session's caps (`session_start`'s own, or `session_spawn`'s for the
/// child).
#[derive(Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct CapsArgs {
    /// Cost cap in decimal units (tool costs and reported model cost).
    #[schemars(range(min = 0))]
    pub cost: Option<f64>,
    /// Call count cap.
    pub calls: Option<u64>,
    /// Wall-time cap, e.g. "30m".
    #[schemars(length(max = DURATION_MAX))]
    pub wall: Option<String>,
}

/// `session_note`.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct NoteArgs {
    #[schemars(length(min = 1, max = TEXT_MAX))]
    pub text: String,
}

/// `session_usage`.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct UsageArgs {
    #[serde(default)]
    pub tokens_in: u64,
    #[serde(default)]
    pub tokens_out: u64,
    #[schemars(length(max = MODEL_MAX))]
    pub model: Option<String>,
    /// Model cost in decimal units.
    #[serde(default)]
    #[schemars(range(min = 0))]
    pub cost: f64,
}

/// `session_pause`.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct PauseArgs {
    #[schemars(length(min = 1, max = TEXT_MAX))]
    pub reason: String,
    /// Session id or name; the bound session when absent.
    #[schemars(length(max = SESSION_REF_MAX))]
    pub session: Option<String>,
}

/// `session_list`.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct SessionListArgs {
    #[serde(default, deserialize_with = "some_word")]
    #[schemars(schema_with = "session_statuses")]
    pub status: Option<SessionStatus>,
    #[serde(default)]
    #[schemars(length(max = TAGS_MAX), inner(length(max = TAG_MAX)))]
    pub tags: Vec<String>,
    #[serde(default)]
    pub children: bool,
    /// Session id or name; the bound session when absent.
    #[schemars(length(max = SESSION_REF_MAX))]
    pub session: Option<String>,
    /// Items on one page: 100 when absent, 500 at most.
    #[schemars(range(min = 1, max = 500))]
    pub limit: Option<usize>,
    /// Where the previous page ended (its `next_cursor`); the first page
    /// when absent.
    pub cursor: Option<String>,
}

/// The page a listing's `limit` and `cursor` ask for, or why the limit is
/// not one.
pub(crate) fn page_request(
    limit: Option<usize>,
    cursor: Option<String>,
) -> Result<glovebox::page::PageRequest, String> {
    if let Some(limit) = limit
        && !(1..=glovebox::page::MAX_PAGE).contains(&limit)
    {
        return Err(format!(
            "`limit` is {limit}: give 1 to {} and page on with `cursor`",
            glovebox::page::MAX_PAGE
        ));
    }
    Ok(glovebox::page::PageRequest { limit, cursor })
}

/// `session_spawn`.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct SessionSpawnArgs {
    #[serde(deserialize_with = "word")]
    #[schemars(schema_with = "child_roles")]
    pub role: Role,
    #[serde(flatten)]
    pub new: NewSessionArgs,
    /// The child's caps, carved out of the parent's: required for each cap
    /// the parent has.
    #[serde(default)]
    pub budget: CapsArgs,
    /// What the child is to do.
    #[schemars(length(min = 1, max = OBJECTIVE_MAX))]
    pub objective: String,
    /// The rest of the child's task, as a handoff would say it.
    #[serde(flatten)]
    pub notes: HandoffNotes,
    /// The parent (id or name); the bound session when absent.
    #[schemars(length(max = SESSION_REF_MAX))]
    pub session: Option<String>,
    #[serde(default)]
    #[schemars(description = COMPLETION)]
    pub completion: Completion,
}

/// `session_verdict`.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct VerdictArgs {
    /// The worker's session (id or name).
    #[schemars(length(max = SESSION_REF_MAX))]
    pub session: String,
    pub verdict: Verdict,
    #[serde(default)]
    #[schemars(length(max = REASONS_MAX), inner(length(max = REASON_MAX_BYTES)))]
    pub reasons: Vec<String>,
    /// The handoff judged (its seq in the worker's log); refused if it is no
    /// longer the latest.
    #[schemars(range(min = 1))]
    pub handoff_seq: Option<u64>,
}

/// A judge's verdict on a completion claim.
#[derive(Clone, Copy, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub(crate) enum Verdict {
    Pass,
    Fail,
}

/// `session_wait`.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct SessionWaitArgs {
    #[schemars(range(max = WAIT_MAX_MS))]
    pub timeout_ms: Option<u64>,
    /// The parent (id or name); the bound session when absent.
    #[schemars(length(max = SESSION_REF_MAX))]
    pub session: Option<String>,
}

/// `session_log`.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct LogArgs {
    /// Session id or name; the bound session when absent.
    #[schemars(length(max = SESSION_REF_MAX))]
    pub session: Option<String>,
    #[serde(default = "first_seq")]
    #[schemars(range(min = 1))]
    pub from_seq: u64,
    #[serde(default = "log_page_default")]
    #[schemars(range(min = 1, max = LOG_PAGE_MAX))]
    pub limit: usize,
}

fn first_seq() -> u64 {
    1
}

fn log_page_default() -> usize {
    LOG_PAGE_DEFAULT
}

/// `session_rerun`.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct RerunArgs {
    #[schemars(length(max = ID_MAX))]
    pub call_id: String,
    /// Session id or name; the bound session when absent.
    #[schemars(length(max = SESSION_REF_MAX))]
    pub session: Option<String>,
}

/// `session_resume`.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct SessionArg {
    /// Session id or name.
    #[schemars(length(max = SESSION_REF_MAX))]
    pub session: String,
}

/// `session_status`.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct OptionalSessionArg {
    /// Session id or name; the bound session when absent.
    #[schemars(length(max = SESSION_REF_MAX))]
    pub session: Option<String>,
}

/// `session_handoff`.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct HandoffArgs {
    #[serde(deserialize_with = "word")]
    #[schemars(schema_with = "handoff_kinds")]
    pub kind: HandoffKind,
    #[schemars(length(min = 1, max = OBJECTIVE_MAX))]
    pub objective: String,
    #[serde(flatten)]
    pub notes: HandoffNotes,
    /// The receiving session (id or name).
    #[schemars(length(max = SESSION_REF_MAX))]
    pub to: Option<String>,
}

/// `session_end`.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct EndArgs {
    #[serde(default = "completed", deserialize_with = "word")]
    #[schemars(schema_with = "end_outcomes")]
    pub outcome: EndOutcome,
    /// End the session's live child sessions first, as interrupted.
    #[serde(default)]
    pub cancel_children: bool,
}

fn completed() -> EndOutcome {
    EndOutcome::Completed
}

/// `job_spawn`.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct SpawnArgs {
    /// A tool of tools/list, as `plugin.tool`.
    #[schemars(length(max = ID_MAX))]
    pub tool: String,
    /// The tool's input; it must fit the tool's schema.
    // Any JSON here, so that a non-object gets its own error.
    #[schemars(with = "JsonObject")]
    pub input: Value,
}

/// `job_wait`.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct WaitArgs {
    #[schemars(length(min = 1, max = MAX_WAIT_IDS), inner(length(max = ID_MAX)))]
    pub ids: Vec<String>,
    #[serde(default)]
    pub mode: WaitFor,
    #[schemars(range(max = JOB_WAIT_MAX_MS))]
    pub timeout_ms: Option<u64>,
}

/// What `job_wait` waits for: every job, or the first to end.
#[derive(Clone, Copy, Default, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub(crate) enum WaitFor {
    #[default]
    All,
    First,
}

/// `approval_status`.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct ApprovalArg {
    /// The approval id of an `awaiting_approval` result.
    #[schemars(length(max = ID_MAX))]
    pub id: String,
}

/// `job_status`, `job_cancel`.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct JobArg {
    /// The job id (`job_spawn` returns it).
    #[schemars(length(max = ID_MAX))]
    pub id: String,
}

/// `context_search`.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct ContextSearchArgs {
    /// Words that must all appear (case-insensitive).
    #[schemars(length(max = QUERY_MAX))]
    pub query: String,
    /// Only this project (one you may touch).
    #[schemars(length(max = PROJECT_MAX))]
    pub project: Option<String>,
    /// Entries in this page (the latest added first): 100 when absent,
    /// 500 at most.
    #[schemars(range(min = 1, max = MAX_PAGE))]
    pub limit: Option<usize>,
    /// The `next_cursor` of the previous page of the same search.
    #[serde(default)]
    #[schemars(length(max = CURSOR_MAX))]
    pub cursor: Option<String>,
}

/// `memory_propose`.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct MemoryProposeArgs {
    /// `project`, `user` or `role` (the bound session's project, your
    /// principal, the session's role), or in full: `project:NAME` (a project
    /// you may touch), `user:YOU`, `role:ROLE` (the session's).
    #[schemars(length(max = SCOPE_MAX))]
    pub scope: String,
    /// The entry; at most `[memory] max_entry_bytes` (4 KiB by default).
    #[schemars(length(min = 1, max = MEMORY_TEXT_MAX))]
    pub text: String,
}

/// `memory_search`.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct MemorySearchArgs {
    /// Words to look for (any case).
    #[schemars(length(max = QUERY_MAX))]
    pub query: String,
    #[serde(default = "search_limit_default")]
    #[schemars(range(min = 1, max = SEARCH_LIMIT_MAX))]
    pub limit: usize,
    /// The `next_cursor` of the previous page of the same query, for the
    /// entries ranked after it.
    #[serde(default)]
    #[schemars(length(max = CURSOR_MAX))]
    pub cursor: Option<String>,
}

fn search_limit_default() -> usize {
    SEARCH_LIMIT_DEFAULT
}

/// `job_list`.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct ListArgs {
    /// Session id or name.
    #[schemars(length(max = SESSION_REF_MAX))]
    pub session: Option<String>,
    #[serde(default, deserialize_with = "some_word")]
    #[schemars(schema_with = "job_statuses")]
    pub status: Option<JobStatus>,
    /// Jobs in this page: 100 when absent, 500 at most.
    #[schemars(range(min = 1, max = MAX_PAGE))]
    pub limit: Option<usize>,
    /// The `next_cursor` of the previous page; absent for the first page.
    pub cursor: Option<String>,
}

fn object(v: Value) -> JsonObject {
    match v {
        Value::Object(o) => o,
        _ => JsonObject::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use glovebox::manifest::{Gate, MAX_GATES};

    fn schemas() -> Vec<(String, Value)> {
        builtin_tools()
            .into_iter()
            .map(|t| (t.name.to_string(), Value::Object((*t.input_schema).clone())))
            .collect()
    }

    /// Every built-in's properties (`name:type`) and required fields, as
    /// the hand-written schemas gave them to clients before the schemas were
    /// derived. A field added to an argument struct is added here; one that
    /// is renamed, dropped or made required breaks clients: think twice.
    const SHAPES: [(&str, &[&str], &[&str]); 23] = [
        (
            SESSION_START,
            &[
                "budget:object",
                "completion:object",
                "expected_duration:string",
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
        (SESSION_NOTE, &["text:string"], &["text"]),
        (
            SESSION_USAGE,
            &[
                "cost:number",
                "model:string",
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
    fn pins() -> Vec<(&'static str, &'static str, Value)> {
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
            (SESSION_PAUSE, "/properties/reason/maxLength", json!(16384)),
            (SESSION_PAUSE, "/properties/reason/minLength", json!(1)),
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
                    "interrupted"
                ]),
            ),
        ]
    }

    #[test]
    fn every_builtin_has_a_derived_schema() {
        let mut builtins = BUILTINS.to_vec();
        builtins.sort();
        let mut names: Vec<String> = schemas().into_iter().map(|(name, _)| name).collect();
        names.sort();
        assert_eq!(names, builtins, "one tool per built-in");
        let mut shaped = SHAPES.map(|(name, _, _)| name);
        shaped.sort();
        assert_eq!(shaped, *builtins, "a built-in without its shape here");
    }

    #[test]
    fn schemas_keep_the_properties_and_required_fields_clients_had() {
        let schemas = schemas();
        for (name, properties, required) in SHAPES {
            let (_, schema) = schemas.iter().find(|(n, _)| n == name).unwrap();
            let mut have: Vec<String> = schema["properties"]
                .as_object()
                .unwrap_or_else(|| panic!("{name}: no properties: {schema}"))
                .iter()
                .map(|(field, s)| format!("{field}:{}", s["type"].as_str().unwrap_or("?")))
                .collect();
            have.sort();
            let mut want: Vec<String> = properties.iter().map(|p| p.to_string()).collect();
            want.sort();
            assert_eq!(have, want, "{name}: properties (name:type)");
            let mut have: Vec<&str> = schema["required"]
                .as_array()
                .map(|r| r.iter().filter_map(Value::as_str).collect())
                .unwrap_or_default();
            have.sort();
            let mut want = required.to_vec();
            want.sort();
            assert_eq!(have, want, "{name}: required");
        }
    }

    #[test]
    fn schemas_keep_the_words_limits_and_defaults_clients_had() {
        let schemas = schemas();
        for (name, pointer, want) in pins() {
            let (_, schema) = schemas.iter().find(|(n, _)| n == name).unwrap();
            let have = schema
                .pointer(pointer)
                .unwrap_or_else(|| panic!("{name}: `{pointer}` is gone: {schema}"));
            if pointer.ends_with("/enum") {
                for word in want.as_array().unwrap() {
                    assert!(
                        have.as_array().unwrap().contains(word),
                        "{name}: `{pointer}` lost {word}: {have}"
                    );
                }
            } else {
                assert_eq!(have, &want, "{name}: `{pointer}`");
            }
        }
    }

    /// What MCP requires of an input schema and what the clients without
    /// `$ref` (or `null`, or schemars' number formats) need, everywhere in
    /// every schema.
    #[test]
    fn schemas_are_closed_inlined_objects() {
        fn walk(name: &str, at: &str, v: &Value) {
            let Value::Object(o) = v else {
                if let Value::Array(items) = v {
                    for (i, item) in items.iter().enumerate() {
                        walk(name, &format!("{at}/{i}"), item);
                    }
                }
                return;
            };
            for key in ["$ref", "$defs", "$schema", "title", "anyOf", "oneOf"] {
                assert!(!o.contains_key(key), "{name}: `{key}` at `{at}`: {v}");
            }
            if let Some(t) = o.get("type") {
                assert!(t.is_string() && t != "null", "{name}: type {t} at `{at}`");
                if t == "integer" || t == "number" {
                    assert!(!o.contains_key("format"), "{name}: a format at `{at}`");
                }
            }
            if let Some(d) = o.get("description") {
                let d = d.as_str().unwrap();
                assert!(!d.is_empty() && !d.contains('\n'), "{name}: `{at}`: {d:?}");
            }
            if let Some(properties) = o.get("properties") {
                assert_eq!(o["type"], "object", "{name}: `{at}`");
                assert_eq!(
                    o.get("additionalProperties"),
                    Some(&json!(false)),
                    "{name}: `{at}` takes unknown fields, which the parse refuses"
                );
                for field in o
                    .get("required")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                {
                    let field = field.as_str().unwrap();
                    assert!(
                        properties.get(field).is_some(),
                        "{name}: `{at}` requires {field}"
                    );
                }
            }
            for (key, sub) in o {
                walk(name, &format!("{at}/{key}"), sub);
            }
        }
        for (name, schema) in schemas() {
            assert_eq!(
                schema["type"], "object",
                "{name}: MCP wants an object schema"
            );
            assert!(schema.get("description").is_none(), "{name}");
            walk(&name, "", &schema);
        }
    }

    /// The MCP input takes every field of the config's completion condition
    /// (one type, `Completion`, parsed by both), and its schema says so.
    #[test]
    fn the_mcp_input_takes_the_configs_completion_condition() {
        let full = Completion {
            gates: vec![Gate {
                tool: "p.t".into(),
                input: json!({"a": 1}),
                expect: json!({"ok": true}).as_object().unwrap().clone(),
            }],
            judge: true,
        };
        let full = serde_json::to_value(&full).unwrap();
        let schema = input_schema::<StartArgs>();
        let completion = &schema["properties"]["completion"];
        for field in full.as_object().unwrap().keys() {
            assert!(completion["properties"].get(field).is_some(), "{field}");
        }
        for field in full["gates"][0].as_object().unwrap().keys() {
            let gate = &completion["properties"]["gates"]["items"]["properties"];
            assert!(gate.get(field).is_some(), "gates[].{field}");
        }
        let start = json!({"role": "workagent", "project": "p", "completion": full});
        let parsed: StartArgs = serde_json::from_value(start).unwrap();
        assert_eq!(serde_json::to_value(parsed.completion).unwrap(), full);
        assert_eq!(completion["properties"]["gates"]["maxItems"], MAX_GATES);
        let input = &completion["properties"]["gates"]["items"]["properties"]["input"];
        assert_eq!(input["type"], "object", "{input}");
    }
}
