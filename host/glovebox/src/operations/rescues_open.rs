//! `rescues.open`: opens a rescue of a stuck session, which moves to the
//! `rescue` step of the escalation ladder and pauses (`glovebox rescue
//! open`).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::sizes::{ID_MAX, SESSION_REF_MAX, TEXT_MAX};
use super::{Audience, Operation, OperationError, Route};
use crate::rescue::Rescue;
use crate::scope::Scope;

pub struct OpenRescue;

#[derive(Debug, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct OpenRescueArgs {
    /// The session's id or name.
    #[schemars(length(max = SESSION_REF_MAX))]
    pub session: String,
    /// The call it concerns: by default the one its blocker flags name, or
    /// the call failing most.
    #[serde(default)]
    #[schemars(length(max = ID_MAX))]
    pub call: Option<String>,
    /// Who works on it (the designated engineer); `rescues.assign` changes it.
    #[serde(default)]
    #[schemars(length(max = TEXT_MAX))]
    pub assignee: Option<String>,
}

impl Operation for OpenRescue {
    const NAME: &'static str = "rescues.open";
    const SUMMARY: &'static str =
        "Opens a rescue of a stuck session: it moves to the `rescue` step and pauses.";
    const DESCRIPTION: &'static str = "Records the session, the call it concerns, when the blocker was detected (its oldest active flag, or now) and the flags active now; an active session is paused until the rescue is resolved. A session that is not live, or already being rescued, is refused. Returns the rescue.";
    const AUDIENCE: Audience = Audience::Operator;
    const HTTP: Option<Route> = Some(Route::post("/sessions/{session}/rescue"));
    const RUNS_TOOLS: bool = false;
    type Args = OpenRescueArgs;
    type Output = Rescue;

    async fn run(scope: Scope<'_>, args: OpenRescueArgs) -> Result<Rescue, OperationError> {
        let opened = scope
            .rescues(move |r| {
                let opened = r.open(&args.session, args.call.as_deref())?;
                match args.assignee {
                    Some(to) => r.assign(&opened.id, &to),
                    None => Ok(opened),
                }
            })
            .await?;
        Ok(opened)
    }
}
