//! `[budgets]` in `glovebox.toml`: hard caps per role, and when to warn.
//!
//! ```toml
//! [budgets]
//! warn_at = 0.8            # a budget_warning at 80% of any cap (default)
//!
//! [budgets.role.workagent] # applies to each workagent session on its own
//! cost = 20.0              # estimated tool cost + reported model cost
//! calls = 500              # calls that ran
//! wall = "2h"              # time since the session started
//! ```

use std::collections::{BTreeMap, HashMap};

use serde::Deserialize;

use super::ConfigError;
use super::source::Source;
use super::units::Millis;
use crate::{BudgetCaps, Role, to_micros};

/// `[budgets]`: the caps every session of a role gets, and the warning threshold.
#[derive(Clone, Debug, PartialEq)]
pub struct BudgetsConfig {
    /// The fraction of a cap at which a `budget_warning` is logged (0 < x ≤ 1). Default 0.8.
    pub warn_at: f64,
    /// `[budgets.role.<role>]`: caps applied to each session of the role
    /// (per session, not shared by the role's sessions).
    pub roles: HashMap<Role, BudgetCaps>,
}

impl Default for BudgetsConfig {
    fn default() -> Self {
        BudgetsConfig {
            warn_at: 0.8,
            roles: HashMap::new(),
        }
    }
}

#[derive(Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawBudgets {
    warn_at: Option<f64>,
    #[serde(default)]
    role: BTreeMap<String, RawCaps>,
}

#[derive(Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawCaps {
    cost: Option<f64>,
    calls: Option<i64>,
    wall: Option<Millis>,
}

pub(super) fn validate_budgets(
    src: &Source,
    raw: &RawBudgets,
) -> Result<BudgetsConfig, ConfigError> {
    let mut budgets = BudgetsConfig::default();
    if let Some(warn_at) = raw.warn_at {
        if !(warn_at > 0.0 && warn_at <= 1.0) {
            return Err(src.invalid(
                "budgets.warn_at",
                format!("{warn_at} is not a fraction above 0 and at most 1"),
                "write the share of a cap at which to warn, e.g. `warn_at = 0.8` for 80%",
            ));
        }
        budgets.warn_at = warn_at;
    }
    for (name, caps) in &raw.role {
        let key = |leaf: &str| format!("budgets.role.{name}.{leaf}");
        let role: Role = name.parse().map_err(|e: String| {
            src.invalid(
                &format!("budgets.role.{name}"),
                e,
                "write `[budgets.role.orchestrator]`, `[budgets.role.supervisor]` or `[budgets.role.workagent]`",
            )
        })?;
        let cost = caps.cost.map(to_micros).transpose().map_err(|e| {
            src.invalid(
                &key("cost"),
                e,
                "write a non-negative number, e.g. `cost = 20.0`",
            )
        })?;
        let calls = caps.calls.map(u64::try_from).transpose().map_err(|_| {
            src.invalid(
                &key("calls"),
                "a negative number of calls",
                "write a number of calls, e.g. `calls = 500`",
            )
        })?;
        let wall = caps
            .wall
            .map(|Millis(d)| u64::try_from(d.as_millis()).unwrap_or(u64::MAX));
        budgets.roles.insert(
            role,
            BudgetCaps {
                cost_micros: cost,
                calls,
                wall_ms: wall,
            },
        );
    }
    Ok(budgets)
}
