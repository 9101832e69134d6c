//! The sweep: one pass of the time-based rules over every live session, and
//! the auto-archive of sessions that have done nothing for `archive_after`.
//! Synchronous like the rest of the ledger; the gateway runs it off the async
//! threads, every `sweep_interval` while serving.

use serde::Serialize;

use super::{Rules, Waiting, judge};
use crate::approvals::Approvals;
use crate::manifest::{DetectorConfig, Severity};
use crate::session::{EndOutcome, EventKind, SessionError, SessionStatus, Sessions};
use crate::values::EscalationStep;

/// A flag one pass raised.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct SweepFlag {
    pub session: String,
    pub name: Option<String>,
    pub rule: String,
    pub severity: Severity,
    pub reason: String,
}

/// What one pass did.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Swept {
    /// Live sessions judged.
    pub judged: usize,
    /// Flags raised now (a condition already flagged is not flagged again).
    pub raised: Vec<SweepFlag>,
    /// Sessions a critical flag paused now.
    pub paused: Vec<String>,
    /// Sessions archived now (`archive_after`).
    pub archived: Vec<String>,
    /// Sessions the pass could not judge or archive, and why (the next pass
    /// tries again).
    pub failed: Vec<String>,
}

impl Swept {
    /// Whether the pass changed anything.
    pub fn is_empty(&self) -> bool {
        self.raised.is_empty()
            && self.paused.is_empty()
            && self.archived.is_empty()
            && self.failed.is_empty()
    }
}

/// One sweep: the time-based rules (`no_progress`, `overrun`, `stale`,
/// `approval_wait`) on every live session, each judged under its lock as
/// [`super::check`] judges it (flags as events, the ladder, a pause on a
/// critical flag), then, with `archive_after`, the archive of each session
/// whose last activity is older than that (a live one is ended first with
/// the outcome `exit`). A session waiting for an approval or in a rescue is
/// never archived. A session that fails does not stop the pass.
pub fn sweep(
    sessions: &Sessions,
    approvals: &Approvals,
    config: &DetectorConfig,
) -> Result<Swept, SessionError> {
    let mut swept = Swept::default();
    // The live sessions (the live index: as many as are live), judged and,
    // with `archive_after`, archived when idle.
    for info in sessions.walk_live()? {
        let info = info?;
        let Some(wait) = waiting_of(approvals, &info.header.id, &mut swept) else {
            continue;
        };
        let wait = wait.as_ref();
        swept.judged += 1;
        match judge(sessions, config, &info.header.id, Rules::Timed, wait) {
            Ok((raised, _, paused)) => {
                swept.raised.extend(raised.into_iter().map(|f| SweepFlag {
                    session: info.header.id.clone(),
                    name: info.header.name.clone(),
                    rule: f.rule,
                    severity: f.severity,
                    reason: f.reason,
                }));
                if paused {
                    swept.paused.push(info.header.id.clone());
                }
            }
            Err(e) => swept.failed.push(format!("{}: {e}", info.header.id)),
        }
        archive_if_idle(sessions, config, &info.header.id, wait, &mut swept);
    }
    // The completed ones, with `archive_after` only: every session read a
    // page at a time.
    if config.archive_after.is_some() {
        for info in sessions.walk()? {
            let info = info?;
            if info.header.status == SessionStatus::Completed
                && let Some(wait) = waiting_of(approvals, &info.header.id, &mut swept)
            {
                archive_if_idle(sessions, config, &info.header.id, wait.as_ref(), &mut swept);
            }
        }
    }
    Ok(swept)
}

/// With `archive_after`, archives session `id` when its last activity is
/// older than that (ending it first as `exit` when live); never one waiting
/// for an approval (`wait`), in a rescue or with calls in flight.
fn archive_if_idle(
    sessions: &Sessions,
    config: &DetectorConfig,
    id: &str,
    wait: Option<&Waiting>,
    swept: &mut Swept,
) {
    let Some(after) = config.archive_after else {
        return;
    };
    if wait.is_some() {
        return;
    }
    let after = u64::try_from(after.as_millis()).unwrap_or(u64::MAX);
    let archived = sessions.archive_if(id, |state, now| {
        let idle = now.saturating_sub(state.watch.last_activity());
        if idle <= after
            || state.watch.escalation == EscalationStep::Rescue
            || !state.in_flight.is_empty()
        {
            return Vec::new();
        }
        let mut events = Vec::new();
        if matches!(
            state.header.status,
            SessionStatus::Created | SessionStatus::Active
        ) {
            events.push(EventKind::Ended {
                outcome: EndOutcome::Exit,
                summary: state.summary(now),
            });
        }
        if state.header.status != SessionStatus::Archived {
            events.push(EventKind::Archived);
        }
        events
    });
    match archived {
        Ok(Some(_)) => swept.archived.push(id.to_string()),
        Ok(None) => {}
        Err(e) => swept.failed.push(format!("{id}: {e}")),
    }
}

/// The oldest pending approval of session `id` (the one that waited
/// longest), found through the approvals' index by session; `None` when it
/// cannot be read (recorded in `swept.failed`: the next pass tries again).
fn waiting_of(approvals: &Approvals, id: &str, swept: &mut Swept) -> Option<Option<Waiting>> {
    match approvals.oldest_pending_of(id) {
        Ok(wait) => Some(wait.map(|a| Waiting {
            approval: a.id,
            tool: a.tool,
            call_id: a.call_id,
            since_ms: a.requested_at_ms,
        })),
        Err(e) => {
            swept.failed.push(format!("{id}: {e}"));
            None
        }
    }
}
