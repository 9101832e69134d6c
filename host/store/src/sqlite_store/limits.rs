//! The sizes the SQLite store takes: an entry, a value, a key or a name
//! over [`MAX_ITEM_BYTES`] is refused before it is queued, with an error
//! naming it (cut to a length fit for a message).

use crate::StorageError;

/// The largest entry, value, key or name the store takes. SQLite refuses a
/// string or blob over 10^9 bytes (`SQLITE_MAX_LENGTH`), and a row over that
/// too; refusing earlier keeps one oversized write from failing its whole
/// batch, and with it the store.
const MAX_ITEM_BYTES: usize = 999_000_000;

/// A bucket name and key within the sizes SQLite takes.
pub(super) fn check_key_size(bucket: &str, key: &str) -> Result<(), StorageError> {
    check_size(bucket.len(), || {
        format!("bucket name `{}`", shorten(bucket))
    })?;
    check_size(key.len(), || {
        format!("a key of bucket `{}`", shorten(bucket))
    })
}

/// A value to store under `key` in `bucket` within the size SQLite takes.
pub(super) fn check_value_size(bucket: &str, key: &str, value: &[u8]) -> Result<(), StorageError> {
    check_size(value.len(), || {
        format!(
            "the value of key `{}` in bucket `{}`",
            shorten(key),
            shorten(bucket)
        )
    })
}

pub(super) fn check_size(len: usize, what: impl FnOnce() -> String) -> Result<(), StorageError> {
    if len > MAX_ITEM_BYTES {
        return Err(StorageError::Io(format!(
            "{} is {len} bytes, over the SQLite store's limit of {MAX_ITEM_BYTES}: keep large data outside the store and store a reference to it",
            what()
        )));
    }
    Ok(())
}

/// `name` cut to a length fit for an error message.
pub(super) fn shorten(name: &str) -> String {
    const SHOWN: usize = 60;
    match name.char_indices().nth(SHOWN) {
        Some((end, _)) => format!("{}...", &name[..end]),
        None => name.to_string(),
    }
}
