//! Indexes whose keys sort the newest first, and the pages read of them.
//!
//! Why: the rescues and the context index only grow (an agent that keeps
//! getting stuck opens rescue after rescue; the index keeps retired entries
//! for the record). A listing, a report or a session start that decoded the
//! whole bucket would cost what agents ever caused (threat 49). Their
//! indexes hold empty-valued (or tiny) keys `<prefix><newest first>/<id>`,
//! so the store's own key order is the listing's order, and a page reads
//! the keys it shows and their records, nothing more.
//!
//! An entry is a hint its record confirms (the `confirm` callback of
//! [`page_of`]): it is written before the record it announces and removed
//! after, so a crash leaves a hint nobody confirms, never a record nobody
//! can find.

use crate::page::{Page, PageRequest};
use crate::storage::{PAGE, Storage, StorageError};

/// Index keys one page examines at most: a filter few entries pass (a
/// search) answers a short page and a cursor to go on, rather than read
/// the whole index at once.
pub(crate) const SCAN_BUDGET: usize = 2_000;

/// `ms` as a key part that sorts the newest first (20 digits).
pub(crate) fn newest_first(ms: u64) -> String {
    format!("{:020}", u64::MAX - ms)
}

/// The time a key part made by [`newest_first`] stands for.
pub(crate) fn stamp_of(part: &str) -> Option<u64> {
    (part.len() == 20)
        .then(|| part.parse::<u64>().ok())
        .flatten()
        .map(|n| u64::MAX - n)
}

/// The id an index key ends with.
pub(crate) fn id_of(key: &str) -> &str {
    key.rsplit('/').next().unwrap_or(key)
}

/// Whether `cursor` is one [`page_of`] hands out: `<newest first>/<id>`.
pub(crate) fn valid_cursor(cursor: &str) -> bool {
    match cursor.split_once('/') {
        Some((stamp, id)) => stamp_of(stamp).is_some() && !id.is_empty() && !id.contains('/'),
        None => false,
    }
}

/// One page of the keys of `bucket` under `prefix` (newest first), after
/// the page's cursor (checked by the caller with [`valid_cursor`]), of the
/// entries `confirm` turns into items (`None`: a hint its record does not
/// confirm, passed over). Examines at most [`SCAN_BUDGET`] keys.
pub(crate) fn page_of<T, E: From<StorageError>>(
    storage: &dyn Storage,
    bucket: &str,
    prefix: &str,
    page: &PageRequest,
    mut confirm: impl FnMut(&str, &[u8]) -> Result<Option<T>, E>,
) -> Result<Page<T>, E> {
    let mut after = page.cursor.as_ref().map(|c| format!("{prefix}{c}"));
    let want = page.size();
    let mut items = Vec::new();
    let mut examined = 0;
    loop {
        let batch = (want - items.len() + 1).clamp(16, PAGE);
        let entries = storage.scan_page(bucket, prefix, after.as_deref(), batch)?;
        let more = entries.len() == batch;
        let mut rest = entries.into_iter().peekable();
        while let Some((key, value)) = rest.next() {
            examined += 1;
            if let Some(item) = confirm(&key, &value)? {
                items.push(item);
            }
            let full = items.len() == want || examined >= SCAN_BUDGET;
            if full {
                let next = (more || rest.peek().is_some())
                    .then(|| key.strip_prefix(prefix).map(str::to_string))
                    .flatten();
                return Ok(Page {
                    items,
                    next_cursor: next,
                });
            }
            after = Some(key);
        }
        if !more {
            return Ok(Page::last(items));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_newest_first_stamp_reads_back_and_cursors_are_checked() {
        assert_eq!(
            stamp_of(&newest_first(1_700_000_000_000)),
            Some(1_700_000_000_000)
        );
        assert!(newest_first(2) < newest_first(1));
        assert!(valid_cursor(&format!("{}/r-abc", newest_first(5))));
        assert!(!valid_cursor("12/r-abc"));
        assert!(!valid_cursor(&format!("{}/a/b", newest_first(5))));
        assert!(!valid_cursor(&format!("{}/", newest_first(5))));
    }
}
