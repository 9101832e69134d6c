//! The memory bank on behalf of a principal: `memory_propose` and
//! `memory_search` from a session the caller owns (another's is "not
//! found", as everywhere), with the `[memory]` settings the host serves now
//! (a reload changes who may propose at once). The rules themselves are the
//! ledger's (`glovebox_ledger::memory`).

use crate::gateway::Gateway;
use crate::manifest::Principal;
use crate::memory::{MemoryBank, MemoryEntry, MemoryError, Ranked};
use crate::page::{Page, PageRequest};
use crate::session::{Event, SessionError};

impl Gateway {
    /// The data dir's memory bank, with the config's `[memory]` settings.
    pub fn memory_bank(&self) -> MemoryBank {
        MemoryBank::new(
            self.ledger().storage.clone(),
            self.host().config().memory.clone(),
        )
    }

    /// Proposes `text` to the scope `spec` names, from `caller`'s session
    /// `session`, logged there (see `MemoryBank::propose_in`).
    pub async fn memory_propose_as(
        &self,
        caller: &Principal,
        session: &str,
        spec: &str,
        text: &str,
    ) -> Result<(MemoryEntry, Event), MemoryError> {
        let id = self.act_session_as(caller, session).await?.header.id;
        let (bank, sessions, caller) =
            (self.memory_bank(), self.sessions().clone(), caller.clone());
        let (spec, text) = (spec.to_string(), text.to_string());
        blocking(move || bank.propose_in(&sessions, &caller, &id, &spec, &text)).await
    }

    /// Searches the approved entries of `caller`'s scopes from its session
    /// `session`, logged there (see `MemoryBank::search_in`).
    /// A page of `page.limit` (at most `SEARCH_LIMIT_MAX`), after its cursor.
    pub async fn memory_search_as(
        &self,
        caller: &Principal,
        session: &str,
        query: &str,
        page: &PageRequest,
    ) -> Result<(Page<Ranked>, Event), MemoryError> {
        let id = self.act_session_as(caller, session).await?.header.id;
        let (bank, sessions, caller) =
            (self.memory_bank(), self.sessions().clone(), caller.clone());
        let query = query.to_string();
        let limit = page.limit.unwrap_or(crate::memory::SEARCH_LIMIT_MAX);
        let cursor = page.cursor.clone();
        blocking(move || bank.search_in(&sessions, &caller, &id, &query, limit, cursor.as_deref()))
            .await
    }
}

async fn blocking<T: Send + 'static>(
    f: impl FnOnce() -> Result<T, MemoryError> + Send + 'static,
) -> Result<T, MemoryError> {
    crate::tasks::blocking(f, |why| {
        MemoryError::Session(SessionError::Storage(crate::storage::StorageError::Io(
            format!("the memory bank: {why}"),
        )))
    })
    .await
}
