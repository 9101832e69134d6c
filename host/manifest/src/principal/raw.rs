//! `[[principal]]` as the operator writes it ([`RawPrincipal`]) and its
//! checks: the name, the credential (inline or in an owner-only file), the
//! roles, projects and tags, the toolsets, the agent card and who settles
//! its approvals. What a check makes is a [`PrincipalConfig`]; the types and
//! what they mean are in `mod.rs`.

use std::path::Path;

use serde::Deserialize;

use super::{
    AgentCard, ApproveBy, CARD_DESCRIPTION_MAX, CARD_FIELD_MAX, Principal, PrincipalConfig,
    PrincipalKind, card_text_ok, check_principal_name, parse_hash,
};
use crate::ConfigError;
use crate::source::Source;
use crate::{Role, UnknownWord};

/// `[[principal]]`: who may connect, written by `glovebox principal add`
/// ([`operators/principals.md`](operators/principals.md)).
#[derive(Deserialize)]
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub(crate) struct RawPrincipal {
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

pub(crate) fn validate_principals(
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

impl crate::NamesSecretFile for RawPrincipal {
    const KEYS: [&'static str; 3] = ["principal", "credential_file", "principal"];
    fn named_file(&self) -> (Option<&str>, Option<&String>) {
        (Some(&self.name), self.credential_file.as_ref())
    }
}

/// Reads a credential file, which must be the owner's only (0600 or
/// stricter): the hash is not the token, but it lets an attacker try
/// guesses offline.
pub(crate) fn read_credential_file(
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
