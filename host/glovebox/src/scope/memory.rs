//! The memory bank on behalf of the caller: `memory_propose` and
//! `memory_search` from a session the caller may act in (another's is "not
//! found", as everywhere), with the `[memory]` settings the host serves now
//! (a reload changes who may propose at once). The rules themselves are the
//! ledger's (`glovebox_ledger::memory`).

use super::Scope;
use crate::memory::{MemoryBank, MemoryEntry, MemoryError, Ranked};
use crate::page::{Page, PageRequest};
use crate::session::Event;
use crate::tasks::memory_work;

impl Scope<'_> {
    /// Reviews a memory entry as the caller: `act` gets the bank, the
    /// caller's name (the reviewer recorded) and the time now, off the
    /// async threads (`memory.approve`, `memory.reject`, `memory.retire`).
    pub(crate) async fn review_memory(
        self,
        act: impl FnOnce(MemoryBank, &str, u64) -> Result<MemoryEntry, MemoryError> + Send + 'static,
    ) -> Result<MemoryEntry, MemoryError> {
        let (bank, by) = (self.gateway.memory_bank(), self.caller.name.clone());
        let now = self.gateway.sessions().clock_ms();
        memory_work(move || act(bank, &by, now)).await
    }

    /// Proposes `text` to the scope `spec` names, from the caller's session
    /// `session`, logged there (see `MemoryBank::propose_in`).
    pub async fn memory_propose(
        self,
        session: &str,
        spec: &str,
        text: &str,
    ) -> Result<(MemoryEntry, Event), MemoryError> {
        let id = self.act_session(session).await?.header.id;
        let (bank, sessions, caller) = (
            self.gateway.memory_bank(),
            self.gateway.sessions().clone(),
            self.caller.clone(),
        );
        let (spec, text) = (spec.to_string(), text.to_string());
        memory_work(move || bank.propose_in(&sessions, &caller, &id, &spec, &text)).await
    }

    /// Searches the approved entries of the caller's scopes from its session
    /// `session`, logged there (see `MemoryBank::search_in`).
    /// A page of `page.limit` (at most `SEARCH_LIMIT_MAX`), after its cursor.
    pub async fn memory_search(
        self,
        session: &str,
        query: &str,
        page: &PageRequest,
    ) -> Result<(Page<Ranked>, Event), MemoryError> {
        let id = self.act_session(session).await?.header.id;
        let (bank, sessions, caller) = (
            self.gateway.memory_bank(),
            self.gateway.sessions().clone(),
            self.caller.clone(),
        );
        let query = query.to_string();
        let limit = page.limit.unwrap_or(crate::memory::SEARCH_LIMIT_MAX);
        let cursor = page.cursor.clone();
        memory_work(move || {
            bank.search_in(&sessions, &caller, &id, &query, limit, cursor.as_deref())
        })
        .await
    }
}
