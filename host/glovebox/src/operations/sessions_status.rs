//! `sessions.status`: the whole state of a session (the named one, or the
//! one the caller acts from), and whether it is that one.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::sizes::SESSION_REF_MAX;
use super::{Audience, Operation, OperationError, Route, target_session};
use crate::scope::Scope;
use crate::session::SessionState;

pub struct SessionStatus;

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SessionStatusArgs {
    /// Session id or name; the bound session when absent.
    #[schemars(length(max = SESSION_REF_MAX))]
    pub session: Option<String>,
}

/// A session's state, and whether the caller acts from it.
#[derive(Debug, Serialize, JsonSchema)]
pub struct SessionStatusOutput {
    #[serde(flatten)]
    pub state: SessionState,
    /// Whether it is the session the caller acts from (this connection's).
    pub bound: bool,
}

impl Operation for SessionStatus {
    const NAME: &'static str = "sessions.status";
    const SUMMARY: &'static str =
        "The state of a session (by id or name), or of the session this connection is bound to.";
    const DESCRIPTION: &'static str = "Its header, counters, budget, handoffs, children, flags and calls in flight or interrupted. Another principal's session is not found; from a child session, only its family and routes are reached.";
    const AUDIENCE: Audience = Audience::Anyone;
    const HTTP: Option<Route> = None;
    const MCP: Option<&'static str> = Some("session_status");
    type Args = SessionStatusArgs;
    type Output = SessionStatusOutput;

    async fn run(
        scope: Scope<'_>,
        args: SessionStatusArgs,
    ) -> Result<SessionStatusOutput, OperationError> {
        let key = target_session::<Self>(scope, args.session).await?;
        let state = scope.session(&key).await?;
        let bound = scope.bound() == Some(state.header.id.as_str());
        Ok(SessionStatusOutput { state, bound })
    }
}
