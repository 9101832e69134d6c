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

use super::access::SessionScope;
use super::error::SessionError;
use super::event::{Event, EventKind, Role};
use super::state::SessionState;
use super::store::Sessions;
use crate::manifest::Completion;

/// The most of a gate's result or error a `gates_checked` event keeps.
pub const MAX_GATE_DETAIL: usize = 2048;
/// Reasons one verdict may give, and the longest one.
pub const MAX_REASONS: usize = 32;
pub const MAX_REASON_BYTES: usize = 2048;

/// One gate's run, as `gates_checked` records it (the call itself is in the
/// log just before, as every call is).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct GateResult {
    /// `plugin.tool`.
    pub tool: String,
    pub passed: bool,
    /// Why it failed (the tool's error, or the field that differed, with
    /// the result), or the result when it passed; at most
    /// [`MAX_GATE_DETAIL`] bytes.
    pub detail: String,
}

/// A judge's verdict on a session's handoff.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Verdict {
    /// The judge's session.
    pub judge_session: String,
    /// The judge's principal.
    pub judge: String,
    /// The handoff judged (its seq in the worker's log).
    pub handoff_seq: u64,
    pub pass: bool,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub reasons: Vec<String>,
}

/// Where a session stands against its completion condition.
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

/// What a judge records with `session_verdict`.
#[derive(Clone, Debug)]
pub struct VerdictInput {
    pub pass: bool,
    pub reasons: Vec<String>,
    /// The handoff judged; the worker's latest when none is given. A given
    /// one that is no longer the latest is refused (the judge read an old
    /// claim).
    pub handoff_seq: Option<u64>,
}

/// A recorded verdict: the judge's `verdict_given` and the worker's state.
#[derive(Clone, Debug, Serialize)]
pub struct Judged {
    pub verdict: Verdict,
    pub worker: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub worker_name: Option<String>,
}

impl Sessions {
    /// Records `caller`'s gate run for session `id` (the gateway runs the
    /// gates, then calls this and `end` in turn).
    pub fn record_gates(
        &self,
        id: &str,
        gates: Vec<GateResult>,
    ) -> Result<SessionState, SessionError> {
        let passed = gates.iter().all(|g| g.passed);
        self.with_slot(id, |this, slot, id| {
            this.append_locked(slot, id, EventKind::GatesChecked { passed, gates })?;
            this.current(slot, id)
        })
    }
}

impl SessionScope<'_> {
    /// Records the verdict of the caller's judge session `judge` on the latest
    /// handoff of session `worker`.
    ///
    /// The judge session must be the caller's own, of role `judge`, live; the
    /// worker must be another session, owned by another principal, in a
    /// project the caller may touch, live, with a condition that asks for a
    /// judge and a handoff to judge. The worker is named by id or name and
    /// is addressed across owners only here, under these rules.
    pub fn verdict(
        self,
        judge: &str,
        worker: &str,
        input: VerdictInput,
    ) -> Result<Judged, SessionError> {
        let (sessions, caller) = (self.sessions, self.caller);
        let judge = self.act(judge)?;
        if judge.header.role != Role::Judge {
            return Err(SessionError::NotAllowed(format!(
                "session {} is a {}, not a judge: record verdicts from a session started with role `judge`",
                judge.label(),
                judge.header.role
            )));
        }
        if !judge.header.status.is_live() {
            return Err(SessionError::NotAllowed(format!(
                "judge session {} is {}: record verdicts from a live judge session",
                judge.label(),
                judge.header.status
            )));
        }
        check_reasons(&input)?;
        // Not found unless the caller's project covers it: names leak nothing.
        let worker_state = sessions
            .show(worker)
            .ok()
            .filter(|w| caller.is_operator() || caller.may_touch(&w.header.project))
            .ok_or_else(|| SessionError::NotFound(worker.to_string()))?;
        if worker_state.header.id == judge.header.id {
            return Err(SessionError::NotAllowed(
                "a judge does not judge its own session: the verdict must come from someone other than the worker".into(),
            ));
        }
        if worker_state.owner_name() == caller.name
            || worker_state.owner_name() == judge.owner_name()
        {
            return Err(SessionError::NotAllowed(format!(
                "session {} belongs to `{}`, the judge's own principal: a verdict counts only from another principal; have a judge of another principal record it",
                worker_state.label(),
                worker_state.owner_name()
            )));
        }
        // The judge's log takes a copy after the worker's record (the
        // append does not refuse it then): its room is checked first, so a
        // refusal there writes nothing.
        let copy = EventKind::VerdictGiven {
            session: worker_state.header.id.clone(),
            verdict: Verdict {
                judge_session: judge.header.id.clone(),
                judge: caller.name.clone(),
                handoff_seq: u64::MAX,
                pass: input.pass,
                reasons: input.reasons.clone(),
            },
        };
        self.by(|| sessions.check_log_room(&judge, &copy))?;
        let verdict = self.by(|| {
            sessions.with_slot(&worker_state.header.id, |this, slot, id| {
                let state = this.loaded(slot, id)?;
                if !state.completion.condition.judge {
                    return Err(SessionError::NotAllowed(format!(
                        "session {} asks for no judge: its completion condition has `judge = false`",
                        state.label()
                    )));
                }
                if !state.header.status.is_live() {
                    return Err(SessionError::NotAllowed(format!(
                        "session {} is {}: there is nothing left to judge",
                        state.label(),
                        state.header.status
                    )));
                }
                let Some(latest) = state.completion.handoff_seq else {
                    return Err(SessionError::NotAllowed(format!(
                        "session {} has written no handoff to judge yet: wait for its completion handoff",
                        state.label()
                    )));
                };
                if let Some(asked) = input.handoff_seq
                    && asked != latest
                {
                    return Err(SessionError::NotAllowed(format!(
                        "handoff {asked} of session {} is not its latest ({latest}): read the latest (`session_events`) and judge that",
                        state.label()
                    )));
                }
                let verdict = Verdict {
                    judge_session: judge.header.id.clone(),
                    judge: caller.name.clone(),
                    handoff_seq: latest,
                    pass: input.pass,
                    reasons: input.reasons.clone(),
                };
                this.append_locked(
                    slot,
                    id,
                    EventKind::VerdictReceived {
                        verdict: verdict.clone(),
                    },
                )?;
                Ok(verdict)
            })
        })?;
        self.by(|| {
            sessions.with_slot(&judge.header.id, |this, slot, id| {
                this.append_locked(
                    slot,
                    id,
                    EventKind::VerdictGiven {
                        session: worker_state.header.id.clone(),
                        verdict: verdict.clone(),
                    },
                )
            })
        })?;
        Ok(Judged {
            verdict,
            worker: worker_state.header.id,
            worker_name: worker_state.header.name,
        })
    }
}

fn check_reasons(input: &VerdictInput) -> Result<(), SessionError> {
    if input.reasons.len() > MAX_REASONS {
        return Err(SessionError::InvalidInput(format!(
            "{} reasons is more than the {MAX_REASONS} a verdict may give: merge them",
            input.reasons.len()
        )));
    }
    if let Some(long) = input.reasons.iter().find(|r| r.len() > MAX_REASON_BYTES) {
        return Err(SessionError::InvalidInput(format!(
            "a reason of {} bytes is longer than the {MAX_REASON_BYTES} allowed: shorten it",
            long.len()
        )));
    }
    if !input.pass && input.reasons.iter().all(|r| r.trim().is_empty()) {
        return Err(SessionError::InvalidInput(
            "a failing verdict needs a reason: say what the worker must fix".into(),
        ));
    }
    Ok(())
}
