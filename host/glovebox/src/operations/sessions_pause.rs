//! `sessions.pause`: stops a session taking calls until it is resumed, with
//! the reason written to its log.

use schemars::JsonSchema;
use serde::Deserialize;

use super::sizes::{SESSION_REF_MAX, TEXT_MAX};
use super::{Audience, Operation, OperationError, Route};
use crate::scope::Scope;
use crate::session::SessionInfo;

pub struct PauseSession;

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PauseSessionArgs {
    /// The session's id or name.
    #[schemars(length(max = SESSION_REF_MAX))]
    pub session: String,
    /// Why, written to the session's log and shown to whoever resumes it.
    #[schemars(length(max = TEXT_MAX))]
    pub reason: String,
}

impl Operation for PauseSession {
    const NAME: &'static str = "sessions.pause";
    const SUMMARY: &'static str = "Pauses a session: its calls are refused until it is resumed.";
    const DESCRIPTION: &'static str = "The pause and its reason are written to the session's log as the caller's; an operator's pause is lifted by an operator only. A call running now finishes; the next ones are refused. Returns the session, now paused.";
    const AUDIENCE: Audience = Audience::Anyone;
    const HTTP: Option<Route> = Some(Route::post("/sessions/{session}/pause"));
    type Args = PauseSessionArgs;
    type Output = SessionInfo;

    async fn run(scope: Scope<'_>, args: PauseSessionArgs) -> Result<SessionInfo, OperationError> {
        OperationError::unless_given(
            &args.reason,
            "a pause needs a reason: whoever resumes the session reads it",
        )?;
        let state = scope.pause_session(&args.session, &args.reason).await?;
        Ok(SessionInfo::from(&state))
    }
}
