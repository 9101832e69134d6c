//! Caps, each optional: what `[budgets.role.<role>]` sets, and what a session is
//! started with.
//!
//! It lives here because the config is read into it ([`BudgetsConfig`]); the
//! host's budget guard and the session log (which records a session's caps)
//! re-export it as `glovebox::budget::BudgetCaps`.
//!
//! [`BudgetsConfig`]: crate::BudgetsConfig

use serde::{Deserialize, Serialize};

use crate::Cap;
use crate::micros::{CostError, to_micros};

/// Caps, each optional: cost in micros, calls, wall time in milliseconds,
/// model tokens.
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct BudgetCaps {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cost_micros: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub calls: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub wall_ms: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tokens: Option<u64>,
}

impl BudgetCaps {
    pub fn is_empty(&self) -> bool {
        self.cost_micros.is_none()
            && self.calls.is_none()
            && self.wall_ms.is_none()
            && self.tokens.is_none()
    }

    pub fn get(&self, cap: Cap) -> Option<u64> {
        match cap {
            Cap::Cost => self.cost_micros,
            Cap::Calls => self.calls,
            Cap::Wall => self.wall_ms,
            Cap::Tokens => self.tokens,
        }
    }

    pub fn set(&mut self, cap: Cap, value: Option<u64>) {
        match cap {
            Cap::Cost => self.cost_micros = value,
            Cap::Calls => self.calls = value,
            Cap::Wall => self.wall_ms = value,
            Cap::Tokens => self.tokens = value,
        }
    }

    /// Caps from decimal cost units, a call count and a duration.
    pub fn new(
        cost: Option<f64>,
        calls: Option<u64>,
        wall: Option<std::time::Duration>,
    ) -> Result<BudgetCaps, CostError> {
        Ok(BudgetCaps {
            cost_micros: cost.map(to_micros).transpose()?,
            calls,
            wall_ms: wall.map(|d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX)),
            tokens: None,
        })
    }

    /// These caps with a cap of `tokens` model tokens (or none).
    pub fn with_tokens(mut self, tokens: Option<u64>) -> BudgetCaps {
        self.tokens = tokens;
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn caps_parse_and_name() {
        assert_eq!("wall".parse::<Cap>().unwrap(), Cap::Wall);
        assert!("money".parse::<Cap>().is_err());
        let caps = BudgetCaps::new(Some(1.0), Some(3), None).unwrap();
        assert_eq!(caps.get(Cap::Cost), Some(1_000_000));
        assert_eq!(caps.get(Cap::Wall), None);
        assert_eq!(
            serde_json::to_string(&caps).unwrap(),
            r#"{"cost_micros":1000000,"calls":3}"#
        );
    }
}
