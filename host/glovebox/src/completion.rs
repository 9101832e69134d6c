//! Completion at the gateway: `session_end completed` runs the session's
//! gates, each as a normal call in the session (hooks, limits, log), records
//! what they gave (`gates_checked`), runs the detector, then asks the ledger
//! to end the session, which refuses unless the gates passed with no work
//! since and a judge passed the latest handoff (see
//! `glovebox_ledger::session::completion`).
//!
//! Every `completed` runs the gates again, even if they passed a minute ago:
//! the claim of done is re-checked each time it is made.

use serde_json::Value;

use crate::doctor::SessionEnded;
use crate::gateway::Gateway;
use crate::manifest::{Completion, Gate, Principal};
use crate::pipeline::ledger_work;
use crate::session::{
    EndOutcome, GateResult, MAX_GATE_DETAIL, SessionError, SessionState, bounded,
};

impl Gateway {
    /// Checks a completion condition a caller declares (at a start or a
    /// spawn): every gate names a tool this host has, with a small object
    /// input. The error names the gate and the fix.
    pub fn check_completion(&self, completion: &Completion) -> Result<(), SessionError> {
        let host = self.host();
        completion
            .check(|tool| host.resolve(tool).is_ok())
            .map_err(|e| SessionError::InvalidInput(format!("completion condition: {e}")))
    }

    /// Ends a session of `caller`'s with `outcome`, recording the jobs of
    /// its own nobody waited for. For `completed`, the session's gates run
    /// first (every time), and the end is refused, with the failing gate's
    /// output, until its whole completion condition holds.
    pub async fn end_checked_as(
        &self,
        caller: &Principal,
        session: &str,
        outcome: EndOutcome,
    ) -> Result<SessionEnded, SessionError> {
        if outcome == EndOutcome::Completed {
            let state = self.session_as(caller, session).await?;
            if !state.completion.condition.gates.is_empty() && state.header.status.is_live() {
                self.check_gates(caller, &state).await?;
            }
        }
        self.end_session_noting_jobs_as(caller, session, outcome)
            .await
    }

    /// Runs the gates of `state` in order, as `caller`, and records the run.
    async fn check_gates(
        &self,
        caller: &Principal,
        state: &SessionState,
    ) -> Result<SessionState, SessionError> {
        let mut results = Vec::with_capacity(state.completion.condition.gates.len());
        for gate in &state.completion.condition.gates {
            results.push(self.run_gate(caller, &state.header.id, gate).await?);
        }
        let (sessions, id) = (self.sessions().clone(), state.header.id.clone());
        let detector = self.host().config().detector.clone();
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
    async fn run_gate(
        &self,
        caller: &Principal,
        session: &str,
        gate: &Gate,
    ) -> Result<GateResult, SessionError> {
        let input = gate.input.to_string();
        let failed = |detail: String| GateResult {
            tool: gate.tool.clone(),
            passed: false,
            detail: bounded(&detail, MAX_GATE_DETAIL),
        };
        let call = match self.admit(&gate.tool, &input) {
            Ok(call) => call,
            Err(e) => return Ok(failed(format!("the gate cannot run: {e}"))),
        };
        let report = self.call_as(caller, session, call, None, None).await?;
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
