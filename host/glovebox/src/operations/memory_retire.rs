//! `memory.retire`: an approved memory entry is no longer handed to new
//! sessions (it stays in the bank, and in the logs of those that got it).

use schemars::JsonSchema;
use serde::Deserialize;

use super::sizes::{ID_MAX, TEXT_MAX};
use super::{Audience, Operation, OperationError, Route};
use crate::memory::MemoryEntry;
use crate::scope::Scope;

pub struct RetireMemory;

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RetireMemoryArgs {
    /// The approved entry's id (`m-…`).
    #[schemars(length(max = ID_MAX))]
    pub id: String,
    /// Why, kept on the entry.
    #[serde(default)]
    #[schemars(length(max = TEXT_MAX))]
    pub reason: Option<String>,
}

impl Operation for RetireMemory {
    const NAME: &'static str = "memory.retire";
    const SUMMARY: &'static str =
        "Retires an approved memory entry: new sessions are no longer handed it.";
    const DESCRIPTION: &'static str = "It stays in the bank, retired, with the caller and the reason if given, and in the logs of the sessions that got it. An entry that is not approved is refused.";
    const AUDIENCE: Audience = Audience::Operator;
    const HTTP: Option<Route> = Some(Route::post("/memory/{id}/retire"));
    type Args = RetireMemoryArgs;
    type Output = MemoryEntry;

    async fn run(scope: Scope<'_>, args: RetireMemoryArgs) -> Result<MemoryEntry, OperationError> {
        let reason = args.reason.filter(|r| !r.trim().is_empty());
        let entry = scope
            .review_memory(move |bank, by, now| {
                bank.retire(&args.id, by, reason.as_deref().map(str::trim), now)
            })
            .await?;
        Ok(entry)
    }
}
