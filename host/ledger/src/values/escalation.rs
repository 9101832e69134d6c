//! The rungs of the escalation ladder (see `crate::detect`).

use serde::{Deserialize, Serialize};

/// The rungs of the escalation ladder, in order.
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize,
)]
#[serde(rename_all = "snake_case")]
pub enum EscalationStep {
    /// Nothing is wrong.
    #[default]
    None,
    /// A call failed: the agent retries it.
    Retry,
    /// Retrying did not help: the agent adjusts the call's parameters.
    Adjust,
    /// A critical blocker flag: the session is paused for an operator.
    Blocker,
    /// An operator is rescuing the session.
    Rescue,
}

impl EscalationStep {
    pub fn as_str(self) -> &'static str {
        match self {
            EscalationStep::None => "none",
            EscalationStep::Retry => "retry",
            EscalationStep::Adjust => "adjust",
            EscalationStep::Blocker => "blocker",
            EscalationStep::Rescue => "rescue",
        }
    }

    /// What the agent (or the operator) should do on this step.
    pub fn suggestion(self) -> &'static str {
        match self {
            EscalationStep::None => "carry on",
            EscalationStep::Retry => "retry the failed call",
            EscalationStep::Adjust => {
                "retrying does not help: adjust the call's parameters or take another approach"
            }
            EscalationStep::Blocker => {
                "the session is paused on a blocker flag: an operator looks at it (`glovebox rescue open`)"
            }
            EscalationStep::Rescue => {
                "a rescue is under way: wait for its injected context, then resume"
            }
        }
    }
}

impl std::fmt::Display for EscalationStep {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}
