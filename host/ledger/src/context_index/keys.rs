//! The context index's own index: how a session start, a listing, a search
//! and a look-up by id find the entries they want without decoding every
//! entry ever written.
//!
//! Why: entries are kept for good (a retired one stays, marked), so the
//! `context` bucket only grows; every session start, `context_search` and
//! `context retire ID` that read it whole cost what was ever written
//! (threat 49).
//!
//! What: in bucket `context_keys`, per entry, one key per way it is found,
//! each holding the entry's project (its record is `context/<project>/<id>`):
//!
//! - `i/<id>`: the entry by id (one read finds its record);
//! - `t/<newest first>/<id>`: every entry, the latest added first;
//! - `g/<newest first>/<id>`: the active entries, the latest first;
//! - `p/<project>/<newest first>/<id>`: a project's entries;
//! - `a/<project>/<newest first>/<id>`: a project's active entries (what a
//!   new session of the project reads, up to its limit).
//!
//! Projects hold no `/` (`ContextIndex::add` refuses one). The keys are
//! hints the record confirms (`crate::newest`): written before it, and a
//! retirement's removed after it. A store written before this index is
//! indexed once, a page at a time, at the first use; `v/1` marks it done.

use super::{BUCKET, IndexEntry};
use crate::newest::{id_of, newest_first};
use crate::storage::{PAGE, Storage, StorageError, pages};

pub(crate) const KEYS: &str = "context_keys";
/// In [`KEYS`]: present once every record of the store is indexed.
const INDEXED: &str = "v/1";

/// Every entry, the latest added first.
pub(crate) const ALL: &str = "t/";
/// The active entries, the latest added first.
pub(crate) const ACTIVE: &str = "g/";

/// The prefix of `project`'s entries (its active ones with `active`).
pub(crate) fn project_prefix(project: &str, active: bool) -> String {
    format!("{}/{project}/", if active { "a" } else { "p" })
}

/// The prefix of the listing of `project` (every project's when `None`),
/// of its active entries only with `active`.
pub(crate) fn listing(project: Option<&str>, active: bool) -> String {
    match (project, active) {
        (Some(p), _) => project_prefix(p, active),
        (None, true) => ACTIVE.to_string(),
        (None, false) => ALL.to_string(),
    }
}

fn record_key(project: &str, id: &str) -> String {
    format!("{project}/{id}")
}

/// The keys `entry` has in its state.
fn keys_of(entry: &IndexEntry) -> Vec<String> {
    let at = format!("{}/{}", newest_first(entry.added_at_ms), entry.id);
    let mut keys = vec![
        format!("i/{}", entry.id),
        format!("{ALL}{at}"),
        format!("{}{at}", project_prefix(&entry.project, false)),
    ];
    if entry.retired_at_ms.is_none() {
        keys.push(format!("{ACTIVE}{at}"));
        keys.push(format!("{}{at}", project_prefix(&entry.project, true)));
    }
    keys
}

/// The record of `id` in `project`, if there is one (an unreadable one is
/// logged and passed over).
fn record(
    storage: &dyn Storage,
    project: &str,
    id: &str,
) -> Result<Option<IndexEntry>, StorageError> {
    let Some(bytes) = storage.get(BUCKET, &record_key(project, id))? else {
        return Ok(None);
    };
    match serde_json::from_slice::<IndexEntry>(&bytes) {
        Ok(e) => Ok(Some(e)),
        Err(e) => {
            tracing::warn!(project, id, error = %e, "unreadable context index entry skipped");
            Ok(None)
        }
    }
}

/// The entry `id`, retired or not: its `i/` key, then its record.
pub(crate) fn get(storage: &dyn Storage, id: &str) -> Result<Option<IndexEntry>, StorageError> {
    ensure_indexed(storage)?;
    let Some(project) = storage.get(KEYS, &format!("i/{id}"))? else {
        return Ok(None);
    };
    let project = String::from_utf8_lossy(&project);
    Ok(record(storage, &project, id)?.filter(|e| e.id == id))
}

/// The entry index key `key` (holding `project`) stands for, when its
/// record still has that key; a key the record no longer has is removed.
pub(crate) fn confirm(
    storage: &dyn Storage,
    key: &str,
    project: &[u8],
) -> Result<Option<IndexEntry>, StorageError> {
    let project = String::from_utf8_lossy(project);
    let Some(entry) = record(storage, &project, id_of(key))? else {
        // Not written yet, or a crash's leftover: a hint nobody confirms.
        return Ok(None);
    };
    if keys_of(&entry).iter().any(|k| k == key) {
        return Ok(Some(entry));
    }
    // No change ever adds a key to a stored record (retiring only removes
    // some), so one it lacks is stale, never one being written.
    storage.delete(KEYS, key)?;
    Ok(None)
}

/// Stores `entry` (a new one, or one whose state changed from `previous`)
/// with its keys: the new keys first, the record, then the keys it no
/// longer has.
pub(crate) fn store(
    storage: &dyn Storage,
    entry: &IndexEntry,
    previous: Option<&IndexEntry>,
) -> Result<(), StorageError> {
    let keys = keys_of(entry);
    let old: Vec<String> = previous.map(keys_of).unwrap_or_default();
    for key in keys.iter().filter(|k| !old.contains(k)) {
        storage.put_unsynced(KEYS, key, entry.project.as_bytes())?;
    }
    let bytes = serde_json::to_vec(entry).map_err(|e| {
        StorageError::Io(format!("cannot encode context entry `{}`: {e}", entry.id))
    })?;
    // Durable, so every key written before it is too.
    storage.put(BUCKET, &record_key(&entry.project, &entry.id), &bytes)?;
    for key in old.iter().filter(|k| !keys.contains(k)) {
        storage.delete(KEYS, key)?;
    }
    Ok(())
}

/// Indexes the entries of a store written before this index existed, a
/// page at a time, once (a marker says it was done).
pub(crate) fn ensure_indexed(storage: &dyn Storage) -> Result<(), StorageError> {
    if storage.get(KEYS, INDEXED)?.is_some() {
        return Ok(());
    }
    let mut indexed = 0usize;
    for item in pages(storage, BUCKET, "", PAGE) {
        let (key, bytes) = item?;
        match serde_json::from_slice::<IndexEntry>(&bytes) {
            Ok(entry) if key == record_key(&entry.project, &entry.id) => {
                for k in keys_of(&entry) {
                    storage.put_unsynced(KEYS, &k, entry.project.as_bytes())?;
                }
                indexed += 1;
            }
            Ok(_) => tracing::warn!(
                key,
                "a context entry stored under another key left out of the index"
            ),
            Err(e) => {
                tracing::warn!(key, error = %e, "unreadable context entry left out of the index")
            }
        }
    }
    // Durable, and after the keys: a crash may lose the marker (the
    // indexing runs again, changing nothing), never keep it without them.
    storage.put(KEYS, INDEXED, b"")?;
    if indexed > 0 {
        tracing::info!(
            indexed,
            "indexed the context entries of a store written before the context keys"
        );
    }
    Ok(())
}
