//! `sessions.show`: one session of the caller's (any, for an operator).

use schemars::JsonSchema;
use serde::Deserialize;

use super::sizes::SESSION_REF_MAX;
use super::{Audience, Operation, OperationError, Route};
use crate::scope::Scope;
use crate::session::SessionInfo;

pub struct ShowSession;

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ShowSessionArgs {
    /// The session's id or name.
    #[schemars(length(max = SESSION_REF_MAX))]
    pub session: String,
}

impl Operation for ShowSession {
    const NAME: &'static str = "sessions.show";
    const SUMMARY: &'static str = "One session: its header, owner and log head.";
    const DESCRIPTION: &'static str =
        "By id or name. Another principal's session is not found (an operator sees every session).";
    const AUDIENCE: Audience = Audience::Anyone;
    const HTTP: Option<Route> = Some(Route::get("/sessions/{session}"));
    type Args = ShowSessionArgs;
    type Output = SessionInfo;

    async fn run(scope: Scope<'_>, args: ShowSessionArgs) -> Result<SessionInfo, OperationError> {
        Ok(SessionInfo::from(&scope.session(&args.session).await?))
    }
}
