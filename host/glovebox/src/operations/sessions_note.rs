//! `sessions.note`: a progress note in a session's log. It counts as
//! progress for the stuck-agent detector and reaches nobody: a blocker is
//! `sessions.flag`.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::sizes::{SESSION_REF_MAX, TEXT_MAX};
use super::{Audience, Operation, OperationError, Route, known_as, target_session};
use crate::scope::Scope;
use crate::session::Event;

pub struct NoteSession;

#[derive(Debug, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct NoteSessionArgs {
    /// What the session did or found, for whoever reads its log.
    #[schemars(length(min = 1, max = TEXT_MAX))]
    pub text: String,
    /// Session id or name; the session your calls go to when absent.
    #[schemars(length(max = SESSION_REF_MAX))]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session: Option<String>,
}

impl Operation for NoteSession {
    const NAME: &'static str = "sessions.note";
    const SUMMARY: &'static str = "Writes a progress note into a session's log.";
    const DESCRIPTION: &'static str = "The note is an event of the session (by the caller) and counts as progress for the stuck-agent detector; it notifies no one (raise a blocker with `sessions.flag`). Over MCP, with no session named, it goes to the session the connection's calls go to, started as for a call when there is none. Another principal's session is not found.";
    const AUDIENCE: Audience = Audience::Anyone;
    // Its session is the connection's when not named, which no HTTP path says.
    const HTTP: Option<Route> = None;
    const MCP: Option<&'static str> = Some("session_note");
    const CALL_SESSION: bool = true;
    const RUNS_TOOLS: bool = false;
    type Args = NoteSessionArgs;
    type Output = Event;

    async fn run(scope: Scope<'_>, args: NoteSessionArgs) -> Result<Event, OperationError> {
        if args.text.trim().is_empty() {
            return Err(OperationError::invalid(format!(
                "invalid arguments for `{}`: `text` is empty: say something",
                known_as::<Self>()
            )));
        }
        let key = target_session::<Self>(scope, args.session).await?;
        Ok(scope.note(&key, &args.text).await?)
    }
}
