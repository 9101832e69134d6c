//! Ending a session on behalf of the caller: `session_end completed` runs
//! the session's gates, each as a normal call of the caller's in the session
//! (hooks, limits, log), records what they gave (`gates_checked`), runs the
//! detector, then asks the ledger to end the session, which refuses unless
//! the gates passed with no work since and a judge passed the latest
//! handoff (see `glovebox_ledger::session::completion`). Every end records
//! the session's jobs nobody waited for (`jobs_unwaited`, see
//! `crate::doctor`).
//!
//! Every `completed` runs the gates again, even if they passed a minute ago:
//! the claim of done is re-checked each time it is made.
//!
//! A judge's verdict on another principal's session is recorded here too
//! ([`Scope::verdict`]), for MCP's `session_verdict` and the command line's
//! `glovebox session verdict` alike.

use serde_json::Value;

use super::Scope;
use crate::doctor::{SessionEnded, unwaited_jobs_of};
use crate::manifest::Gate;
use crate::session::{
    EndOutcome, GateResult, Judged, MAX_GATE_DETAIL, SessionError, SessionState, VerdictInput,
    bounded,
};
use crate::tasks::ledger_work;

impl Scope<'_> {
    /// Ends a session of the caller's with `outcome`, recording the jobs of
    /// its own nobody waited for. For `completed`, the session's gates run
    /// first (every time), and the end is refused, with the failing gate's
    /// output, until its whole completion condition holds.
    pub async fn end_checked(
        self,
        session: &str,
        outcome: EndOutcome,
    ) -> Result<SessionEnded, SessionError> {
        if outcome == EndOutcome::Completed {
            let state = self.session(session).await?;
            if !state.completion.condition.gates.is_empty() && state.header.status.is_live() {
                self.check_gates(&state).await?;
            }
        }
        self.end_session_noting_jobs(session, outcome).await
    }

    /// Ends a session of the caller's, as [`Scope::end_session`] does,
    /// recording the jobs of its own nobody waited for (`jobs_unwaited`)
    /// and returning them for a warning.
    pub async fn end_session_noting_jobs(
        self,
        session: &str,
        outcome: EndOutcome,
    ) -> Result<SessionEnded, SessionError> {
        let (sessions, caller, key) = self.with(session);
        let storage = self.gateway.ledger().storage.clone();
        let ended = ledger_work(move || {
            let mut unwaited = Vec::new();
            let state = sessions
                .scope(&caller)
                .end_with_unwaited(&key, outcome, |id| {
                    unwaited = unwaited_jobs_of(&storage, id);
                    unwaited.clone()
                })?;
            Ok(SessionEnded { state, unwaited })
        })
        .await?;
        self.ended(&ended.state, outcome).await;
        Ok(ended)
    }

    /// Records the verdict of the caller's judge session `judge` on the
    /// latest handoff of session `worker`, another principal's (see
    /// `SessionScope::verdict`: the judge must be the caller's own, of role
    /// `judge`, within the caller's roles now).
    pub async fn verdict(
        self,
        judge: &str,
        worker: &str,
        input: VerdictInput,
    ) -> Result<Judged, SessionError> {
        let (sessions, caller, judge) = self.with(judge);
        let worker = worker.to_string();
        ledger_work(move || sessions.scope(&caller).verdict(&judge, &worker, input)).await
    }

    /// Runs the gates of `state` in order, as the caller, and records the run.
    async fn check_gates(self, state: &SessionState) -> Result<SessionState, SessionError> {
        let mut results = Vec::with_capacity(state.completion.condition.gates.len());
        for gate in &state.completion.condition.gates {
            results.push(self.run_gate(&state.header.id, gate).await?);
        }
        let (sessions, id) = (self.gateway.sessions().clone(), state.header.id.clone());
        let detector = self.gateway.host().config().detector.clone();
        ledger_work(move || {
            let recorded = sessions.record_gates(&id, results)?;
            if detector.enabled
                && let Err(e) = crate::detect::flags(&sessions, &detector, &id)
            {
                tracing::warn!(session = %id, error = %e, "the stuck-agent detector could not run after the gates");
            }
            Ok(recorded)
        })
        .await
    }

    /// One gate: its call through the pipeline, and whether the result is
    /// what it expects. A session that refuses the call (paused, over
    /// budget) is the caller's error, not a failed gate.
    async fn run_gate(self, session: &str, gate: &Gate) -> Result<GateResult, SessionError> {
        let input = gate.input.to_string();
        let failed = |detail: String| GateResult {
            tool: gate.tool.clone(),
            passed: false,
            detail: bounded(&detail, MAX_GATE_DETAIL),
        };
        let call = match self.gateway.admit(&gate.tool, &input) {
            Ok(call) => call,
            Err(e) => return Ok(failed(format!("the gate cannot run: {e}"))),
        };
        let report = self.call(session, call, None, None).await?;
        Ok(match report.outcome {
            Err(e) => failed(format!("the call failed: {e}")),
            Ok(output) => match gate.judge_output(&output) {
                Ok(()) => GateResult {
                    tool: gate.tool.clone(),
                    passed: true,
                    detail: bounded(&output.to_string(), MAX_GATE_DETAIL),
                },
                Err(why) => failed(format!("{why}; the result was {}", shown(&output))),
            },
        })
    }
}

fn shown(output: &Value) -> String {
    bounded(&output.to_string(), MAX_GATE_DETAIL / 2)
}
