//! `rescues.report`: the figures of the rescues opened in the last days
//! (`glovebox rescue report`).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::{Audience, Operation, OperationError, Route};
use crate::rescue::RescueReport;
use crate::scope::Scope;

pub struct RescueFigures;

#[derive(Debug, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RescueFiguresArgs {
    /// The days it covers, up to now: 30 when absent.
    #[serde(default = "thirty")]
    pub days: u64,
}

fn thirty() -> u64 {
    30
}

impl Operation for RescueFigures {
    const NAME: &'static str = "rescues.report";
    const SUMMARY: &'static str =
        "The rescues of the last days: how many, how they ended, how long they took.";
    const DESCRIPTION: &'static str = "Over the rescues opened in the last `days` days: their count by outcome, the mean times to diagnose and to unblock, the memory entries they proposed, those closed without a lesson, and their root causes by category.";
    const AUDIENCE: Audience = Audience::Operator;
    const HTTP: Option<Route> = Some(Route::get("/rescues/report"));
    const RUNS_TOOLS: bool = false;
    type Args = RescueFiguresArgs;
    type Output = RescueReport;

    async fn run(
        scope: Scope<'_>,
        args: RescueFiguresArgs,
    ) -> Result<RescueReport, OperationError> {
        Ok(scope.rescues(move |r| r.report(args.days)).await?)
    }
}
