//! `approvals.deny`: refuses a pending call for good, with a reason the
//! agent reads; its session resumes so the agent can carry on.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::approvals_show::found_approval;
use super::sizes::{ID_MAX, TEXT_MAX};
use super::{Audience, Operation, OperationError, Route};
use crate::approvals::Approval;
use crate::scope::Scope;

pub struct Deny;

#[derive(Debug, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct DenyArgs {
    /// The pending approval's id (`ap-…`).
    #[schemars(length(max = ID_MAX))]
    pub id: String,
    /// Why, for the agent (it reads it in the call's error).
    #[schemars(length(max = TEXT_MAX))]
    pub reason: String,
}

impl Operation for Deny {
    const NAME: &'static str = "approvals.deny";
    const SUMMARY: &'static str = "Denies a pending call for good, with a reason the agent reads.";
    const DESCRIPTION: &'static str = "The call fails with the reason, the denial and who made it are written to the session's log, and the session resumes. Returns the approval, now denied.";
    const AUDIENCE: Audience = Audience::Anyone;
    const HTTP: Option<Route> = Some(Route::post("/approvals/{id}/deny"));
    type Args = DenyArgs;
    type Output = Approval;

    async fn run(scope: Scope<'_>, args: DenyArgs) -> Result<Approval, OperationError> {
        OperationError::unless_given(
            &args.reason,
            "a denial needs a reason: the agent reads it to choose what to do instead",
        )?;
        found_approval(scope, &args.id).await?;
        Ok(scope.approvals().deny(&args.id, &args.reason).await?)
    }
}
