//! One of a session's budget caps: cost, calls, wall time, model tokens.
//!
//! It lives here because the config's `[budgets.role.<role>]` tables are made of
//! caps ([`BudgetCaps`](crate::BudgetCaps)); the host's budget guard, which
//! enforces them, re-exports it as `glovebox::budget::Cap`.

use serde::{Deserialize, Serialize};

use crate::micros::units;

/// One of the caps.
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Cap {
    Cost,
    Calls,
    Wall,
    /// The model tokens the brain reported (`session_usage`: in plus out).
    Tokens,
}

impl Cap {
    pub const ALL: [Cap; 4] = [Cap::Cost, Cap::Calls, Cap::Wall, Cap::Tokens];

    pub fn as_str(self) -> &'static str {
        match self {
            Cap::Cost => "cost",
            Cap::Calls => "calls",
            Cap::Wall => "wall",
            Cap::Tokens => "tokens",
        }
    }

    /// A figure of this cap (micros, calls, milliseconds) as people read it.
    pub fn show(self, value: u64) -> String {
        match self {
            Cap::Cost => format!("{:.4}", units(value))
                .trim_end_matches('0')
                .trim_end_matches('.')
                .to_string(),
            Cap::Calls | Cap::Tokens => value.to_string(),
            Cap::Wall => {
                humantime::format_duration(std::time::Duration::from_millis(value)).to_string()
            }
        }
    }
}

crate::named_enum!(Cap, "cap");
