//! A stream's records in the `streams` tree: their keys (the stream's name,
//! a NUL, the sequence of the record's first entry), the head read from the
//! last of them, the error for a stream that does not read back whole, and
//! the append, serialized per stream by a striped lock (see the module docs
//! of `sled_store`).

use std::hash::{Hash, Hasher};
use std::sync::{MutexGuard, PoisonError};

use super::{SledStore, sled_error};
use crate::StorageError;

/// Append lock stripes: enough that writers of different streams rarely
/// share one; each is held only for a head lookup and an in-memory insert.
pub(super) const APPEND_STRIPES: usize = 64;

/// The key prefix of a stream's entries: its name and a NUL.
pub(super) fn stream_prefix(stream: &str) -> Result<Vec<u8>, StorageError> {
    crate::check_stream_name(stream)?;
    let mut prefix = Vec::with_capacity(stream.len() + 9);
    prefix.extend_from_slice(stream.as_bytes());
    prefix.push(0);
    Ok(prefix)
}

pub(super) fn entry_key(prefix: &[u8], seq: u64) -> Vec<u8> {
    let mut key = Vec::with_capacity(prefix.len() + 8);
    key.extend_from_slice(prefix);
    key.extend_from_slice(&seq.to_be_bytes());
    key
}

/// The first sequence of the record under stream key `key`; `None` when the
/// key does not end in an 8-byte sequence.
pub(super) fn key_seq(prefix: &[u8], key: &[u8]) -> Option<u64> {
    let raw: [u8; 8] = key.get(prefix.len()..)?.try_into().ok()?;
    Some(u64::from_be_bytes(raw))
}

/// The record of `stream` starting at `first` does not decode.
pub(super) fn malformed(stream: &str, first: u64, what: crate::batch::RecordError) -> StorageError {
    StorageError::damaged(
        stream,
        first,
        format!("the stored record holding it is malformed: {what}"),
    )
}

/// The first key after all keys of the stream with this prefix.
pub(super) fn prefix_end(prefix: &[u8]) -> Vec<u8> {
    let mut end = prefix.to_vec();
    // The NUL that ends the prefix becomes 0x01.
    if let Some(last) = end.last_mut() {
        *last = 1;
    }
    end
}

/// The last sequence of the record of `stream` starting at `first` with
/// `count` (>= 1) entries.
pub(super) fn last_seq_of(stream: &str, first: u64, count: u64) -> Result<u64, StorageError> {
    first.checked_add(count - 1).ok_or_else(|| {
        malformed(
            stream,
            first,
            crate::batch::RecordError::PastLastSequence { count },
        )
    })
}

impl SledStore {
    /// The last sequence of `stream` (whose key prefix is `prefix`): the first
    /// sequence of its last record plus that record's entries, less one.
    pub(super) fn head(&self, stream: &str, prefix: &[u8]) -> Result<u64, StorageError> {
        let end = prefix_end(prefix);
        let Some(last) = self.streams.range(prefix..&end[..]).next_back() else {
            return Ok(0);
        };
        let (key, value) = last.map_err(sled_error)?;
        let Some(first) = key_seq(prefix, &key) else {
            return Err(self.bad_key(stream, prefix, &key));
        };
        let count = crate::batch::count(&value).map_err(|what| malformed(stream, first, what))?;
        last_seq_of(stream, first, count)
    }

    /// The error for key `key` of `stream`, which does not end in a sequence:
    /// the stream is damaged from just after the nearest record before the
    /// key that reads, or from 1 when there is none.
    pub(super) fn bad_key(&self, stream: &str, prefix: &[u8], key: &[u8]) -> StorageError {
        let reason = format!(
            "the stored record key in its place is malformed: {} bytes follow the stream name, not an 8-byte sequence",
            key.len() - prefix.len()
        );
        let mut upper = key.to_vec();
        let seq = loop {
            let Some(item) = self.streams.range(prefix.to_vec()..upper).next_back() else {
                break 1;
            };
            let (key, value) = match item {
                Ok(item) => item,
                Err(e) => return sled_error(e),
            };
            let Some(first) = key_seq(prefix, &key) else {
                upper = key.to_vec();
                continue;
            };
            // A record that does not decode is where the damage begins.
            break match crate::batch::count(&value) {
                Ok(count) => first.saturating_add(count),
                Err(_) => first,
            };
        };
        StorageError::damaged(stream, seq, reason)
    }

    fn append_lock(&self, stream: &str) -> MutexGuard<'_, ()> {
        let mut hasher = std::collections::hash_map::DefaultHasher::new();
        stream.hash(&mut hasher);
        let stripe = (hasher.finish() % APPEND_STRIPES as u64) as usize;
        // It guards no data, so a panic while it was held left nothing broken.
        self.append_locks[stripe]
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    /// The append itself, applied in sled's memory (and its log's buffers);
    /// durable once a flush that started after it completes.
    pub(super) fn apply_append(
        &self,
        stream: &str,
        expected_last: u64,
        entries: &[Vec<u8>],
    ) -> Result<u64, StorageError> {
        self.commit.check()?;
        let prefix = stream_prefix(stream)?;
        let new_last = crate::last_after_append(stream, expected_last, entries.len(), u64::MAX)?;
        let record = match entries {
            [] => None,
            _ => Some(crate::batch::encode(entries)?),
        };
        {
            let _serialized = self.append_lock(stream);
            let actual = self.head(stream, &prefix)?;
            if actual != expected_last {
                return Err(StorageError::Conflict {
                    stream: stream.to_string(),
                    expected: expected_last,
                    actual,
                });
            }
            // An empty append only confirms the head (a durable one still
            // waits for a flush: see `append`).
            if let Some(record) = record {
                self.streams
                    .insert(entry_key(&prefix, expected_last + 1), record)
                    .map_err(|e| self.write_failed(e))?;
            }
        }
        Ok(new_last)
    }
}
