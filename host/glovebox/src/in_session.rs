//! An admitted call run in a session on the gateway as it is now: the
//! pipeline's stages (`pipeline/`) wired to the host of the moment, the
//! ledger, the metrics, and the calls the run may make of other tools from
//! inside it (`nested.rs`).
//!
//! Why apart from `gateway.rs`: a run's nested calls go back through a
//! caller's scope on the gateway, so what wires them sits above both the
//! gateway and `nested.rs`, and the gateway itself knows nothing of code
//! mode. Every call in a session ends here: a caller's (`Scope::call`, an
//! approved call, a re-run) and the host's own (a background job's).

use crate::call::{CallContext, CallReport};
use crate::gateway::Gateway;
use crate::manifest::Principal;
use crate::pipeline::{Admitted, Cancel, Judge, Stages};
use crate::plugin::LoadedPlugin;
use crate::session::{EventKind, Resumed, SessionError, SessionState};
use crate::spend::Breach;
use crate::tasks::ledger_work;

/// The pipeline's stages of `call` in session `state`
/// (`pipeline::in_session`), on the host as it is now. `caller` makes the
/// call: the calls its run makes from inside are its too (`nested.rs`);
/// `None` lets the run make none.
pub(crate) async fn run(
    gateway: &Gateway,
    caller: Option<&Principal>,
    state: &SessionState,
    call: Admitted,
    by: Judge,
    job_id: Option<String>,
    cancel: Option<Cancel>,
) -> Result<CallReport, SessionError> {
    let host = gateway.host();
    let pause_scope = |breach: &Breach, except: &str| gateway.pause_scope(breach, except);
    let tool_calls = |ctx: &CallContext, plugin: &LoadedPlugin| {
        crate::nested::for_run(gateway, caller?, ctx, plugin)
    };
    let stages = Stages {
        host: &host,
        ledger: gateway.ledger(),
        metrics: gateway.metrics(),
        pause_scope: &pause_scope,
        tool_calls: &tool_calls,
    };
    crate::pipeline::in_session(stages, state, call, by, job_id, cancel).await
}

/// An admitted call in `session` (id or name), for the host's own work (a
/// background job, whose actor its runner names); a caller's call goes
/// through its scope ([`Gateway::scope`]). `cancel` (background jobs) stops
/// it once it holds `true`: the call is not run if it has not started, and
/// is stopped (its instance dropped) if it runs. Either way it finishes in
/// the log with the outcome `cancelled`.
pub(crate) async fn host_call(
    gateway: &Gateway,
    session: &str,
    call: Admitted,
    job_id: Option<String>,
    cancel: Option<Cancel>,
) -> Result<CallReport, SessionError> {
    let state = match gateway.sessions().show_cached(session) {
        Some(state) => state,
        None => {
            let sessions = gateway.sessions().clone();
            let key = session.to_string();
            ledger_work(move || sessions.show(&key)).await?
        }
    };
    // Only an embedder's own agent (no principal declared) gets here with a
    // call of its own; its runs call tools as the `local` agent.
    let local = (!gateway.principals().declared()).then(Principal::local);
    run(
        gateway,
        local.as_ref(),
        &state,
        call,
        Judge::Hooks,
        job_id,
        cancel,
    )
    .await
}

/// `Scope::rerun_interrupted` once the session is resumed (as the caller
/// may resume it): call `call_id`, interrupted and idempotent, again with
/// its logged input.
pub(crate) async fn rerun_resumed(
    gateway: &Gateway,
    caller: &Principal,
    resumed: Resumed,
    session: &str,
    call_id: &str,
) -> Result<CallReport, SessionError> {
    let state = resumed.state;
    let Some(call) = resumed
        .interrupted_calls
        .iter()
        .find(|c| c.call_id == call_id)
        .cloned()
    else {
        return Err(SessionError::InvalidInput(format!(
            "session `{}` has no interrupted call `{call_id}`: `glovebox session resume {}` lists them",
            state.label(),
            session
        )));
    };
    let (Some(idempotency_key), true) = (call.idempotency_key.clone(), call.idempotent) else {
        return Err(SessionError::InvalidInput(format!(
            "call `{call_id}` of `{}` is not idempotent (or never started): it is not re-run automatically; decide and call the tool again",
            call.tool
        )));
    };
    // The original input is in the log, inline when small.
    let sessions = gateway.sessions().clone();
    let (id, wanted) = (state.header.id.clone(), call_id.to_string());
    let input = ledger_work(move || {
        let events = sessions.events(&id, 1, usize::MAX)?;
        Ok(events.into_iter().find_map(|e| match e.kind {
            EventKind::CallRequested {
                call_id,
                input,
                input_digest,
                ..
            } if call_id == wanted => input.map(|input| (input, input_digest)),
            _ => None,
        }))
    })
    .await?
    .ok_or_else(|| {
        SessionError::InvalidInput(format!(
            "the input of call `{call_id}` was too large to keep in the log: call the tool again"
        ))
    })?;
    // The log keeps an input with a secret's value in it masked: that is
    // not the input the call had, so it does not run again.
    let (input, input_digest) = input;
    if crate::session::digest(input.as_bytes()) != input_digest {
        return Err(SessionError::InvalidInput(format!(
            "the input of call `{call_id}` carried a secret's value, which the log keeps masked: call the tool again"
        )));
    }
    let admitted = gateway.admit(&call.tool, &input).map_err(|e| {
        SessionError::InvalidInput(format!("call `{call_id}` cannot run again: {e}"))
    })?;
    let judge = Judge::Rerun { idempotency_key };
    run(gateway, Some(caller), &state, admitted, judge, None, None).await
}
