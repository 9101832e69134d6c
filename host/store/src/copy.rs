//! Copying everything one store holds into another, through the trait: how
//! backups are made from, and restored into, any backend.

use crate::{Storage, StorageError};

/// What a copy moved.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct CopyStats {
    pub streams: u64,
    pub entries: u64,
    pub buckets: u64,
    pub keys: u64,
}

/// Entries read and appended at a time.
const BATCH: usize = 1024;

/// Copies every stream and every bucket of `from` into `to`, which must hold
/// none of them yet (an append conflict says so). Streams keep their
/// sequence numbers. A stream of `from` that does not read whole fails the
/// copy with `Damaged`: a backup never silently drops part of a log.
pub fn copy_all(from: &dyn Storage, to: &dyn Storage) -> Result<CopyStats, StorageError> {
    let mut stats = CopyStats::default();
    for stream in from.streams()? {
        let last = from.last_seq(&stream)?;
        let mut next = 1;
        while next <= last {
            let chunk = from.read(&stream, next, BATCH)?;
            let Some(&(first, _)) = chunk.first() else {
                return Err(StorageError::Damaged {
                    stream,
                    seq: next,
                    reason: format!("it is missing (the stream ends at {last})"),
                });
            };
            if first != next {
                return Err(StorageError::Damaged {
                    stream,
                    seq: next,
                    reason: "it is missing".to_string(),
                });
            }
            let entries: Vec<Vec<u8>> = chunk.into_iter().map(|(_, e)| e).collect();
            let n = entries.len() as u64;
            to.append(&stream, next - 1, &entries)?;
            next += n;
            stats.entries += n;
        }
        stats.streams += 1;
    }
    for bucket in from.buckets()? {
        // A page at a time: a big bucket is never one Vec.
        for entry in crate::pages(from, &bucket, "", crate::PAGE) {
            let (key, value) = entry?;
            to.put(&bucket, &key, &value)?;
            stats.keys += 1;
        }
        stats.buckets += 1;
    }
    Ok(stats)
}
