//! The detector's rules, one function each: whether the rule holds for a
//! session now and, when it does, what its blocker flag says (the reason
//! and the suggested action). [`detect_rules`](super::detect_rules) runs
//! them in the order of the table in the module's docs and raises the ones
//! that hold and are not active yet.

use super::Waiting;
use crate::manifest::DetectorConfig;
use crate::session::{SessionState, SessionStatus};

/// `rescue_overdue`: a rescue open past its target time to unblock (judged
/// by the sweep; the rescue's end, or a new one, clears it).
pub(super) fn rescue_overdue(
    state: &SessionState,
    config: &DetectorConfig,
    now_ms: u64,
) -> Option<Holds> {
    let w = &state.watch;
    let rescue = w.rescue.as_ref()?;
    let since = w.escalated_at_ms?;
    let target = u64::try_from(config.rescue_target.as_millis()).unwrap_or(u64::MAX);
    let open = now_ms.saturating_sub(since);
    (open > target).then(|| Holds {
        rule: "rescue_overdue",
        reason: format!(
            "rescue `{rescue}` has been open {} min, past the target of {} min",
            open / 60_000,
            target / 60_000
        ),
        action: format!(
            "assign it (`glovebox rescue assign {rescue} --to NAME`), hand the agent what it needs (`glovebox rescue inject {rescue}`), or close it (`glovebox rescue resolve {rescue}`)"
        ),
        call_id: None,
    })
}

/// A rule that holds: what its flag is to say.
pub(super) struct Holds {
    pub rule: &'static str,
    pub reason: String,
    pub action: String,
    /// The call it concerns, if one.
    pub call_id: Option<String>,
}

/// `budget`: spending near a cap while calls (or completion gates) fail.
pub(super) fn budget(state: &SessionState, config: &DetectorConfig, label: &str) -> Option<Holds> {
    let w = &state.watch;
    let threshold = (config.budget_fraction * 100.0).round() as u64;
    let failing_gates = state.completion.failing_runs;
    if w.failure_streak == 0 && failing_gates == 0 {
        return None;
    }
    let (cap, percent) = w
        .budget_percent
        .iter()
        .filter(|(_, p)| **p >= threshold)
        .max_by_key(|(_, p)| **p)?;
    Some(Holds {
        rule: "budget",
        reason: if w.failure_streak > 0 {
            format!(
                "the {cap} budget is at {percent}% and the last {} call(s) failed",
                w.failure_streak
            )
        } else {
            format!(
                "the {cap} budget is at {percent}% and its completion gates failed {failing_gates} time(s) in a row"
            )
        },
        action: format!(
            "open a rescue (`glovebox rescue open {label}`): the budget is likely to run out before the work is done"
        ),
        call_id: None,
    })
}

/// `retry`: the same call failing again and again (judged when it just
/// failed).
pub(super) fn retry(state: &SessionState, config: &DetectorConfig, label: &str) -> Option<Holds> {
    let w = &state.watch;
    let last = w.last_failed_call.as_ref()?;
    let f = w
        .failing
        .values()
        .find(|f| &f.last_call_id == last && f.failures >= config.retry_failures)?;
    Some(Holds {
        rule: "retry",
        reason: format!(
            "`{}` failed {} times with the same input and no success in between{}",
            f.tool,
            f.failures,
            f.last_error
                .as_deref()
                .map(|e| format!(" (last error: {e})"))
                .unwrap_or_default()
        ),
        action: format!(
            "stop retrying: automatic retries are not resolving it; change the input or the approach, or have an operator diagnose it (`glovebox rescue open {label} --call {}`)",
            f.last_call_id
        ),
        call_id: Some(f.last_call_id.clone()),
    })
}

/// `overrun`: much longer than expected.
pub(super) fn overrun(state: &SessionState, config: &DetectorConfig, now_ms: u64) -> Option<Holds> {
    let expected = state.expected_duration_ms.filter(|e| *e > 0)?;
    let elapsed = now_ms.saturating_sub(state.header.created_at_ms);
    (elapsed as f64 > config.overrun_factor * expected as f64).then(|| Holds {
        rule: "overrun",
        reason: format!(
            "running for {} (expected {}, flagged past {}x)",
            show_ms(elapsed),
            show_ms(expected),
            config.overrun_factor
        ),
        action: "check the agent's progress: it may be stuck or working on out-of-scope items"
            .to_string(),
        call_id: None,
    })
}

/// `denials`: the agent keeps asking for what it may not do.
pub(super) fn denials(state: &SessionState, config: &DetectorConfig) -> Option<Holds> {
    let w = &state.watch;
    let window = usize::try_from(config.denials_window).unwrap_or(usize::MAX);
    let recent = &w.recent_denied[w.recent_denied.len().saturating_sub(window)..];
    let denied = recent.iter().filter(|d| **d).count();
    (denied >= usize::try_from(config.denials).unwrap_or(usize::MAX)).then(|| Holds {
        rule: "denials",
        reason: format!(
            "{denied} of the last {} calls were denied by permission hooks",
            recent.len()
        ),
        action: "read the denials' reasons and alternatives and change the approach; if the work needs the denied actions, an operator reviews the policy".to_string(),
        call_id: None,
    })
}

/// `no_progress`: nothing useful for a long time, in a created or active
/// session.
pub(super) fn no_progress(
    state: &SessionState,
    config: &DetectorConfig,
    now_ms: u64,
) -> Option<Holds> {
    if !matches!(
        state.header.status,
        SessionStatus::Created | SessionStatus::Active
    ) {
        return None;
    }
    let idle = now_ms.saturating_sub(state.watch.last_success_at_ms);
    let limit = u64::try_from(config.no_progress_after.as_millis()).unwrap_or(u64::MAX);
    (idle > limit).then(|| Holds {
        rule: "no_progress",
        reason: format!(
            "no progress (a successful call, a note, a handoff) for {}",
            show_ms(idle)
        ),
        action:
            "check whether the agent is stuck; ask it for a note or a handoff on where it stands"
                .to_string(),
        call_id: None,
    })
}

/// `stale`: nothing at all for days.
pub(super) fn stale(
    state: &SessionState,
    config: &DetectorConfig,
    now_ms: u64,
    label: &str,
) -> Option<Holds> {
    let inactive = now_ms.saturating_sub(state.watch.last_activity());
    let limit = u64::try_from(config.stale_after.as_millis()).unwrap_or(u64::MAX);
    (inactive > limit).then(|| Holds {
        rule: "stale",
        reason: format!(
            "the session has been {} for {} (no call, note or handoff)",
            state.header.status,
            show_ms(inactive)
        ),
        action: format!(
            "end it if the work is over or abandoned (`glovebox session end {label}`), or resume it and carry on"
        ),
        call_id: None,
    })
}

/// `approval_wait`: a human has not answered the approval the session
/// waits for.
pub(super) fn approval_wait(config: &DetectorConfig, now_ms: u64, wait: &Waiting) -> Option<Holds> {
    let waited = now_ms.saturating_sub(wait.since_ms);
    let limit = u64::try_from(config.approval_wait_after.as_millis()).unwrap_or(u64::MAX);
    (waited > limit).then(|| Holds {
        rule: "approval_wait",
        reason: format!(
            "a call of `{}` has waited for approval `{}` for {}",
            wait.tool,
            wait.approval,
            show_ms(waited)
        ),
        action: format!(
            "an operator decides: `glovebox approvals approve {0}` or `glovebox approvals deny {0} --reason ...`",
            wait.approval
        ),
        call_id: Some(wait.call_id.clone()),
    })
}

fn show_ms(ms: u64) -> String {
    humantime::format_duration(std::time::Duration::from_millis(ms)).to_string()
}

/// `context`: the brain's context is at or past `context_fraction` of its
/// window, as its latest usage report said: it should hand off while it
/// still can write a good handoff.
pub(super) fn context(state: &SessionState, config: &DetectorConfig) -> Option<Holds> {
    let c = state.watch.context?;
    let share = c.tokens as f64 / c.limit as f64;
    (share >= config.context_fraction).then(|| Holds {
        rule: "context",
        reason: format!(
            "the context holds {} of its {} tokens ({}%), at or past {}% of the window",
            c.tokens,
            c.limit,
            (share * 100.0).floor() as u64,
            (config.context_fraction * 100.0).round() as u64
        ),
        action: "hand off now (`session_handoff`, kind `continuation`: the objective, what is done, the next steps) and pause; a fresh session resumes from the handoff".into(),
        call_id: None,
    })
}
