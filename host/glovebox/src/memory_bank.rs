//! The memory bank at the gateway: the data dir's bank with the `[memory]`
//! settings the host serves now. Proposing and searching from a session are
//! the caller's scope's (`Scope::memory_propose`, `Scope::memory_search`, in
//! `scope/memory.rs`); the rules themselves are the ledger's
//! (`glovebox_ledger::memory`).

use crate::gateway::Gateway;
use crate::memory::MemoryBank;

impl Gateway {
    /// The data dir's memory bank, with the config's `[memory]` settings.
    pub fn memory_bank(&self) -> MemoryBank {
        MemoryBank::new(
            self.ledger().storage.clone(),
            self.host().config().memory.clone(),
        )
    }
}
