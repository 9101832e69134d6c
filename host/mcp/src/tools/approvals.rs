//! The arguments of the built-in that gives a settlement: a judge's
//! `session_verdict`.

use schemars::JsonSchema;
use serde::Deserialize;

use super::sizes::*;

/// `session_verdict`.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct VerdictArgs {
    /// The worker's session (id or name).
    #[schemars(length(max = SESSION_REF_MAX))]
    pub session: String,
    pub verdict: Verdict,
    #[serde(default)]
    #[schemars(length(max = REASONS_MAX), inner(length(max = REASON_MAX_BYTES)))]
    pub reasons: Vec<String>,
    /// The handoff judged (its seq in the worker's log); refused if it is no
    /// longer the latest.
    #[schemars(range(min = 1))]
    pub handoff_seq: Option<u64>,
}

/// A judge's verdict on a completion claim.
#[derive(Clone, Copy, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub(crate) enum Verdict {
    Pass,
    Fail,
}
