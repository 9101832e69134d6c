//! The context index: what every new session of a project is told when it
//! starts. Entries come from rescues (their enrich step) and operators; who
//! may write is the operator's setting (`[context] writers`).
//!
//! Stored in the bucket `context` under `<project>/<id>`; a retired entry
//! stays there, marked, so the index keeps its history.

use std::sync::Arc;

use serde::{Deserialize, Serialize};

use super::RescueError;
use crate::manifest::{ContextConfig, ContextWriter};
use crate::storage::Storage;

pub(crate) const BUCKET: &str = "context";
/// The `source` of the context a session gets from the index when it starts.
pub const INDEX_SOURCE: &str = "index";
/// The longest entry text accepted.
pub const MAX_ENTRY_BYTES: usize = 4096;
/// Index entries a new session gets at most (the newest).
const MAX_AT_START: usize = 256;

/// What a piece of context is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ContextKind {
    /// Text: a fact, a rule, a pitfall.
    Note,
    /// A file the agent should read (its path as the operator gave it).
    File,
    /// A change to the task's specification.
    SpecChange,
}

/// One piece of context handed to a session (in `context_injected` events).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ContextEntry {
    /// The index entry's id (`c-…`), or the rescue's id for an injection.
    pub id: String,
    pub kind: ContextKind,
    pub text: String,
    /// `operator`, or `rescue:<id>`.
    pub source: String,
    pub at_ms: u64,
}

/// An entry of a project's context index.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct IndexEntry {
    pub id: String,
    pub project: String,
    pub text: String,
    /// Who wrote it: `operator` or `rescue`.
    pub writer: ContextWriter,
    /// The rescue whose enrich step added it.
    pub rescue: Option<String>,
    pub added_at_ms: u64,
    /// Set once retired: new sessions no longer get it.
    pub retired_at_ms: Option<u64>,
}

impl IndexEntry {
    fn as_context(&self) -> ContextEntry {
        ContextEntry {
            id: self.id.clone(),
            kind: ContextKind::Note,
            text: self.text.clone(),
            source: match &self.rescue {
                Some(r) => format!("rescue:{r}"),
                None => self.writer.as_str().to_string(),
            },
            at_ms: self.added_at_ms,
        }
    }
}

/// The active entries of `project`'s index, oldest first, as a new session
/// gets them. An index that cannot be read gives nothing (logged): a session
/// still starts.
pub(crate) fn index_entries(storage: &dyn Storage, project: &str) -> Vec<ContextEntry> {
    match scan(storage, Some(project)) {
        Ok(entries) => {
            let active: Vec<ContextEntry> = entries
                .iter()
                .filter(|e| e.retired_at_ms.is_none())
                .map(IndexEntry::as_context)
                .collect();
            let skip = active.len().saturating_sub(MAX_AT_START);
            active.into_iter().skip(skip).collect()
        }
        Err(e) => {
            tracing::warn!(project, error = %e, "cannot read the context index: the session starts without it");
            Vec::new()
        }
    }
}

/// Entries of one project (or all), oldest first.
fn scan(storage: &dyn Storage, project: Option<&str>) -> Result<Vec<IndexEntry>, RescueError> {
    let prefix = project.map(|p| format!("{p}/")).unwrap_or_default();
    let mut entries: Vec<IndexEntry> = storage
        .scan(BUCKET, &prefix)?
        .into_iter()
        .filter_map(
            |(key, bytes)| match serde_json::from_slice::<IndexEntry>(&bytes) {
                Ok(e) => Some(e),
                Err(e) => {
                    tracing::warn!(key, error = %e, "unreadable context index entry skipped");
                    None
                }
            },
        )
        .filter(|e| project.is_none_or(|p| e.project == p))
        .collect();
    entries.sort_by(|a, b| {
        a.added_at_ms
            .cmp(&b.added_at_ms)
            .then_with(|| a.id.cmp(&b.id))
    });
    Ok(entries)
}

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
        let entry = IndexEntry {
            id: format!("c-{}", uuid::Uuid::new_v4().simple()),
            project: project.to_string(),
            text: text.to_string(),
            writer,
            rescue: rescue.map(str::to_string),
            added_at_ms: now_ms,
            retired_at_ms: None,
        };
        self.put(&entry)?;
        Ok(entry)
    }

    /// The entries of `project` (or of all projects), oldest first; retired
    /// ones only with `all`.
    pub fn list(&self, project: Option<&str>, all: bool) -> Result<Vec<IndexEntry>, RescueError> {
        let mut entries = scan(&*self.storage, project)?;
        entries.retain(|e| all || e.retired_at_ms.is_none());
        Ok(entries)
    }

    /// Active entries whose text contains every word of `query` (any case).
    pub fn search(
        &self,
        query: &str,
        project: Option<&str>,
    ) -> Result<Vec<IndexEntry>, RescueError> {
        let words: Vec<String> = query.split_whitespace().map(str::to_lowercase).collect();
        let mut entries = self.list(project, false)?;
        entries.retain(|e| {
            let text = e.text.to_lowercase();
            words.iter().all(|w| text.contains(w.as_str()))
        });
        Ok(entries)
    }

    /// The entry `id` (retired or not).
    pub fn get(&self, id: &str) -> Result<IndexEntry, RescueError> {
        scan(&*self.storage, None)?
            .into_iter()
            .find(|e| e.id == id)
            .ok_or_else(|| {
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
        let mut entry = self.get(id)?;
        if entry.retired_at_ms.is_none() {
            entry.retired_at_ms = Some(now_ms);
            self.put(&entry)?;
        }
        Ok(entry)
    }

    fn put(&self, entry: &IndexEntry) -> Result<(), RescueError> {
        let bytes = serde_json::to_vec(entry).unwrap_or_default();
        self.storage
            .put(BUCKET, &format!("{}/{}", entry.project, entry.id), &bytes)?;
        Ok(())
    }
}
