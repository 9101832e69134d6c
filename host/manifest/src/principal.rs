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

use crate::UnknownWord;
use std::collections::HashSet;
use std::fmt;
use std::path::Path;

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

use super::ConfigError;
use super::source::Source;
use crate::Role;

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

/// `[[principal]]`: who may connect, written by `glovebox principal add`
/// ([`operators/principals.md`](operators/principals.md)).
#[derive(Deserialize)]
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub(super) struct RawPrincipal {
    /// The principal's name (1 to 64 letters, digits, `.`, `_` and `-`).
    name: String,
    /// `"agent"` or `"operator"`.
    #[cfg_attr(feature = "schemars", schemars(extend("enum" = ["agent", "operator"])))]
    kind: String,
    /// The token's SHA-256, inline (or `credential_file`: one of the two;
    /// neither for a principal that comes only with an OAuth token).
    #[cfg_attr(feature = "schemars", schemars(extend("x-default" = "(one of the two)")))]
    credential: Option<String>,
    /// A 0600 file holding the token's SHA-256 (or `credential`: one of the two).
    #[cfg_attr(feature = "schemars", schemars(extend("x-default" = "(one of the two)")))]
    credential_file: Option<String>,
    /// The roles an agent may start sessions as (its ceiling); not for operators.
    #[cfg_attr(feature = "schemars", schemars(extend("x-default" = "(required for an agent)")))]
    roles: Option<Vec<String>>,
    /// The projects an agent may touch (`"*"`: any); not for operators.
    #[cfg_attr(feature = "schemars", schemars(extend("x-default" = "(required for an agent)")))]
    projects: Option<Vec<String>>,
    /// Tags pinned on every session it starts.
    #[serde(default)]
    #[cfg_attr(feature = "schemars", schemars(extend("default" = [])))]
    tags: Vec<String>,
    /// `"operator"` or `"client"`: its approvals go to its own client's user
    /// through MCP elicitation.
    #[cfg_attr(feature = "schemars", schemars(extend("default" = "operator")))]
    #[cfg_attr(feature = "schemars", schemars(extend("enum" = ["operator", "client"])))]
    approve_by: Option<String>,
    /// The model the agent runs on (the fleet's registry; up to 256 characters).
    #[cfg_attr(feature = "schemars", schemars(extend("x-default" = "none")))]
    model: Option<String>,
    /// The agent's own version (up to 256 characters).
    #[cfg_attr(feature = "schemars", schemars(extend("x-default" = "none")))]
    version: Option<String>,
    /// The person or team that answers for it (up to 256 characters).
    #[cfg_attr(feature = "schemars", schemars(extend("x-default" = "none")))]
    owner: Option<String>,
    /// What it is for (up to 1024 characters).
    #[cfg_attr(feature = "schemars", schemars(extend("x-default" = "none")))]
    description: Option<String>,
    /// The `[[toolset]]`s it is narrowed to: it is offered (listed and
    /// let call) only the tools one of them lists. None: every tool.
    #[serde(default)]
    #[cfg_attr(feature = "schemars", schemars(extend("default" = [])))]
    toolsets: Vec<String>,
    /// Offered only tools annotated read-only (`[tools.<tool>] read_only`
    /// in their manifests), in every session it starts and their children.
    #[serde(default)]
    read_only: bool,
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

pub(super) fn validate_principals(
    src: &Source,
    dir: &Path,
    raw: &[RawPrincipal],
    oauth: bool,
    toolsets: &crate::ToolsetsConfig,
) -> Result<Vec<PrincipalConfig>, ConfigError> {
    let mut out: Vec<PrincipalConfig> = Vec::new();
    for (i, p) in raw.iter().enumerate() {
        let key = |leaf: &str| format!("principal[{i}].{leaf}");
        check_principal_name(&p.name).map_err(|problem| {
            src.invalid(
                &key("name"),
                problem,
                "name it with 1 to 64 letters, digits, `.`, `_` or `-` (not `local`)",
            )
        })?;
        if out.iter().any(|o| o.principal.name == p.name) {
            return Err(src.invalid(
                &key("name"),
                format!("principal `{}` is declared twice", p.name),
                "give each `[[principal]]` a unique name",
            ));
        }
        let kind: PrincipalKind = p.kind.parse().map_err(|e: UnknownWord| {
            src.invalid(
                &key("kind"),
                e,
                "write `kind = \"agent\"` or `kind = \"operator\"`",
            )
        })?;
        let credential = principal_credential(src, &key, dir, p, oauth)?;
        if let Some(other) = out
            .iter()
            .find(|o| credential.is_some() && o.credential == credential)
        {
            return Err(src.invalid(
                &key("name"),
                format!(
                    "principals `{}` and `{}` have the same credential",
                    other.principal.name, p.name
                ),
                format!(
                    "give each principal a token of its own: `glovebox principal add {}` makes one",
                    p.name
                ),
            ));
        }
        let (roles, projects) = principal_scope(src, &key, p, kind)?;
        check_tags(src, &key, p)?;
        let approve_by = principal_approve_by(src, &key, p)?;
        let card = principal_card(src, &key, p)?;
        crate::toolset::check_named(src, &key("toolsets"), toolsets, &p.toolsets)?;
        out.push(PrincipalConfig {
            principal: Principal {
                name: p.name.clone(),
                kind,
                roles,
                projects,
                tags: p.tags.clone(),
                approve_by,
                card,
                toolsets: crate::toolset::dedup(&p.toolsets),
                read_only: p.read_only,
            },
            credential,
        });
    }
    Ok(out)
}

/// The hash of a principal's token: `credential` or `credential_file`
/// (from the config's directory `dir`), one of them unless `[auth.oauth]`
/// is set (`oauth`), as 64 hex digits.
fn principal_credential(
    src: &Source,
    key: &dyn Fn(&str) -> String,
    dir: &Path,
    p: &RawPrincipal,
    oauth: bool,
) -> Result<Option<[u8; 32]>, ConfigError> {
    let hash_text = match (&p.credential, &p.credential_file) {
        (Some(_), Some(_)) => {
            return Err(src.invalid(
                &key("credential_file"),
                "`credential` and `credential_file` both give the token's hash",
                "keep one of them",
            ));
        }
        // Under `[auth.oauth]` a principal may come only with its
        // identity provider's tokens.
        (None, None) if oauth => None,
        (None, None) => {
            return Err(src.invalid(
                &key("name"),
                format!("principal `{}` has no credential", p.name),
                format!(
                    "run `glovebox principal add {}` to make a token and store its hash, or set `credential` (the hex SHA-256 of its token) or `credential_file`",
                    p.name
                ),
            ));
        }
        (Some(text), None) => Some(text.clone()),
        (None, Some(file)) => Some(read_credential_file(
            src,
            &key("credential_file"),
            dir,
            file,
        )?),
    };
    let credential = match hash_text {
        None => None,
        Some(text) => Some(parse_hash(text.trim()).ok_or_else(|| {
            src.invalid(
                &key(if p.credential.is_some() { "credential" } else { "credential_file" }),
                "the credential is not a hex SHA-256 (64 hex digits)",
                "store the SHA-256 of the token, never the token itself: `glovebox principal add` does it for you",
            )
        })?),
    };
    Ok(credential)
}

/// The roles and projects of an agent (at least one of each); an operator
/// names none, being in every one.
fn principal_scope(
    src: &Source,
    key: &dyn Fn(&str) -> String,
    p: &RawPrincipal,
    kind: PrincipalKind,
) -> Result<(Vec<Role>, Vec<String>), ConfigError> {
    Ok(match kind {
        PrincipalKind::Operator => {
            for (leaf, given) in [
                ("roles", p.roles.is_some()),
                ("projects", p.projects.is_some()),
            ] {
                if given {
                    return Err(src.invalid(
                        &key(leaf),
                        format!("operator `{}` acts in every role and project", p.name),
                        format!("remove `{leaf}`, or make it `kind = \"agent\"`"),
                    ));
                }
            }
            (Vec::new(), Vec::new())
        }
        PrincipalKind::Agent => {
            let roles = p.roles.as_deref().unwrap_or_default();
            if roles.is_empty() {
                return Err(src.invalid(
                    &key("roles"),
                    format!("agent `{}` may act as no role", p.name),
                    "list the roles it may start sessions as, e.g. `roles = [\"workagent\"]`",
                ));
            }
            let mut parsed = Vec::new();
            for r in roles {
                let role: Role = r.parse().map_err(|e: UnknownWord| {
                    src.invalid(
                        &key("roles"),
                        e,
                        "write roles from orchestrator, supervisor and workagent",
                    )
                })?;
                if !parsed.contains(&role) {
                    parsed.push(role);
                }
            }
            let projects = p.projects.clone().unwrap_or_default();
            if projects.is_empty() || projects.iter().any(|p| p.trim().is_empty()) {
                return Err(src.invalid(
                    &key("projects"),
                    format!("agent `{}` has no project it may touch", p.name),
                    "list its projects, e.g. `projects = [\"demo\"]`, or `[\"*\"]` for any",
                ));
            }
            (parsed, projects)
        }
    })
}

/// `tags`: each 1 to 64 characters, no spaces or commas.
fn check_tags(
    src: &Source,
    key: &dyn Fn(&str) -> String,
    p: &RawPrincipal,
) -> Result<(), ConfigError> {
    for tag in &p.tags {
        if tag.is_empty()
            || tag.len() > 64
            || tag
                .chars()
                .any(|c| c.is_control() || c.is_whitespace() || c == ',')
        {
            return Err(src.invalid(
                &key("tags"),
                format!("`{tag}` is not a session tag"),
                "use 1 to 64 characters, no spaces or commas",
            ));
        }
    }
    Ok(())
}

/// `model`, `version`, `owner`, `description`: the principal's card, each
/// a line of text (no control character) of bounded length.
fn principal_card(
    src: &Source,
    key: &dyn Fn(&str) -> String,
    p: &RawPrincipal,
) -> Result<AgentCard, ConfigError> {
    let field = |name: &str, text: &Option<String>, max: usize| match text {
        None => Ok(None),
        Some(t) if card_text_ok(t, max) => Ok(Some(t.clone())),
        Some(t) => Err(src.invalid(
            &key(name),
            format!(
                "{} characters{}",
                t.chars().count(),
                if t.chars().any(char::is_control) {
                    ", with a control character"
                } else {
                    ""
                }
            ),
            format!("write 1 to {max} characters on one line, or leave `{name}` out"),
        )),
    };
    Ok(AgentCard {
        model: field("model", &p.model, CARD_FIELD_MAX)?,
        version: field("version", &p.version, CARD_FIELD_MAX)?,
        owner: field("owner", &p.owner, CARD_FIELD_MAX)?,
        description: field("description", &p.description, CARD_DESCRIPTION_MAX)?,
    })
}

/// Whether `text` may stand in a card: 1 to `max` characters, none a
/// control character.
pub fn card_text_ok(text: &str, max: usize) -> bool {
    let n = text.chars().count();
    (1..=max).contains(&n) && !text.chars().any(char::is_control) && !text.trim().is_empty()
}

/// `approve_by`: who settles the principal's approvals.
fn principal_approve_by(
    src: &Source,
    key: &dyn Fn(&str) -> String,
    p: &RawPrincipal,
) -> Result<ApproveBy, ConfigError> {
    Ok(match p.approve_by.as_deref() {
        None | Some("operator") => ApproveBy::Operator,
        Some("client") => ApproveBy::Client,
        Some(other) => {
            return Err(src.invalid(
                &key("approve_by"),
                format!("`{other}` is not who settles approvals"),
                "write `approve_by = \"operator\"` (the default: `glovebox approve`) or `approve_by = \"client\"` (the calling client's user, through MCP elicitation)",
            ));
        }
    })
}

fn parse_hash(text: &str) -> Option<[u8; 32]> {
    let text = text.strip_prefix("sha256:").unwrap_or(text);
    let bytes = hex::decode(text).ok()?;
    bytes.try_into().ok()
}

impl super::NamesSecretFile for RawPrincipal {
    const KEYS: [&'static str; 3] = ["principal", "credential_file", "principal"];
    fn named_file(&self) -> (Option<&str>, Option<&String>) {
        (Some(&self.name), self.credential_file.as_ref())
    }
}

/// Reads a credential file, which must be the owner's only (0600 or
/// stricter): the hash is not the token, but it lets an attacker try
/// guesses offline.
pub(super) fn read_credential_file(
    src: &Source,
    key: &str,
    dir: &Path,
    file: &str,
) -> Result<String, ConfigError> {
    let path = dir.join(file);
    let meta = std::fs::metadata(&path).map_err(|e| {
        src.invalid(
            key,
            format!("cannot read credential file `{file}`: {e}"),
            "check the path (relative paths are resolved from the config file's directory)",
        )
    })?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = meta.permissions().mode() & 0o777;
        if mode & 0o077 != 0 {
            return Err(src.invalid(
                key,
                format!(
                    "credential file `{file}` is readable or writable by others (mode {mode:o})"
                ),
                format!("make it the owner's only: `chmod 600 {}`", path.display()),
            ));
        }
    }
    #[cfg(not(unix))]
    let _ = meta;
    std::fs::read_to_string(&path).map_err(|e| {
        src.invalid(
            key,
            format!("cannot read credential file `{file}`: {e}"),
            "check the path and its permissions",
        )
    })
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
