//! An approval asked of the client in two rounds (revision 2026-07-28's
//! multi-round-trip requests): the call answers `input_required` with the
//! question, and the client calls again with the answer.
//!
//! Why: 2026-07-28 has no server-to-client request (the elicitation the
//! earlier revisions send mid-call), and a stateless server holds nothing
//! open between two requests. So when a hook asks and the caller's
//! principal settles its own approvals (`approve_by = "client"`), the
//! first round records the approval (the session pauses, as for any ask)
//! and answers `input_required`: one form, the approval as every surface
//! shows it (the exact input, or a preview of each key with its SHA-256),
//! and `requestState` = the approval's id. The second round is the same
//! `tools/call` with the user's answer in `inputResponses` and that
//! `requestState` echoed back.
//!
//! `requestState` is untrusted (the client may send anything): it is only a
//! handle to the approval kept in the store, never data the server
//! believes. The retry must be the very call the approval is for (same
//! tool, same admitted input, byte for byte), the approval must be one the
//! caller may see, and settling it goes through the caller's scope
//! (`ApprovalScope`), which checks, once for every front end, that this
//! principal may settle it. Any node can answer the second round: the
//! approval is in the shared store.

use std::collections::BTreeMap;

use rmcp::model::{
    CallToolResult, ElicitRequest, ElicitResult, InputRequest, InputRequiredResult, InputResponses,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer};
use serde_json::json;

use crate::connection::Connection;
use crate::results;
use glovebox::approvals::ApprovalStatus;
use glovebox::settled::denied_call;
use glovebox::{Admitted, Principal};

/// The key of the one input request: the approval's question.
pub const APPROVE: &str = "approve";

impl Connection {
    /// The first round's answer for pending approval `approval_id`: the
    /// question, when the request's client declared elicitation in its
    /// `_meta`. `None` otherwise (the call answers that it awaits approval,
    /// with the id, as without a client to ask).
    pub(crate) fn input_required(
        &self,
        approval_id: &str,
        context: &RequestContext<RoleServer>,
    ) -> Option<InputRequiredResult> {
        let declared = context
            .meta
            .client_capabilities()
            .is_some_and(|c| c.elicitation.is_some());
        if !declared {
            return None;
        }
        let question = self.approval_question(approval_id)?;
        let requests = BTreeMap::from([(
            APPROVE.to_string(),
            InputRequest::Elicitation(ElicitRequest::new(question)),
        )]);
        Some(InputRequiredResult::new(
            Some(requests),
            Some(approval_id.to_string()),
        ))
    }

    /// The second round: `call`, retried with `state` (the approval's id)
    /// and the client's `responses`. Refused (-32602) when `state` names no
    /// approval of the caller's, or one for another call. An approval an
    /// operator settled meanwhile answers as it was settled.
    pub(crate) async fn answered(
        &self,
        caller: &Principal,
        call: &Admitted,
        state: &str,
        mut responses: InputResponses,
    ) -> Result<CallToolResult, ErrorData> {
        let gateway = &self.shared().gateway;
        let unknown = || {
            ErrorData::invalid_params(
                "`requestState` names no approval of yours: send back the `requestState` of this call's `input_required` answer exactly as received, or call again without it",
                Some(json!({"requestState": state})),
            )
        };
        let approval = gateway
            .ledger()
            .approvals
            .get(state)
            .map_err(|_| unknown())?;
        if gateway
            .scope(caller)
            .session(&approval.session)
            .await
            .is_err()
        {
            return Err(unknown());
        }
        if approval.tool != call.name() || approval.input != call.input() {
            return Err(ErrorData::invalid_params(
                format!(
                    "`requestState` is approval `{}` for another call (`{}` with other input): retry the call it was given for, with the same arguments",
                    approval.id, approval.tool
                ),
                Some(json!({"requestState": state})),
            ));
        }
        match &approval.status {
            ApprovalStatus::Approved { .. } => return Ok(results::approved_elsewhere(&approval)),
            ApprovalStatus::Denied { .. } => {
                return Ok(results::call_error(&denied_call(&approval)));
            }
            ApprovalStatus::Pending => {}
        }
        let answer = responses
            .remove(APPROVE)
            .map(serde_json::from_value::<ElicitResult>)
            .transpose()
            .map_err(|e| {
                ErrorData::invalid_params(
                    format!(
                        "`inputResponses.{APPROVE}` is not an elicitation result ({e}): send `{{\"action\": \"accept\", \"content\": {{\"approve\": true}}}}`, or `decline`"
                    ),
                    None,
                )
            })?;
        let settled = match answer {
            Some(answer) => {
                self.settle_by_client(caller, &approval.id, &answer, "MCP input_required")
                    .await
            }
            None => None,
        };
        // Not settled (cancelled, or no answer): it waits for an operator.
        Ok(settled.unwrap_or_else(|| {
            results::call_error(&glovebox::CallError::AwaitingApproval {
                tool: approval.tool.clone(),
                approval_id: approval.id.clone(),
                hook: approval.hook.clone(),
                reason: approval.reason.clone(),
            })
        }))
    }
}
