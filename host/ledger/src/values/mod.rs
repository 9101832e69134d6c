//! Value types a session's state and events hold, on behalf of the modules
//! that give them meaning: a session's budget ([`BudgetState`], see
//! `crate::budget`), the escalation ladder's rungs ([`EscalationStep`], see
//! `crate::detect`) and the context handed to a session ([`ContextEntry`], see
//! `crate::rescue`).
//!
//! They live here, below `crate::session`, so the session's events and state
//! need none of the modules that build on sessions; those re-export them at
//! their old paths (`crate::budget::BudgetState`, ...). Their serialized form is
//! part of the log and of checkpoints: it does not change.

mod budget;
mod context;
mod escalation;

pub use budget::BudgetState;
pub use context::{ContextEntry, ContextKind};
pub use escalation::EscalationStep;
