//! Stuck-agent detection and the escalation ladder.
//!
//! The detector is a function over a session's log: the fold of its events
//! ([`Watch`], part of [`SessionState`]) and a set of rules. It runs after
//! every call the pipeline logs (denied ones included) and on demand
//! (`glovebox session check`). Each rule that holds raises a blocker flag, an
//! event (`blocker_flag`) naming the rule, a severity, the reason and a
//! suggested action. A flag is raised once and stays active until what clears
//! it happens (see [`Watch`]); a critical flag pauses the session. Each
//! rule is a function of `rule.rs`.
//!
//! | rule          | holds when                                                                   | default  | cleared by |
//! |---------------|------------------------------------------------------------------------------|----------|------------|
//! | `budget`      | a `budget_warning` at or above `budget_fraction` and the last call failed, or the last completion gate run failed | critical | a successful call, a raised cap |
//! | `retry`       | the same call (tool and input digest) failed `retry_failures` times with no success of it in between | critical | a successful call |
//! | `overrun`     | the session has run longer than `overrun_factor` × its expected duration    | warning  | never      |
//! | `denials`     | `denials` of the last `denials_window` calls since the last success were denied | warning | a successful call |
//! | `no_progress` | a created or active session has made no progress for `no_progress_after`    | warning  | progress   |
//! | `stale`       | a live session has done nothing at all (no event but the detector's) for `stale_after` | warning | a call or progress |
//! | `approval_wait` | a call of the session has waited for a human's approval longer than `approval_wait_after` (sweep only) | warning | the approval settled (the session resumes) |
//! | `context`     | the brain's latest usage report puts its context at or past `context_fraction` (0.85) of its window | warning | a handoff, a resume |
//! | `rescue_overdue` | the session's rescue has been open longer than `rescue_target` (45 min) | warning | the rescue's end (any move of the ladder) |
//!
//! Three more flags are raised because someone said so, not by a rule
//! ([`raise`]): `agent` (the agent's own, `session_flag`), `handoff` (a
//! handoff that names blockers) and `paused` (an agent's own pause); a
//! resume or the session's next handoff clears them.
//!
//! While serving, a sweep ([`sweep()`], every `sweep_interval`) runs the
//! time-based rules (`no_progress`, `overrun`, `stale`, `approval_wait`) over
//! every live session, so an agent that stops calling tools is flagged
//! without a call; it raises flags exactly as [`check`] does and, with
//! `archive_after`, archives sessions that have done nothing for that long.
//!
//! Progress is a successful call, a note, a handoff or a resume; a failed call
//! is activity, not progress. Resuming a session also acknowledges its
//! critical flags, so a condition that still holds after an operator resumed
//! the session is flagged (and pauses it) again.
//!
//! The escalation ladder (`escalation` events, [`Watch::escalation`]):
//! `none` → `retry` (a call failed: retry it) → `adjust` (`adjust_after`
//! failures in a row: change the parameters) → `blocker` (a critical flag:
//! the session is paused) → `rescue` (an operator opened a rescue; only its
//! resolution moves the session off this step). A successful call brings the
//! session back to `none` from any step below `rescue`.

use serde::Serialize;

use crate::manifest::{DetectorConfig, Severity};
use crate::session::{EventKind, SessionError, SessionState, SessionStatus, Sessions};

mod rule;
mod sweep;

pub use sweep::{SweepFlag, Swept, sweep};

// What the detector keeps of a session is part of the session's state, folded
// as its events are applied, and the ladder's rungs are in its events: they
// live below the sessions and are re-exported here, at their old paths.
pub use crate::session::watch::{ActiveFlag, ContextUse, FailingCall, Watch};
pub use crate::values::EscalationStep;

// A blocker flag the rules raise is the content of its event, so it lives
// with the events and is re-exported here.
pub use crate::session::Flag;

/// Which rules a run judges.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Rules {
    /// Every rule (after a call, `session check`).
    All,
    /// The rules that can start to hold with nothing happening: `no_progress`,
    /// `overrun`, `stale`, `approval_wait`, `rescue_overdue` (the sweep).
    Timed,
}

/// The oldest approval a session's call waits for (the `approval_wait` rule's input).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Waiting {
    pub approval: String,
    pub tool: String,
    pub call_id: String,
    pub since_ms: u64,
}

/// The rules over `state` at `now_ms`: the flags that hold and are not active yet.
pub fn detect(state: &SessionState, config: &DetectorConfig, now_ms: u64) -> Vec<Flag> {
    detect_rules(state, config, now_ms, Rules::All, None)
}

/// [`detect`] restricted to `rules`, with the approval the session waits for.
pub fn detect_rules(
    state: &SessionState,
    config: &DetectorConfig,
    now_ms: u64,
    rules: Rules,
    waiting: Option<&Waiting>,
) -> Vec<Flag> {
    if !state.header.status.is_live() {
        return Vec::new();
    }
    let all = rules == Rules::All;
    let label = state.header.name.as_deref().unwrap_or(&state.header.id);
    let held = [
        all.then(|| rule::budget(state, config, label)).flatten(),
        all.then(|| rule::retry(state, config, label)).flatten(),
        rule::overrun(state, config, now_ms),
        all.then(|| rule::denials(state, config)).flatten(),
        rule::no_progress(state, config, now_ms),
        rule::stale(state, config, now_ms, label),
        waiting.and_then(|wait| rule::approval_wait(config, now_ms, wait)),
        all.then(|| rule::context(state, config)).flatten(),
        rule::rescue_overdue(state, config, now_ms),
    ];
    held.into_iter()
        .flatten()
        .filter(|h| !state.watch.flags.contains_key(h.rule))
        .map(|h| Flag {
            rule: h.rule.to_string(),
            severity: config.severity_of(h.rule),
            reason: h.reason,
            suggested_action: h.action,
            call_id: h.call_id,
        })
        .collect()
}

/// Where the ladder goes after `new` flags: `Some(step)` when it moves.
pub fn next_step(
    state: &SessionState,
    new: &[Flag],
    config: &DetectorConfig,
) -> Option<EscalationStep> {
    let w = &state.watch;
    if w.escalation == EscalationStep::Rescue || !state.header.status.is_live() {
        return None;
    }
    let critical = new.iter().any(|f| f.severity == Severity::Critical)
        || w.flags.values().any(|f| f.severity == Severity::Critical);
    let target = if critical {
        EscalationStep::Blocker
    } else if w.failure_streak >= config.adjust_after {
        EscalationStep::Adjust
    } else if w.failure_streak >= 1 {
        EscalationStep::Retry
    } else {
        EscalationStep::None
    };
    // Up while calls fail; back down only on success.
    let next = if w.failure_streak == 0 {
        target
    } else {
        target.max(w.escalation)
    };
    (next != w.escalation).then_some(next)
}

/// What one run of the detector did.
#[derive(Clone, Debug, Serialize)]
pub struct Check {
    /// The flags raised now.
    pub raised: Vec<Flag>,
    /// The ladder's new step, when it moved.
    pub escalation: Option<EscalationStep>,
    /// Whether a critical flag paused the session now.
    pub paused: bool,
    /// The session after the run.
    pub state: SessionState,
}

/// Runs the detector on session `id_or_name` now and logs what it finds:
/// the flags, the ladder's move, and a pause for a critical flag of an
/// active session. Under the session's lock, so concurrent runs raise a flag once.
pub fn check(
    sessions: &Sessions,
    config: &DetectorConfig,
    id_or_name: &str,
) -> Result<Check, SessionError> {
    let (raised, escalation, paused) = judge(sessions, config, id_or_name, Rules::All, None)?;
    let state = sessions.show(id_or_name)?;
    Ok(Check {
        raised,
        escalation,
        paused,
        state,
    })
}

/// [`check`] without the copy of the session it returns: the flags raised
/// now. What a call's settle runs, after every call.
pub fn flags(
    sessions: &Sessions,
    config: &DetectorConfig,
    id_or_name: &str,
) -> Result<Vec<Flag>, SessionError> {
    judge(sessions, config, id_or_name, Rules::All, None).map(|(raised, _, _)| raised)
}

/// Raises `flag`, which someone said holds (an agent blocked on something,
/// with `session_flag`; a handoff that names blockers), on session
/// `id_or_name`: logged as the rules' flags are, through the ladder, and a
/// critical one pauses an active session. An active flag of the same rule
/// is replaced (the newest word on it stands). Refused for a session that
/// is not live.
pub fn raise(
    sessions: &Sessions,
    config: &DetectorConfig,
    id_or_name: &str,
    flag: Flag,
) -> Result<Check, SessionError> {
    let (_, (raised, escalation, paused)) = sessions.append_with(id_or_name, |state, _| {
        if !state.header.status.is_live() {
            return (Vec::new(), (Vec::new(), None, false));
        }
        logged(state, config, vec![flag.clone()], true)
    })?;
    let state = sessions.show(id_or_name)?;
    if raised.is_empty() {
        return Err(SessionError::InvalidInput(format!(
            "session {} is {}: a blocker flag is raised on a live session only",
            state.label(),
            state.header.status
        )));
    }
    Ok(Check {
        raised,
        escalation,
        paused,
        state,
    })
}

/// One run of `rules` on a session and its events, under the session's lock:
/// the flags raised, the ladder's move and whether it paused the session.
/// The ladder moves only with a flag when only the timed rules ran.
fn judge(
    sessions: &Sessions,
    config: &DetectorConfig,
    id_or_name: &str,
    rules: Rules,
    waiting: Option<&Waiting>,
) -> Result<(Vec<Flag>, Option<EscalationStep>, bool), SessionError> {
    let (_, judged) = sessions.append_with(id_or_name, |state, now| {
        let raised = detect_rules(state, config, now, rules, waiting);
        logged(state, config, raised, rules == Rules::All)
    })?;
    Ok(judged)
}

/// The events that log `raised` on `state`: the flags, the ladder's move
/// (judged on every run when `ladder`, else only with a flag) and the
/// pause a critical flag brings to an active session; and what they did.
#[allow(clippy::type_complexity)]
fn logged(
    state: &SessionState,
    config: &DetectorConfig,
    raised: Vec<Flag>,
    ladder: bool,
) -> (Vec<EventKind>, (Vec<Flag>, Option<EscalationStep>, bool)) {
    let escalation = if ladder || !raised.is_empty() {
        next_step(state, &raised, config)
    } else {
        None
    };
    let mut events: Vec<EventKind> = raised.iter().cloned().map(EventKind::BlockerFlag).collect();
    if let Some(step) = escalation {
        let reason = match raised.iter().find(|f| f.severity == Severity::Critical) {
            Some(f) if step == EscalationStep::Blocker => {
                format!("critical blocker flag `{}`: {}", f.rule, f.reason)
            }
            _ if step == EscalationStep::None => "a call succeeded".to_string(),
            _ => format!(
                "{} call(s) in a row did not succeed: {}",
                state.watch.failure_streak,
                step.suggestion()
            ),
        };
        events.push(EventKind::Escalation {
            step,
            reason,
            rescue: None,
        });
    }
    let mut paused = false;
    if let Some(f) = raised.iter().find(|f| f.severity == Severity::Critical)
        && state.header.status == SessionStatus::Active
    {
        paused = true;
        events.push(EventKind::Paused {
            reason: format!(
                "blocker flag `{}` ({}): {}; {}",
                f.rule, f.severity, f.reason, f.suggested_action
            ),
            by: None,
        });
    }
    (events, (raised, escalation, paused))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::session::watch::cut;

    #[test]
    fn severities_and_ladder_order() {
        assert!(EscalationStep::Retry < EscalationStep::Adjust);
        assert!(EscalationStep::Blocker < EscalationStep::Rescue);
        let c = DetectorConfig::default();
        assert_eq!(c.severity_of("retry"), Severity::Critical);
        assert_eq!(c.severity_of("overrun"), Severity::Warning);
        assert_eq!(cut("ééé", 3), "é…");
    }
}
