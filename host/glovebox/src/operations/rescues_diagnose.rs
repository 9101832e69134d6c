//! `rescues.diagnose`: records a rescue's diagnosis, the root cause's
//! category, the evidence and the root cause (`glovebox rescue diagnose`).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::sizes::{ID_MAX, TEXT_MAX};
use super::{Audience, Operation, OperationError, Route};
use crate::rescue::{Category, Rescue};
use crate::scope::Scope;

pub struct DiagnoseRescue;

/// The most pieces of evidence one diagnosis gives.
const EVIDENCE_MAX: usize = 256;

#[derive(Debug, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct DiagnoseRescueArgs {
    /// The rescue's id (`r-…`).
    #[schemars(length(max = ID_MAX))]
    pub id: String,
    /// The root cause's category.
    pub category: Category,
    /// The pieces of evidence.
    #[serde(default)]
    #[schemars(length(max = EVIDENCE_MAX), inner(length(max = TEXT_MAX)))]
    pub evidence: Vec<String>,
    /// The root cause, in a sentence.
    #[schemars(length(max = TEXT_MAX))]
    pub root_cause: String,
}

impl Operation for DiagnoseRescue {
    const NAME: &'static str = "rescues.diagnose";
    const SUMMARY: &'static str =
        "Records a rescue's diagnosis: the root cause's category, the evidence, the root cause.";
    const DESCRIPTION: &'static str = "A later diagnosis replaces it; the report's mean time to diagnose counts the first one's time. A resolved rescue, or a blank root cause, is refused. Returns the rescue.";
    const AUDIENCE: Audience = Audience::Operator;
    const HTTP: Option<Route> = Some(Route::post("/rescues/{id}/diagnose"));
    const RUNS_TOOLS: bool = false;
    type Args = DiagnoseRescueArgs;
    type Output = Rescue;

    async fn run(scope: Scope<'_>, args: DiagnoseRescueArgs) -> Result<Rescue, OperationError> {
        Ok(scope
            .rescues(move |r| r.diagnose(&args.id, args.category, args.evidence, &args.root_cause))
            .await?)
    }
}
