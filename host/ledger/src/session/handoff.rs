//! Handoffs: typed notes from one role (or session) to another, so an agent
//! with no memory of the work can carry it on.

use serde::{Deserialize, Serialize};

use crate::manifest::Role;

/// Which way the work goes.
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum HandoffKind {
    /// An orchestrator gives a part of the work to a supervisor.
    OrchestratorToSupervisor,
    /// A supervisor gives a task to a workagent.
    SupervisorToWorkagent,
    /// A workagent reports its task done to its supervisor.
    WorkagentCompletion,
    /// A supervisor reports its part to the orchestrator.
    SupervisorToOrchestrator,
    /// A session to itself: what the next agent in this session needs to carry on.
    Continuation,
    /// A session gives a child session it spawns its task (`session_spawn`
    /// writes it; it goes to the child's role, at or below the writer's).
    Task,
}

impl HandoffKind {
    pub const ALL: [HandoffKind; 6] = [
        HandoffKind::OrchestratorToSupervisor,
        HandoffKind::SupervisorToWorkagent,
        HandoffKind::WorkagentCompletion,
        HandoffKind::SupervisorToOrchestrator,
        HandoffKind::Continuation,
        HandoffKind::Task,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            HandoffKind::OrchestratorToSupervisor => "orchestrator_to_supervisor",
            HandoffKind::SupervisorToWorkagent => "supervisor_to_workagent",
            HandoffKind::WorkagentCompletion => "workagent_completion",
            HandoffKind::SupervisorToOrchestrator => "supervisor_to_orchestrator",
            HandoffKind::Continuation => "continuation",
            HandoffKind::Task => "task",
        }
    }

    /// The role that writes this kind; `None` for any role.
    pub fn from_role(self) -> Option<Role> {
        match self {
            HandoffKind::OrchestratorToSupervisor => Some(Role::Orchestrator),
            HandoffKind::SupervisorToWorkagent | HandoffKind::SupervisorToOrchestrator => {
                Some(Role::Supervisor)
            }
            HandoffKind::WorkagentCompletion => Some(Role::Workagent),
            HandoffKind::Continuation | HandoffKind::Task => None,
        }
    }

    /// The role this kind goes to; `None` for the writer's own role.
    pub fn to_role(self) -> Option<Role> {
        match self {
            HandoffKind::OrchestratorToSupervisor | HandoffKind::WorkagentCompletion => {
                Some(Role::Supervisor)
            }
            HandoffKind::SupervisorToWorkagent => Some(Role::Workagent),
            HandoffKind::SupervisorToOrchestrator => Some(Role::Orchestrator),
            HandoffKind::Continuation | HandoffKind::Task => None,
        }
    }

    /// The kinds a session of `role` may write with `session_handoff` (a
    /// `task` is written only by `session_spawn`).
    pub fn allowed_for(role: Role) -> Vec<HandoffKind> {
        HandoffKind::ALL
            .into_iter()
            .filter(|k| *k != HandoffKind::Task && k.from_role().is_none_or(|r| r == role))
            .collect()
    }
}

glovebox_manifest::named_enum!(HandoffKind, "handoff kind");

/// A structured note from one session or role to another.
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Handoff {
    pub kind: HandoffKind,
    /// Must be the writing session's role.
    pub from_role: Role,
    /// Must fit `kind` when given; filled in from `kind` when absent.
    pub to_role: Option<Role>,
    pub objective: String,
    #[serde(flatten)]
    pub notes: HandoffNotes,
    /// The session (id or name) the handoff is for; it also receives a copy.
    /// For a continuation: absent or the writing session itself.
    #[serde(default)]
    pub target_session: Option<String>,
}

/// What a handoff says besides its kind and objective, all of it optional:
/// the same lists whether an agent writes the handoff (`session_handoff`)
/// or a parent briefs a child with it (`session_spawn`).
///
/// Flattened into [`Handoff`], fields in this order: a handoff already in a
/// log must serialize to the bytes its hash covers.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
pub struct HandoffNotes {
    #[serde(default)]
    pub requirements: Vec<String>,
    #[serde(default)]
    pub files: Vec<String>,
    #[serde(default)]
    pub success_criteria: Vec<String>,
    #[serde(default)]
    pub work_completed: Vec<String>,
    #[serde(default)]
    pub current_phase: String,
    #[serde(default)]
    pub next_steps: Vec<String>,
    #[serde(default)]
    pub blockers: Vec<String>,
}

impl Handoff {
    /// A handoff of `kind` from `from_role` with only an objective; fill in the rest.
    pub fn new(kind: HandoffKind, from_role: Role, objective: impl Into<String>) -> Handoff {
        Handoff {
            kind,
            from_role,
            to_role: None,
            objective: objective.into(),
            notes: HandoffNotes::default(),
            target_session: None,
        }
    }

    /// Checks that a session of `role` may write this handoff, and fills in
    /// `to_role` when it is absent. The error is the reason, for `BadHandoff`.
    pub fn validate(&mut self, role: Role) -> Result<(), HandoffRefused> {
        if self.kind == HandoffKind::Task {
            return Err(HandoffRefused::Task);
        }
        let allowed = HandoffKind::allowed_for(role);
        if !allowed.contains(&self.kind) {
            return Err(HandoffRefused::Kind {
                role,
                kind: self.kind,
                allowed,
            });
        }
        if self.from_role != role {
            return Err(HandoffRefused::FromRole {
                said: self.from_role,
                role,
            });
        }
        let to = self.kind.to_role().unwrap_or(role);
        match self.to_role {
            Some(given) if given != to => {
                return Err(HandoffRefused::ToRole {
                    kind: self.kind,
                    to,
                    given,
                });
            }
            _ => self.to_role = Some(to),
        }
        if self.objective.trim().is_empty() {
            return Err(HandoffRefused::NoObjective);
        }
        Ok(())
    }
}

/// Why a session may not write a handoff: the reason of a `BadHandoff`,
/// with the fix.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum HandoffRefused {
    #[error(
        "a `task` handoff is written by `session_spawn` when it creates the child session: spawn a child with the task instead"
    )]
    Task,
    /// The session's role may not write a handoff of this kind.
    #[error(
        "a {role} session cannot write a handoff of kind `{kind}`: a {role} may write {}",
        join(.allowed)
    )]
    Kind {
        role: Role,
        kind: HandoffKind,
        /// The kinds the role may write.
        allowed: Vec<HandoffKind>,
    },
    /// The handoff's `from_role` is not the session's role.
    #[error(
        "the handoff says it is from a {said}, but the session is a {role}: set from_role to {role}"
    )]
    FromRole { said: Role, role: Role },
    /// The handoff's `to_role` is not where its kind goes.
    #[error(
        "a `{kind}` handoff goes to a {to}, not a {given}: set to_role to {to} or leave it out"
    )]
    ToRole {
        kind: HandoffKind,
        to: Role,
        given: Role,
    },
    #[error("the handoff has no objective: say what the work is for")]
    NoObjective,
}

fn join(kinds: &[HandoffKind]) -> String {
    kinds
        .iter()
        .map(|k| k.as_str())
        .collect::<Vec<_>>()
        .join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_role_writes_only_its_kinds() {
        use HandoffKind::*;
        assert_eq!(
            HandoffKind::allowed_for(Role::Orchestrator),
            vec![OrchestratorToSupervisor, Continuation]
        );
        assert_eq!(
            HandoffKind::allowed_for(Role::Supervisor),
            vec![
                SupervisorToWorkagent,
                SupervisorToOrchestrator,
                Continuation
            ]
        );
        assert_eq!(
            HandoffKind::allowed_for(Role::Workagent),
            vec![WorkagentCompletion, Continuation]
        );
    }

    #[test]
    fn wrong_kind_for_role_says_which_kinds_fit() {
        let mut h = Handoff::new(HandoffKind::OrchestratorToSupervisor, Role::Workagent, "x");
        let err = h.validate(Role::Workagent).unwrap_err().to_string();
        assert_eq!(
            err,
            "a workagent session cannot write a handoff of kind `orchestrator_to_supervisor`: \
             a workagent may write workagent_completion, continuation"
        );
    }

    #[test]
    fn to_role_is_checked_and_filled_in() {
        let mut h = Handoff::new(HandoffKind::SupervisorToWorkagent, Role::Supervisor, "x");
        h.validate(Role::Supervisor).unwrap();
        assert_eq!(h.to_role, Some(Role::Workagent));

        let mut h = Handoff::new(HandoffKind::Continuation, Role::Workagent, "x");
        h.validate(Role::Workagent).unwrap();
        assert_eq!(h.to_role, Some(Role::Workagent));

        let mut h = Handoff::new(HandoffKind::SupervisorToWorkagent, Role::Supervisor, "x");
        h.to_role = Some(Role::Orchestrator);
        assert!(
            h.validate(Role::Supervisor)
                .unwrap_err()
                .to_string()
                .contains("goes to a workagent")
        );

        let mut h = Handoff::new(HandoffKind::Continuation, Role::Supervisor, "x");
        assert!(
            h.validate(Role::Workagent)
                .unwrap_err()
                .to_string()
                .contains("from_role")
        );

        let mut h = Handoff::new(HandoffKind::Continuation, Role::Supervisor, " ");
        assert!(
            h.validate(Role::Supervisor)
                .unwrap_err()
                .to_string()
                .contains("no objective")
        );
    }

    #[test]
    fn kinds_parse_from_their_names() {
        assert_eq!(
            "workagent_completion".parse::<HandoffKind>(),
            Ok(HandoffKind::WorkagentCompletion)
        );
        assert!(
            "sideways"
                .parse::<HandoffKind>()
                .unwrap_err()
                .to_string()
                .contains("continuation")
        );
    }
}
