//! The arguments of the session built-ins: start, resume, status,
//! handoff, end, note, usage, pause, list, log and rerun.

use schemars::JsonSchema;
use serde::Deserialize;

use super::sizes::*;
use super::words::{end_outcomes, handoff_kinds, roles, session_statuses, some_word, word};
use glovebox::manifest::Completion;
use glovebox::session::{EndOutcome, HandoffKind, HandoffNotes, Role, SessionStatus};

/// The description of `completion`, the same condition in `session_start`
/// and `session_spawn`.
pub(super) const COMPLETION: &str = "What must hold before the session ends as `completed` (the operator's \
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
    /// Offer the session (and every child it spawns) only tools annotated
    /// read-only, for good: it is never lifted. A session of a read-only
    /// principal, or a child of a read-only session, is read-only anyway.
    #[serde(default)]
    pub read_only: bool,
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
    /// Model token cap (in plus out, as `session_usage` reports them).
    pub tokens: Option<u64>,
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
