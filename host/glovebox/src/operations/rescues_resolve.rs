//! `rescues.resolve`: closes a rescue with its outcome; its enrich step
//! proposes lessons to the project's memory (`glovebox rescue resolve`).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::sizes::{ID_MAX, MEMORY_TEXT_MAX};
use super::{Audience, Operation, OperationError, Route};
use crate::rescue::{Outcome, Rescue};
use crate::scope::Scope;

pub struct ResolveRescue;

/// The most lessons one resolution may propose.
const LESSONS_MAX: usize = 256;

#[derive(Debug, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ResolveRescueArgs {
    /// The rescue's id (`r-…`).
    #[schemars(length(max = ID_MAX))]
    pub id: String,
    /// How it ended.
    pub outcome: Outcome,
    /// Lessons for every new session of the project, once an operator
    /// approved them (`memory.approve`).
    #[serde(default)]
    #[schemars(length(max = LESSONS_MAX), inner(length(max = MEMORY_TEXT_MAX)))]
    pub enrich: Vec<String>,
}

impl Operation for ResolveRescue {
    const NAME: &'static str = "rescues.resolve";
    const SUMMARY: &'static str =
        "Closes a rescue with its outcome; lessons given are proposed to the project's memory.";
    const DESCRIPTION: &'static str = "`resolved` takes the session back to the ladder's first step and lifts the pause the rescue took; `re_escalated` and `abandoned` leave it blocked. Each lesson becomes a proposed memory entry of the project, for an operator's review; unless `[context] writers` allows rescues, a resolution with lessons is refused and nothing changes. Returns the rescue.";
    const AUDIENCE: Audience = Audience::Operator;
    const HTTP: Option<Route> = Some(Route::post("/rescues/{id}/resolve"));
    const RUNS_TOOLS: bool = false;
    type Args = ResolveRescueArgs;
    type Output = Rescue;

    async fn run(scope: Scope<'_>, args: ResolveRescueArgs) -> Result<Rescue, OperationError> {
        Ok(scope
            .rescues(move |r| r.resolve(&args.id, args.outcome, &args.enrich))
            .await?)
    }
}
