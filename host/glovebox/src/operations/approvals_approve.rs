//! `approvals.approve`: runs the call an approval holds, exactly as it was
//! judged, and resumes its session. Who may settle it is the approval
//! scope's rule (threat 37): an operator, or the agent whose call it is when
//! its principal settles its own.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::approvals_show::found_approval;
use super::sizes::ID_MAX;
use super::{Audience, Operation, OperationError, Route};
use crate::scope::Scope;

pub struct Approve;

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ApproveArgs {
    /// The pending approval's id (`ap-…`).
    #[schemars(length(max = ID_MAX))]
    pub id: String,
}

/// What the approved call did.
#[derive(Debug, Serialize, JsonSchema)]
pub struct Ran {
    /// The approval, now approved.
    pub approval: String,
    /// The tool that ran.
    pub tool: String,
    /// The tool's output, when it ran to the end.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub output: Option<Value>,
    /// Why the call failed, when it did (it was approved all the same).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<CallFailure>,
}

/// A call that ran and failed.
#[derive(Debug, Serialize, JsonSchema)]
pub struct CallFailure {
    /// The failure's kind (`tool_error`, `timeout`, …).
    pub kind: String,
    pub message: String,
}

impl Operation for Approve {
    const NAME: &'static str = "approvals.approve";
    const SUMMARY: &'static str =
        "Approves a pending call: it runs exactly as it was judged, and its session resumes.";
    const DESCRIPTION: &'static str = "The call runs with the input that was recorded (its SHA-256 is checked against the session's log), and only if the tool's component is the one that was judged. The caller is recorded as who approved it. An approval past `[approvals] expire_after` is denied instead.";
    const AUDIENCE: Audience = Audience::Anyone;
    const HTTP: Option<Route> = Some(Route::post("/approvals/{id}/approve"));
    type Args = ApproveArgs;
    type Output = Ran;

    async fn run(scope: Scope<'_>, args: ApproveArgs) -> Result<Ran, OperationError> {
        found_approval(scope, &args.id).await?;
        let report = scope.approvals().approve(&args.id).await?;
        let (output, error) = match report.outcome {
            Ok(output) => (Some(output), None),
            Err(e) => (
                None,
                Some(CallFailure {
                    kind: e.kind().to_string(),
                    message: e.to_string(),
                }),
            ),
        };
        Ok(Ran {
            approval: args.id,
            tool: report.tool,
            output,
            error,
        })
    }
}
