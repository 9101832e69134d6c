//! `memory.propose`: an agent proposes an entry to the memory bank, from
//! the session it acts from; an operator's review makes it reach sessions.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::sizes::{MEMORY_TEXT_MAX, SCOPE_MAX};
use super::{Audience, Operation, OperationError, Route, bound_session};
use crate::memory::MemoryEntry;
use crate::scope::Scope;

pub struct ProposeMemory;

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ProposeMemoryArgs {
    /// `project`, `user` or `role` (the bound session's project, your
    /// principal, the session's role), or in full: `project:NAME` (a project
    /// you may touch), `user:YOU`, `role:ROLE` (the session's).
    #[schemars(length(max = SCOPE_MAX))]
    pub scope: String,
    /// The entry; at most `[memory] max_entry_bytes` (4 KiB by default).
    #[schemars(length(min = 1, max = MEMORY_TEXT_MAX))]
    pub text: String,
}

/// The entry proposed, and where its proposal is in the session's log.
#[derive(Debug, Serialize, JsonSchema)]
pub struct Proposed {
    pub entry: MemoryEntry,
    /// The proposal's event in the session's log.
    pub seq: u64,
}

impl Operation for ProposeMemory {
    const NAME: &'static str = "memory.propose";
    const SUMMARY: &'static str = "Propose an entry to the memory bank from the bound session (needs one: the proposal is logged there): a fact, rule or lesson for later sessions of a scope.";
    const DESCRIPTION: &'static str =
        "It reaches new sessions only once an operator approves it (`glovebox memory review`).";
    const AUDIENCE: Audience = Audience::Anyone;
    const HTTP: Option<Route> = None;
    const MCP: Option<&'static str> = Some("memory_propose");
    type Args = ProposeMemoryArgs;
    type Output = Proposed;

    async fn run(scope: Scope<'_>, args: ProposeMemoryArgs) -> Result<Proposed, OperationError> {
        let session = bound_session::<Self>(scope)?;
        let (entry, event) = scope
            .memory_propose(session, &args.scope, &args.text)
            .await?;
        Ok(Proposed {
            entry,
            seq: event.seq,
        })
    }
}
