//! The memory bank's index: how a search, a listing or a new session finds
//! the entries it wants without decoding every entry ever proposed.
//!
//! Why: agents propose, and the bank keeps every entry for good (rejected
//! and retired ones too, for the record), so the bucket only grows. A
//! `memory_search` or a session start that read it all would cost, per
//! call, what agents ever wrote (threat 49).
//!
//! What: in bucket `memory_index`, per entry, one key per way it is found:
//!
//! - `t/<proposed at>/<id>`: every entry, oldest proposal first;
//! - `s/<state>/<proposed at>/<id>`: by state, oldest proposal first;
//! - `a/<scope>/<u64::MAX - approved at>/<id>`: approved entries by scope,
//!   most recently approved first (a session start, a search);
//! - `d/<u64::MAX - closed at>/<id>`: rejected and retired entries, most
//!   recently closed first.
//!
//! Times are 20-digit, zero-padded; a scope is escaped (`%` and `/`) so a
//! project named `a/b` is not read as part of another's key. The index is a
//! hint: new keys are written before the record, old ones removed after it,
//! and a reader confirms each key against the record (a key the record does
//! not have is passed over and left: it may be one being written). A store written before the index is indexed
//! once, a page at a time ([`index_old_records`]).
//!
//! A new session is handed the newest approved entries of its scopes
//! ([`start_entries`]), read here through the scope keys.

use super::records::{BUCKET, MemoryEntry, MemoryState, Scope};
use crate::manifest::{MemoryConfig, Role};
use crate::storage::{self, Storage, StorageError};
use crate::values::ContextEntry;

pub(crate) const INDEX: &str = "memory_index";
/// In [`INDEX`]: present once every record of the store is indexed.
const INDEXED: &str = "v/1";

/// Every entry.
pub(crate) const ALL: &str = "t/";

fn time(at: u64) -> String {
    format!("{at:020}")
}

fn newest_first(at: u64) -> String {
    format!("{:020}", u64::MAX - at)
}

/// A key part that holds no `/` of its own.
fn escape(part: &str) -> String {
    part.replace('%', "%25").replace('/', "%2F")
}

/// The prefix of entries in state `state`.
pub(crate) fn state_prefix(state: MemoryState) -> String {
    format!("s/{}/", state.as_str())
}

/// The prefix of the approved entries of `scope`.
pub(crate) fn scope_prefix(scope: &Scope) -> String {
    format!("a/{}/", escape(&scope.to_string()))
}

/// The prefix of the approved entries of every project scope.
pub(crate) const ALL_PROJECTS: &str = "a/project:";

/// The prefix of the closed (rejected, retired) entries, newest first.
pub(crate) const CLOSED: &str = "d/";

/// The keys `entry` has in its state.
fn keys_of(entry: &MemoryEntry) -> Vec<String> {
    let proposed = time(entry.proposed_at_ms);
    let mut keys = vec![
        format!("{ALL}{proposed}/{}", entry.id),
        format!("{}{proposed}/{}", state_prefix(entry.state), entry.id),
    ];
    match entry.state {
        MemoryState::Proposed => {}
        MemoryState::Approved => keys.push(format!(
            "{}{}/{}",
            scope_prefix(&entry.scope),
            newest_first(entry.approved_at_ms()),
            entry.id
        )),
        MemoryState::Rejected | MemoryState::Retired => {
            let closed = entry
                .rejected
                .as_ref()
                .or(entry.retired.as_ref())
                .map_or(0, |s| s.at_ms);
            keys.push(format!("{CLOSED}{}/{}", newest_first(closed), entry.id));
        }
    }
    keys
}

fn decode(id: &str, bytes: &[u8]) -> Result<MemoryEntry, StorageError> {
    serde_json::from_slice(bytes)
        .map_err(|e| StorageError::Corrupt(format!("memory entry `{id}`: {e}")))
}

/// The record of entry `id`, if there is one.
pub(crate) fn get(storage: &dyn Storage, id: &str) -> Result<Option<MemoryEntry>, StorageError> {
    storage
        .get(BUCKET, id)?
        .map(|bytes| decode(id, &bytes))
        .transpose()
}

/// Stores `entry` (a new one, or one whose state changed from `previous`)
/// with its keys: the new keys first, the record, then the keys it no
/// longer has.
pub(crate) fn store(
    storage: &dyn Storage,
    entry: &MemoryEntry,
    previous: Option<&MemoryEntry>,
) -> Result<(), StorageError> {
    let keys = keys_of(entry);
    for key in &keys {
        storage.put(INDEX, key, entry.id.as_bytes())?;
    }
    let bytes = serde_json::to_vec(entry)
        .map_err(|e| StorageError::Io(format!("cannot encode memory entry `{}`: {e}", entry.id)))?;
    storage.put(BUCKET, &entry.id, &bytes)?;
    for old in previous.map(keys_of).unwrap_or_default() {
        if !keys.contains(&old) {
            storage.delete(INDEX, &old)?;
        }
    }
    Ok(())
}

/// Removes `entry` (a proposal whose log append failed) and its keys.
pub(crate) fn remove(storage: &dyn Storage, entry: &MemoryEntry) -> Result<(), StorageError> {
    storage.delete(BUCKET, &entry.id)?;
    for key in keys_of(entry) {
        storage.delete(INDEX, &key)?;
    }
    Ok(())
}

/// The entry index key `key` points to, if the entry has that key; else
/// `None`, and the key is left: [`store`] writes an entry's new keys before
/// its record, so a reader racing it finds a key the record does not have
/// yet, and removing it would hide the entry from that listing for good.
/// (What a crash between the writes leaves is passed over by every reader.)
pub(crate) fn confirm(
    storage: &dyn Storage,
    key: &str,
) -> Result<Option<MemoryEntry>, StorageError> {
    let id = key.rsplit('/').next().unwrap_or(key);
    match get(storage, id) {
        Ok(Some(entry)) if keys_of(&entry).iter().any(|k| k == key) => Ok(Some(entry)),
        Ok(_) => Ok(None),
        Err(StorageError::Corrupt(why)) => {
            tracing::warn!(key, error = %why, "unreadable memory entry skipped");
            Ok(None)
        }
        Err(e) => Err(e),
    }
}

/// The entries whose keys start with `prefix` after `after`, confirmed, in
/// key order, read a page at a time; each with its key (a cursor).
pub(crate) fn walk<'a>(
    storage: &'a dyn Storage,
    prefix: &'a str,
    after: Option<String>,
) -> impl Iterator<Item = Result<(String, MemoryEntry), StorageError>> + 'a {
    Walk {
        storage,
        prefix,
        after,
        buffer: Vec::new().into_iter(),
        done: false,
    }
    .filter_map(move |item| match item {
        Ok(key) => match confirm(storage, &key) {
            Ok(Some(entry)) => Some(Ok((key, entry))),
            Ok(None) => None,
            Err(e) => Some(Err(e)),
        },
        Err(e) => Some(Err(e)),
    })
}

/// The keys of a prefix from a position, a page at a time.
struct Walk<'a> {
    storage: &'a dyn Storage,
    prefix: &'a str,
    after: Option<String>,
    buffer: std::vec::IntoIter<String>,
    done: bool,
}

impl Iterator for Walk<'_> {
    type Item = Result<String, StorageError>;

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            if let Some(key) = self.buffer.next() {
                return Some(Ok(key));
            }
            if self.done {
                return None;
            }
            let page = match self.storage.scan_page(
                INDEX,
                self.prefix,
                self.after.as_deref(),
                storage::PAGE,
            ) {
                Ok(page) => page,
                Err(e) => {
                    self.done = true;
                    return Some(Err(e));
                }
            };
            self.done = page.len() < storage::PAGE;
            let keys: Vec<String> = page.into_iter().map(|(k, _)| k).collect();
            match keys.last() {
                Some(last) => self.after = Some(last.clone()),
                None => return None,
            }
            self.buffer = keys.into_iter();
        }
    }
}

/// Indexes the entries of a store written before the index existed, a page
/// at a time, once (a marker says it was done).
pub(crate) fn index_old_records(storage: &dyn Storage) -> Result<(), StorageError> {
    if storage.get(INDEX, INDEXED)?.is_some() {
        return Ok(());
    }
    let mut indexed = 0usize;
    for item in storage::pages(storage, BUCKET, "", storage::PAGE) {
        let (key, bytes) = item?;
        match decode(&key, &bytes) {
            Ok(entry) => {
                for k in keys_of(&entry) {
                    storage.put(INDEX, &k, entry.id.as_bytes())?;
                }
                indexed += 1;
            }
            Err(e) => {
                tracing::warn!(key, error = %e, "unreadable memory entry left out of the index")
            }
        }
    }
    storage.put(INDEX, INDEXED, b"")?;
    if indexed > 0 {
        tracing::info!(
            indexed,
            "indexed the memory entries of a store written before the memory index"
        );
    }
    Ok(())
}

/// What a new session of `project`, owned by `user`, as `role`, is handed:
/// the approved entries of its three scopes, the most recently approved
/// first, as many as `[memory] max_entries_at_start` and
/// `max_bytes_at_start` allow (an entry that would pass the byte bound ends
/// the list, so what is handed is always the newest). A bank that cannot be
/// read gives nothing (logged): the session still starts.
pub(crate) fn start_entries(
    storage: &dyn Storage,
    config: &MemoryConfig,
    project: &str,
    user: &str,
    role: Role,
) -> Vec<ContextEntry> {
    if config.max_entries_at_start == 0 {
        return Vec::new();
    }
    // The newest of each scope (through the index: never the whole bank),
    // then the newest of those.
    let most = usize::try_from(config.max_entries_at_start).unwrap_or(usize::MAX);
    let mut approved = Vec::new();
    for scope in Scope::of_session(project, user, role) {
        let prefix = scope_prefix(&scope);
        for found in walk(storage, &prefix, None).take(most) {
            match found {
                Ok((_, entry)) => approved.push(entry),
                Err(e) => {
                    tracing::warn!(project, error = %e, "cannot read the memory bank: the session starts without it");
                    return Vec::new();
                }
            }
        }
    }
    approved.sort_by(|a, b| {
        b.approved_at_ms()
            .cmp(&a.approved_at_ms())
            .then_with(|| b.id.cmp(&a.id))
    });
    let mut handed = Vec::new();
    let mut bytes = 0u64;
    for entry in approved {
        let len = entry.text.len() as u64;
        if handed.len() as u64 >= config.max_entries_at_start
            || bytes + len > config.max_bytes_at_start
        {
            break;
        }
        bytes += len;
        handed.push(entry.as_context());
    }
    handed
}
