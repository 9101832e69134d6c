//! `[handoffs]`: the routes along which an agent may hand work to a session
//! that is not its own. Without a route, a handoff's target must be one of
//! the writer's own sessions (an operator's reach every session).

use crate::UnknownWord;
use serde::Deserialize;

use super::ConfigError;
use super::source::Source;
use crate::Role;

/// One route: a session of role `from` may hand off into a live session of
/// role `to` owned by another principal, in a project the writer may touch.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HandoffRoute {
    pub from: Role,
    pub to: Role,
}

/// `[handoffs]`.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct HandoffsConfig {
    /// `routes = ["workagent -> supervisor", ...]`. Default none.
    pub routes: Vec<HandoffRoute>,
}

impl HandoffsConfig {
    /// Whether a session of role `from` may hand off into another
    /// principal's session of role `to`.
    pub fn allows(&self, from: Role, to: Role) -> bool {
        self.routes.iter().any(|r| r.from == from && r.to == to)
    }
}

/// `[handoffs]`.
#[derive(Default, Deserialize)]
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub(super) struct RawHandoffs {
    /// `"workagent -> supervisor"`: the writer's role, then the target's,
    /// along which a handoff may reach another principal's session
    /// ([`operators/principals.md`](operators/principals.md)).
    #[serde(default)]
    #[cfg_attr(feature = "schemars", schemars(extend("default" = [])))]
    routes: Vec<String>,
}

pub(super) fn validate_handoffs(
    src: &Source,
    raw: &RawHandoffs,
) -> Result<HandoffsConfig, ConfigError> {
    let mut config = HandoffsConfig::default();
    for text in &raw.routes {
        let route = parse_route(text).map_err(|problem| {
            src.invalid(
                "handoffs.routes",
                problem,
                "write each route as `\"<role> -> <role>\"`, e.g. `\"workagent -> supervisor\"` (roles: orchestrator, supervisor, workagent)",
            )
        })?;
        if !config.routes.contains(&route) {
            config.routes.push(route);
        }
    }
    Ok(config)
}

/// What is wrong with a handoff route (the config adds the key and the
/// shape of a route).
#[derive(thiserror::Error, Debug, Clone, PartialEq, Eq)]
enum RouteError {
    #[error("route `{text}` has no `->`")]
    NoArrow { text: String },
    #[error("route `{text}`: {error}")]
    Role { text: String, error: UnknownWord },
}

fn parse_route(text: &str) -> Result<HandoffRoute, RouteError> {
    let Some((from, to)) = text.split_once("->") else {
        return Err(RouteError::NoArrow {
            text: text.to_string(),
        });
    };
    let role = |t: &str| -> Result<Role, RouteError> {
        t.trim().parse().map_err(|error| RouteError::Role {
            text: text.to_string(),
            error,
        })
    };
    Ok(HandoffRoute {
        from: role(from)?,
        to: role(to)?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_route_is_two_roles_and_an_arrow() {
        assert_eq!(
            parse_route(" workagent->supervisor "),
            Ok(HandoffRoute {
                from: Role::Workagent,
                to: Role::Supervisor
            })
        );
        assert!(
            parse_route("workagent supervisor")
                .unwrap_err()
                .to_string()
                .contains("no `->`")
        );
        assert!(
            parse_route("workagent -> boss")
                .unwrap_err()
                .to_string()
                .contains("boss")
        );
    }
}
