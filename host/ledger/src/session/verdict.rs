//! Recording a completion check, under the rules of `completion.rs`: the
//! gates the gateway ran ([`Sessions::record_gates`]) and a judge's verdict
//! ([`SessionScope::verdict`]), written under the worker's lock.

use serde::Serialize;

use super::access::SessionScope;
use super::error::SessionError;
use super::gate::{GateResult, Verdict};
use super::kind::{EventKind, Role};
use super::state::SessionState;
use super::store::Sessions;
use crate::manifest::Principal;

/// Reasons one verdict may give, and the longest one.
pub const MAX_REASONS: usize = 32;
pub const MAX_REASON_BYTES: usize = 2048;

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
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
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
        check_judge(&judge)?;
        check_reasons(&input)?;
        // Not found unless the caller's project covers it: names leak nothing.
        let worker_state = sessions
            .show(worker)
            .ok()
            .filter(|w| caller.is_operator() || caller.may_touch(&w.header.project))
            .ok_or_else(|| SessionError::NotFound(worker.to_string()))?;
        check_judged_by_another(caller, &judge, &worker_state)?;
        let verdict_on = |handoff_seq| Verdict {
            judge_session: judge.header.id.clone(),
            judge: caller.name.clone(),
            handoff_seq,
            pass: input.pass,
            reasons: input.reasons.clone(),
        };
        // The judge's log takes a copy after the worker's record (the
        // append does not refuse it then): its room is checked first, so a
        // refusal there writes nothing.
        let copy = EventKind::VerdictGiven {
            session: worker_state.header.id.clone(),
            verdict: verdict_on(u64::MAX),
        };
        self.by(|| sessions.check_log_room(&judge, &copy))?;
        let verdict = self.by(|| {
            sessions.with_slot(&worker_state.header.id, |this, slot, id| {
                let latest = handoff_to_judge(this.loaded(slot, id)?, input.handoff_seq)?;
                let verdict = verdict_on(latest);
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

/// Whether session `judge` may record verdicts: a live session of role
/// `judge`.
fn check_judge(judge: &SessionState) -> Result<(), SessionError> {
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
    Ok(())
}

/// Whether the verdict of `caller`'s session `judge` on session `worker`
/// comes from someone other than the worker: another session, owned
/// neither by the caller nor by the judge's owner.
fn check_judged_by_another(
    caller: &Principal,
    judge: &SessionState,
    worker: &SessionState,
) -> Result<(), SessionError> {
    if worker.header.id == judge.header.id {
        return Err(SessionError::NotAllowed(
            "a judge does not judge its own session: the verdict must come from someone other than the worker".into(),
        ));
    }
    if worker.owner_name() == caller.name || worker.owner_name() == judge.owner_name() {
        return Err(SessionError::NotAllowed(format!(
            "session {} belongs to `{}`, the judge's own principal: a verdict counts only from another principal; have a judge of another principal record it",
            worker.label(),
            worker.owner_name()
        )));
    }
    Ok(())
}

/// The handoff of the worker `state` (read under its lock) a verdict
/// judges: its latest, which `asked` must be when the judge names one.
/// Refused when the worker asks for no judge, is no longer live, or has
/// written no handoff yet.
fn handoff_to_judge(state: &SessionState, asked: Option<u64>) -> Result<u64, SessionError> {
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
    if let Some(asked) = asked
        && asked != latest
    {
        return Err(SessionError::NotAllowed(format!(
            "handoff {asked} of session {} is not its latest ({latest}): read the latest (`session_events`) and judge that",
            state.label()
        )));
    }
    Ok(latest)
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
