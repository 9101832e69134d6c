//! Context handed to a session: what its project's context index held when
//! it started, and what rescues injected since.

use serde::{Deserialize, Serialize};

/// What a piece of context is.
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ContextKind {
    /// Text: a fact, a rule, a pitfall.
    Note,
    /// A file the agent should read (its path as the operator gave it, and
    /// its content when a rescue injected it).
    File,
    /// A change to the task's specification.
    SpecChange,
}

/// One piece of context handed to a session (in `context_injected` events).
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ContextEntry {
    /// The index entry's id (`c-…`), or the rescue's id for an injection.
    pub id: String,
    pub kind: ContextKind,
    pub text: String,
    /// `operator`, or `rescue:<id>`.
    pub source: String,
    pub at_ms: u64,
    /// A file's content, as the operator's side read it when a rescue
    /// injected it (`kind` `file`, `text` its path); absent for a path the
    /// operator's side could not read, and in entries written before
    /// injections carried content.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content: Option<String>,
    /// The SHA-256 of `content` (hex), so the agent and a reviewer can tell
    /// which version of the file was handed over.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sha256: Option<String>,
}
