//! `[[toolset]]` and `[role.<role>]` in `glovebox.toml`: named lists of
//! tools that narrow what an agent is offered.
//!
//! ```toml
//! [[toolset]]
//! name = "readers"
//! tools = ["files.read", "files.list", "text.*"]   # `plugin.tool` or `plugin.*`
//!
//! [[principal]]
//! name = "ci-agent"
//! toolsets = ["readers"]   # this principal is offered only these tools
//! read_only = true         # and of those, only tools annotated read-only
//!
//! [role.workagent]
//! toolsets = ["readers"]   # every workagent session, whoever starts it
//! ```
//!
//! Why: an agent shown forty tools spends tokens reading them and picks the
//! wrong one more often; a security-sensitive deployment wants each agent
//! to reach only what its job needs. A principal or role with no toolsets
//! is offered every tool (nothing changes for a config that names none);
//! with toolsets, a tool is offered when one of them lists it, and a tool
//! the principal's and the role's toolsets do not both allow is neither
//! listed nor callable. Built-in session tools are always offered. The
//! patterns are those `[auth.oauth.tool_scopes]` takes (see
//! [`tool_pattern_matches`]); a pattern that names no loaded tool is
//! refused when the host loads its plugins, since a typo would otherwise
//! hide a tool the operator meant to offer.
//!
//! Roles are fixed words, not declared tables, so what the operator gives
//! a role besides its budgets (`[budgets.role.<role>]`, grouped with the
//! other budgets) lives under `[role.<role>]`.

use std::collections::{BTreeMap, HashMap};

use serde::Deserialize;

use super::ConfigError;
use super::source::Source;
use crate::{Role, UnknownWord};

/// One `[[toolset]]`: a name and the tools it offers.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Toolset {
    /// Unique among the toolsets; what `toolsets = [...]` names.
    pub name: String,
    /// Tool patterns: `plugin.tool`, or `plugin.*` for every tool of a plugin.
    pub tools: Vec<String>,
}

impl Toolset {
    /// Whether one of its patterns covers `tool` (`plugin.tool`).
    pub fn offers(&self, tool: &str) -> bool {
        self.tools.iter().any(|p| tool_pattern_matches(p, tool))
    }
}

/// The toolsets of a config and who is given which.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ToolsetsConfig {
    /// `[[toolset]]`, in order.
    pub sets: Vec<Toolset>,
    /// `[role.<role>] toolsets`: the toolsets every session of the role is
    /// narrowed to (a role not here is not narrowed).
    pub roles: HashMap<Role, Vec<String>>,
}

impl ToolsetsConfig {
    /// The toolset named `name`.
    pub fn get(&self, name: &str) -> Option<&Toolset> {
        self.sets.iter().find(|t| t.name == name)
    }

    /// Whether one of the toolsets named `names` offers `tool`.
    pub fn any_offers(&self, names: &[String], tool: &str) -> bool {
        names
            .iter()
            .filter_map(|n| self.get(n))
            .any(|t| t.offers(tool))
    }

    /// The names of the toolsets that offer `tool`, in config order.
    pub fn offering(&self, tool: &str) -> Vec<&str> {
        self.sets
            .iter()
            .filter(|t| t.offers(tool))
            .map(|t| t.name.as_str())
            .collect()
    }

    /// The toolsets of `role` (empty: not narrowed).
    pub fn of_role(&self, role: Role) -> &[String] {
        self.roles.get(&role).map(Vec::as_slice).unwrap_or_default()
    }
}

/// Whether `pattern` is a tool pattern: `plugin.tool` (as `tools/list`
/// shows it), or `plugin.*` for every tool of a plugin; no spaces.
pub fn is_tool_pattern(pattern: &str) -> bool {
    let named = pattern.split_once('.').is_some_and(|(plugin, name)| {
        !plugin.is_empty()
            && !name.is_empty()
            && !plugin.contains('*')
            && (name == "*" || !name.contains('*'))
    });
    named && !pattern.contains(char::is_whitespace)
}

/// Whether tool pattern `pattern` covers tool `tool` (`plugin.tool`):
/// `plugin.*` covers every tool of `plugin` (and no other plugin's, even one
/// whose name starts the same), any other pattern the one tool it spells.
/// A string that is not a [tool pattern](is_tool_pattern) covers nothing.
pub fn tool_pattern_matches(pattern: &str, tool: &str) -> bool {
    if !is_tool_pattern(pattern) {
        return false;
    }
    match pattern.strip_suffix(".*") {
        Some(plugin) => tool
            .split_once('.')
            .is_some_and(|(p, name)| p == plugin && !name.is_empty()),
        None => pattern == tool,
    }
}

/// `[[toolset]]`: a named list of tools a principal or role may be given
/// ([`operators/principals.md`](operators/principals.md#toolsets-and-read-only-agents)).
#[derive(Deserialize)]
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub(super) struct RawToolset {
    /// The toolset's name (1 to 64 letters, digits, `.`, `_` and `-`), unique.
    name: String,
    /// Tool patterns: `plugin.tool` as `tools/list` shows it, or `plugin.*`
    /// for every tool of a plugin; each must name a loaded tool.
    tools: Vec<String>,
}

/// `[role.<role>]`: what the operator gives every session of a role.
#[derive(Deserialize)]
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub(super) struct RawRoleTools {
    /// The `[[toolset]]`s every session of the role is narrowed to (none:
    /// every tool, as the principal allows).
    #[serde(default)]
    #[cfg_attr(feature = "schemars", schemars(extend("default" = [])))]
    toolsets: Vec<String>,
}

/// `[[toolset]]` and `[role.<role>]`, checked: names well-formed and unique,
/// patterns well-formed, every role a role and every toolset a role names
/// declared. (That each pattern names a loaded tool is checked by the host
/// once the components have said which tools they have.)
pub(super) fn validate_toolsets(
    src: &Source,
    raw: &[RawToolset],
    roles: &BTreeMap<String, RawRoleTools>,
) -> Result<ToolsetsConfig, ConfigError> {
    let mut sets: Vec<Toolset> = Vec::new();
    for (i, t) in raw.iter().enumerate() {
        let key = |leaf: &str| format!("toolset[{i}].{leaf}");
        if !valid_name(&t.name) {
            return Err(src.invalid(
                &key("name"),
                format!("`{}` is not a toolset name", t.name),
                "name it with 1 to 64 letters, digits, `.`, `_` or `-`, e.g. `name = \"readers\"`",
            ));
        }
        if sets.iter().any(|s| s.name == t.name) {
            return Err(src.invalid(
                &key("name"),
                format!("toolset `{}` is declared twice", t.name),
                "give each `[[toolset]]` a unique name, or merge their `tools`",
            ));
        }
        if t.tools.is_empty() {
            return Err(src.invalid(
                &key("tools"),
                format!("toolset `{}` lists no tool", t.name),
                "list the tools it offers, e.g. `tools = [\"files.read\", \"text.*\"]`, or remove the toolset",
            ));
        }
        if let Some(bad) = t.tools.iter().find(|p| !is_tool_pattern(p)) {
            return Err(src.invalid(
                &key("tools"),
                format!("`{bad}` is not a plugin tool"),
                "name a plugin tool as `plugin.tool` (as `tools/list` shows it), or every tool of a plugin as `plugin.*`, e.g. `tools = [\"files.read\", \"text.*\"]`",
            ));
        }
        sets.push(Toolset {
            name: t.name.clone(),
            tools: t.tools.clone(),
        });
    }
    let mut config = ToolsetsConfig {
        sets,
        roles: HashMap::new(),
    };
    for (name, r) in roles {
        let at = format!("role.{name}.toolsets");
        let role: Role = name.parse().map_err(|e: UnknownWord| {
            src.invalid(
                &format!("role.{name}"),
                e,
                "write `[role.<role>]` with a role from orchestrator, supervisor, workagent and judge",
            )
        })?;
        check_named(src, &at, &config, &r.toolsets)?;
        if !r.toolsets.is_empty() {
            config.roles.insert(role, dedup(&r.toolsets));
        }
    }
    Ok(config)
}

/// Every name of `names` (given at `key`) is a declared toolset.
pub(super) fn check_named(
    src: &Source,
    key: &str,
    config: &ToolsetsConfig,
    names: &[String],
) -> Result<(), ConfigError> {
    for name in names {
        if config.get(name).is_none() {
            let declared: Vec<&str> = config.sets.iter().map(|t| t.name.as_str()).collect();
            return Err(src.invalid(
                key,
                format!("`{name}` is no declared toolset"),
                if declared.is_empty() {
                    format!(
                        "declare it: `[[toolset]]` with `name = \"{name}\"` and the `tools` it offers"
                    )
                } else {
                    format!(
                        "name one of the declared toolsets ({}), or declare `{name}` with a `[[toolset]]`",
                        declared.join(", ")
                    )
                },
            ));
        }
    }
    Ok(())
}

/// `names` without repeats, in order.
pub(super) fn dedup(names: &[String]) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for n in names {
        if !out.contains(n) {
            out.push(n.clone());
        }
    }
    out
}

fn valid_name(name: &str) -> bool {
    (1..=64).contains(&name.len())
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn patterns_name_one_tool_or_every_tool_of_one_plugin() {
        // (pattern, tool, matches)
        let table = [
            ("files.read", "files.read", true),
            ("files.read", "files.readme", false),
            ("files.read", "files.write", false),
            ("files.*", "files.read", true),
            ("files.*", "files.dir.list", true),
            ("files.*", "filesystem.read", false),
            ("files.*", "file.read", false),
            ("text.upper", "text.upper.x", false),
            ("text.*", "text.", false),
            // Not patterns: they cover nothing, not even themselves.
            ("*", "files.read", false),
            ("*.read", "files.read", false),
            ("files.re*", "files.read", false),
            ("files", "files", false),
            ("files .read", "files .read", false),
            ("", "", false),
        ];
        for (pattern, tool, expected) in table {
            assert_eq!(
                tool_pattern_matches(pattern, tool),
                expected,
                "pattern {pattern:?} on tool {tool:?}"
            );
        }
    }

    #[test]
    fn a_caller_is_offered_what_one_of_its_toolsets_lists() {
        let config = ToolsetsConfig {
            sets: vec![
                Toolset {
                    name: "readers".into(),
                    tools: vec!["files.read".into(), "text.*".into()],
                },
                Toolset {
                    name: "writers".into(),
                    tools: vec!["files.write".into()],
                },
            ],
            roles: HashMap::from([(Role::Workagent, vec!["readers".into()])]),
        };
        let readers = vec!["readers".to_string()];
        assert!(config.any_offers(&readers, "files.read"));
        assert!(config.any_offers(&readers, "text.upper"));
        assert!(!config.any_offers(&readers, "files.write"));
        // A name that is no toolset offers nothing (the config refuses it).
        assert!(!config.any_offers(&["nope".to_string()], "files.read"));
        assert_eq!(config.offering("files.write"), vec!["writers"]);
        assert!(config.offering("echo.echo").is_empty());
        assert_eq!(config.of_role(Role::Workagent), readers.as_slice());
        assert!(config.of_role(Role::Supervisor).is_empty());
    }
}
