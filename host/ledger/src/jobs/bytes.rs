//! The bytes each agent principal's jobs keep in the store: how `[quotas]
//! job_bytes_per_principal` holds, across the hosts that share one store.
//!
//! Why: an agent that loops `job_spawn` with large inputs or outputs grows
//! the store by gigabytes until retention removes its jobs (threat 49). The
//! bytes of its jobs' bodies (inputs, outputs, captured output; see
//! `JobSummary::stored_bytes`) are counted against it, live and finished,
//! and a spawn at or past its quota is refused.
//!
//! What: bucket `job_bytes`, a key per principal holding its count. Every
//! change is a compare-and-set over the value read ([`Storage::put_if`]),
//! so two hosts counting for one principal at once both count. Bytes are
//! counted before the body is written and given back after it is removed,
//! so a crash in between leaves the count above what is stored, never
//! below: the quota errs toward refusing, never toward letting an agent
//! past it.

use serde::{Deserialize, Serialize};

use super::records::JobError;
use crate::storage::{Storage, StorageError, Swap};

const BUCKET: &str = "job_bytes";

/// Compare-and-set rounds a change tries before giving up.
const TRIES: usize = 32;

#[derive(Default, Serialize, Deserialize)]
struct Count {
    bytes: u64,
}

fn read(storage: &dyn Storage, principal: &str) -> Result<(Option<Vec<u8>>, u64), JobError> {
    let bytes = storage.get(BUCKET, principal)?;
    let count = match &bytes {
        None => 0,
        Some(b) => {
            serde_json::from_slice::<Count>(b)
                .map_err(|e| {
                    JobError::Storage(StorageError::Corrupt(format!(
                        "the job bytes of `{principal}` do not decode: {e}"
                    )))
                })?
                .bytes
        }
    };
    Ok((bytes, count))
}

/// Counts `n` more bytes for `principal`, unless it already holds `limit`
/// or more: then `Ok(Err(held))` and nothing is counted. Without a limit
/// the bytes are always counted (a result of work already acknowledged).
pub(super) fn charge(
    storage: &dyn Storage,
    principal: &str,
    n: u64,
    limit: Option<u64>,
) -> Result<Result<u64, u64>, JobError> {
    for _ in 0..TRIES {
        let (read, held) = read(storage, principal)?;
        if limit.is_some_and(|limit| held >= limit) {
            return Ok(Err(held));
        }
        let now = held.saturating_add(n);
        let value = serde_json::to_vec(&Count { bytes: now }).unwrap_or_default();
        if storage.put_if(BUCKET, principal, Swap::new(read.as_deref(), Some(&value)))? {
            return Ok(Ok(now));
        }
    }
    Err(busy(principal))
}

/// Gives back `n` bytes of `principal`'s (their body was removed).
pub(super) fn give_back(storage: &dyn Storage, principal: &str, n: u64) -> Result<(), JobError> {
    if n == 0 {
        return Ok(());
    }
    for _ in 0..TRIES {
        let (read, held) = read(storage, principal)?;
        let Some(read) = read else { return Ok(()) };
        let now = held.saturating_sub(n);
        let value =
            (now > 0).then(|| serde_json::to_vec(&Count { bytes: now }).unwrap_or_default());
        if storage.put_if(BUCKET, principal, Swap::new(Some(&read), value.as_deref()))? {
            return Ok(());
        }
    }
    Err(busy(principal))
}

/// The bytes `principal`'s jobs keep, as the store counts them.
pub(super) fn held(storage: &dyn Storage, principal: &str) -> Result<u64, JobError> {
    Ok(read(storage, principal)?.1)
}

fn busy(principal: &str) -> JobError {
    JobError::Storage(StorageError::Io(format!(
        "the job bytes of `{principal}` changed under {TRIES} updates in a row: the hosts sharing the store keep counting them; try again"
    )))
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;

    #[test]
    fn hosts_counting_at_once_all_count_and_the_limit_refuses_once_reached() {
        let dir = tempfile::tempdir().unwrap();
        let storage: Arc<dyn Storage> = Arc::new(
            crate::storage::SledStore::open(dir.path(), crate::storage::Durability::Flush).unwrap(),
        );
        std::thread::scope(|s| {
            for _ in 0..8 {
                let storage = storage.clone();
                s.spawn(move || {
                    for _ in 0..10 {
                        charge(&*storage, "agent", 3, None).unwrap().unwrap();
                    }
                });
            }
        });
        assert_eq!(held(&*storage, "agent").unwrap(), 240);
        // Below the limit a charge passes it; at it, the next is refused.
        assert_eq!(charge(&*storage, "agent", 100, Some(241)).unwrap(), Ok(340));
        assert_eq!(charge(&*storage, "agent", 1, Some(241)).unwrap(), Err(340));
        give_back(&*storage, "agent", 340).unwrap();
        assert_eq!(held(&*storage, "agent").unwrap(), 0);
        assert_eq!(storage.get(BUCKET, "agent").unwrap(), None);
        assert_eq!(held(&*storage, "other").unwrap(), 0);
    }
}
