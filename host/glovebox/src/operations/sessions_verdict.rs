//! `sessions.verdict`: from the judge session the caller acts from, pass or
//! fail another principal's session's latest handoff (its completion claim).

use schemars::JsonSchema;
use serde::Deserialize;

use super::sizes::{REASON_MAX_BYTES, REASONS_MAX, SESSION_REF_MAX};
use super::{Audience, Operation, OperationError, Route, bound_session};
use crate::scope::Scope;
use crate::session::{Judged, VerdictInput};

pub struct GiveVerdict;

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct GiveVerdictArgs {
    /// The worker's session (id or name).
    #[schemars(length(max = SESSION_REF_MAX))]
    pub session: String,
    pub verdict: VerdictWord,
    #[serde(default)]
    #[schemars(length(max = REASONS_MAX), inner(length(max = REASON_MAX_BYTES)))]
    pub reasons: Vec<String>,
    /// The handoff judged (its seq in the worker's log); refused if it is no
    /// longer the latest.
    #[schemars(range(min = 1))]
    pub handoff_seq: Option<u64>,
}

/// A judge's verdict on a completion claim.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum VerdictWord {
    Pass,
    Fail,
}

impl Operation for GiveVerdict {
    const NAME: &'static str = "sessions.verdict";
    const SUMMARY: &'static str = "From the bound session, which must be of role `judge`: pass or fail another principal's session's latest handoff (its completion claim).";
    const DESCRIPTION: &'static str = "A failing verdict needs reasons; the worker's `session_end completed` is refused until a judge passes its latest handoff, and a new handoff needs a new verdict.";
    const AUDIENCE: Audience = Audience::Anyone;
    const HTTP: Option<Route> = None;
    const MCP: Option<&'static str> = Some("session_verdict");
    type Args = GiveVerdictArgs;
    type Output = Judged;

    async fn run(scope: Scope<'_>, args: GiveVerdictArgs) -> Result<Judged, OperationError> {
        let judge = bound_session::<Self>(scope)?;
        let input = VerdictInput {
            pass: args.verdict == VerdictWord::Pass,
            reasons: args.reasons,
            handoff_seq: args.handoff_seq,
        };
        Ok(scope.verdict(judge, &args.session, input).await?)
    }
}
