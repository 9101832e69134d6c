//! The part a session plays.
//!
//! It lives here, not with the sessions that carry it, because the operator's
//! config names it (`[budgets.role.<role>]`): the config must be readable
//! without the session log. The host re-exports it as `glovebox::session::Role`.

use serde::{Deserialize, Serialize};

/// The part a session plays.
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    /// Plans the work and hands parts of it to supervisors.
    Orchestrator,
    /// Splits a part into tasks for workagents and checks their results.
    Supervisor,
    /// Does one task.
    Workagent,
    /// Passes or fails another principal's completion handoff
    /// (`session_verdict`); never spawned, never judges its own principal.
    Judge,
}

impl Role {
    pub const ALL: [Role; 4] = [
        Role::Orchestrator,
        Role::Supervisor,
        Role::Workagent,
        Role::Judge,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Role::Orchestrator => "orchestrator",
            Role::Supervisor => "supervisor",
            Role::Workagent => "workagent",
            Role::Judge => "judge",
        }
    }
}

crate::named_enum!(Role, "role");

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unknown_role_lists_the_valid_ones() {
        assert_eq!("supervisor".parse::<Role>().unwrap(), Role::Supervisor);
        let err = "boss".parse::<Role>().unwrap_err().to_string();
        assert!(err.contains("orchestrator, supervisor, workagent"), "{err}");
    }
}
