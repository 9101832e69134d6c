//! `sessions.resume`: lets a paused session take calls again.

use schemars::JsonSchema;
use serde::Deserialize;

use super::sizes::SESSION_REF_MAX;
use super::{Audience, Operation, OperationError, Route};
use crate::scope::Scope;
use crate::session::SessionInfo;

pub struct ResumeSession;

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ResumeSessionArgs {
    /// The session's id or name.
    #[schemars(length(max = SESSION_REF_MAX))]
    pub session: String,
}

impl Operation for ResumeSession {
    const NAME: &'static str = "sessions.resume";
    const SUMMARY: &'static str = "Resumes a paused session: it takes calls again.";
    const DESCRIPTION: &'static str = "Written to the session's log as the caller's. An agent lifts only its own pauses; a pause the host (a budget, the stuck-agent detector) or an operator took is an operator's to lift. Returns the session, now active.";
    const AUDIENCE: Audience = Audience::Anyone;
    const HTTP: Option<Route> = Some(Route::post("/sessions/{session}/resume"));
    type Args = ResumeSessionArgs;
    type Output = SessionInfo;

    async fn run(scope: Scope<'_>, args: ResumeSessionArgs) -> Result<SessionInfo, OperationError> {
        let resumed = scope.resume_session(&args.session).await?;
        Ok(SessionInfo::from(&resumed.state))
    }
}
