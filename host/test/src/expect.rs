//! Assertions on a call's outcome: [`Expect`] on what
//! [`Harness::call`](crate::Harness::call) returns, and [`assert_denied`].
//! Each panics with the outcome the call had instead, so a failing test
//! says what happened.

use std::time::Duration;

use glovebox::CallError;
use serde_json::Value;

/// A hook's denial of a call.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Denial {
    /// The hook that denied it, by its name in the config.
    pub hook: String,
    /// Why.
    pub reason: String,
    /// What the agent could do instead.
    pub alternatives: Vec<String>,
}

/// Assertions on a call's outcome, `Result<Value, CallError>`.
pub trait Expect {
    /// The result of a call that succeeded; panics with the error otherwise.
    fn expect_ok(self) -> Value;
    /// The error of a call that failed with this kind (`CallError::kind`:
    /// `denied`, `timeout`, `quota`, `tool_failed`, ...); panics otherwise.
    fn expect_kind(self, kind: &str) -> CallError;
    /// The denial of a call a permission hook denied; panics otherwise.
    fn expect_denied(self) -> Denial;
    /// The reason of a call stopped by its write quota (`limits.write`).
    fn expect_quota(self) -> String;
    /// The deadline of a call stopped by it (`limits.deadline`).
    fn expect_deadline(self) -> Duration;
}

impl Expect for Result<Value, CallError> {
    fn expect_ok(self) -> Value {
        match self {
            Ok(value) => value,
            Err(e) => panic!(
                "expected the call to succeed, but it failed ({}): {e}",
                e.kind()
            ),
        }
    }

    fn expect_kind(self, kind: &str) -> CallError {
        match self {
            Err(e) if e.kind() == kind => e,
            other => panic!("expected a `{kind}` error, but {}", described(&other)),
        }
    }

    fn expect_denied(self) -> Denial {
        match self {
            Err(CallError::Denied {
                hook,
                reason,
                alternatives,
                ..
            }) => Denial {
                hook,
                reason,
                alternatives,
            },
            other => panic!(
                "expected a hook to deny the call, but {}",
                described(&other)
            ),
        }
    }

    fn expect_quota(self) -> String {
        match self {
            Err(CallError::Quota { reason, .. }) => reason,
            other => panic!(
                "expected the call to be stopped by its write quota, but {}",
                described(&other)
            ),
        }
    }

    fn expect_deadline(self) -> Duration {
        match self {
            Err(CallError::Timeout { deadline, .. }) => deadline,
            other => panic!(
                "expected the call to be stopped by its deadline, but {}",
                described(&other)
            ),
        }
    }
}

/// Panics unless a permission hook denied the call of `result`.
pub fn assert_denied(result: &Result<Value, CallError>) {
    if !matches!(result, Err(CallError::Denied { .. })) {
        panic!(
            "expected a hook to deny the call, but {}",
            described(result)
        );
    }
}

/// What a call's outcome was, for a failed assertion.
fn described(outcome: &Result<Value, CallError>) -> String {
    match outcome {
        Ok(value) => format!("it succeeded with {value}"),
        Err(e) => format!("it failed ({}): {e}", e.kind()),
    }
}
