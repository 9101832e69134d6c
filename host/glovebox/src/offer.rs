//! Which plugin tools a caller is offered: the one decision behind every
//! tool list and every call.
//!
//! Three things narrow the tools of a session, each only ever taking away:
//! its owner's `[[toolset]]`s (`[[principal]] toolsets`), its role's
//! (`[role.<role>] toolsets`), and read-only (`[[principal]] read_only`,
//! or a session started read-only, or a child of one), which leaves only
//! tools annotated read-only (`[tools.<tool>] read_only` in a manifest; a
//! tool without the annotation is not read-only). With none of them every
//! tool is offered, as before toolsets existed. Built-in session tools are
//! not plugin tools and are always offered.
//!
//! Why one place: a tool a caller is not shown must not be reachable some
//! other way. Listing (`Host::offer`, for MCP's `tools/list` and any other
//! surface that lists a caller's tools) and admitting (`Host::offer_in`,
//! checked by the pipeline for every call in a session: MCP over stdio and
//! HTTP, tasks, background jobs at spawn and again when they run, the
//! command line's `call --session`, re-runs) read the same [`Offer`]. A
//! call of a tool not offered is refused as an unknown tool is: before
//! anything is logged or judged by a hook, with the reason, the toolsets
//! that would offer it and who gives them.
//!
//! A call in a session is judged by the session's owner as the config
//! declares it now (a reload that narrows a principal reaches its open
//! sessions at their next call), its role, and its own read-only mark.

use crate::host::Host;
use crate::manifest::{HostConfig, LOCAL_PRINCIPAL, Principal, Role, ToolsetsConfig};
use crate::session::SessionState;
use crate::{CallError, ToolInfo};

/// What narrows the plugin tools offered in one session (or to a caller
/// about to start one). Cheap; made by [`Host::offer`] or [`Host::offer_in`].
#[derive(Clone, Debug)]
pub struct Offer<'h> {
    toolsets: &'h ToolsetsConfig,
    /// The principal whose toolsets apply, by name, and those toolsets
    /// (empty: it is not narrowed).
    principal: Option<(String, Vec<String>)>,
    role: Role,
    /// Why only read-only tools are offered, if they are.
    read_only: Option<ReadOnlyBy>,
}

/// Who made a session read-only.
#[derive(Clone, Debug, PartialEq, Eq)]
enum ReadOnlyBy {
    /// `read_only = true` in the principal's `[[principal]]`.
    Principal(String),
    /// The session was started read-only, or its parent was.
    Session,
}

impl Host {
    /// What `caller` is offered in a session of `role`, read-only when
    /// `read_only` (a bound session's mark) or the caller is.
    pub fn offer(&self, caller: &Principal, role: Role, read_only: bool) -> Offer<'_> {
        Offer::new(self.config(), Some(caller), role, read_only)
    }

    /// What is offered in session `state`: its owner's toolsets as the
    /// config declares the owner now, its role's, and read-only when the
    /// session or its owner is.
    pub fn offer_in(&self, state: &SessionState) -> Offer<'_> {
        let config = self.config();
        let owner = state.owner_name();
        let declared = config
            .principals
            .iter()
            .map(|p| &p.principal)
            .find(|p| p.name == owner);
        let local =
            (config.principals.is_empty() && owner == LOCAL_PRINCIPAL).then(Principal::local);
        let principal = declared.or(local.as_ref());
        Offer::new(config, principal, state.header.role, state.read_only)
    }

    /// The plugin tools `offer` offers, sorted by name.
    pub fn offered_tools(&self, offer: &Offer<'_>) -> Vec<&ToolInfo> {
        self.tools()
            .into_iter()
            .filter(|t| offer.offers(t))
            .collect()
    }
}

impl<'h> Offer<'h> {
    fn new(
        config: &'h HostConfig,
        principal: Option<&Principal>,
        role: Role,
        read_only: bool,
    ) -> Offer<'h> {
        let by_principal = principal
            .filter(|p| p.read_only)
            .map(|p| ReadOnlyBy::Principal(p.name.clone()));
        Offer {
            toolsets: &config.toolsets,
            principal: principal.map(|p| (p.name.clone(), p.toolsets.clone())),
            role,
            read_only: by_principal.or(read_only.then_some(ReadOnlyBy::Session)),
        }
    }

    /// Whether anything narrows it (otherwise every tool is offered).
    pub fn narrowed(&self) -> bool {
        self.read_only.is_some()
            || !self.toolsets.of_role(self.role).is_empty()
            || self.principal.as_ref().is_some_and(|(_, s)| !s.is_empty())
    }

    /// Whether `tool` is offered.
    pub fn offers(&self, tool: &ToolInfo) -> bool {
        self.refusal(tool).is_none()
    }

    /// `Ok` when `tool` is offered; otherwise the refusal, which says what
    /// narrows it, the toolsets that would offer it and who gives them.
    pub fn check(&self, tool: &ToolInfo) -> Result<(), CallError> {
        match self.refusal(tool) {
            None => Ok(()),
            Some(reason) => Err(CallError::NotOffered {
                tool: tool.name.clone(),
                reason,
            }),
        }
    }

    /// Why `tool` is not offered, if it is not.
    fn refusal(&self, tool: &ToolInfo) -> Option<String> {
        if let Some((name, sets)) = &self.principal
            && !sets.is_empty()
            && !self.toolsets.any_offers(sets, &tool.name)
        {
            return Some(format!(
                "principal `{name}` is given the toolsets {} (`toolsets` of its `[[principal]]`), which do not list it; {}",
                quoted(sets),
                self.who_offers(
                    &tool.name,
                    "an operator adds one to the principal's `toolsets` in the host config"
                )
            ));
        }
        let role_sets = self.toolsets.of_role(self.role);
        if !role_sets.is_empty() && !self.toolsets.any_offers(role_sets, &tool.name) {
            let role = self.role;
            return Some(format!(
                "sessions of role `{role}` are given the toolsets {} (`[role.{role}] toolsets`), which do not list it; {}",
                quoted(role_sets),
                self.who_offers(
                    &tool.name,
                    &format!("an operator adds one to `[role.{role}] toolsets` in the host config")
                )
            ));
        }
        if let Some(by) = &self.read_only
            && !tool.read_only
        {
            let by = match by {
                ReadOnlyBy::Principal(name) => format!(
                    "principal `{name}` is read-only (`read_only = true` in its `[[principal]]`, which only an operator changes)"
                ),
                ReadOnlyBy::Session => "this session is read-only (it was started so, or its parent was; that is never lifted)".to_string(),
            };
            return Some(format!(
                "{by}, and `{}` is not annotated read-only; an operator marks a tool that only reads with `read_only = true` under `[tools.{}]` in the manifest of plugin `{}`",
                tool.name, tool.tool, tool.plugin
            ));
        }
        None
    }

    /// The toolsets that list `tool` and how a caller is given one (`how`).
    fn who_offers(&self, tool: &str, how: &str) -> String {
        let offering = self.toolsets.offering(tool);
        if offering.is_empty() {
            format!(
                "no `[[toolset]]` lists it: an operator adds it to one (`tools = [\"{tool}\"]`) and gives that toolset"
            )
        } else {
            format!("the toolsets that list it: {} ({how})", quoted(&offering))
        }
    }
}

/// `a`, `b`: names in backquotes.
fn quoted<S: AsRef<str>>(names: &[S]) -> String {
    names
        .iter()
        .map(|n| format!("`{}`", n.as_ref()))
        .collect::<Vec<_>>()
        .join(", ")
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use super::*;
    use crate::manifest::Toolset;

    fn tool(name: &str, read_only: bool) -> ToolInfo {
        let (plugin, short) = name.split_once('.').unwrap();
        ToolInfo {
            name: name.to_string(),
            plugin: plugin.to_string(),
            tool: short.to_string(),
            description: String::new(),
            input_schema: serde_json::json!({"type": "object"}),
            field_order: Vec::new(),
            action: "read:x".to_string(),
            destructive: false,
            idempotent: false,
            read_only,
            cost: None,
            http: None,
        }
    }

    /// A config with `readers` (files.read, text.*) and `writers`
    /// (files.write), workagents narrowed to `readers` and `writers`.
    fn config() -> HostConfig {
        let mut config = HostConfig::from_plugins(std::path::PathBuf::from("/d"), Vec::new());
        config.toolsets = ToolsetsConfig {
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
            roles: HashMap::from([(Role::Workagent, vec!["readers".into(), "writers".into()])]),
        };
        config
    }

    fn agent(toolsets: &[&str], read_only: bool) -> Principal {
        Principal {
            toolsets: toolsets.iter().map(|s| s.to_string()).collect(),
            read_only,
            ..Principal::local()
        }
    }

    #[test]
    fn nothing_narrows_a_caller_without_toolsets_or_read_only() {
        let config = HostConfig::from_plugins(std::path::PathBuf::from("/d"), Vec::new());
        let offer = Offer::new(&config, Some(&agent(&[], false)), Role::Workagent, false);
        assert!(!offer.narrowed());
        assert!(offer.offers(&tool("files.write", false)));
        // The role of a config with toolsets for another role only.
        let config = self::config();
        let offer = Offer::new(&config, Some(&agent(&[], false)), Role::Supervisor, false);
        assert!(!offer.narrowed());
        assert!(offer.offers(&tool("echo.echo", false)));
    }

    #[test]
    fn the_principals_and_the_roles_toolsets_must_both_allow_a_tool() {
        let config = config();
        let reader = agent(&["readers"], false);
        let offer = Offer::new(&config, Some(&reader), Role::Workagent, false);
        assert!(offer.offers(&tool("text.upper", false)));
        let refused = offer.check(&tool("files.write", false)).unwrap_err();
        assert_eq!(refused.kind(), "not_offered");
        let words = refused.to_string();
        assert!(
            words.contains("principal `local` is given the toolsets `readers`")
                && words.contains("the toolsets that list it: `writers`"),
            "{words}"
        );
        // A principal allowed everything is still held to its role's.
        let offer = Offer::new(&config, Some(&agent(&[], false)), Role::Workagent, false);
        let words = offer
            .check(&tool("echo.echo", false))
            .unwrap_err()
            .to_string();
        assert!(
            words.contains("`[role.workagent] toolsets`") && words.contains("no `[[toolset]]`"),
            "{words}"
        );
    }

    #[test]
    fn read_only_leaves_only_annotated_tools_and_says_who_made_it_so() {
        let config = config();
        let session = Offer::new(&config, Some(&agent(&[], false)), Role::Supervisor, true);
        assert!(session.narrowed());
        assert!(session.offers(&tool("files.read", true)));
        let words = session
            .check(&tool("files.write", false))
            .unwrap_err()
            .to_string();
        assert!(
            words.contains("this session is read-only") && words.contains("`[tools.write]`"),
            "{words}"
        );
        // The principal's mark wins the wording, and holds without the session's.
        let principal = Offer::new(&config, Some(&agent(&[], true)), Role::Supervisor, false);
        let words = principal
            .check(&tool("files.write", false))
            .unwrap_err()
            .to_string();
        assert!(words.contains("principal `local` is read-only"), "{words}");
        // Read-only narrows further what the toolsets allow, never widens it.
        let both = Offer::new(
            &config,
            Some(&agent(&["writers"], true)),
            Role::Supervisor,
            false,
        );
        assert!(!both.offers(&tool("files.read", true)));
    }
}
