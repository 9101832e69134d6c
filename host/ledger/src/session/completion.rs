//! Completion: a session ends as `completed` only when the condition written
//! down at its start holds now.
//!
//! Why these rules (the seeds' "Ralph" loop: a claim of done is re-checked,
//! every time, by someone other than the worker):
//! - the condition is fixed in `session_started` (the session's own, its
//!   parent's for a spawned child, and the operator's `[[completion]]`), so
//!   the worker cannot loosen it later and the log says what "done" meant;
//! - gates count only if they passed after the session's last work: any call
//!   started or finished, or any handoff written, after a passing
//!   `gates_checked` voids it, so `session_end completed` runs them again
//!   (the gateway does, through the normal call pipeline) and this file only
//!   checks the result under the session's lock, in the same write as the
//!   end;
//! - a judge is a session of role `judge` owned by another principal than
//!   the worker's, never the worker's session; its verdict is recorded in
//!   both logs (`verdict_given` in the judge's, `verdict_received` in the
//!   worker's) and counts only for the handoff it judged: a new handoff
//!   needs a new verdict;
//! - failing gate runs in a row are counted for the stuck-agent detector
//!   (the seed's "budget above 80% with failing gates").

use serde::{Deserialize, Serialize};

use super::error::SessionError;
use super::event::Event;
use super::gate::{GateResult, Verdict};
use super::kind::EventKind;
use crate::manifest::Completion;

/// Where a session stands against its completion condition.
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CompletionState {
    /// What must hold, from `session_started`.
    #[serde(default, skip_serializing_if = "Completion::is_empty")]
    pub condition: Completion,
    /// The latest gate run, while no work came after it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gates: Option<GatesRun>,
    /// Gate runs that failed in a row (a passing run resets it).
    #[serde(default)]
    pub failing_runs: u32,
    /// The latest handoff this session wrote (its seq).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub handoff_seq: Option<u64>,
    /// The latest verdict on that handoff.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub verdict: Option<Verdict>,
}

/// A gate run that still stands.
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct GatesRun {
    pub seq: u64,
    pub passed: bool,
    /// The failing gates.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub failing: Vec<GateResult>,
}

impl CompletionState {
    pub fn new(condition: Completion) -> CompletionState {
        CompletionState {
            condition,
            ..CompletionState::default()
        }
    }

    /// Folds an event of the session into it.
    pub(super) fn apply(&mut self, event: &Event) {
        match &event.kind {
            EventKind::CallStarted { .. } | EventKind::CallFinished { .. } => self.gates = None,
            EventKind::Handoff(_) => {
                self.gates = None;
                self.handoff_seq = Some(event.seq);
                self.verdict = None;
            }
            EventKind::GatesChecked { passed, gates } => {
                self.gates = Some(GatesRun {
                    seq: event.seq,
                    passed: *passed,
                    failing: gates.iter().filter(|g| !g.passed).cloned().collect(),
                });
                self.failing_runs = if *passed {
                    0
                } else {
                    self.failing_runs.saturating_add(1)
                };
            }
            EventKind::VerdictReceived { verdict }
                if Some(verdict.handoff_seq) == self.handoff_seq =>
            {
                self.verdict = Some(verdict.clone());
            }
            _ => {}
        }
    }

    /// Whether the session may end as `completed` now; the error says what
    /// is missing and what to do.
    pub fn ready(&self, label: &str) -> Result<(), SessionError> {
        let refuse = |why: String| {
            Err(SessionError::Incomplete(format!(
                "session {label} cannot end as completed: {why}"
            )))
        };
        if !self.condition.gates.is_empty() {
            match &self.gates {
                Some(run) if run.passed => {}
                Some(run) => {
                    let first = run.failing.first();
                    return refuse(format!(
                        "its completion gate `{}` failed: {}; fix what the gate checks and end again (every gate runs again at each end)",
                        first.map_or("?", |g| g.tool.as_str()),
                        first.map_or("", |g| g.detail.as_str())
                    ));
                }
                None => {
                    return refuse(
                        "its completion gates have not passed since its last call or handoff; end it with `session_end` (MCP) or `glovebox session end`, which run them".into(),
                    );
                }
            }
        }
        if self.condition.judge {
            let Some(seq) = self.handoff_seq else {
                return refuse(
                    "it needs a judge's verdict, and it has written no handoff to judge: post its completion handoff (`session_handoff`), then have a judge record a verdict".into(),
                );
            };
            match &self.verdict {
                Some(v) if v.pass => {}
                Some(v) => {
                    return refuse(format!(
                        "judge `{}` (session {}) failed its handoff (event {seq}): {}; fix the work, post a new handoff and ask for a new verdict",
                        v.judge,
                        v.judge_session,
                        if v.reasons.is_empty() {
                            "no reason given".to_string()
                        } else {
                            v.reasons.join("; ")
                        }
                    ));
                }
                None => {
                    return refuse(format!(
                        "no judge has passed its latest handoff (event {seq}) yet: a session of role `judge` owned by another principal records one with `session_verdict` (`glovebox session verdict`)"
                    ));
                }
            }
        }
        Ok(())
    }
}
