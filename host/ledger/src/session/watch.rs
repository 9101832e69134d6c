//! What the stuck-agent detector keeps of a session ([`Watch`]): the part of
//! the session's state its rules read, folded from the session's events as
//! they are applied, so running the rules reads no log. The rules, the flags
//! and the escalation ladder themselves are in `crate::detect`, which
//! re-exports these types at their old paths (`crate::detect::Watch`, ...).

use std::collections::BTreeMap;

use glovebox_input::shown::cut_at;
use serde::{Deserialize, Serialize};

use super::event::Event;
use super::kind::EventKind;
use crate::manifest::Severity;
use crate::values::EscalationStep;

/// Finished calls remembered for the `denials` rule.
const MAX_RECENT: usize = 64;
/// Distinct failing calls remembered for the `retry` rule.
const MAX_FAILING: usize = 64;
/// Error texts kept in the state and in reasons are cut to this many bytes.
const MAX_ERROR: usize = 300;

/// A blocker flag that has not been cleared.
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ActiveFlag {
    pub severity: Severity,
    pub reason: String,
    pub suggested_action: String,
    pub call_id: Option<String>,
    /// The `blocker_flag` event.
    pub seq: u64,
    pub at_ms: u64,
}

/// A call (tool and input) that keeps failing.
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct FailingCall {
    pub tool: String,
    pub input_digest: String,
    /// Failures since its last success.
    pub failures: u32,
    pub last_call_id: String,
    pub last_error: Option<String>,
}

/// What the detector keeps of a session: the fold of its events that the
/// rules read, so running them reads no log.
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Watch {
    /// The rung of the escalation ladder the session is on.
    pub escalation: EscalationStep,
    pub escalated_at_ms: Option<u64>,
    /// The open rescue, on the `rescue` step.
    pub rescue: Option<String>,
    /// Active blocker flags by rule.
    pub flags: BTreeMap<String, ActiveFlag>,
    /// The last progress: start, a successful call, a note, a handoff, a resume.
    pub last_success_at_ms: u64,
    /// Calls that did not succeed since the last one that did (approvals and
    /// cancellations aside).
    pub failure_streak: u32,
    /// Calls failing since their last success, by `tool input-digest`.
    pub failing: BTreeMap<String, FailingCall>,
    /// The last finished call, when it failed (denials aside).
    pub last_failed_call: Option<String>,
    /// The finished calls since the last success, oldest first: whether each was denied.
    pub recent_denied: Vec<bool>,
    /// The highest percent of each budget cap from `budget_warning` (until the cap is raised).
    pub budget_percent: BTreeMap<String, u64>,
    /// Calls in flight: call id → (tool, input digest).
    pub pending: BTreeMap<String, (String, String)>,
    /// The last event that was not the detector's own (a flag, a move of the
    /// ladder, a pause no principal asked for: the host's, or an operator's
    /// from the CLI): what the `stale` rule and the sweep's auto-archive
    /// measure inactivity from (see [`Watch::last_activity`]).
    #[serde(default)]
    pub last_activity_at_ms: u64,
    /// The brain's context as its latest usage report gave it (tokens in
    /// it, and its window): what the `context` rule compares.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context: Option<ContextUse>,
}

/// How full the brain's context is, as it reported.
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ContextUse {
    pub tokens: u64,
    pub limit: u64,
}

/// The flags a resume, or the session's next handoff, clears: those
/// raised because someone said so (an agent's own, `session_flag`; a
/// handoff's blockers; an agent's own pause) and `context` (the handoff
/// is what it asks for).
pub const SAID: [&str; 4] = ["agent", "handoff", "paused", "context"];

impl Watch {
    /// The watch of a session started at `at_ms`.
    pub fn new(at_ms: u64) -> Watch {
        Watch {
            last_success_at_ms: at_ms,
            last_activity_at_ms: at_ms,
            ..Watch::default()
        }
    }

    /// When the session last did something (its progress at least, for a
    /// state folded before activity was kept).
    pub fn last_activity(&self) -> u64 {
        self.last_activity_at_ms.max(self.last_success_at_ms)
    }

    /// Folds `event` in (called by [`SessionState::apply`]).
    ///
    /// [`SessionState::apply`]: super::SessionState::apply
    pub(crate) fn apply(&mut self, event: &Event) {
        let at = event.at_ms;
        let own = matches!(
            &event.kind,
            EventKind::BlockerFlag(_)
                | EventKind::Escalation { .. }
                | EventKind::Paused { by: None, .. }
        );
        if !own {
            self.last_activity_at_ms = self.last_activity_at_ms.max(at);
        }
        match &event.kind {
            EventKind::CallRequested {
                call_id,
                tool,
                input_digest,
                ..
            } => {
                self.flags.remove("stale");
                self.pending
                    .insert(call_id.clone(), (tool.clone(), input_digest.clone()));
            }
            EventKind::CallInterrupted { call_id, .. } => {
                self.pending.remove(call_id);
            }
            EventKind::CallFinished {
                call_id,
                outcome,
                error,
                ..
            } => {
                let call = self.pending.remove(call_id);
                self.finished(at, call_id, call, outcome, error.as_deref());
            }
            // A handoff states the session's blockers anew: the flags
            // said ones go, and one naming blockers (flagged right after
            // it) is not progress.
            EventKind::Handoff(handoff) => {
                for rule in SAID {
                    self.flags.remove(rule);
                }
                if handoff.notes.blockers.is_empty() {
                    self.progress(at);
                }
            }
            EventKind::Note { .. }
            | EventKind::HandoffReceived { .. }
            | EventKind::ChildSpawned { .. } => {
                self.progress(at);
            }
            EventKind::Resumed => {
                self.progress(at);
                self.flags.retain(|rule, f| {
                    f.severity != Severity::Critical && !SAID.contains(&rule.as_str())
                });
            }
            EventKind::BlockerFlag(flag) => {
                let active = ActiveFlag {
                    severity: flag.severity,
                    reason: flag.reason.clone(),
                    suggested_action: flag.suggested_action.clone(),
                    call_id: flag.call_id.clone(),
                    seq: event.seq,
                    at_ms: at,
                };
                self.flags.insert(flag.rule.clone(), active);
            }
            EventKind::Escalation { step, rescue, .. } => self.escalated(*step, rescue, at),
            EventKind::BudgetWarning { cap, percent, .. } => self.budget_at(cap.as_str(), *percent),
            EventKind::BudgetExceeded {
                cap, used, limit, ..
            } => self.budget_at(cap.as_str(), used.saturating_mul(100) / (*limit).max(1)),
            EventKind::UsageReported {
                context_tokens: Some(tokens),
                context_limit: Some(limit),
                ..
            } if *limit > 0 => {
                self.context = Some(ContextUse {
                    tokens: *tokens,
                    limit: *limit,
                });
            }
            EventKind::CapRaised { cap, .. } => {
                self.budget_percent.remove(cap.as_str());
                self.flags.remove("budget");
            }
            _ => {}
        }
    }

    /// An escalation to `step` at `at`: a rescue's end (or a new one) ends
    /// its overdue flag.
    fn escalated(&mut self, step: EscalationStep, rescue: &Option<String>, at: u64) {
        self.flags.remove("rescue_overdue");
        self.escalation = step;
        self.escalated_at_ms = Some(at);
        self.rescue = if step == EscalationStep::Rescue {
            rescue.clone()
        } else {
            None
        };
    }

    /// A budget warning or stop at `percent` of cap `cap`: the highest seen.
    fn budget_at(&mut self, cap: &str, percent: u64) {
        let entry = self.budget_percent.entry(cap.to_string()).or_default();
        *entry = (*entry).max(percent);
    }

    fn progress(&mut self, at: u64) {
        self.last_success_at_ms = at;
        // Resolving an approval resumes the session: progress too.
        for rule in ["no_progress", "stale", "approval_wait"] {
            self.flags.remove(rule);
        }
    }

    fn finished(
        &mut self,
        at: u64,
        call_id: &str,
        call: Option<(String, String)>,
        outcome: &str,
        error: Option<&str>,
    ) {
        match outcome {
            "ok" => {
                self.progress(at);
                self.failure_streak = 0;
                self.last_failed_call = None;
                self.recent_denied.clear();
                if let Some((tool, digest)) = call {
                    self.failing.remove(&format!("{tool} {digest}"));
                }
                for rule in ["retry", "denials", "budget"] {
                    self.flags.remove(rule);
                }
            }
            // Waiting for a person, or stopped by one: not the agent's failure.
            "awaiting_approval" | "cancelled" => {}
            _ => {
                let denied = outcome == "denied";
                self.failure_streak = self.failure_streak.saturating_add(1);
                self.recent_denied.push(denied);
                if self.recent_denied.len() > MAX_RECENT {
                    self.recent_denied.remove(0);
                }
                self.last_failed_call = (!denied).then(|| call_id.to_string());
                if let (false, Some((tool, digest))) = (denied, call) {
                    let entry = self
                        .failing
                        .entry(format!("{tool} {digest}"))
                        .or_insert_with(|| FailingCall {
                            tool,
                            input_digest: digest,
                            failures: 0,
                            last_call_id: String::new(),
                            last_error: None,
                        });
                    entry.failures = entry.failures.saturating_add(1);
                    entry.last_call_id = call_id.to_string();
                    entry.last_error = error.map(|e| cut(e, MAX_ERROR));
                    if self.failing.len() > MAX_FAILING
                        && let Some(key) = self
                            .failing
                            .iter()
                            .min_by_key(|(_, f)| f.failures)
                            .map(|(k, _)| k.clone())
                    {
                        self.failing.remove(&key);
                    }
                }
            }
        }
    }
}

/// At most `max` bytes of `text` (cut at a character boundary), `…` marking
/// a cut.
pub(crate) fn cut(text: &str, max: usize) -> String {
    match cut_at(text, max) {
        (head, true) => format!("{head}…"),
        (whole, false) => whole.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::session::event::GENESIS_HASH;

    fn ev(seq: u64, at: u64, kind: EventKind) -> Event {
        Event {
            session: "s-1".into(),
            seq,
            at_ms: at,
            prev_hash: GENESIS_HASH.into(),
            by: None,
            hash: String::new(),
            kind,
        }
    }

    fn finished(seq: u64, call: &str, outcome: &str) -> Event {
        ev(
            seq,
            seq * 10,
            EventKind::CallFinished {
                call_id: call.into(),
                outcome: outcome.into(),
                error: Some("boom".into()),
                output: None,
                output_digest: String::new(),
                metering: Default::default(),
            },
        )
    }

    fn requested(seq: u64, call: &str, digest: &str) -> Event {
        ev(
            seq,
            seq * 10,
            EventKind::CallRequested {
                call_id: call.into(),
                tool: "t.x".into(),
                input_digest: digest.into(),
                input: None,
                job_id: None,
                trace_id: None,
                parent_call: None,
            },
        )
    }

    #[test]
    fn the_same_failing_call_counts_until_it_succeeds() {
        let mut w = Watch::new(0);
        for (i, call) in ["a", "b", "c"].iter().enumerate() {
            let seq = 2 * i as u64 + 1;
            w.apply(&requested(seq, call, "d1"));
            w.apply(&finished(seq + 1, call, "trap"));
        }
        assert_eq!(w.failing["t.x d1"].failures, 3);
        assert_eq!(w.failure_streak, 3);
        w.apply(&requested(7, "e", "d2"));
        w.apply(&finished(8, "e", "ok"));
        assert_eq!(
            w.failing["t.x d1"].failures, 3,
            "another input's success is not this call's"
        );
        assert_eq!(w.failure_streak, 0);
        assert_eq!(w.last_success_at_ms, 80);
        w.apply(&requested(9, "f", "d1"));
        w.apply(&finished(10, "f", "ok"));
        assert!(w.failing.is_empty());
    }
}
