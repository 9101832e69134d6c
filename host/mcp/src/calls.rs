//! A plugin tool call, and the approval it may wait for: an operator's,
//! or the client's user's through MCP elicitation (2025-11-25: the server
//! asks; 2026-07-28: the call answers `input_required`, see `rounds.rs`).

use rmcp::model::{
    CallToolResponse, CallToolResult, ElicitRequestParams, ElicitResult, ElicitationAction,
    ElicitationSchema, InputResponses,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer};
use serde_json::Value;

use crate::connection::Connection;
use crate::progress::Progress;
use crate::results;
use glovebox::manifest::ApproveBy;
use glovebox::settled::{Settled, denied_call};
use glovebox::{CallError, Principal};

/// How long a call waits for the client's user to answer an approval
/// elicitation; after that the approval stays pending for an operator.
const ELICITATION_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(600);

impl Connection {
    /// A plugin tool call in the bound (or default) session; or, when it
    /// carries a `requestState`, the second round of one whose approval its
    /// client was asked for (`rounds.rs`).
    pub(crate) async fn call_plugin(
        &self,
        tool: &str,
        input: Value,
        round: Option<(String, Option<InputResponses>)>,
        context: &RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let caller = self.caller(context)?;
        let call = self.admit(tool, &input)?;
        if let Some((state, responses)) = round {
            return self
                .answered(&caller, &call, &state, responses.unwrap_or_default())
                .await
                .map(Into::into);
        }
        // A client that declared the tasks extension gets a task for a
        // long call (`tasks.rs`).
        if crate::tasks::declared(context) {
            // Followed with notifications where the client has a lifecycle.
            let peer = (!self.state.stateless).then(|| context.peer.clone());
            return self.call_as_task(&caller, call, peer).await;
        }
        let session = match self.session_for_call(&caller).await {
            Ok(s) => s,
            Err(e) => return Ok(results::session_failure(&e).into()),
        };
        let report = match self
            .shared()
            .gateway
            .scope(&caller)
            .call(&session, call, None, None)
            .await
        {
            Ok(r) => r,
            Err(e) => return Ok(results::session_failure(&e).into()),
        };
        // A tool not offered is refused as an unknown one is (`glovebox::offer`).
        if let Err(refused @ CallError::NotOffered { .. }) = &report.outcome {
            return Err(results::bad_request(refused));
        }
        let Err(CallError::AwaitingApproval { approval_id, .. }) = &report.outcome else {
            return Ok(results::report(report).into());
        };
        // Who settles it: the client's own user when its principal says so
        // (`approve_by = "client"`), an operator otherwise, for whom the
        // call waits up to `[approvals] wait`. A 2026-07-28 request holds
        // nothing open: its client is asked in the answer, and an
        // operator's approval is answered at once with its id.
        let by_client = caller.approve_by == ApproveBy::Client;
        if self.state.stateless {
            if by_client && let Some(asked) = self.input_required(approval_id, context) {
                return Ok(asked.into());
            }
            return Ok(results::report(report).into());
        }
        let settled = if by_client {
            self.elicit_approval(&caller, approval_id, context).await
        } else {
            self.wait_for_operator(approval_id, context).await
        };
        Ok(settled.unwrap_or_else(|| results::report(report)).into())
    }

    /// Waits up to `[approvals] wait` for an operator to settle the
    /// approval, telling a client that asked for progress that it waits.
    /// `None`: still pending when the wait ended.
    async fn wait_for_operator(
        &self,
        approval_id: &str,
        context: &RequestContext<RoleServer>,
    ) -> Option<CallToolResult> {
        let gateway = &self.shared().gateway;
        let within = gateway.host().config().approvals.wait;
        if within.is_zero() {
            return None;
        }
        if let Some(status) = context.extensions.get::<Progress>() {
            status.set(format!(
                "waiting up to {}s for an operator to approve {approval_id} (`glovebox approve {approval_id}`)",
                within.as_secs()
            ));
        }
        let settled = gateway.wait_for_approval(approval_id, within).await;
        match settled? {
            Settled::Ran(report) => Some(results::report(report)),
            Settled::RanElsewhere(approval) => Some(results::approved_elsewhere(&approval)),
            Settled::Denied(approval) => Some(results::call_error(&denied_call(&approval))),
        }
    }

    /// Asks the client's user to settle a pending approval through MCP
    /// elicitation (its principal has `approve_by = "client"`), when the
    /// client declared it can. The question shows the approval as every
    /// surface does (`Host::show_approval`: the whole input or a preview of
    /// every key with its SHA-256, the keys the hook named and the tool's
    /// schema order first, invisible characters marked, with a legend).
    /// `None`: not asked, or no answer (the approval stays pending for an
    /// operator).
    async fn elicit_approval(
        &self,
        caller: &Principal,
        approval_id: &str,
        context: &RequestContext<RoleServer>,
    ) -> Option<CallToolResult> {
        let supported = context
            .peer
            .peer_info()
            .is_some_and(|info| info.capabilities.elicitation.is_some());
        if !supported {
            return None;
        }
        let request = self.approval_question(approval_id)?;
        let answer = match context
            .peer
            .create_elicitation_with_timeout(request, Some(ELICITATION_TIMEOUT))
            .await
        {
            Ok(a) => a,
            Err(e) => {
                tracing::info!(approval = %approval_id, error = %e, "elicitation failed: the approval stays pending");
                return None;
            }
        };
        self.settle_by_client(caller, approval_id, &answer, "MCP elicitation")
            .await
    }

    /// The question that puts pending approval `approval_id` to the
    /// client's user: the approval as every surface shows it
    /// (`Host::show_approval`, threat 55) and a yes/no `approve`.
    pub(crate) fn approval_question(&self, approval_id: &str) -> Option<ElicitRequestParams> {
        let schema = ElicitationSchema::builder()
            .required_bool_property("approve", |b| {
                b.title("Approve").description("Run the call now")
            })
            .build()
            .ok()?;
        let shared = self.shared();
        let approval = shared.gateway.ledger().approvals.get(approval_id).ok()?;
        // The one rendering of an approval every surface shows (threat 55).
        let shown = shared.gateway.host().show_approval(&approval);
        let whole_at = format!(
            "`approval_status` with `id` = \"{id}\" returns it whole (its `input`), as `glovebox approvals --input {id}` does for an operator",
            id = shown.id
        );
        Some(ElicitRequestParams::FormElicitationParams {
            meta: None,
            message: format!(
                "The permission hook `{}` asks a human to approve a call to `{}` in session {}: {}.\n{}\nApprove it (approval {})?",
                shown.hook,
                shown.tool,
                shown.session_words(),
                shown.reason,
                shown.input_lines(&whole_at).join("\n"),
                shown.id,
            ),
            requested_schema: schema,
        })
    }

    /// Settles approval `approval_id` as the client's user answered its
    /// question (`how`: through what): accepted with `approve` true runs
    /// the call; declined, or accepted with false, denies it. `None`:
    /// cancelled (or an answer this server does not know): it stays
    /// pending for an operator.
    pub(crate) async fn settle_by_client(
        &self,
        caller: &Principal,
        approval_id: &str,
        answer: &ElicitResult,
        how: &str,
    ) -> Option<CallToolResult> {
        let approvals = self.shared().gateway.scope(caller).approvals();
        let approved = answer
            .content
            .as_ref()
            .and_then(|c| c.get("approve"))
            .and_then(Value::as_bool);
        match (&answer.action, approved) {
            (ElicitationAction::Accept, Some(true)) => match approvals.approve(approval_id).await {
                Ok(report) => Some(results::report(report)),
                Err(e) => Some(results::session_failure(&e)),
            },
            (ElicitationAction::Accept, _) | (ElicitationAction::Decline, _) => {
                let why = format!("declined by the client's user ({how})");
                match approvals.deny(approval_id, &why).await {
                    Ok(a) => Some(results::call_error(&denied_call(&a))),
                    Err(e) => Some(results::session_failure(&e)),
                }
            }
            // Cancelled (or anything newer): the approval stays pending.
            _ => None,
        }
    }
}
