//! The context index: what every new session of a project is told when it
//! starts. Entries come from rescues (their enrich step) and operators; who
//! may write is the operator's setting (`[context] writers`).
//!
//! Stored in the bucket `context` under `<project>/<id>`; a retired entry
//! stays there, marked, so the index keeps its history (the records, their
//! keys and the read a new session makes are in `crate::context_index`).
//! Listings and searches page, the latest added first; a look-up by id is
//! a read of its key and its record.

use std::sync::Arc;

use super::error::RescueError;
use crate::context_index::keys;
use crate::manifest::{ContextConfig, ContextWriter};
use crate::newest::{page_of, valid_cursor};
use crate::page::{Page, PageRequest};
use crate::session::bounded;
use crate::storage::Storage;

// The records of the index, and the context entries a session is handed, sit
// below the sessions (a new session reads its project's index): re-exported
// here, at their old paths.
pub use crate::context_index::{INDEX_SOURCE, IndexEntry};
pub use crate::values::{ContextEntry, ContextKind};

/// The longest entry text accepted.
pub const MAX_ENTRY_BYTES: usize = 4096;

/// The context index of a data dir, with the operator's writer setting.
pub struct ContextIndex {
    storage: Arc<dyn Storage>,
    config: ContextConfig,
}

impl ContextIndex {
    pub fn new(storage: Arc<dyn Storage>, config: ContextConfig) -> ContextIndex {
        ContextIndex { storage, config }
    }

    /// Refuses `writer` unless `[context] writers` lists it.
    pub fn check_writer(&self, writer: ContextWriter) -> Result<(), RescueError> {
        if self.config.writers.contains(&writer) {
            return Ok(());
        }
        let allowed = self
            .config
            .writers
            .iter()
            .map(|w| format!("\"{}\"", w.as_str()))
            .collect::<Vec<_>>()
            .join(", ");
        Err(RescueError::Refused(format!(
            "the context index does not accept writes from `{}`: `[context] writers` in the host config is [{allowed}]; an operator adds \"{}\" there to allow it",
            writer.as_str(),
            writer.as_str()
        )))
    }

    /// Adds an entry to `project`'s index, written by `writer`.
    pub fn add(
        &self,
        project: &str,
        text: &str,
        writer: ContextWriter,
        rescue: Option<&str>,
        now_ms: u64,
    ) -> Result<IndexEntry, RescueError> {
        self.check_writer(writer)?;
        let text = text.trim();
        if project.is_empty() || project.contains('/') {
            return Err(RescueError::InvalidInput(format!(
                "invalid project `{project}` for the context index: give the project name sessions start with (no `/`)"
            )));
        }
        if text.is_empty() || text.len() > MAX_ENTRY_BYTES {
            return Err(RescueError::InvalidInput(format!(
                "a context entry has 1 to {MAX_ENTRY_BYTES} bytes of text, not {}",
                text.len()
            )));
        }
        keys::ensure_indexed(&*self.storage)?;
        let entry = IndexEntry {
            id: format!("c-{}", uuid::Uuid::new_v4().simple()),
            project: project.to_string(),
            text: text.to_string(),
            writer,
            rescue: rescue.map(str::to_string),
            added_at_ms: now_ms,
            retired_at_ms: None,
        };
        keys::store(&*self.storage, &entry, None)?;
        Ok(entry)
    }

    /// A page of the entries of `project` (or of all projects), the latest
    /// added first; retired ones only with `all`.
    pub fn list(
        &self,
        project: Option<&str>,
        all: bool,
        page: &PageRequest,
    ) -> Result<Page<IndexEntry>, RescueError> {
        self.page(project, !all, page, |_| true)
    }

    /// A page of the active entries whose text contains every word of
    /// `query` (any case), the latest added first. A page examines a
    /// bounded number of entries: a short page with a cursor means go on.
    pub fn search(
        &self,
        query: &str,
        project: Option<&str>,
        page: &PageRequest,
    ) -> Result<Page<IndexEntry>, RescueError> {
        let words: Vec<String> = query.split_whitespace().map(str::to_lowercase).collect();
        self.page(project, true, page, |e| {
            let text = e.text.to_lowercase();
            words.iter().all(|w| text.contains(w.as_str()))
        })
    }

    fn page(
        &self,
        project: Option<&str>,
        active: bool,
        page: &PageRequest,
        keep: impl Fn(&IndexEntry) -> bool,
    ) -> Result<Page<IndexEntry>, RescueError> {
        let storage = &*self.storage;
        keys::ensure_indexed(storage)?;
        if let Some(cursor) = &page.cursor
            && !valid_cursor(cursor)
        {
            return Err(RescueError::InvalidInput(format!(
                "the cursor `{}` is not one this listing handed out: pass the cursor its previous page printed, or none for the first page",
                bounded(cursor, 64)
            )));
        }
        let prefix = keys::listing(project, active);
        page_of(storage, keys::KEYS, &prefix, page, |key, value| {
            Ok::<_, RescueError>(
                keys::confirm(storage, key, value)?
                    .filter(|e| project.is_none_or(|p| e.project == p) && keep(e)),
            )
        })
    }

    /// The entry `id` (retired or not): a read of its key and its record.
    pub fn get(&self, id: &str) -> Result<IndexEntry, RescueError> {
        keys::get(&*self.storage, id)?.ok_or_else(|| {
            RescueError::NotFound(format!(
                "no context entry `{id}`: `glovebox context list --all` lists them"
            ))
        })
    }

    /// Retires entry `id`: new sessions no longer get it (it stays in the
    /// index, marked, and in the logs of the sessions that got it).
    pub fn retire(
        &self,
        id: &str,
        writer: ContextWriter,
        now_ms: u64,
    ) -> Result<IndexEntry, RescueError> {
        self.check_writer(writer)?;
        let entry = self.get(id)?;
        if entry.retired_at_ms.is_some() {
            return Ok(entry);
        }
        let mut retired = entry.clone();
        retired.retired_at_ms = Some(now_ms);
        keys::store(&*self.storage, &retired, Some(&entry))?;
        Ok(retired)
    }
}
