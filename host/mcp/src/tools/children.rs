//! The arguments of the child-session built-ins: `session_spawn` and
//! `session_wait`.

use schemars::JsonSchema;
use serde::Deserialize;

use super::sessions::{COMPLETION, CapsArgs, NewSessionArgs};
use super::sizes::*;
use super::words::{child_roles, word};
use glovebox::manifest::Completion;
use glovebox::session::{HandoffNotes, Role};

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
