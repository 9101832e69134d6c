//! The memory bank's records.
//!
//! Stored in the bucket `memory` under the entry's id (`m-…`): one small
//! JSON value per entry, rewritten on each review step, never deleted, so
//! the bank keeps who proposed, approved, rejected and retired what; found
//! through an index (`index.rs`, which also says what a new session is
//! handed), never by reading the bucket whole. These types sit below both,
//! and below `crate::session` (the operations on the bank, which log into
//! sessions, build on them in `super`).

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

use crate::manifest::{MemoryScopeKind, Role};
use crate::values::{ContextEntry, ContextKind};

pub(crate) const BUCKET: &str = "memory";
/// The `source` of the `context_injected` event with which a new session
/// gets its approved memory entries.
pub const MEMORY_SOURCE: &str = "memory";
/// The longest project or user name a scope takes.
const MAX_SCOPE_NAME: usize = 128;

/// Whom an entry is for: every session of a project, of a principal (the
/// user that owns the session), or of a role.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Scope {
    Project(String),
    User(String),
    Role(Role),
}

impl Scope {
    pub fn kind(&self) -> MemoryScopeKind {
        match self {
            Scope::Project(_) => MemoryScopeKind::Project,
            Scope::User(_) => MemoryScopeKind::User,
            Scope::Role(_) => MemoryScopeKind::Role,
        }
    }

    /// The scopes a session of `project`, owned by `user`, as `role` reads.
    pub fn of_session(project: &str, user: &str, role: Role) -> [Scope; 3] {
        [
            Scope::Project(project.to_string()),
            Scope::User(user.to_string()),
            Scope::Role(role),
        ]
    }
}

impl fmt::Display for Scope {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Scope::Project(p) => write!(f, "project:{p}"),
            Scope::User(u) => write!(f, "user:{u}"),
            Scope::Role(r) => write!(f, "role:{r}"),
        }
    }
}

impl FromStr for Scope {
    type Err = ScopeError;

    /// `project:NAME`, `user:NAME` or `role:ROLE`.
    fn from_str(s: &str) -> Result<Scope, ScopeError> {
        let Some((kind, name)) = s.split_once(':') else {
            return Err(ScopeError::NoKind(s.to_string()));
        };
        let name = name.trim();
        if name.is_empty() || name.len() > MAX_SCOPE_NAME || name.chars().any(char::is_control) {
            return Err(ScopeError::BadName {
                text: s.to_string(),
                kind: kind.to_string(),
            });
        }
        match kind.parse::<MemoryScopeKind>() {
            Ok(MemoryScopeKind::Project) => Ok(Scope::Project(name.to_string())),
            Ok(MemoryScopeKind::User) => Ok(Scope::User(name.to_string())),
            Ok(MemoryScopeKind::Role) => name.parse().map(Scope::Role).map_err(ScopeError::Role),
            Err(e) => Err(ScopeError::Kind {
                text: s.to_string(),
                kind: e,
            }),
        }
    }
}

/// Why a text is not a memory scope (`project:NAME`, `user:NAME` or
/// `role:ROLE`): names the text and how to write one.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ScopeError {
    /// No `KIND:` before a name.
    #[error("`{0}` is not a memory scope: write `project:NAME`, `user:NAME` or `role:ROLE`")]
    NoKind(String),
    /// The name is empty, too long or has control characters.
    #[error(
        "`{text}` is not a memory scope: the name after `{kind}:` must have 1 to {MAX_SCOPE_NAME} printable characters"
    )]
    BadName { text: String, kind: String },
    /// The kind is none of `project`, `user`, `role`.
    #[error(
        "`{text}` is not a memory scope ({kind}): write `project:NAME`, `user:NAME` or `role:ROLE`"
    )]
    Kind {
        text: String,
        kind: crate::manifest::UnknownWord,
    },
    /// `role:` names no role.
    #[error(transparent)]
    Role(crate::manifest::UnknownWord),
}

impl Serialize for Scope {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

/// Written as it is serialized: `project:NAME`, `user:NAME` or `role:ROLE`.
#[cfg(feature = "schemars")]
impl schemars::JsonSchema for Scope {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "MemoryScope".into()
    }

    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({
            "type": "string",
            "pattern": "^(project|user|role):.+$",
            "description": "Whose memory it is: `project:NAME`, `user:NAME` or `role:ROLE`.",
        })
    }
}

impl<'de> Deserialize<'de> for Scope {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Scope, D::Error> {
        let text = String::deserialize(d)?;
        text.parse().map_err(serde::de::Error::custom)
    }
}

/// Where an entry stands: proposed → approved → retired, or proposed →
/// rejected. Only approved entries reach sessions.
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum MemoryState {
    Proposed,
    Approved,
    Rejected,
    Retired,
}

impl MemoryState {
    pub const ALL: [MemoryState; 4] = [
        MemoryState::Proposed,
        MemoryState::Approved,
        MemoryState::Rejected,
        MemoryState::Retired,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            MemoryState::Proposed => "proposed",
            MemoryState::Approved => "approved",
            MemoryState::Rejected => "rejected",
            MemoryState::Retired => "retired",
        }
    }
}

glovebox_manifest::named_enum!(MemoryState, "memory state");

/// Who wrote an entry, and from where.
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Provenance {
    /// The principal that proposed it (an agent, or the operator who
    /// resolved a rescue).
    pub by: String,
    /// The session it was proposed from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session: Option<String>,
    /// The rescue whose enrich step proposed it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rescue: Option<String>,
}

/// A review step: who took it, when, and why.
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Stamp {
    /// The operator (`cli:<uid>`, or a declared operator's name).
    pub by: String,
    pub at_ms: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

/// One entry of the memory bank.
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct MemoryEntry {
    /// `m-` and 12 hex digits.
    pub id: String,
    pub scope: Scope,
    pub text: String,
    pub state: MemoryState,
    pub provenance: Provenance,
    pub proposed_at_ms: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub approved: Option<Stamp>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rejected: Option<Stamp>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retired: Option<Stamp>,
}

impl MemoryEntry {
    /// When it was approved (0 while it is not).
    pub fn approved_at_ms(&self) -> u64 {
        self.approved.as_ref().map_or(0, |s| s.at_ms)
    }

    /// The entry as a piece of context handed to a session.
    pub fn as_context(&self) -> ContextEntry {
        ContextEntry {
            id: self.id.clone(),
            kind: ContextKind::Note,
            text: self.text.clone(),
            source: format!("{MEMORY_SOURCE}:{}", self.scope),
            at_ms: self.approved_at_ms(),
            content: None,
            sha256: None,
        }
    }
}
