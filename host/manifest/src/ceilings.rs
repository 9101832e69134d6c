//! Spend ceilings across sessions: what `[budgets.principal.NAME]`,
//! `[budgets.project.NAME]` and `[budgets.role.NAME]` set per day, week and
//! month, and the periods they are counted over.
//!
//! Why: a session's own caps (`[budgets.role.<role>] cost`, `calls`,
//! `wall`) bound one session, and a new session starts from zero. An agent
//! that ends a paused session and starts another (or runs a hundred at
//! once) spends without end. A ceiling bounds what all the sessions of one
//! principal, one project or one role spend together in a calendar period.
//!
//! Periods are UTC calendar periods: the day from 00:00 UTC, the ISO week
//! from Monday 00:00 UTC, the month from the first at 00:00 UTC. A period's
//! tally starts from zero when the next one begins.
//!
//! It lives here because the config is read into it; the ledger counts and
//! enforces it (`glovebox::ceilings`).

use std::collections::BTreeMap;

use chrono::{DateTime, Datelike, Days, Months, NaiveDate};
use serde::{Deserialize, Serialize};

use crate::Role;
use crate::micros::units;

/// A calendar period, in UTC.
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Period {
    Day,
    Week,
    Month,
}

/// One period: its id (`2025-06-14`, `2025-W24`, `2025-06`) and its bounds
/// in unix milliseconds (`start_ms` included, `end_ms` not).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Window {
    pub id: String,
    pub start_ms: u64,
    pub end_ms: u64,
}

impl Period {
    pub const ALL: [Period; 3] = [Period::Day, Period::Week, Period::Month];

    pub fn as_str(self) -> &'static str {
        match self {
            Period::Day => "day",
            Period::Week => "week",
            Period::Month => "month",
        }
    }

    /// `daily`, `weekly`, `monthly`.
    pub fn adjective(self) -> &'static str {
        match self {
            Period::Day => "daily",
            Period::Week => "weekly",
            Period::Month => "monthly",
        }
    }

    /// The period of this kind that holds the instant `at_ms` (unix millis).
    pub fn window(self, at_ms: u64) -> Window {
        let at = i64::try_from(at_ms).unwrap_or(i64::MAX);
        let date = DateTime::from_timestamp_millis(at)
            .unwrap_or(DateTime::<chrono::Utc>::MAX_UTC)
            .date_naive();
        let (start, end, id) = match self {
            Period::Day => (
                date,
                date.checked_add_days(Days::new(1)),
                date.format("%Y-%m-%d").to_string(),
            ),
            Period::Week => {
                let back = u64::from(date.weekday().num_days_from_monday());
                let monday = date.checked_sub_days(Days::new(back)).unwrap_or(date);
                let week = date.iso_week();
                (
                    monday,
                    monday.checked_add_days(Days::new(7)),
                    format!("{}-W{:02}", week.year(), week.week()),
                )
            }
            Period::Month => {
                let first = date.with_day(1).unwrap_or(date);
                (
                    first,
                    first.checked_add_months(Months::new(1)),
                    date.format("%Y-%m").to_string(),
                )
            }
        };
        Window {
            id,
            start_ms: midnight_ms(start),
            end_ms: end.map_or(u64::MAX, midnight_ms),
        }
    }
}

impl Window {
    /// When the period ends, for people: `2025-06-15 00:00 UTC`.
    pub fn ends(&self) -> String {
        let at = i64::try_from(self.end_ms).unwrap_or(i64::MAX);
        match DateTime::from_timestamp_millis(at) {
            Some(t) => t.format("%Y-%m-%d %H:%M UTC").to_string(),
            None => "never".to_string(),
        }
    }
}

fn midnight_ms(date: NaiveDate) -> u64 {
    date.and_hms_opt(0, 0, 0)
        .map(|t| t.and_utc().timestamp_millis())
        .and_then(|ms| u64::try_from(ms).ok())
        .unwrap_or(0)
}

crate::named_enum!(Period, "period");

/// What a ceiling bounds.
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Measure {
    /// Estimated tool cost of the calls that ran, plus the model cost the
    /// brains reported, in micros.
    Cost,
    /// Calls that ran.
    Calls,
    /// Model tokens the brains reported (in and out).
    Tokens,
}

impl Measure {
    pub const ALL: [Measure; 3] = [Measure::Cost, Measure::Calls, Measure::Tokens];

    pub fn as_str(self) -> &'static str {
        match self {
            Measure::Cost => "cost",
            Measure::Calls => "calls",
            Measure::Tokens => "tokens",
        }
    }

    /// A figure of this measure (micros, calls, tokens) as people read it.
    pub fn show(self, value: u64) -> String {
        match self {
            Measure::Cost => format!("{:.4}", units(value))
                .trim_end_matches('0')
                .trim_end_matches('.')
                .to_string(),
            Measure::Calls => format!("{value} calls"),
            Measure::Tokens => format!("{value} tokens"),
        }
    }
}

crate::named_enum!(Measure, "measure");

/// One period's ceilings, each optional: cost in micros, calls, tokens.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct CeilingLimits {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cost_micros: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub calls: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tokens: Option<u64>,
}

impl CeilingLimits {
    pub fn is_empty(&self) -> bool {
        self.cost_micros.is_none() && self.calls.is_none() && self.tokens.is_none()
    }

    pub fn get(&self, measure: Measure) -> Option<u64> {
        match measure {
            Measure::Cost => self.cost_micros,
            Measure::Calls => self.calls,
            Measure::Tokens => self.tokens,
        }
    }

    pub fn set(&mut self, measure: Measure, value: Option<u64>) {
        match measure {
            Measure::Cost => self.cost_micros = value,
            Measure::Calls => self.calls = value,
            Measure::Tokens => self.tokens = value,
        }
    }
}

/// The ceilings of one principal, project or role, per period.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PeriodCeilings {
    pub day: CeilingLimits,
    pub week: CeilingLimits,
    pub month: CeilingLimits,
}

impl PeriodCeilings {
    pub fn get(&self, period: Period) -> &CeilingLimits {
        match period {
            Period::Day => &self.day,
            Period::Week => &self.week,
            Period::Month => &self.month,
        }
    }

    pub fn get_mut(&mut self, period: Period) -> &mut CeilingLimits {
        match period {
            Period::Day => &mut self.day,
            Period::Week => &mut self.week,
            Period::Month => &mut self.month,
        }
    }

    pub fn is_empty(&self) -> bool {
        Period::ALL.into_iter().all(|p| self.get(p).is_empty())
    }
}

/// What a ceiling belongs to.
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ScopeKind {
    /// Every session a principal owns.
    Principal,
    /// Every session of a project.
    Project,
    /// Every session of a role.
    Role,
}

impl ScopeKind {
    pub const ALL: [ScopeKind; 3] = [ScopeKind::Principal, ScopeKind::Project, ScopeKind::Role];

    pub fn as_str(self) -> &'static str {
        match self {
            ScopeKind::Principal => "principal",
            ScopeKind::Project => "project",
            ScopeKind::Role => "role",
        }
    }
}

crate::named_enum!(ScopeKind, "scope");

/// One principal, project or role.
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct Scope {
    pub kind: ScopeKind,
    pub name: String,
}

impl Scope {
    pub fn principal(name: impl Into<String>) -> Scope {
        Scope {
            kind: ScopeKind::Principal,
            name: name.into(),
        }
    }

    pub fn project(name: impl Into<String>) -> Scope {
        Scope {
            kind: ScopeKind::Project,
            name: name.into(),
        }
    }

    pub fn role(role: Role) -> Scope {
        Scope {
            kind: ScopeKind::Role,
            name: role.as_str().to_string(),
        }
    }

    /// The config key of its ceilings in `period`: `budgets.principal.alice.day`.
    pub fn key(&self, period: Period) -> String {
        format!("budgets.{}.{}.{}", self.kind, self.name, period)
    }
}

impl std::fmt::Display for Scope {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} `{}`", self.kind, self.name)
    }
}

/// Every ceiling the config sets. None by default: without a
/// `[budgets.<scope>.<name>.<period>]` table nothing is bounded across
/// sessions.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Ceilings {
    pub principals: BTreeMap<String, PeriodCeilings>,
    pub projects: BTreeMap<String, PeriodCeilings>,
    pub roles: BTreeMap<String, PeriodCeilings>,
}

impl Ceilings {
    pub fn is_empty(&self) -> bool {
        self.principals.is_empty() && self.projects.is_empty() && self.roles.is_empty()
    }

    /// The ceilings of `scope`, if the config sets any.
    pub fn of(&self, scope: &Scope) -> Option<&PeriodCeilings> {
        let map = match scope.kind {
            ScopeKind::Principal => &self.principals,
            ScopeKind::Project => &self.projects,
            ScopeKind::Role => &self.roles,
        };
        map.get(&scope.name).filter(|c| !c.is_empty())
    }

    /// Every scope with ceilings, principals first, then projects, then roles.
    pub fn scopes(&self) -> Vec<(Scope, &PeriodCeilings)> {
        let mut out = Vec::new();
        for (kind, map) in [
            (ScopeKind::Principal, &self.principals),
            (ScopeKind::Project, &self.projects),
            (ScopeKind::Role, &self.roles),
        ] {
            for (name, ceilings) in map.iter().filter(|(_, c)| !c.is_empty()) {
                let scope = Scope {
                    kind,
                    name: name.clone(),
                };
                out.push((scope, ceilings));
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// 2025-06-14 (a Saturday) 13:30 UTC.
    const SAT: u64 = 1_749_907_800_000;
    const DAY_MS: u64 = 86_400_000;

    #[test]
    fn periods_are_utc_calendar_day_iso_week_and_month() {
        let day = Period::Day.window(SAT);
        assert_eq!(day.id, "2025-06-14");
        assert_eq!(day.start_ms, 1_749_859_200_000);
        assert_eq!(day.end_ms, day.start_ms + DAY_MS);
        assert_eq!(day.ends(), "2025-06-15 00:00 UTC");
        let week = Period::Week.window(SAT);
        assert_eq!(week.id, "2025-W24");
        // Monday 2025-06-09 to Monday 2025-06-16.
        assert_eq!(week.start_ms, day.start_ms - 5 * DAY_MS);
        assert_eq!(week.end_ms, week.start_ms + 7 * DAY_MS);
        let month = Period::Month.window(SAT);
        assert_eq!(month.id, "2025-06");
        assert_eq!(month.start_ms, day.start_ms - 13 * DAY_MS);
        assert_eq!(month.end_ms, month.start_ms + 30 * DAY_MS);
        // The last millisecond of a period is in it; the next is not.
        assert_eq!(Period::Day.window(day.end_ms - 1).id, "2025-06-14");
        assert_eq!(Period::Day.window(day.end_ms).id, "2025-06-15");
        assert_eq!(Period::Week.window(week.end_ms).id, "2025-W25");
        // ISO weeks cross years: 2024-12-30 (a Monday) is in 2025-W01.
        let dec30 = 1_735_516_800_000;
        assert_eq!(Period::Week.window(dec30).id, "2025-W01");
        assert_eq!(Period::Month.window(dec30).id, "2024-12");
    }

    #[test]
    fn names_and_figures_read_well() {
        assert_eq!("week".parse::<Period>().unwrap(), Period::Week);
        assert!(
            "year"
                .parse::<Period>()
                .unwrap_err()
                .to_string()
                .contains("day, week, month")
        );
        assert_eq!(Measure::Cost.show(50_000_000), "50");
        assert_eq!(Measure::Calls.show(3), "3 calls");
        let scope = Scope::principal("alice");
        assert_eq!(scope.key(Period::Day), "budgets.principal.alice.day");
        assert_eq!(scope.to_string(), "principal `alice`");
    }
}
