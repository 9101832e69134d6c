//! The checks of the sessions: unnamed ones, long ones with no handoff, and
//! the roles principals or sessions use with no budget.

use std::collections::BTreeMap;

use super::findings::{Culprit, CulpritKind, Finding, Rule, Severity, quoted};
use crate::manifest::{HostConfig, Principal, PrincipalKind, Role};
use crate::session::SessionState;

/// A session as people know it: its name, or its id.
pub(super) fn shown(state: &SessionState) -> &str {
    state.header.name.as_deref().unwrap_or(&state.header.id)
}

pub(super) fn session_culprit(state: &SessionState) -> Culprit {
    Culprit {
        kind: CulpritKind::Session,
        name: state
            .header
            .name
            .clone()
            .unwrap_or_else(|| state.header.id.clone()),
        id: state.header.name.as_ref().map(|_| state.header.id.clone()),
        file: None,
    }
}

pub(super) fn unnamed_sessions(states: &[SessionState]) -> Vec<Finding> {
    states
        .iter()
        .filter(|s| s.header.name.is_none())
        .map(|s| {
            let live = s.header.status.is_live();
            Finding::new(
                Rule::UnnamedSession,
                if live {
                    Severity::Warning
                } else {
                    Severity::Notice
                },
                session_culprit(s),
                format!(
                    "session `{}` ({}, project `{}`, {}) has no name: it can only be found and resumed by its id",
                    s.header.id, s.header.role, s.header.project, s.header.status
                ),
                format!(
                    "name it: `glovebox session name {} <name>` (or `session_start` with a `name`); start every session with a name",
                    s.header.id
                ),
            )
        })
        .collect()
}

pub(super) fn no_handoff(config: &HostConfig, states: &[SessionState]) -> Vec<Finding> {
    let limit = u64::from(config.detector.handoff_after_events);
    states
        .iter()
        .filter(|s| s.header.status.is_live())
        .filter_map(|s| {
            let since = s.latest_handoff.as_ref().map_or(0, |h| h.seq);
            let events = s.last_seq.saturating_sub(since);
            (events > limit).then(|| {
                let label = shown(s);
                Finding::new(
                    Rule::NoHandoff,
                    Severity::Warning,
                    session_culprit(s),
                    format!(
                        "session `{label}` has run {events} events since {} (more than `[detector] handoff_after_events` = {limit}): if it stops, nobody can pick its work up",
                        if since == 0 { "it started with no handoff".to_string() } else { format!("its last handoff (event {since})") }
                    ),
                    format!(
                        "write a handoff with where it stands: `glovebox session handoff {label} --kind continuation --objective ... --done ... --next ...` (or the `session_handoff` tool)"
                    ),
                )
            })
        })
        .collect()
}

pub(super) fn roles_without_budget(config: &HostConfig, states: &[SessionState]) -> Vec<Finding> {
    // Role → who uses it: principals, and sessions with no caps of their own.
    let mut users: BTreeMap<&'static str, (Role, Vec<String>, Vec<String>)> = BTreeMap::new();
    for p in &config.principals {
        let p: &Principal = &p.principal;
        if p.kind != PrincipalKind::Agent {
            continue;
        }
        for role in &p.roles {
            users
                .entry(role.as_str())
                .or_insert_with(|| (*role, Vec::new(), Vec::new()))
                .1
                .push(p.name.clone());
        }
    }
    for s in states.iter().filter(|s| s.header.status.is_live()) {
        if !s.budget.caps.is_empty() || !s.budget.raised.is_empty() {
            continue;
        }
        users
            .entry(s.header.role.as_str())
            .or_insert_with(|| (s.header.role, Vec::new(), Vec::new()))
            .2
            .push(shown(s).to_string());
    }
    users
        .into_values()
        .filter(|(role, _, _)| {
            config
                .budgets
                .roles
                .get(role)
                .is_none_or(|caps| caps.is_empty())
        })
        .map(|(role, principals, sessions)| {
            let mut used_by = Vec::new();
            if !principals.is_empty() {
                used_by.push(format!("principals {}", quoted(&principals)));
            }
            if !sessions.is_empty() {
                used_by.push(format!(
                    "{} live session(s) with no caps of their own: {}",
                    sessions.len(),
                    quoted(&sessions)
                ));
            }
            Finding::new(
                Rule::RoleWithoutBudget,
                Severity::Warning,
                Culprit {
                    kind: CulpritKind::Role,
                    name: role.as_str().to_string(),
                    id: None,
                    file: Some(config.path.clone()),
                },
                format!(
                    "role `{role}` has no budget (no `[budgets.role.{role}]` caps), and {} use it: a runaway agent in it spends without limit",
                    used_by.join("; ")
                ),
                format!(
                    "add caps to `{}`: `[budgets.role.{role}]` with `cost = 20.0`, `calls = 500`, `wall = \"2h\"` (or start sessions with `--budget-cost`/`--budget-calls`)",
                    config.path.display()
                ),
            )
        })
        .collect()
}
