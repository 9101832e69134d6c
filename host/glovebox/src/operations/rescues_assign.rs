//! `rescues.assign`: names who works on a rescue, the designated engineer
//! (`glovebox rescue assign`).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::sizes::{ID_MAX, TEXT_MAX};
use super::{Audience, Operation, OperationError, Route};
use crate::rescue::Rescue;
use crate::scope::Scope;

pub struct AssignRescue;

#[derive(Debug, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AssignRescueArgs {
    /// The rescue's id (`r-…`).
    #[schemars(length(max = ID_MAX))]
    pub id: String,
    /// Their name, as your team knows them (1 to 256 bytes).
    #[schemars(length(max = TEXT_MAX))]
    pub to: String,
}

impl Operation for AssignRescue {
    const NAME: &'static str = "rescues.assign";
    const SUMMARY: &'static str = "Names who works on a rescue (the designated engineer).";
    const DESCRIPTION: &'static str =
        "A later name replaces it. A resolved rescue is refused. Returns the rescue.";
    const AUDIENCE: Audience = Audience::Operator;
    const HTTP: Option<Route> = Some(Route::post("/rescues/{id}/assign"));
    const RUNS_TOOLS: bool = false;
    type Args = AssignRescueArgs;
    type Output = Rescue;

    async fn run(scope: Scope<'_>, args: AssignRescueArgs) -> Result<Rescue, OperationError> {
        Ok(scope.rescues(move |r| r.assign(&args.id, &args.to)).await?)
    }
}
