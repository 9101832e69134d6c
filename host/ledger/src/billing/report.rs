//! The billing report ([`report`]): the calls and usage reports of every
//! session that may have events in a date range, charged to the groups a
//! [`GroupBy`] puts them in, and grouped by family each role's sessions
//! and session hours (see the `billing` module's docs for what counts
//! where).

use std::collections::{BTreeMap, HashMap};

use serde::Serialize;

use super::{
    DateRange, Figures, Group, GroupBy, ModelShare, candidates, day_of, format_day, model_key,
};
use crate::session::{EventKind, SessionError, SessionInfo, Sessions};

/// A billing report.
#[derive(Clone, Debug, Serialize)]
pub struct Report {
    pub from: String,
    pub to: String,
    pub by: GroupBy,
    /// Sessions with at least one call or usage report in the range.
    pub sessions: u64,
    /// Sorted by key.
    pub groups: Vec<Group>,
    /// All groups together (key `total`).
    pub total: Group,
}

/// The billing report over `range`, grouped `by`, from every session's log.
pub fn report(sessions: &Sessions, range: &DateRange, by: GroupBy) -> Result<Report, SessionError> {
    let mut tally = Tally {
        groups: BTreeMap::new(),
        total: Group {
            key: "total".into(),
            ..Group::default()
        },
    };
    let mut counted = 0;
    for info in candidates(sessions, range)? {
        let family = match by {
            GroupBy::Family => root_of(sessions, &info.header.id),
            _ => (String::new(), None),
        };
        let (any, ended_at) = tally.add_session(sessions, &info, range, by, &family)?;
        if by == GroupBy::Family {
            tally.add_hours(&info, range, ended_at, family);
        }
        counted += u64::from(any);
    }
    Ok(Report {
        from: format_day(range.from_day),
        to: format_day(range.to_day),
        by,
        sessions: counted,
        groups: tally.groups.into_values().collect(),
        total: tally.total,
    })
}

/// The groups of a report being made, by key, and all of them together.
struct Tally {
    groups: BTreeMap<String, Group>,
    total: Group,
}

impl Tally {
    /// Charges the calls and usage reports of session `info` in `range` to
    /// the groups `by` puts them in (`family`: the root of its family and
    /// its name, when grouped by family). Returns whether any was in the
    /// range, and when the session ended, if it did.
    fn add_session(
        &mut self,
        sessions: &Sessions,
        info: &SessionInfo,
        range: &DateRange,
        by: GroupBy,
        family: &(String, Option<String>),
    ) -> Result<(bool, Option<u64>), SessionError> {
        let mut calls: HashMap<String, (String, bool)> = HashMap::new();
        let mut any = false;
        let mut ended_at = None;
        // The card its first event recorded (not the config's today).
        let mut agent = None;
        for event in sessions.events(&info.header.id, 1, usize::MAX)? {
            match &event.kind {
                EventKind::Ended { .. } => ended_at = Some(event.at_ms),
                EventKind::SessionStarted { agent: card, .. } => agent = card.clone(),
                _ => {}
            }
            let Some((tool, background, mut figures)) = charge_of(&event.kind, &mut calls) else {
                continue;
            };
            if !range.contains(event.at_ms) {
                continue;
            }
            figures.finish();
            let first = !any;
            any = true;
            let (key, label) = match by {
                GroupBy::Role => (info.header.role.to_string(), None),
                GroupBy::Session => (info.header.id.clone(), info.header.name.clone()),
                GroupBy::Tool => (tool, None),
                GroupBy::Project => (info.header.project.clone(), None),
                GroupBy::Day => (day_of(event.at_ms), None),
                GroupBy::Family => family.clone(),
                GroupBy::Principal => (info.owner_name().to_string(), None),
            };
            let group = self.group(key, label);
            group.add(&figures, background);
            match by {
                GroupBy::Family => {
                    let share = group.roles.entry(info.header.role.to_string()).or_default();
                    share.add(&figures, background);
                }
                GroupBy::Session => group.agent.clone_from(&agent),
                GroupBy::Principal => {
                    let share = group
                        .models
                        .entry(model_key(agent.as_ref()))
                        .or_insert_with(|| ModelShare::of(agent.as_ref()));
                    share.sessions += u64::from(first);
                    share.add(&figures, background);
                }
                _ => {}
            }
            self.total.add(&figures, background);
        }
        Ok((any, ended_at))
    }

    /// Counts session `info` among its role's sessions in its `family`'s
    /// group, with its time within `range`: from its start to its end
    /// (`ended_at`), or its last event while it is live. Session hours count
    /// whether or not the session made calls.
    fn add_hours(
        &mut self,
        info: &SessionInfo,
        range: &DateRange,
        ended_at: Option<u64>,
        family: (String, Option<String>),
    ) {
        let from = info.header.created_at_ms.max(range.start_ms());
        let to = ended_at
            .unwrap_or(info.header.updated_at_ms)
            .min(range.end_ms());
        let (key, label) = family;
        let group = self.group(key, label);
        let share = group.roles.entry(info.header.role.to_string()).or_default();
        share.sessions += 1;
        share.session_ms = share.session_ms.saturating_add(to.saturating_sub(from));
        share.session_hours = share.session_ms as f64 / 3_600_000.0;
    }

    /// The group of `key`, made with `label` when it is not there yet.
    fn group(&mut self, key: String, label: Option<String>) -> &mut Group {
        self.groups.entry(key.clone()).or_insert_with(|| Group {
            key,
            label,
            ..Group::default()
        })
    }
}

/// What the event `kind` charges, if anything: its tool (`model:<model>`
/// for a usage report), whether it ran in the background, and its figures
/// (not yet [finished](Figures::finish)). A `call_requested` charges
/// nothing but is kept in `calls`, by call id, for the finish or the
/// interruption of its call, which charges nothing without it.
fn charge_of(
    kind: &EventKind,
    calls: &mut HashMap<String, (String, bool)>,
) -> Option<(String, bool, Figures)> {
    let mut figures = Figures::default();
    let (tool, background) = match kind {
        EventKind::CallRequested {
            call_id,
            tool,
            job_id,
            ..
        } => {
            calls.insert(call_id.clone(), (tool.clone(), job_id.is_some()));
            return None;
        }
        EventKind::CallFinished {
            call_id,
            outcome,
            metering: m,
            ..
        } => {
            let (tool, background) = calls.remove(call_id)?;
            figures.calls = 1;
            figures.failures = u64::from(outcome != "ok");
            figures.wall_us = m.wall_us;
            figures.fuel = m.fuel.unwrap_or(0);
            figures.bytes_in = m.bytes_in;
            figures.bytes_out = m.bytes_out;
            figures.tool_cost_micros = m.cost_micros;
            (tool, background)
        }
        EventKind::CallInterrupted { call_id, .. } => {
            let (tool, background) = calls.remove(call_id)?;
            figures.calls = 1;
            figures.failures = 1;
            (tool, background)
        }
        EventKind::UsageReported {
            tokens_in,
            tokens_out,
            cost_micros,
            model,
            ..
        } => {
            figures.tokens_in = *tokens_in;
            figures.tokens_out = *tokens_out;
            figures.model_cost_micros = *cost_micros;
            figures.usage_reports = 1;
            let tool = format!("model:{}", model.as_deref().unwrap_or("unknown"));
            (tool, false)
        }
        _ => return None,
    };
    Some((tool, background, figures))
}

/// The root ancestor of session `id` (itself when it has no parent), and
/// its name, from the sessions' records (one read per generation).
fn root_of(sessions: &Sessions, id: &str) -> (String, Option<String>) {
    let mut at = sessions.get_info(id).ok().flatten();
    let mut root = (
        id.to_string(),
        at.as_ref().and_then(|i| i.header.name.clone()),
    );
    // Bounded: a parent link is written once, at start, to an older session.
    for _ in 0..MAX_GENERATIONS {
        let Some(parent) = at.and_then(|i| i.parent) else {
            break;
        };
        at = sessions.get_info(&parent).ok().flatten();
        let name = at.as_ref().and_then(|i| i.header.name.clone());
        root = (parent, name);
    }
    root
}

/// Generations a family's root is looked for up (families are a few deep).
const MAX_GENERATIONS: usize = 64;
