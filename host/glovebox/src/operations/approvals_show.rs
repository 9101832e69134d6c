//! `approvals.show`: one approval, pending or settled.

use schemars::JsonSchema;
use serde::Deserialize;

use super::sizes::ID_MAX;
use super::{Audience, Operation, OperationError, Route};
use crate::approvals::Approval;
use crate::scope::Scope;

pub struct ShowApproval;

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ShowApprovalArgs {
    /// The approval's id (`ap-…`): an `awaiting_approval` result gives it.
    #[schemars(length(max = ID_MAX))]
    pub id: String,
}

impl Operation for ShowApproval {
    const NAME: &'static str = "approvals.show";
    const SUMMARY: &'static str =
        "Where an approval stands: pending, approved or denied (with the reason).";
    const DESCRIPTION: &'static str = "The call it holds (tool, exact input, a secret's value in it masked, and its SHA-256), the hook and rule that asked, and its status with who settled it. An approval of a session the caller may not see is not found.";
    const AUDIENCE: Audience = Audience::Anyone;
    const HTTP: Option<Route> = Some(Route::get("/approvals/{id}"));
    const MCP: Option<&'static str> = Some("approval_status");
    type Args = ShowApprovalArgs;
    type Output = Approval;

    async fn run(scope: Scope<'_>, args: ShowApprovalArgs) -> Result<Approval, OperationError> {
        let approval = found_approval(scope, &args.id).await?;
        Ok(masked(&scope, approval))
    }
}

/// `approval` as it is shown: a secret's value in its input masked
/// (threat 60); its `input_hash` stays the input's as the tool gets it.
pub(super) fn masked(scope: &Scope<'_>, mut approval: Approval) -> Approval {
    let host = scope.gateway().host();
    let secrets = &host.config().secrets;
    if let std::borrow::Cow::Owned(shown) = secrets.mask(&approval.input) {
        approval.input = shown;
    }
    approval
}

/// The approval `id` if the caller may see it; else the answer for an
/// approval that is not there, or not the caller's.
pub(super) async fn found_approval(scope: Scope<'_>, id: &str) -> Result<Approval, OperationError> {
    scope.approval(id).await?.ok_or_else(|| no_approval(id))
}

/// The answer for an approval that is not there, or not the caller's.
fn no_approval(id: &str) -> OperationError {
    OperationError::not_found(
        "approval_not_found",
        format!(
            "no approval `{id}`: its id is in the `awaiting_approval` result of the call that waits for it, and `glovebox approvals` (or `GET /api/v1/approvals`) lists the pending ones"
        ),
    )
}
