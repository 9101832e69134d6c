//! `memory.approve`: a proposed memory entry is handed to new sessions of
//! its scope from now on.

use schemars::JsonSchema;
use serde::Deserialize;

use super::sizes::ID_MAX;
use super::{Audience, Operation, OperationError, Route};
use crate::memory::MemoryEntry;
use crate::scope::Scope;

pub struct ApproveMemory;

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ApproveMemoryArgs {
    /// The proposed entry's id (`m-…`).
    #[schemars(length(max = ID_MAX))]
    pub id: String,
}

impl Operation for ApproveMemory {
    const NAME: &'static str = "memory.approve";
    const SUMMARY: &'static str =
        "Approves a proposed memory entry: new sessions of its scope start with it.";
    const DESCRIPTION: &'static str = "Recorded on the entry as the caller's review. Sessions already running are not handed it. An entry that is not proposed is refused.";
    const AUDIENCE: Audience = Audience::Operator;
    const HTTP: Option<Route> = Some(Route::post("/memory/{id}/approve"));
    type Args = ApproveMemoryArgs;
    type Output = MemoryEntry;

    async fn run(scope: Scope<'_>, args: ApproveMemoryArgs) -> Result<MemoryEntry, OperationError> {
        let entry = scope
            .review_memory(move |bank, by, now| bank.approve(&args.id, by, now))
            .await?;
        Ok(entry)
    }
}
