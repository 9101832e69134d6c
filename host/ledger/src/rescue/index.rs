//! The rescues' indexes: how a listing, the report, the dashboard and its
//! once-a-second live check read the rescues they show, not every rescue.
//!
//! Why: rescues are opened for stuck sessions and kept for good, so an
//! agent that keeps getting stuck grows the `rescues` bucket without bound;
//! anything that decoded it whole per request (every listing, every second
//! of an open dashboard) would cost what it ever caused (threat 49).
//!
//! What (every value is empty; the key says it all):
//!
//! - `rescues_by_open`: `<newest first>/<id>`, every rescue, the latest
//!   opened first (`<newest first>` is `u64::MAX - opened_at_ms`, 20
//!   digits): listings, and the report, which stops at its first day;
//! - `rescues_open`: the same keys, while the rescue is unresolved.
//!
//! An entry is a hint the rescue's record confirms (see `crate::newest`):
//! written before the record of a new rescue, removed after the record that
//! resolves it. A data dir written before the indexes is indexed once, at
//! first use, a page at a time; a marker in `rescues_meta` says it was done.

use std::sync::atomic::Ordering;

use super::{BUCKET, Rescue, RescueError, Rescues};
use crate::newest::{id_of, newest_first};
use crate::storage::{PAGE, Storage, StorageError, pages};

pub(crate) const BY_OPEN: &str = "rescues_by_open";
pub(crate) const OPEN: &str = "rescues_open";
const META: &str = "rescues_meta";
const INDEXED: &str = "indexes";
const VERSION: &[u8] = b"1";

/// The key of `rescue` in both indexes.
pub(crate) fn key_of(rescue: &Rescue) -> String {
    format!("{}/{}", newest_first(rescue.opened_at_ms), rescue.id)
}

/// The record of rescue `id`, if there is one (an unreadable one is logged
/// and passed over: one damaged record does not hide the others).
pub(crate) fn record(storage: &dyn Storage, id: &str) -> Result<Option<Rescue>, StorageError> {
    let Some(bytes) = storage.get(BUCKET, id)? else {
        return Ok(None);
    };
    match serde_json::from_slice::<Rescue>(&bytes) {
        Ok(r) => Ok(Some(r)),
        Err(e) => {
            tracing::warn!(rescue = %id, error = %e, "unreadable rescue record skipped");
            Ok(None)
        }
    }
}

impl Rescues {
    /// Indexes a rescue about to be opened, before its record.
    pub(super) fn index_new(&self, rescue: &Rescue) -> Result<(), StorageError> {
        let key = key_of(rescue);
        self.storage.put(BY_OPEN, &key, b"")?;
        self.storage.put(OPEN, &key, b"")
    }

    /// Removes the entries of a rescue whose record is gone (an opening
    /// whose log append failed) or that is resolved (`open_only`). A
    /// failure leaves a stale hint the readers pass over; it is logged.
    pub(super) fn unindex(&self, rescue: &Rescue, open_only: bool) {
        let key = key_of(rescue);
        let buckets: &[&str] = if open_only { &[OPEN] } else { &[OPEN, BY_OPEN] };
        for bucket in buckets {
            if let Err(e) = self.storage.delete(bucket, &key) {
                tracing::warn!(rescue = %rescue.id, error = %e, "could not update the rescue index; its readers pass the stale entry over");
            }
        }
    }

    /// The rescue an entry of `bucket` stands for, when its record confirms
    /// it. An open entry whose rescue was resolved is removed on the way.
    pub(super) fn confirmed(
        &self,
        bucket: &str,
        key: &str,
    ) -> Result<Option<Rescue>, StorageError> {
        let Some(rescue) = record(&*self.storage, id_of(key))? else {
            return Ok(None);
        };
        if key_of(&rescue) != key {
            return Ok(None);
        }
        if bucket == OPEN && rescue.outcome.is_some() {
            self.storage.delete(OPEN, key)?;
            return Ok(None);
        }
        Ok(Some(rescue))
    }

    /// Indexes a data dir written before the rescue indexes, once: every
    /// record, a page at a time. Until it is done, every reader waits.
    pub(super) fn ensure_indexed(&self) -> Result<(), RescueError> {
        if self.indexed.load(Ordering::Acquire) {
            return Ok(());
        }
        let _one = self.indexing.lock().unwrap_or_else(|p| p.into_inner());
        if self.indexed.load(Ordering::Acquire) {
            return Ok(());
        }
        if self.storage.get(META, INDEXED)?.as_deref() != Some(VERSION) {
            let mut indexed = 0usize;
            for entry in pages(&*self.storage, BUCKET, "", PAGE) {
                let (key, bytes) = entry?;
                match serde_json::from_slice::<Rescue>(&bytes) {
                    Ok(rescue) => {
                        let k = key_of(&rescue);
                        self.storage.put_unsynced(BY_OPEN, &k, b"")?;
                        if rescue.outcome.is_none() {
                            self.storage.put_unsynced(OPEN, &k, b"")?;
                        }
                        indexed += 1;
                    }
                    Err(e) => {
                        tracing::warn!(key, error = %e, "unreadable rescue record left out of the index")
                    }
                }
            }
            // Durable, and after the entries: a crash may lose the marker
            // (the indexing runs again, changing nothing), never keep it
            // without them.
            self.storage.put(META, INDEXED, VERSION)?;
            if indexed > 0 {
                tracing::info!(
                    indexed,
                    "indexed the rescues of a data dir written before the rescue indexes"
                );
            }
        }
        self.indexed.store(true, Ordering::Release);
        Ok(())
    }
}
