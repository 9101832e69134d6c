//! Settling approvals, as the caller: approving runs the call exactly as it
//! was judged, denying fails it for good; either way its session resumes.
//! Who may settle one (threat 37) is checked here, once, for every front
//! end: an operator, or the agent whose call it is when the operator let
//! its principal settle its own (`approve_by = "client"`); anyone else is
//! told it does not exist. The host itself settles as `host` (an approval
//! past `[approvals] expire_after`, the sweep's step: [`expire`]).

use crate::approvals::{Approval, ApprovalStatus};
use crate::call::CallReport;
use crate::gateway::Gateway;
use crate::manifest::Principal;
use crate::pipeline::Judge;
use crate::session::{EventKind, SessionError, Sessions, digest};
use crate::settled::Settled;
use crate::tasks::ledger_work;

/// Who settles what the host settles by itself (an expired approval).
const HOST: &str = "host";

/// The approvals on behalf of one caller; made by `Scope::approvals`.
#[derive(Clone, Copy)]
pub struct ApprovalScope<'g> {
    gateway: &'g Gateway,
    caller: &'g Principal,
}

impl<'g> ApprovalScope<'g> {
    pub(crate) fn new(gateway: &'g Gateway, caller: &'g Principal) -> ApprovalScope<'g> {
        ApprovalScope { gateway, caller }
    }

    /// Runs the call approval `id` is for, exactly as it was judged, and
    /// resumes its session; the caller (an operator, or the calling client
    /// when its principal settles its own approvals) is recorded.
    pub async fn approve(self, id: &str) -> Result<CallReport, SessionError> {
        let (gateway, by) = (self.gateway, self.caller);
        let approval = gateway.ledger().approvals.pending(id)?;
        may_settle(gateway, by, &approval)?;
        if let Some(why) = expired(gateway, &approval) {
            let host = Principal::operator(HOST);
            ApprovalScope::new(gateway, &host).deny(id, &why).await?;
            return Err(SessionError::InvalidInput(format!(
                "approval `{id}` has expired ({why}); the call was denied and its session resumed: the agent calls again"
            )));
        }
        let call = gateway
            .admit(&approval.tool, &approval.input)
            .map_err(|e| SessionError::InvalidInput(format!("approval `{id}` cannot run: {e}")))?;
        if call.component_digest() != approval.tool_digest {
            return Err(SessionError::InvalidInput(format!(
                "approval `{id}` was given for another build of `{}` (its component changed since the call was judged): deny it and call again",
                approval.tool
            )));
        }
        if digest(approval.input.as_bytes()) != approval.input_hash {
            return Err(SessionError::InvalidInput(format!(
                "approval `{id}` does not match its recorded input hash: deny it"
            )));
        }
        let (sessions, approvals) = (
            gateway.sessions().clone(),
            gateway.ledger().approvals.clone(),
        );
        let mut settled = approval;
        let by = by.name.clone();
        let (resumed, settled) = ledger_work(move || {
            check_requested(&sessions, &settled)?;
            let resumed = sessions.resume(&settled.session)?;
            settled.status = ApprovalStatus::Approved {
                at_ms: sessions.clock_ms(),
                by: Some(by),
            };
            // Exactly one settlement is recorded, also across hosts.
            approvals.settle(&settled)?;
            Ok((resumed, settled))
        })
        .await?;
        let approval = settled.clone();
        let judge = Judge::Approved(Box::new(settled));
        // The approver runs the call: what its run calls from inside is
        // judged again, each call by the hooks.
        let report = crate::in_session::run(
            gateway,
            Some(self.caller),
            &resumed.state,
            call,
            judge,
            None,
            None,
        )
        .await?;
        gateway
            .waiters()
            .settle(&approval, &Settled::Ran(report.clone()));
        Ok(report)
    }

    /// Refuses approval `id`: its call fails for good, and its session is
    /// resumed so the agent can carry on.
    pub async fn deny(self, id: &str, reason: &str) -> Result<Approval, SessionError> {
        let (gateway, by) = (self.gateway, self.caller);
        let approval = gateway.ledger().approvals.pending(id)?;
        may_settle(gateway, by, &approval)?;
        let (sessions, approvals) = (
            gateway.sessions().clone(),
            gateway.ledger().approvals.clone(),
        );
        let reason = reason.to_string();
        let by = by.name.clone();
        ledger_work(move || {
            let mut approval = approval;
            approval.status = ApprovalStatus::Denied {
                at_ms: sessions.clock_ms(),
                reason: reason.clone(),
                by: Some(by.clone()),
            };
            approvals.settle(&approval)?;
            sessions.record_denial(&approval, &by, &reason)?;
            Ok(approval)
        })
        .await
        .inspect(|approval| {
            gateway
                .waiters()
                .settle(approval, &Settled::Denied(approval.clone()))
        })
    }
}

/// Threat 37: an approval is settled by an operator, or by the agent
/// whose call it is when the operator let its principal settle its own
/// (`approve_by = "client"`). Anyone else is told it does not exist.
fn may_settle(gateway: &Gateway, by: &Principal, approval: &Approval) -> Result<(), SessionError> {
    let own_client = by.approve_by == crate::manifest::ApproveBy::Client
        && gateway.sees_session(by, &approval.session);
    if by.is_operator() || own_client {
        return Ok(());
    }
    if gateway.sees_session(by, &approval.session) {
        return Err(SessionError::NotAllowed(format!(
            "approval `{}` is settled by an operator (`glovebox approve {}`): {by} may not settle its own calls' approvals",
            approval.id, approval.id
        )));
    }
    Err(SessionError::InvalidInput(format!(
        "no approval `{}`: `glovebox approvals` lists the pending ones",
        approval.id
    )))
}

/// Why `approval` has expired (`[approvals] expire_after`), if it has.
fn expired(gateway: &Gateway, approval: &Approval) -> Option<String> {
    let after = gateway.host().config().approvals.expire_after?;
    let age = gateway
        .sessions()
        .clock_ms()
        .saturating_sub(approval.requested_at_ms);
    (u128::from(age) >= after.as_millis()).then(|| {
        format!(
            "pending longer than `[approvals] expire_after` = {}",
            humantime::format_duration(after)
        )
    })
}

/// Denies every pending approval that has expired (the sweep's step):
/// its call fails for good and its session resumes. Returns their ids.
pub(crate) async fn expire(gateway: &Gateway) -> Result<Vec<String>, SessionError> {
    if gateway.host().config().approvals.expire_after.is_none() {
        return Ok(Vec::new());
    }
    // Oldest first: the walk stops at the first one that has not expired.
    let (approvals, owned) = (gateway.ledger().approvals.clone(), gateway.clone());
    let due = ledger_work(move || {
        let mut due = Vec::new();
        for approval in approvals.each_pending() {
            let approval = approval?;
            match expired(&owned, &approval) {
                Some(why) => due.push((approval, why)),
                None => break,
            }
        }
        Ok(due)
    })
    .await?;
    let host = Principal::operator(HOST);
    let mut denied = Vec::new();
    for (approval, why) in due {
        match ApprovalScope::new(gateway, &host)
            .deny(&approval.id, &why)
            .await
        {
            Ok(_) => {
                tracing::warn!(approval = %approval.id, session = %approval.session, "approval expired: denied");
                denied.push(approval.id);
            }
            // Settled meanwhile by someone else.
            Err(SessionError::InvalidInput(_)) => {}
            Err(e) => return Err(e),
        }
    }
    Ok(denied)
}

/// An approval runs only the call the log says was requested: the session's
/// hash chain verifies, and its `call_requested` for the approval's call
/// names the same tool and input digest as the approval. An approval record
/// changed behind the log's back is refused.
fn check_requested(sessions: &Sessions, approval: &Approval) -> Result<(), SessionError> {
    let refuse = |why: String| {
        Err(SessionError::InvalidInput(format!(
            "approval `{}` does not match the session's log: {why}; deny it and call again",
            approval.id
        )))
    };
    let report = sessions.verify(&approval.session)?;
    if !report.ok {
        return refuse(format!(
            "the log of session `{}` does not verify (`glovebox log verify {}`)",
            approval.session, approval.session
        ));
    }
    let requested = sessions
        .events(&approval.session, 1, usize::MAX)?
        .into_iter()
        .find_map(|e| match e.kind {
            EventKind::CallRequested {
                call_id,
                tool,
                input_digest,
                ..
            } if call_id == approval.call_id => Some((tool, input_digest)),
            _ => None,
        });
    match requested {
        None => refuse(format!(
            "no call `{}` was requested there",
            approval.call_id
        )),
        Some((tool, _)) if tool != approval.tool => refuse(format!(
            "call `{}` was a call to `{tool}`, not `{}`",
            approval.call_id, approval.tool
        )),
        Some((_, input_digest)) if input_digest != approval.input_hash => refuse(format!(
            "call `{}` was requested with another input (sha256 {input_digest})",
            approval.call_id
        )),
        Some(_) => Ok(()),
    }
}
