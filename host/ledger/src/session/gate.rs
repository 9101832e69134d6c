//! What the log records of a completion check (the rules are in
//! `completion.rs`): a gate's run and a judge's verdict. Plain records that
//! the events carry (`gates_checked`, `verdict_given`, `verdict_received`),
//! so they sit below the events.

use serde::{Deserialize, Serialize};

/// The most of a gate's result or error a `gates_checked` event keeps.
pub const MAX_GATE_DETAIL: usize = 2048;

/// One gate's run, as `gates_checked` records it (the call itself is in the
/// log just before, as every call is).
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
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
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
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
