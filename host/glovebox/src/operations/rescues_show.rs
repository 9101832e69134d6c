//! `rescues.show`: one rescue's record (`glovebox rescue show`).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::sizes::ID_MAX;
use super::{Audience, Operation, OperationError, Route};
use crate::rescue::Rescue;
use crate::scope::Scope;

pub struct ShowRescue;

/// The arguments of the operations on one rescue that take nothing else.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ShowRescueArgs {
    /// The rescue's id (`r-…`).
    #[schemars(length(max = ID_MAX))]
    pub id: String,
}

impl Operation for ShowRescue {
    const NAME: &'static str = "rescues.show";
    const SUMMARY: &'static str = "One rescue's record.";
    const DESCRIPTION: &'static str = "Its session, the call it concerns, when the blocker was detected and the rescue opened, the flags active then, its assignee, diagnosis, injections, outcome and the memory entries its enrich step proposed.";
    const AUDIENCE: Audience = Audience::Operator;
    const HTTP: Option<Route> = Some(Route::get("/rescues/{id}"));
    const RUNS_TOOLS: bool = false;
    type Args = ShowRescueArgs;
    type Output = Rescue;

    async fn run(scope: Scope<'_>, args: ShowRescueArgs) -> Result<Rescue, OperationError> {
        Ok(scope.rescues(move |r| r.get(&args.id)).await?)
    }
}
