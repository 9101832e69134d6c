//! The events a `[[notify]]` target (or an event `[[trigger]]`) names: the
//! kinds of what happens in a session, and the `events` list that picks
//! some of them (with the least severity of flag wanted).

use crate::detector::Severity;

/// What a notification is about.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum NotifyKind {
    /// A call waits for an operator's approval (a hook answered `ask`).
    ApprovalNeeded,
    /// The stuck-agent detector raised a blocker flag.
    Flag,
    /// A session reached the warning threshold of a budget cap.
    BudgetWarning,
    /// A call or a usage report went past a cap; the session paused.
    BudgetExceeded,
    /// The sessions of a principal, project or role together reached the
    /// warning threshold of a ceiling across sessions (once per ceiling
    /// and period).
    CeilingWarning,
    /// A ceiling across sessions was reached: calls are refused and the
    /// scope's sessions paused until an operator lifts it (once per
    /// ceiling and period).
    CeilingReached,
    /// A background job's call succeeded.
    JobFinished,
    /// A background job's call failed, timed out, was denied or cancelled.
    JobFailed,
    /// An operator opened a rescue of a session.
    RescueOpened,
    /// A rescue was closed (resolved, or given up on).
    RescueResolved,
    /// A session made no progress for too long (the `no_progress` or `stale` flag).
    SessionStalled,
    /// A session ended with its work done.
    SessionCompleted,
    /// A `[[schedule]]` or `[[trigger]]` run met its `alert_if`, or failed.
    ScheduleAlert,
    /// A session spawned a child session (a dispatcher starts its agent).
    ChildSpawned,
    /// A session wrote a handoff (its blockers, if any, in the details).
    Handoff,
    /// A call in a session was denied (by a hook, a budget or a ceiling),
    /// with the reason and the alternatives offered.
    CallDenied,
    /// A call in a session ran and failed (the tool's error, a deadline, a
    /// memory or output cap, a trap): not a denial, not a background job's
    /// call (`job_failed`), not a cancelled one.
    CallFailed,
}

impl NotifyKind {
    pub const ALL: [NotifyKind; 17] = [
        NotifyKind::ApprovalNeeded,
        NotifyKind::Flag,
        NotifyKind::BudgetWarning,
        NotifyKind::BudgetExceeded,
        NotifyKind::CeilingWarning,
        NotifyKind::CeilingReached,
        NotifyKind::JobFinished,
        NotifyKind::JobFailed,
        NotifyKind::RescueOpened,
        NotifyKind::RescueResolved,
        NotifyKind::SessionStalled,
        NotifyKind::SessionCompleted,
        NotifyKind::ScheduleAlert,
        NotifyKind::ChildSpawned,
        NotifyKind::Handoff,
        NotifyKind::CallDenied,
        NotifyKind::CallFailed,
    ];

    /// The name used in `events` and in the delivered body's `event` field.
    pub fn as_str(self) -> &'static str {
        match self {
            NotifyKind::ApprovalNeeded => "approval_needed",
            NotifyKind::Flag => "flag",
            NotifyKind::BudgetWarning => "budget_warning",
            NotifyKind::BudgetExceeded => "budget_exceeded",
            NotifyKind::CeilingWarning => "ceiling_warning",
            NotifyKind::CeilingReached => "ceiling_reached",
            NotifyKind::JobFinished => "job_finished",
            NotifyKind::JobFailed => "job_failed",
            NotifyKind::RescueOpened => "rescue_opened",
            NotifyKind::RescueResolved => "rescue_resolved",
            NotifyKind::SessionStalled => "session_stalled",
            NotifyKind::SessionCompleted => "session_completed",
            NotifyKind::ScheduleAlert => "schedule_alert",
            NotifyKind::ChildSpawned => "child_spawned",
            NotifyKind::Handoff => "handoff",
            NotifyKind::CallDenied => "call_denied",
            NotifyKind::CallFailed => "call_failed",
        }
    }

    pub fn parse(text: &str) -> Option<NotifyKind> {
        NotifyKind::ALL.into_iter().find(|k| k.as_str() == text)
    }
}

impl std::fmt::Display for NotifyKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

pub(super) const EVENTS_HINT: &str = "list some of `approval_needed`, `flag` (or `flag:info`, `flag:warning`, `flag:critical`: flags at or above that severity), `budget_warning`, `budget_exceeded`, `ceiling_warning`, `ceiling_reached`, `job_finished`, `job_failed`, `rescue_opened`, `rescue_resolved`, `session_stalled`, `session_completed`, `schedule_alert`, `child_spawned`, `handoff`, `call_denied`, `call_failed`, or `\"*\"` for all";

/// What is wrong with an `events` list (the config adds the key and the
/// events there are).
#[derive(thiserror::Error, Debug, Clone, PartialEq, Eq)]
pub(crate) enum EventsError {
    #[error("`events` is missing or empty: the target would get nothing")]
    Empty,
    #[error("`{event}` is not an event")]
    Unknown { event: String },
    #[error("`{severity}` in `{event}` is not a severity (info, warning, critical)")]
    Severity { severity: String, event: String },
    #[error("`{event}`: only `flag` takes a severity (`flag:warning`)")]
    SeverityNotTaken { event: String },
}

/// `events`: the kinds, and the lowest severity of flag wanted.
pub(crate) fn parse_events(
    events: Option<&[String]>,
) -> Result<(Vec<NotifyKind>, Severity), EventsError> {
    let Some(events) = events.filter(|e| !e.is_empty()) else {
        return Err(EventsError::Empty);
    };
    let mut kinds = Vec::new();
    let mut severity = None;
    for event in events {
        let event = event.trim();
        if event == "*" {
            kinds.extend(NotifyKind::ALL);
            severity = Some(Severity::Info);
            continue;
        }
        let (name, min) = match event.split_once(':') {
            Some((name, min)) => (name, Some(min)),
            None => (event, None),
        };
        let kind = NotifyKind::parse(name).ok_or_else(|| EventsError::Unknown {
            event: event.to_string(),
        })?;
        match (kind, min) {
            (NotifyKind::Flag, min) => {
                let min = match min {
                    None | Some("info") => Severity::Info,
                    Some("warning") => Severity::Warning,
                    Some("critical") => Severity::Critical,
                    Some(other) => {
                        return Err(EventsError::Severity {
                            severity: other.to_string(),
                            event: event.to_string(),
                        });
                    }
                };
                severity = Some(severity.map_or(min, |s: Severity| s.min(min)));
            }
            (_, Some(_)) => {
                return Err(EventsError::SeverityNotTaken {
                    event: event.to_string(),
                });
            }
            _ => {}
        }
        kinds.push(kind);
    }
    kinds.sort();
    kinds.dedup();
    Ok((kinds, severity.unwrap_or(Severity::Info)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn events(list: &[&str]) -> Result<(Vec<NotifyKind>, Severity), EventsError> {
        let owned: Vec<String> = list.iter().map(|s| s.to_string()).collect();
        parse_events(Some(&owned))
    }

    #[test]
    fn flag_severity_is_the_lowest_asked_for() {
        let (kinds, min) = events(&["flag:critical", "job_failed"]).unwrap();
        assert_eq!(kinds, vec![NotifyKind::Flag, NotifyKind::JobFailed]);
        assert_eq!(min, Severity::Critical);
        let (_, min) = events(&["flag:critical", "flag:warning"]).unwrap();
        assert_eq!(min, Severity::Warning);
        assert!(events(&["job_failed:warning"]).is_err());
        assert!(events(&["flag:loud"]).is_err());
        assert!(events(&["nope"]).is_err());
        assert_eq!(events(&["*"]).unwrap().0.len(), NotifyKind::ALL.len());
    }
}
