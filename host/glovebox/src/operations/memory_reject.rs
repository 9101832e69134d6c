//! `memory.reject`: a proposed memory entry never reaches a session; the
//! reason is kept on it for the proposer.

use schemars::JsonSchema;
use serde::Deserialize;

use super::sizes::{ID_MAX, TEXT_MAX};
use super::{Audience, Operation, OperationError, Route};
use crate::memory::MemoryEntry;
use crate::scope::Scope;

pub struct RejectMemory;

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RejectMemoryArgs {
    /// The proposed entry's id (`m-…`).
    #[schemars(length(max = ID_MAX))]
    pub id: String,
    /// What was wrong, for the proposer.
    #[schemars(length(max = TEXT_MAX))]
    pub reason: String,
}

impl Operation for RejectMemory {
    const NAME: &'static str = "memory.reject";
    const SUMMARY: &'static str =
        "Rejects a proposed memory entry, with a reason for the proposer.";
    const DESCRIPTION: &'static str = "The entry never reaches a session; it stays in the bank, rejected, with the caller and the reason. An entry that is not proposed is refused.";
    const AUDIENCE: Audience = Audience::Operator;
    const HTTP: Option<Route> = Some(Route::post("/memory/{id}/reject"));
    type Args = RejectMemoryArgs;
    type Output = MemoryEntry;

    async fn run(scope: Scope<'_>, args: RejectMemoryArgs) -> Result<MemoryEntry, OperationError> {
        let entry = scope
            .review_memory(move |bank, by, now| bank.reject(&args.id, by, args.reason.trim(), now))
            .await?;
        Ok(entry)
    }
}
