//! `[[principal]]` in `glovebox.toml`: who may connect, and what each may do.
//!
//! ```toml
//! [[principal]]
//! name = "ci-agent"
//! kind = "agent"                # or "operator"
//! credential = "9f86d0…"        # hex SHA-256 of its token (never the token)
//! # credential_file = "ci-agent.sha256"   # or: a 0600 file holding that hash
//! roles = ["workagent"]         # the roles it may start sessions as (its ceiling)
//! projects = ["demo"]           # the projects it may touch ("*": any)
//! tags = ["team-a"]             # added to each session it starts; it cannot remove them
//! toolsets = ["readers"]        # offered only the tools of these `[[toolset]]`s
//! read_only = true              # offered only tools annotated read-only
//! ```
//!
//! A token is presented over HTTP (`Authorization: Bearer <token>`); only its
//! SHA-256 is kept, and it is compared in constant time. Over stdio the
//! operator who starts the process names the principal (`serve --as`).
//! Operators act in every role and project; agents only within their lists.
//! With no principal declared, every connection is the built-in agent
//! `local` (ceiling `workagent`, any project), and HTTP serves loopback only.

use std::collections::HashSet;
use std::fmt;

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

use crate::Role;

mod raw;

pub(crate) use raw::{RawPrincipal, read_credential_file, validate_principals};

/// The name of the built-in agent every connection is when no principal is
/// declared.
pub const LOCAL_PRINCIPAL: &str = "local";

/// What a principal is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum PrincipalKind {
    /// An agent: acts within its roles and projects, sees only its own sessions.
    Agent,
    /// A human operator: sees every session and lifts the host's pauses.
    Operator,
}

impl PrincipalKind {
    pub const ALL: [PrincipalKind; 2] = [PrincipalKind::Agent, PrincipalKind::Operator];

    pub fn as_str(self) -> &'static str {
        match self {
            PrincipalKind::Agent => "agent",
            PrincipalKind::Operator => "operator",
        }
    }
}

crate::named_enum!(PrincipalKind, "kind");

/// Who is calling: a declared principal, the built-in `local` agent, or the
/// operator at the command line (`cli:<uid>`). It carries no credential.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Principal {
    pub name: String,
    pub kind: PrincipalKind,
    /// The roles an agent may start sessions as (empty for operators: any).
    pub roles: Vec<Role>,
    /// The projects an agent may touch; `*` is any (empty for operators: any).
    pub projects: Vec<String>,
    /// Operator-pinned tags, added to every session the principal starts.
    pub tags: Vec<String>,
    /// Who settles the approvals its calls wait for (`approve_by`).
    #[serde(default, skip_serializing_if = "ApproveBy::is_operator")]
    pub approve_by: ApproveBy,
    /// What the operator says about it (the fleet's registry): model,
    /// version, owner, description.
    #[serde(default, skip_serializing_if = "AgentCard::is_empty")]
    pub card: AgentCard,
    /// The `[[toolset]]`s it is narrowed to (empty: every tool); see
    /// `toolset.rs`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub toolsets: Vec<String>,
    /// Offered only tools annotated read-only, in every session it starts.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub read_only: bool,
}

/// What the operator says about a principal (`[[principal]]`'s `model`,
/// `version`, `owner`, `description`): the fleet's registry. Shown by
/// `principal list`, and recorded in every session the principal starts,
/// so a change of model shows in the logs.
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct AgentCard {
    /// The model the agent runs on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// The agent's own version (its prompt, its code).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
    /// The person or team that answers for it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub owner: Option<String>,
    /// What it is for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
}

impl AgentCard {
    pub fn is_empty(&self) -> bool {
        *self == AgentCard::default()
    }
}

/// The longest `model`, `version` or `owner`.
pub const CARD_FIELD_MAX: usize = 256;
/// The longest `description`.
pub const CARD_DESCRIPTION_MAX: usize = 1024;

/// Who settles an approval a permission hook asks for on a principal's
/// call: an operator (`glovebox approve`, the default), or the calling
/// client's own user, asked through MCP elicitation (`approve_by =
/// "client"`, opt-in: the agent's side then answers for it).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ApproveBy {
    #[default]
    Operator,
    Client,
}

impl ApproveBy {
    pub fn is_operator(&self) -> bool {
        *self == ApproveBy::Operator
    }
}

impl Principal {
    /// The built-in agent of a host with no declared principals: ceiling
    /// `workagent`, any project, no pinned tags.
    pub fn local() -> Principal {
        Principal {
            name: LOCAL_PRINCIPAL.to_string(),
            kind: PrincipalKind::Agent,
            roles: vec![Role::Workagent],
            projects: vec!["*".to_string()],
            tags: Vec::new(),
            approve_by: ApproveBy::Operator,
            card: AgentCard::default(),
            toolsets: Vec::new(),
            read_only: false,
        }
    }

    /// An operator by name (e.g. `cli:1000`, the command line run by uid 1000).
    pub fn operator(name: impl Into<String>) -> Principal {
        Principal {
            name: name.into(),
            kind: PrincipalKind::Operator,
            roles: Vec::new(),
            projects: Vec::new(),
            tags: Vec::new(),
            approve_by: ApproveBy::Operator,
            card: AgentCard::default(),
            toolsets: Vec::new(),
            read_only: false,
        }
    }

    pub fn is_operator(&self) -> bool {
        self.kind == PrincipalKind::Operator
    }

    /// Whether it may start a session as `role`.
    pub fn may_act_as(&self, role: Role) -> bool {
        self.is_operator() || self.roles.contains(&role)
    }

    /// Whether it may touch `project`.
    pub fn may_touch(&self, project: &str) -> bool {
        self.is_operator() || self.projects.iter().any(|p| p == "*" || p == project)
    }
}

impl fmt::Display for Principal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} `{}`", self.kind.as_str(), self.name)
    }
}

/// A declared principal and the hash of its token.
#[derive(Clone, PartialEq, Eq)]
pub struct PrincipalConfig {
    pub principal: Principal,
    /// The SHA-256 of its token (`None`: it has none, and comes only with
    /// an OAuth access token naming it, under `[auth.oauth]`).
    credential: Option<[u8; 32]>,
}

impl fmt::Debug for PrincipalConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PrincipalConfig")
            .field("principal", &self.principal)
            .finish_non_exhaustive()
    }
}

impl PrincipalConfig {
    /// Whether `token` is this principal's, compared in constant time.
    pub fn accepts(&self, token: &str) -> bool {
        let hash: [u8; 32] = Sha256::digest(token.as_bytes()).into();
        self.credential
            .is_some_and(|credential| hash.ct_eq(&credential).into())
    }
}

/// The hex SHA-256 of a token: what the config keeps of it.
pub fn credential_of(token: &str) -> String {
    hex::encode(Sha256::digest(token.as_bytes()))
}

/// The declared principal whose token `token` is, if any. Every credential
/// is compared (in constant time), so the time taken does not say which one
/// matched or how close a guess came.
pub fn authenticate<'a>(
    principals: &'a [PrincipalConfig],
    token: &str,
) -> Option<&'a PrincipalConfig> {
    let hash: [u8; 32] = Sha256::digest(token.as_bytes()).into();
    let mut found = None;
    for p in principals {
        if p.credential
            .is_some_and(|credential| bool::from(hash.ct_eq(&credential)))
        {
            found = Some(p);
        }
    }
    found
}

/// Why a name cannot name a principal (the caller says how to name one: the
/// config's key, the CLI's argument).
#[derive(thiserror::Error, Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum PrincipalNameError {
    /// Empty, or longer than 64 characters.
    #[error("principal name `{name}` is not 1 to 64 characters")]
    Length { name: String },
    /// A character other than letters, digits, `.`, `_` and `-`.
    #[error("principal name `{name}` has characters other than letters, digits, `.`, `_` and `-`")]
    Characters { name: String },
    /// The name of the built-in agent.
    #[error(
        "`{}` is the built-in agent of a host with no declared principals",
        LOCAL_PRINCIPAL
    )]
    Reserved,
}

/// A principal name: 1 to 64 letters, digits, `.`, `_` and `-`.
pub fn check_principal_name(name: &str) -> Result<(), PrincipalNameError> {
    if name.is_empty() || name.len() > 64 {
        return Err(PrincipalNameError::Length {
            name: name.to_string(),
        });
    }
    if !name
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'))
    {
        return Err(PrincipalNameError::Characters {
            name: name.to_string(),
        });
    }
    if name == LOCAL_PRINCIPAL {
        return Err(PrincipalNameError::Reserved);
    }
    Ok(())
}

/// Whether `text` may stand in a card: 1 to `max` characters, none a
/// control character.
pub fn card_text_ok(text: &str, max: usize) -> bool {
    let n = text.chars().count();
    (1..=max).contains(&n) && !text.chars().any(char::is_control) && !text.trim().is_empty()
}

fn parse_hash(text: &str) -> Option<[u8; 32]> {
    let text = text.strip_prefix("sha256:").unwrap_or(text);
    let bytes = hex::decode(text).ok()?;
    bytes.try_into().ok()
}

/// Every tag some principal has pinned: an agent may not give one of these
/// itself (it would pass for the operator's).
pub fn pinned_tags(principals: &[PrincipalConfig]) -> HashSet<String> {
    principals
        .iter()
        .flat_map(|p| p.principal.tags.iter().cloned())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn local_is_a_workagent_anywhere() {
        let local = Principal::local();
        assert!(local.may_act_as(Role::Workagent));
        assert!(!local.may_act_as(Role::Supervisor));
        assert!(!local.may_act_as(Role::Orchestrator));
        assert!(local.may_touch("anything"));
        assert!(!local.is_operator());
    }

    #[test]
    fn operators_act_in_every_role_and_project() {
        let op = Principal::operator("cli:1000");
        assert!(Role::ALL.iter().all(|r| op.may_act_as(*r)));
        assert!(op.may_touch("x"));
    }

    #[test]
    fn only_the_right_token_authenticates() {
        let a = PrincipalConfig {
            principal: Principal::local(),
            credential: parse_hash(&credential_of("token-a")),
        };
        let b = PrincipalConfig {
            principal: Principal::operator("b"),
            credential: parse_hash(&credential_of("token-b")),
        };
        let all = [a, b];
        assert_eq!(authenticate(&all, "token-b").unwrap().principal.name, "b");
        assert!(authenticate(&all, "token-c").is_none());
        assert!(authenticate(&all, "").is_none());
        assert!(all[0].accepts("token-a") && !all[0].accepts("token-b"));
        // The debug form never shows the hash.
        assert!(!format!("{:?}", all[0]).contains(&credential_of("token-a")));
    }
}
