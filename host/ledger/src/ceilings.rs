//! What the sessions do at a spend ceiling across sessions (the tallies
//! themselves are [`crate::spend`]'s): which ceilings a session is under,
//! the events its log records of them, the pause of a scope's live sessions
//! when a ceiling is reached, and what an operator does about it (see the
//! status, raise it for the current period, lift the pause).
//!
//! A session is under the ceilings of its owner (the principal that
//! started it; `local` for one started at the command line), of its
//! project and of its role. Its calls are admitted against all three in the
//! call pipeline, its usage reports charged to them, and no new session of
//! a scope at a ceiling starts.
//!
//! At a ceiling: the call is refused by the `budget` hook, the session
//! pauses (`ceiling_reached`, then `paused` with no principal: a pause the
//! host took, which only an operator lifts), and the first refusal of the
//! period also pauses the scope's other live sessions ([`pause_scope`]) and
//! notifies (`ceiling_reached`). Sessions another host drives are not
//! paused from here: their next call is refused at the same ceiling, which
//! pauses them.

use serde::Serialize;

use crate::manifest::{
    CeilingLimits, LOCAL_PRINCIPAL, Measure, Period, PeriodCeilings, Scope, ScopeKind,
};
use crate::session::{EventKind, SessionError, SessionInfo, SessionState, SessionStatus, Sessions};
use crate::spend::{Breach, Crossed, Tally};

/// The scopes whose ceilings a session is under: its owner, project, role.
pub fn scopes_of(state: &SessionState) -> [Scope; 3] {
    [
        Scope::principal(state.owner_name()),
        Scope::project(state.header.project.as_str()),
        Scope::role(state.header.role),
    ]
}

/// The `ceiling_warning` of a threshold crossed.
pub fn warning_event(c: &Crossed) -> EventKind {
    EventKind::CeilingWarning {
        scope: c.scope.clone(),
        period: c.period,
        period_id: c.period_id.clone(),
        measure: c.measure,
        used: c.used,
        limit: c.limit,
        percent: c.used.saturating_mul(100) / c.limit.max(1),
    }
}

/// The `ceiling_reached` of `breach`, for the call `call_id` (none: a usage
/// report, or another session of the scope reached it).
pub fn reached_event(breach: &Breach, call_id: Option<String>, first: bool) -> EventKind {
    EventKind::CeilingReached {
        scope: breach.scope.clone(),
        period: breach.period,
        period_id: breach.window.id.clone(),
        measure: breach.measure,
        used: breach.projected,
        limit: breach.limit,
        ends_at_ms: breach.window.end_ms,
        call_id,
        first,
    }
}

/// The pause a ceiling takes, in the words of `breach`: no principal (only
/// an operator lifts it).
pub fn paused_event(breach: &Breach) -> EventKind {
    EventKind::Paused {
        reason: format!(
            "{}; an operator lifts the pause (`glovebox budget lift {} {}`, or raises the ceiling: `{}`)",
            breach.summary(),
            breach.scope.kind,
            breach.scope.name,
            breach.raise_command()
        ),
        by: None,
    }
}

/// One ceiling and its use in the current period, as `glovebox budget` and
/// the dashboard show it.
#[derive(Clone, Debug, Serialize)]
pub struct CeilingStatus {
    pub scope: Scope,
    pub period: Period,
    pub period_id: String,
    pub ends_at_ms: u64,
    pub measure: Measure,
    pub limit: u64,
    /// The limit is an operator's raise for this period.
    pub raised: bool,
    pub used: u64,
    pub percent: u64,
    /// A call was refused at it this period (or it is used up): no new
    /// session of the scope starts.
    pub reached: bool,
    /// `budgets.principal.alice.day.cost`.
    pub key: String,
    /// The limit and the use as people read them.
    pub shown: String,
}

/// The events a session's own refused call appends at a ceiling.
pub fn refusal_events(breach: &Breach, call_id: &str) -> Vec<EventKind> {
    vec![
        reached_event(breach, Some(call_id.to_string()), breach.first),
        paused_event(breach),
    ]
}

/// Whether the session `info` lists is under `scope`'s ceilings.
fn in_scope(scope: &Scope, info: &SessionInfo) -> bool {
    match scope.kind {
        ScopeKind::Principal => info.owner.as_deref().unwrap_or(LOCAL_PRINCIPAL) == scope.name,
        ScopeKind::Project => info.header.project == scope.name,
        ScopeKind::Role => info.header.role.as_str() == scope.name,
    }
}

/// The ids of the live sessions under `scope` with status `status`, a page
/// of the live-session index at a time.
fn sessions_of(
    sessions: &Sessions,
    scope: &Scope,
    status: SessionStatus,
) -> Result<Vec<String>, SessionError> {
    let mut ids = Vec::new();
    for info in sessions.walk_live()? {
        let info = info?;
        if info.header.status == status && in_scope(scope, &info) {
            ids.push(info.header.id);
        }
    }
    Ok(ids)
}

/// Pauses the active sessions of `breach`'s scope but `except` (whose own
/// refused call paused it): each logs `ceiling_reached` and a pause only an
/// operator lifts. Best effort, one session at a time: a session another
/// host drives, or that fails to pause, is stopped at its next call by the
/// same ceiling. Returns the sessions paused.
pub fn pause_scope(
    sessions: &Sessions,
    breach: &Breach,
    except: &str,
) -> Result<Vec<String>, SessionError> {
    let mut paused = Vec::new();
    for id in sessions_of(sessions, &breach.scope, SessionStatus::Active)? {
        if id == except {
            continue;
        }
        let done = sessions.append_with(&id, |state, _| {
            if state.header.status != SessionStatus::Active {
                return (Vec::new(), false);
            }
            (
                vec![reached_event(breach, None, false), paused_event(breach)],
                true,
            )
        });
        match done {
            Ok((_, true)) => paused.push(id),
            Ok(_) => {}
            Err(e) => {
                tracing::warn!(session = %id, ceiling = %breach.key(), error = %e, "could not pause a session at a spend ceiling; its next call is refused at the ceiling")
            }
        }
    }
    Ok(paused)
}

/// Resumes the sessions a ceiling of `scope` paused (an operator lifts the
/// pause): their next call is admitted against the ceilings again. Returns
/// the sessions resumed.
pub fn lift(sessions: &Sessions, scope: &Scope) -> Result<Vec<String>, SessionError> {
    let mut resumed = Vec::new();
    for id in sessions_of(sessions, scope, SessionStatus::Paused)? {
        let done = sessions.append_with(&id, |state, _| {
            let ours = state.header.status == SessionStatus::Paused
                && state.budget.ceiling.as_ref() == Some(scope);
            if ours {
                (vec![EventKind::Resumed], true)
            } else {
                (Vec::new(), false)
            }
        });
        match done {
            Ok((_, true)) => resumed.push(id),
            Ok(_) => {}
            Err(e) => {
                tracing::warn!(session = %id, scope = %scope, error = %e, "could not lift a ceiling's pause of a session; resume it on its own (`glovebox session resume`)")
            }
        }
    }
    Ok(resumed)
}

/// Every configured ceiling and its use in the current period. The list is
/// as long as the config's ceilings (never grown by agents), so it is not
/// paged.
pub fn status(sessions: &Sessions) -> Result<Vec<CeilingStatus>, SessionError> {
    let tallies = sessions.tallies();
    let config = tallies.config();
    let now = sessions.clock_ms();
    let mut out = Vec::new();
    for (scope, ceilings) in config.ceilings.scopes() {
        let tally = tallies.read(&scope, now)?;
        out.extend(status_of(&scope, ceilings, &tally, now));
    }
    Ok(out)
}

fn status_of(
    scope: &Scope,
    ceilings: &PeriodCeilings,
    tally: &Tally,
    now_ms: u64,
) -> Vec<CeilingStatus> {
    let mut out = Vec::new();
    for period in Period::ALL {
        let spent = tally.get(period);
        let window = period.window(now_ms);
        for measure in Measure::ALL {
            let Some(limit) = spent.limit(ceilings.get(period), measure) else {
                continue;
            };
            let used = spent.get(measure);
            out.push(CeilingStatus {
                key: format!("{}.{measure}", scope.key(period)),
                scope: scope.clone(),
                period,
                period_id: window.id.clone(),
                ends_at_ms: window.end_ms,
                measure,
                limit,
                raised: spent.raised.get(measure).is_some(),
                used,
                percent: used.saturating_mul(100) / limit.max(1),
                reached: used >= limit || spent.was_reached(measure, limit),
                shown: format!("{} of {}", measure.show(used), measure.show(limit)),
            });
        }
    }
    out
}

/// What [`raise`] did.
#[derive(Clone, Debug, Serialize)]
pub struct Raised {
    /// The scope's ceilings and use after the raise.
    pub ceilings: Vec<CeilingStatus>,
    /// The sessions its ceilings had paused, resumed (the scope is within
    /// all its ceilings again).
    pub resumed: Vec<String>,
    /// A ceiling the scope is still at (its paused sessions stay paused).
    pub still_at: Option<String>,
}

/// An operator raises (or sets) `scope`'s ceilings for the current
/// `period`: each figure of `to` replaces the config's until the period
/// ends. If the scope is within all its ceilings then, the sessions they
/// paused resume.
pub fn raise(
    sessions: &Sessions,
    scope: &Scope,
    period: Period,
    to: &CeilingLimits,
) -> Result<Raised, SessionError> {
    let tallies = sessions.tallies();
    let config = tallies.config();
    let Some(ceilings) = config.ceilings.of(scope) else {
        return Err(SessionError::InvalidInput(format!(
            "{scope} has no ceiling in the config, so there is nothing to raise: add a `[{}]` table to the config (and reload)",
            scope.key(period)
        )));
    };
    if to.is_empty() {
        return Err(SessionError::InvalidInput(
            "give at least one ceiling to set for the period: --cost, --calls or --tokens".into(),
        ));
    }
    let now = sessions.clock_ms();
    let tally = tallies.raise(scope, period, to, now)?;
    let still_at = tallies.at_ceiling(std::slice::from_ref(scope), now)?;
    let resumed = match &still_at {
        None => lift(sessions, scope)?,
        Some(_) => Vec::new(),
    };
    Ok(Raised {
        ceilings: status_of(scope, ceilings, &tally, now),
        resumed,
        still_at: still_at.map(|b| b.summary()),
    })
}
