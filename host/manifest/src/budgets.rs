//! `[budgets]` in `glovebox.toml`: hard caps per session of a role, spend
//! ceilings across sessions per principal, project and role, and when to warn.
//!
//! ```toml
//! [budgets]
//! warn_at = 0.8            # a warning at 80% of any cap or ceiling (default)
//!
//! [budgets.role.workagent] # applies to each workagent session on its own
//! cost = 20.0              # estimated tool cost + reported model cost
//! calls = 500              # calls that ran
//! wall = "2h"              # time since the session started
//!
//! [budgets.role.workagent.day]   # all workagent sessions together, per UTC day
//! cost = 200.0
//!
//! [budgets.principal.alice.day]  # all of alice's sessions, per UTC day
//! cost = 50.0
//! calls = 5000
//! tokens = 2_000_000             # model tokens reported (in + out)
//!
//! [budgets.project.demo.month]   # all sessions of project demo, per calendar month
//! cost = 1000.0
//! ```
//!
//! A ceiling table is `day`, `week` (ISO, from Monday) or `month`, all in
//! UTC (see [`crate::ceilings`]); none is set by default.

use crate::UnknownWord;
use std::collections::{BTreeMap, HashMap};

use serde::Deserialize;

use super::ConfigError;
use super::source::Source;
use super::units::Millis;
use crate::ceilings::{CeilingLimits, Ceilings, Period, PeriodCeilings};
use crate::{BudgetCaps, LOCAL_PRINCIPAL, Role, to_micros};

/// `[budgets]`: the caps every session of a role gets, and the warning threshold.
#[derive(Clone, Debug, PartialEq)]
pub struct BudgetsConfig {
    /// The fraction of a cap at which a `budget_warning` is logged (0 < x ≤ 1). Default 0.8.
    pub warn_at: f64,
    /// `[budgets.role.<role>]`: caps applied to each session of the role
    /// (per session, not shared by the role's sessions).
    pub roles: HashMap<Role, BudgetCaps>,
    /// `[budgets.principal|project|role.<name>.day|week|month]`: ceilings
    /// on what all the sessions of a principal, project or role spend
    /// together in a period. None by default.
    pub ceilings: Ceilings,
}

impl Default for BudgetsConfig {
    fn default() -> Self {
        BudgetsConfig {
            warn_at: 0.8,
            roles: HashMap::new(),
            ceilings: Ceilings::default(),
        }
    }
}

/// `[budgets]`: caps per role ([`operators/budgets.md`](operators/budgets.md)).
#[derive(Default, Deserialize)]
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub(super) struct RawBudgets {
    /// The fraction of a cap at which a `budget_warning` is logged (above 0, at most 1).
    #[cfg_attr(feature = "schemars", schemars(extend("default" = 0.8)))]
    warn_at: Option<f64>,
    /// Caps applied to each session of the role (per session, not shared); a
    /// session's own caps only tighten them. Also the role's spend ceilings.
    #[serde(default)]
    #[cfg_attr(feature = "schemars", schemars(extend("x-key" = "<role>")))]
    role: BTreeMap<String, RawCaps>,
    /// Spend ceilings of all the sessions of the principal (a declared
    /// `[[principal]]`) or the project together.
    #[serde(default)]
    #[cfg_attr(feature = "schemars", schemars(extend("x-key" = "<name>")))]
    principal: BTreeMap<String, RawPeriods>,
    /// Spend ceilings of all the sessions of the principal (a declared
    /// `[[principal]]`) or the project together.
    #[serde(default)]
    #[cfg_attr(feature = "schemars", schemars(extend("x-key" = "<name>")))]
    project: BTreeMap<String, RawPeriods>,
}

/// `[budgets.role.<role>]`: a session's caps, and the role's ceilings.
#[derive(Default, Deserialize)]
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub(super) struct RawCaps {
    /// Estimated tool cost plus reported model cost one session of the role may spend.
    #[cfg_attr(feature = "schemars", schemars(extend("x-default" = "none")))]
    cost: Option<f64>,
    /// Calls that ran, per session of the role.
    #[cfg_attr(feature = "schemars", schemars(extend("x-default" = "none")))]
    calls: Option<i64>,
    /// Time since the session started.
    #[cfg_attr(feature = "schemars", schemars(extend("x-default" = "none")))]
    wall: Option<Millis>,
    /// Model tokens (in plus out) the brain reported, per session of the role.
    #[cfg_attr(feature = "schemars", schemars(extend("x-default" = "none")))]
    tokens: Option<i64>,
    /// Spend ceilings per UTC day, ISO week or calendar month ([`security.md`](security.md#spend-ceilings)).
    day: Option<RawCeiling>,
    /// Spend ceilings per UTC day, ISO week or calendar month ([`security.md`](security.md#spend-ceilings)).
    week: Option<RawCeiling>,
    /// Spend ceilings per UTC day, ISO week or calendar month ([`security.md`](security.md#spend-ceilings)).
    month: Option<RawCeiling>,
}

/// The `day`, `week` and `month` tables of a principal, project or role.
#[derive(Default, Deserialize)]
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub(super) struct RawPeriods {
    /// Spend ceilings per UTC day, ISO week or calendar month ([`security.md`](security.md#spend-ceilings)).
    day: Option<RawCeiling>,
    /// Spend ceilings per UTC day, ISO week or calendar month ([`security.md`](security.md#spend-ceilings)).
    week: Option<RawCeiling>,
    /// Spend ceilings per UTC day, ISO week or calendar month ([`security.md`](security.md#spend-ceilings)).
    month: Option<RawCeiling>,
}

impl RawPeriods {
    fn all(&self) -> [(Period, &Option<RawCeiling>); 3] {
        [
            (Period::Day, &self.day),
            (Period::Week, &self.week),
            (Period::Month, &self.month),
        ]
    }
}

/// One period's ceilings: all the sessions of the principal, project or
/// role together, per UTC day, ISO week (from Monday) or calendar month.
#[derive(Default, Deserialize)]
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub(super) struct RawCeiling {
    /// Estimated tool cost plus reported model cost, together in the period.
    #[cfg_attr(feature = "schemars", schemars(extend("x-default" = "none")))]
    cost: Option<f64>,
    /// Calls that ran, together in the period.
    #[cfg_attr(feature = "schemars", schemars(extend("x-default" = "none")))]
    calls: Option<i64>,
    /// Model tokens reported (in and out), together in the period.
    #[cfg_attr(feature = "schemars", schemars(extend("x-default" = "none")))]
    tokens: Option<i64>,
}

/// `principals`: the names of the declared principals (a ceiling for a
/// principal nobody declared would bound nothing, silently).
pub(super) fn validate_budgets(
    src: &Source,
    raw: &RawBudgets,
    principals: &[&str],
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
        let role: Role = name.parse().map_err(|e: UnknownWord| {
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
        let tokens = caps.tokens.map(u64::try_from).transpose().map_err(|_| {
            src.invalid(
                &key("tokens"),
                "a negative number of tokens",
                "write a number of model tokens, e.g. `tokens = 2000000`",
            )
        })?;
        budgets.roles.insert(
            role,
            BudgetCaps {
                cost_micros: cost,
                calls,
                wall_ms: wall,
                tokens,
            },
        );
        let periods = [
            (Period::Day, &caps.day),
            (Period::Week, &caps.week),
            (Period::Month, &caps.month),
        ];
        let ceilings = validate_periods(src, &format!("budgets.role.{name}"), periods)?;
        if !ceilings.is_empty() {
            budgets
                .ceilings
                .roles
                .insert(role.as_str().to_string(), ceilings);
        }
    }
    for (name, periods) in &raw.principal {
        let key = format!("budgets.principal.{name}");
        if name != LOCAL_PRINCIPAL && !principals.contains(&name.as_str()) {
            let declared: Vec<String> = principals
                .iter()
                .chain([&LOCAL_PRINCIPAL])
                .map(|p| format!("`{p}`"))
                .collect();
            return Err(src.invalid(
                &key,
                format!("no principal `{name}` is declared, so this ceiling would bound nobody"),
                format!(
                    "name a declared principal ({}), or declare `{name}` in a `[[principal]]` table",
                    declared.join(", ")
                ),
            ));
        }
        let ceilings = validate_periods(src, &key, periods.all())?;
        budgets.ceilings.principals.insert(name.clone(), ceilings);
    }
    for (name, periods) in &raw.project {
        let key = format!("budgets.project.{name}");
        let ceilings = validate_periods(src, &key, periods.all())?;
        budgets.ceilings.projects.insert(name.clone(), ceilings);
    }
    Ok(budgets)
}

/// The `day`, `week` and `month` tables under `key`.
fn validate_periods(
    src: &Source,
    key: &str,
    periods: [(Period, &Option<RawCeiling>); 3],
) -> Result<PeriodCeilings, ConfigError> {
    let mut out = PeriodCeilings::default();
    for (period, table) in periods {
        if let Some(table) = table {
            *out.get_mut(period) = validate_ceiling(src, &format!("{key}.{period}"), table)?;
        }
    }
    Ok(out)
}

/// One period's `cost`, `calls` and `tokens` under `key`.
fn validate_ceiling(
    src: &Source,
    key: &str,
    raw: &RawCeiling,
) -> Result<CeilingLimits, ConfigError> {
    let leaf = |leaf: &str| format!("{key}.{leaf}");
    let count = |value: Option<i64>, name: &str, example: &str| {
        value.map(u64::try_from).transpose().map_err(|_| {
            src.invalid(
                &leaf(name),
                format!("a negative number of {name}"),
                format!("write a number of {name}, e.g. `{name} = {example}`"),
            )
        })
    };
    let limits = CeilingLimits {
        cost_micros: raw.cost.map(to_micros).transpose().map_err(|e| {
            src.invalid(
                &leaf("cost"),
                e,
                "write a non-negative number of cost units, e.g. `cost = 50.0`",
            )
        })?,
        calls: count(raw.calls, "calls", "5000")?,
        tokens: count(raw.tokens, "tokens", "2_000_000")?,
    };
    if limits.is_empty() {
        return Err(src.invalid(
            key,
            "the table sets no ceiling",
            "set at least one of `cost`, `calls` and `tokens`, or remove the table",
        ));
    }
    Ok(limits)
}
