//! `[[verify]]` after a call: the checks that follow a successful call of
//! their tools in a session, each run as a call of the caller's in that
//! session (hooks, limits, budget, log), their verdicts handed back with the
//! call's report, and a blocker flag (rule `verify`) after `flag_after`
//! failures in a row of one check in one session.
//!
//! A check's own call is never followed by checks (`Scope::call_unverified`),
//! and the config refuses a check that would follow its own tool.

use serde_json::Value;

use super::Scope;
use crate::call::CallReport;
use crate::manifest::VerifyRule;
use crate::session::{Flag, MAX_GATE_DETAIL, SessionError, bounded};

impl Scope<'_> {
    /// Runs the checks that follow a successful call of `tool` with `input`
    /// in `session`, into `report.verification`.
    pub(super) async fn verify_after(
        self,
        session: &str,
        tool: &str,
        input: &str,
        report: &mut CallReport,
    ) -> Result<(), SessionError> {
        let host = self.gateway.host();
        let rules: Vec<VerifyRule> = host
            .config()
            .verify
            .iter()
            .filter(|r| r.follows(tool))
            .cloned()
            .collect();
        if rules.is_empty() {
            return Ok(());
        }
        let input: Value = serde_json::from_str(input).unwrap_or(Value::Null);
        for rule in rules {
            let verified = self.check(session, &rule, &input).await?;
            let passed = verified.passed;
            report.verification.push(verified);
            self.count(session, &rule, passed).await?;
        }
        Ok(())
    }

    /// One check's call and its verdict.
    async fn check(
        self,
        session: &str,
        rule: &VerifyRule,
        input: &Value,
    ) -> Result<crate::Verified, SessionError> {
        let verdict = |passed: bool, detail: String| crate::Verified {
            check: rule.name.clone(),
            tool: rule.gate.tool.clone(),
            passed,
            detail: bounded(&detail, MAX_GATE_DETAIL),
        };
        let gate_input = match rule.gate_input(input) {
            Ok(gate_input) => gate_input,
            Err(why) => return Ok(verdict(false, format!("the check cannot run: {why}"))),
        };
        let call = match self.gateway.admit(&rule.gate.tool, &gate_input.to_string()) {
            Ok(call) => call,
            Err(e) => return Ok(verdict(false, format!("the check cannot run: {e}"))),
        };
        let report = self.call_unverified(session, call, None, None).await?;
        Ok(match report.outcome {
            Err(e) => verdict(false, format!("the check's call failed: {e}")),
            Ok(output) => match rule.gate.judge_output(&output) {
                Ok(()) => verdict(true, output.to_string()),
                Err(why) => verdict(false, format!("{why}; the result was {output}")),
            },
        })
    }

    /// Counts a check's failures in a row in `session`; at `flag_after`, a
    /// blocker flag.
    async fn count(
        self,
        session: &str,
        rule: &VerifyRule,
        passed: bool,
    ) -> Result<(), SessionError> {
        let key = (session.to_string(), rule.name.clone());
        let streak = {
            let mut streaks = self
                .gateway
                .verify_streaks
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            match passed {
                true => {
                    streaks.remove(&key);
                    0
                }
                false => {
                    let n = streaks.entry(key).or_default();
                    *n += 1;
                    *n
                }
            }
        };
        if rule.flag_after == 0 || streak != rule.flag_after {
            return Ok(());
        }
        let severity = self.gateway.host().config().detector.severity_of("verify");
        let flag = Flag {
            rule: "verify".into(),
            severity,
            reason: format!(
                "check `{}` ({}) failed after {streak} calls in a row",
                rule.name, rule.gate.tool
            ),
            suggested_action: format!(
                "read the check's failures in the session's log and fix what it reports, or ask an operator to look at `{}`",
                rule.gate.tool
            ),
            call_id: None,
        };
        // The flag is the operator's signal; the call and its verdicts
        // stand whether or not it can be raised (a session paused meanwhile).
        if let Err(e) = self.flag_session(session, flag).await {
            tracing::warn!(session, check = %rule.name, error = %e, "cannot flag a failing check");
        }
        Ok(())
    }
}
