//! The budget part of a session's state.

use serde::{Deserialize, Serialize};

use crate::manifest::{BudgetCaps, Cap, Scope};

/// The budget part of a session's state (folded from its events).
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct BudgetState {
    /// The caps the session was started with.
    pub caps: BudgetCaps,
    /// Caps an operator set since (`cap_raised`); they replace the others.
    pub raised: BudgetCaps,
    /// Caps whose warning was logged (cleared for a cap when it is raised).
    pub warned: Vec<Cap>,
    /// The cap that paused the session, until it is resumed.
    pub exceeded: Option<Cap>,
    /// The principal, project or role whose ceiling across sessions paused
    /// the session (`ceiling_reached`), until it is resumed: what `glovebox
    /// budget lift` resumes.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ceiling: Option<Scope>,
}
