//! Billing: reports over the session logs, and the session-end export.
//!
//! Everything here is computed from the logs themselves (every session's
//! events in a date range), so a report can always be checked against the
//! records that produced it:
//!
//! - a call counts on the day (UTC) of its `call_finished` (or
//!   `call_interrupted`, a failure without metering), with its metering
//!   (wall time, fuel, bytes) and its estimated tool cost
//!   (`metering.cost_micros`, the tool's manifest `cost`, for calls that ran);
//! - a call is background when its `call_requested` carries a job id;
//! - a `usage_reported` adds the model's tokens and cost, foreground, under
//!   the tool key `model:<model>` when grouped by tool;
//! - grouped by family, child sessions (`session_spawn`) count under their
//!   root ancestor (a session with no parent is its own family), split by
//!   role, each role with its sessions and session hours (the time from a
//!   session's start to its end, or its last event while it is live, within
//!   the range), so a supervisor's bill shows what its workagents used;
//! - grouped by principal, a session counts under the principal that
//!   started it (`local` for a session with no owner recorded), split by
//!   the model and version its first event recorded (`models.rs`), so a
//!   change of model in the middle of a range shows what each cost.
//!
//! Dates are `YYYY-MM-DD` in UTC; a range includes both its days. The
//! report is made in `report.rs`.

use std::collections::BTreeMap;

use serde::Serialize;

use crate::budget::units;
use crate::manifest::AgentCard;
use crate::session::{EndOutcome, EventKind, SessionError, SessionInfo, SessionSummary, Sessions};

mod models;
#[cfg(test)]
mod principal_tests;
mod report;

pub use models::{ModelShare, model_key};
pub use report::{Report, report};

const DAY_MS: u64 = 86_400_000;

/// What a report groups by.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum GroupBy {
    Role,
    Session,
    Tool,
    Project,
    Day,
    /// The root session of each family of sessions, with a split by role.
    Family,
    /// The principal that started each session, with a split by the model
    /// its sessions recorded at start.
    Principal,
}

impl GroupBy {
    pub const ALL: [GroupBy; 7] = [
        GroupBy::Role,
        GroupBy::Session,
        GroupBy::Tool,
        GroupBy::Project,
        GroupBy::Day,
        GroupBy::Family,
        GroupBy::Principal,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            GroupBy::Role => "role",
            GroupBy::Session => "session",
            GroupBy::Tool => "tool",
            GroupBy::Project => "project",
            GroupBy::Day => "day",
            GroupBy::Family => "family",
            GroupBy::Principal => "principal",
        }
    }
}

glovebox_manifest::named_enum!(GroupBy, "grouping");

/// A range of whole UTC days, both ends included.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DateRange {
    /// Days since 1970-01-01.
    pub from_day: i64,
    pub to_day: i64,
}

impl DateRange {
    /// From `from` to `to` (`YYYY-MM-DD`); an open end is the beginning of
    /// time or the day of `now_ms` (by the ledger's clock:
    /// `Sessions::clock_ms`).
    pub fn parse(
        from: Option<&str>,
        to: Option<&str>,
        now_ms: u64,
    ) -> Result<DateRange, DateError> {
        let from_day = from.map(parse_date).transpose()?.unwrap_or(0);
        let to_day = match to {
            Some(t) => parse_date(t)?,
            None => i64::try_from(now_ms / DAY_MS).unwrap_or(i64::MAX),
        };
        if to_day < from_day {
            return Err(DateError::Backwards { from_day, to_day });
        }
        Ok(DateRange { from_day, to_day })
    }

    /// Whether the unix time `at_ms` falls on one of the range's days.
    pub fn contains(&self, at_ms: u64) -> bool {
        let day = i64::try_from(at_ms / DAY_MS).unwrap_or(i64::MAX);
        (self.from_day..=self.to_day).contains(&day)
    }

    fn start_ms(&self) -> u64 {
        u64::try_from(self.from_day.max(0)).unwrap_or(0) * DAY_MS
    }

    fn end_ms(&self) -> u64 {
        u64::try_from(self.to_day.max(0) + 1)
            .unwrap_or(u64::MAX)
            .saturating_mul(DAY_MS)
    }
}

/// Why a date or a range of dates was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DateError {
    /// The text is not a `YYYY-MM-DD` day of the calendar.
    #[error("invalid date `{0}`: write YYYY-MM-DD (UTC)")]
    Invalid(String),
    /// The range's end day comes before its start day.
    #[error(
        "the range ends ({}) before it starts ({})",
        format_day(*.to_day),
        format_day(*.from_day)
    )]
    Backwards { from_day: i64, to_day: i64 },
}

/// Parses `YYYY-MM-DD` into days since 1970-01-01.
pub fn parse_date(text: &str) -> Result<i64, DateError> {
    let bad = || DateError::Invalid(text.to_string());
    let mut parts = text.trim().split('-');
    let (Some(y), Some(m), Some(d), None) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return Err(bad());
    };
    if y.len() != 4 || m.len() != 2 || d.len() != 2 {
        return Err(bad());
    }
    let (y, m, d): (i64, u32, u32) = (
        y.parse().map_err(|_| bad())?,
        m.parse().map_err(|_| bad())?,
        d.parse().map_err(|_| bad())?,
    );
    if !(1..=12).contains(&m) || d < 1 || d > days_in_month(y, m) {
        return Err(bad());
    }
    Ok(days_from_civil(y, m, d))
}

/// `YYYY-MM-DD` of days since 1970-01-01.
pub fn format_day(days: i64) -> String {
    let (y, m, d) = civil_from_days(days);
    format!("{y:04}-{m:02}-{d:02}")
}

/// The UTC day of a unix time in milliseconds, as `YYYY-MM-DD`.
pub fn day_of(at_ms: u64) -> String {
    format_day(i64::try_from(at_ms / DAY_MS).unwrap_or(i64::MAX))
}

fn days_in_month(y: i64, m: u32) -> u32 {
    match m {
        2 if (y % 4 == 0 && y % 100 != 0) || y % 400 == 0 => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

// Howard Hinnant's algorithms (proleptic Gregorian calendar).
fn days_from_civil(y: i64, m: u32, d: u32) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let m = i64::from(m);
    let doy = (153 * (if m > 2 { m - 3 } else { m + 9 }) + 2) / 5 + i64::from(d) - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = u32::try_from(doy - (153 * mp + 2) / 5 + 1).unwrap_or(1);
    let m = u32::try_from(if mp < 10 { mp + 3 } else { mp - 9 }).unwrap_or(1);
    let y = yoe + era * 400 + i64::from(m <= 2);
    (y, m, d)
}

/// What a group of calls and usage reports used.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Figures {
    /// Calls finished or interrupted (refused ones included).
    pub calls: u64,
    /// Calls whose outcome was not `ok` (interrupted ones included).
    pub failures: u64,
    pub wall_us: u64,
    pub fuel: u64,
    pub bytes_in: u64,
    pub bytes_out: u64,
    /// Estimated tool cost, exact, in millionths.
    pub tool_cost_micros: u64,
    /// Reported model cost, exact, in millionths.
    pub model_cost_micros: u64,
    pub tokens_in: u64,
    pub tokens_out: u64,
    pub usage_reports: u64,
    /// `tool_cost_micros` in cost units.
    pub tool_cost: f64,
    /// `model_cost_micros` in cost units.
    pub model_cost: f64,
    /// Tool and model cost together, in cost units.
    pub cost: f64,
}

impl Figures {
    fn add(&mut self, other: &Figures) {
        self.calls += other.calls;
        self.failures += other.failures;
        self.wall_us = self.wall_us.saturating_add(other.wall_us);
        self.fuel = self.fuel.saturating_add(other.fuel);
        self.bytes_in = self.bytes_in.saturating_add(other.bytes_in);
        self.bytes_out = self.bytes_out.saturating_add(other.bytes_out);
        self.tool_cost_micros = self.tool_cost_micros.saturating_add(other.tool_cost_micros);
        self.model_cost_micros = self
            .model_cost_micros
            .saturating_add(other.model_cost_micros);
        self.tokens_in = self.tokens_in.saturating_add(other.tokens_in);
        self.tokens_out = self.tokens_out.saturating_add(other.tokens_out);
        self.usage_reports += other.usage_reports;
        self.finish();
    }

    fn finish(&mut self) {
        self.tool_cost = units(self.tool_cost_micros);
        self.model_cost = units(self.model_cost_micros);
        self.cost = units(self.tool_cost_micros.saturating_add(self.model_cost_micros));
    }
}

/// One group's figures, and their split foreground against background.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Group {
    /// The role, session id, tool, project or day.
    pub key: String,
    /// The session's name, when grouped by session.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub label: Option<String>,
    pub total: Figures,
    /// Calls made directly, and usage reports.
    pub foreground: Figures,
    /// Calls run as background jobs.
    pub background: Figures,
    /// Grouped by family: the family's figures by role.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub roles: BTreeMap<String, RoleShare>,
    /// Grouped by session: what the operator said about its principal when
    /// it started (model, version, owner, description), when anything was.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub agent: Option<AgentCard>,
    /// Grouped by principal: its figures by the model its sessions recorded
    /// at start (keys as [`model_key`] makes them).
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub models: BTreeMap<String, ModelShare>,
}

impl Group {
    fn add(&mut self, figures: &Figures, background: bool) {
        split(
            [&mut self.total, &mut self.foreground, &mut self.background],
            figures,
            background,
        );
    }
}

/// Adds `figures` to a `[total, foreground, background]` split.
fn split(into: [&mut Figures; 3], figures: &Figures, background: bool) {
    let [total, foreground, back] = into;
    total.add(figures);
    if background {
        back.add(figures);
    } else {
        foreground.add(figures);
    }
}

/// One role's part of a family (see [`GroupBy::Family`]).
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct RoleShare {
    /// The family's sessions of the role.
    pub sessions: u64,
    /// Their time within the range, in milliseconds.
    pub session_ms: u64,
    /// `session_ms` in hours.
    pub session_hours: f64,
    pub total: Figures,
    pub foreground: Figures,
    pub background: Figures,
}

impl RoleShare {
    fn add(&mut self, figures: &Figures, background: bool) {
        split(
            [&mut self.total, &mut self.foreground, &mut self.background],
            figures,
            background,
        );
    }
}

/// A session-end record: the `ended` event of a session and who it was.
#[derive(Clone, Debug, Serialize)]
pub struct EndRecord {
    pub session: String,
    pub name: Option<String>,
    pub role: String,
    pub project: String,
    pub tags: Vec<String>,
    pub started_at_ms: u64,
    pub ended_at_ms: u64,
    /// The UTC day it ended, `YYYY-MM-DD`.
    pub day: String,
    /// The `ended` event's sequence number and hash, to find it in the log.
    pub seq: u64,
    pub hash: String,
    pub outcome: EndOutcome,
    pub summary: SessionSummary,
}

/// The session-end records of sessions that ended in `range`, oldest first.
pub fn export(sessions: &Sessions, range: &DateRange) -> Result<Vec<EndRecord>, SessionError> {
    let mut records = Vec::new();
    for info in candidates(sessions, range)? {
        for event in sessions.events(&info.header.id, 1, usize::MAX)? {
            if let EventKind::Ended { outcome, summary } = event.kind
                && range.contains(event.at_ms)
            {
                records.push(EndRecord {
                    session: info.header.id.clone(),
                    name: info.header.name.clone(),
                    role: info.header.role.to_string(),
                    project: info.header.project.clone(),
                    tags: info.header.tags.clone(),
                    started_at_ms: info.header.created_at_ms,
                    ended_at_ms: event.at_ms,
                    day: day_of(event.at_ms),
                    seq: event.seq,
                    hash: event.hash,
                    outcome,
                    summary,
                });
            }
        }
    }
    records.sort_by(|a, b| {
        a.ended_at_ms
            .cmp(&b.ended_at_ms)
            .then_with(|| a.session.cmp(&b.session))
    });
    Ok(records)
}

/// Sessions that may have events in `range`: started before its end and
/// active after its start.
fn candidates(sessions: &Sessions, range: &DateRange) -> Result<Vec<SessionInfo>, SessionError> {
    let (start, end) = (range.start_ms(), range.end_ms());
    let mut list = Vec::new();
    for info in sessions.walk()? {
        let mut info = info?;
        if info.header.created_at_ms >= end {
            continue;
        }
        // A record written before every append updated it may be behind
        // its log: the log's last event says.
        if info.header.updated_at_ms < start {
            info.header.updated_at_ms = sessions
                .last_event_at(&info.header.id)
                .unwrap_or(info.header.updated_at_ms);
        }
        if info.header.updated_at_ms >= start {
            list.push(info);
        }
    }
    list.sort_by_cached_key(|s| (s.header.created_at_ms, s.header.id.clone()));
    Ok(list)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates_round_trip() {
        assert_eq!(parse_date("1970-01-01").unwrap(), 0);
        assert_eq!(parse_date("2000-03-01").unwrap(), 11_017);
        for day in [-1000, 0, 59, 60, 11_016, 19_782, 20_000] {
            assert_eq!(parse_date(&format_day(day)).unwrap(), day);
        }
        assert_eq!(day_of(1_700_000_000_000), "2023-11-14");
        assert!(parse_date("2024-02-30").is_err());
        assert!(parse_date("2024-2-3").is_err());
        assert_eq!(
            parse_date("yesterday").unwrap_err().to_string(),
            "invalid date `yesterday`: write YYYY-MM-DD (UTC)"
        );
        assert!(parse_date("2024-02-29").is_ok());
    }

    #[test]
    fn ranges_include_both_days() {
        let r = DateRange::parse(Some("2023-11-14"), Some("2023-11-14"), 0).unwrap();
        assert!(r.contains(1_700_000_000_000));
        assert!(!r.contains(1_700_000_000_000 + DAY_MS));
        assert_eq!(
            DateRange::parse(Some("2023-11-15"), Some("2023-11-14"), 0)
                .unwrap_err()
                .to_string(),
            "the range ends (2023-11-14) before it starts (2023-11-15)"
        );
    }
}
