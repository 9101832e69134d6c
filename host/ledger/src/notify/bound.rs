//! A target's outbox, bounded (threat 57): past `quotas.outbox_per_target`
//! entries waiting for a target (or kept as failed for it), the oldest are
//! dropped, counted and logged. The count is kept in memory once read from
//! the store, and read again (at most every [`RECOUNT_MS`]) when it says
//! the outbox is full, since other hosts on a shared store deliver and drop
//! entries too; the store decides what is dropped, oldest key first.
//!
//! Why the oldest and not the new: a notification says what is happening
//! now (an approval waiting, a budget crossed); when a receiver has been
//! down long enough for thousands to wait, the newest are the ones still
//! worth reading, and refusing them would let whatever filled the outbox
//! first silence everything after it. Either way an agent that floods can
//! push others out, so every drop is counted per target in the store
//! (bucket `notify_dropped`, kept across restarts and shared by the hosts
//! of one store): `glovebox notify status`, the dashboard's notify page and
//! the metric `glovebox_notify_dropped_total` show it.

use std::collections::BTreeMap;
use std::sync::PoisonError;

use serde::{Deserialize, Serialize};

use super::{OUTBOX_BUCKET, Outbox, decode};
use crate::storage::{StorageError, Swap};

/// The bucket of the drop counts, by target.
pub const DROPPED_BUCKET: &str = "notify_dropped";

/// A target's drops so far, as kept in [`DROPPED_BUCKET`].
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Dropped {
    /// Entries dropped because the target's outbox was full.
    pub dropped: u64,
    /// The last time one was.
    pub last_at_ms: u64,
}

/// A full outbox is counted again from the store, at most this often:
/// other hosts on a shared store deliver (and drop) entries too.
pub(super) const RECOUNT_MS: u64 = 60_000;

/// How many entries a target's outbox holds, as this process knows it.
pub(super) struct Count {
    pub(super) entries: u64,
    pub(super) counted_at_ms: u64,
}

impl Outbox {
    /// After an entry for `target` went into `bucket` (the outbox, or the
    /// failed ones): past the cap, drops the oldest entries there (not those
    /// a delivery holds a claim on), counts and logs it.
    pub(super) fn bound(&self, bucket: &'static str, target: &str) -> Result<(), StorageError> {
        let cap = self.cap.value;
        let now = self.clock_ms();
        let over = {
            let mut counts = self.counts.lock().unwrap_or_else(PoisonError::into_inner);
            let key = (bucket, target.to_string());
            let count = match counts.get_mut(&key) {
                Some(count) => {
                    count.entries += 1;
                    count
                }
                None => counts.entry(key).or_insert(Count {
                    entries: self.count(bucket, target)?,
                    counted_at_ms: now,
                }),
            };
            if count.entries > cap && now.saturating_sub(count.counted_at_ms) >= RECOUNT_MS {
                count.entries = self.count(bucket, target)?;
                count.counted_at_ms = now;
            }
            count.entries.saturating_sub(cap)
        };
        if over == 0 {
            return Ok(());
        }
        let dropped = self.drop_oldest(bucket, target, over, now)?;
        if dropped == 0 {
            return Ok(());
        }
        self.forget(bucket, target, dropped);
        let which = if bucket == OUTBOX_BUCKET {
            "waiting"
        } else {
            "failed"
        };
        let total = self.count_dropped(target, dropped, now)?;
        tracing::warn!(
            target = %target,
            dropped,
            dropped_in_all = total,
            "notify: the outbox of target `{target}` is full ({}): dropped its {dropped} oldest {which} notifications",
            self.cap
        );
        Ok(())
    }

    /// Adds `n` to `target`'s drops in the store (a compare-and-set, so the
    /// hosts of a shared store add up); the total.
    fn count_dropped(&self, target: &str, n: u64, now_ms: u64) -> Result<u64, StorageError> {
        loop {
            let old = self.storage.get(DROPPED_BUCKET, target)?;
            let mut count: Dropped = old
                .as_deref()
                .and_then(|bytes| serde_json::from_slice(bytes).ok())
                .unwrap_or_default();
            count.dropped = count.dropped.saturating_add(n);
            count.last_at_ms = count.last_at_ms.max(now_ms);
            let new = serde_json::to_vec(&count)
                .map_err(|e| StorageError::Io(format!("cannot encode a drop count: {e}")))?;
            if self.storage.put_if(
                DROPPED_BUCKET,
                target,
                Swap::new(old.as_deref(), Some(&new)),
            )? {
                return Ok(count.dropped);
            }
        }
    }

    /// Every target's drops so far, from the store.
    pub fn dropped(&self) -> Result<BTreeMap<String, Dropped>, StorageError> {
        let mut out = BTreeMap::new();
        for entry in crate::storage::pages(
            self.storage.as_ref(),
            DROPPED_BUCKET,
            "",
            crate::storage::PAGE,
        ) {
            let (target, bytes) = entry?;
            if let Ok(count) = serde_json::from_slice::<Dropped>(&bytes) {
                out.insert(target, count);
            }
        }
        Ok(out)
    }

    /// `target`'s entries in `bucket`, counted from the store a page at a time.
    fn count(&self, bucket: &str, target: &str) -> Result<u64, StorageError> {
        let mut n = 0;
        for entry in crate::storage::pages(
            self.storage.as_ref(),
            bucket,
            &format!("{target}/"),
            crate::storage::PAGE,
        ) {
            entry?;
            n += 1;
        }
        Ok(n)
    }

    /// Deletes up to `n` of `target`'s oldest entries that no delivery
    /// holds a live claim on; how many it deleted.
    fn drop_oldest(
        &self,
        bucket: &str,
        target: &str,
        n: u64,
        now_ms: u64,
    ) -> Result<u64, StorageError> {
        let mut dropped = 0;
        for entry in crate::storage::pages(
            self.storage.as_ref(),
            bucket,
            &format!("{target}/"),
            crate::storage::PAGE,
        ) {
            if dropped == n {
                break;
            }
            let (key, bytes) = entry?;
            let claimed = decode(&key, &bytes)
                .and_then(|e| e.claimed_until_ms)
                .is_some_and(|until| until > now_ms);
            if claimed {
                continue;
            }
            self.storage.delete(bucket, &key)?;
            dropped += 1;
        }
        Ok(dropped)
    }

    /// `n` of `target`'s entries left `bucket`.
    pub(super) fn forget(&self, bucket: &'static str, target: &str, n: u64) {
        let mut counts = self.counts.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(count) = counts.get_mut(&(bucket, target.to_string())) {
            count.entries = count.entries.saturating_sub(n);
        }
    }
}
