//! The context index's records, and what a new session gets from it.
//!
//! Stored in the bucket `context` under `<project>/<id>`; a retired entry
//! stays there, marked, so the index keeps its history. The index is written
//! by `crate::rescue::ContextIndex` (rescues' enrich step, operators); every
//! session reads its project's active entries when it starts
//! ([`index_entries`]), which is why the records live here, below
//! `crate::session`.

use serde::{Deserialize, Serialize};

use crate::manifest::ContextWriter;
use crate::storage::{Storage, StorageError};
use crate::values::{ContextEntry, ContextKind};

pub(crate) const BUCKET: &str = "context";
/// The `source` of the context a session gets from the index when it starts.
pub const INDEX_SOURCE: &str = "index";
/// Index entries a new session gets at most (the newest).
const MAX_AT_START: usize = 256;

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
pub(crate) fn scan(
    storage: &dyn Storage,
    project: Option<&str>,
) -> Result<Vec<IndexEntry>, StorageError> {
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
