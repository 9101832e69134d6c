//! The context index's records, and what a new session gets from it.
//!
//! Stored in the bucket `context` under `<project>/<id>`; a retired entry
//! stays there, marked, so the index keeps its history. What reads them
//! goes through their keys (`keys.rs`), a page at a time. The index is written
//! by `crate::rescue::ContextIndex` (rescues' enrich step, operators); every
//! session reads its project's active entries when it starts
//! ([`index_entries`]), which is why the records live here, below
//! `crate::session`.

use serde::{Deserialize, Serialize};

use crate::manifest::ContextWriter;
use crate::storage::{PAGE, Storage, StorageError, pages};
use crate::values::{ContextEntry, ContextKind};

pub(crate) mod keys;

pub(crate) const BUCKET: &str = "context";
/// The `source` of the context a session gets from the index when it starts.
pub const INDEX_SOURCE: &str = "index";
/// Index entries a new session gets at most (the newest).
const MAX_AT_START: usize = 256;

/// An entry of a project's context index.
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
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
            content: None,
            sha256: None,
        }
    }
}

/// The active entries of `project`'s index, oldest first, as a new session
/// gets them: the newest [`MAX_AT_START`], read through the project's
/// active keys (never the whole index). An index that cannot be read gives
/// nothing (logged): a session still starts.
pub(crate) fn index_entries(storage: &dyn Storage, project: &str) -> Vec<ContextEntry> {
    match newest_active(storage, project, MAX_AT_START) {
        Ok(mut entries) => {
            entries.reverse();
            entries.iter().map(IndexEntry::as_context).collect()
        }
        Err(e) => {
            tracing::warn!(project, error = %e, "cannot read the context index: the session starts without it");
            Vec::new()
        }
    }
}

/// The newest `max` active entries of `project`, the latest first.
fn newest_active(
    storage: &dyn Storage,
    project: &str,
    max: usize,
) -> Result<Vec<IndexEntry>, StorageError> {
    keys::ensure_indexed(storage)?;
    let prefix = keys::project_prefix(project, true);
    let mut entries = Vec::new();
    for item in pages(storage, keys::KEYS, &prefix, PAGE.min(max.max(1))) {
        let (key, value) = item?;
        if let Some(entry) = keys::confirm(storage, &key, &value)?
            && entry.project == project
        {
            entries.push(entry);
            if entries.len() == max {
                break;
            }
        }
    }
    Ok(entries)
}
