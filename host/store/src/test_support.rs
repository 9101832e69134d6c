//! What the store's own tests share: the storage contract's tests
//! ([`crate::conformance`]) and each backend's tests of its own layout.

use crate::Storage;
#[cfg(test)]
use crate::StorageError;

/// Entries holding `texts`.
pub(crate) fn entries(texts: &[&str]) -> Vec<Vec<u8>> {
    texts.iter().map(|t| t.as_bytes().to_vec()).collect()
}

/// The entries [`Storage::read`] returns, without their sequences.
pub(crate) fn read_entries(
    store: &impl Storage,
    stream: &str,
    from: u64,
    max: usize,
) -> Vec<Vec<u8>> {
    store
        .read(stream, from, max)
        .unwrap()
        .into_iter()
        .map(|(_, e)| e)
        .collect()
}

/// The stream and position of a `Damaged` error, and its reason.
#[cfg(test)]
pub(crate) fn damage_of(
    result: Result<impl std::fmt::Debug, StorageError>,
) -> (String, u64, String) {
    match result {
        Err(StorageError::Damaged {
            stream,
            seq,
            reason,
        }) => (stream, seq, reason),
        other => panic!("expected Damaged, got {other:?}"),
    }
}

/// What the damage tests start from: stream `s` holding `a` to `e` from
/// three appends (`a b`, `c d`, `e`: entries 1 to 5, records starting at 1,
/// 3 and 5), and stream `t` holding `x`, which the damage to `s` must leave
/// alone.
#[cfg(test)]
pub(crate) fn append_s_and_t(store: &impl Storage) {
    store.append("s", 0, &entries(&["a", "b"])).unwrap();
    store.append("s", 2, &entries(&["c", "d"])).unwrap();
    store.append("s", 4, &entries(&["e"])).unwrap();
    store.append("t", 0, &entries(&["x"])).unwrap();
}
