//! Places per principal, kept in the store: how a per-principal quota on
//! records that wait for a human (`[quotas] approvals_per_principal`,
//! `memory_proposals_per_principal`) holds across the hosts that share one
//! store (`[storage] backend = "nats"`).
//!
//! Why: counting the waiting records by walking them costs a walk per
//! request, and a count read on one host and a record written after it
//! lets two hosts both take the last place. The count has to be one value
//! every host reads, changed in one step against every other host.
//!
//! What: a key per principal in a bucket of the caller's, holding the ids
//! of its waiting records and when each place was taken. Taking a place is
//! a compare-and-set over the value read ([`Storage::put_if`]): of two hosts
//! taking the last place, one gets it and the other reads again and is
//! refused. A place is given back when its record is settled (best effort);
//! one left behind (a host that died between the two writes) is dropped at
//! the next take, once the caller's `held` says its record no longer waits.
//! (The jobs' places, `jobs/places.rs`, are the same idea over live jobs.)

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::storage::{Storage, StorageError, Swap};

/// A place whose record is not stored yet is kept this long: the writer
/// that took it stores the record next, or failed (and gives it back) or died.
pub(crate) const UNSTORED_GRACE_MS: u64 = 60_000;

/// Compare-and-set rounds a take tries before giving up.
const TAKE_TRIES: usize = 32;

/// One principal's places: record id → when its place was taken (unix millis).
#[derive(Default, Serialize, Deserialize)]
struct Held {
    ids: BTreeMap<String, u64>,
}

/// The places of one kind of waiting record, one key per principal.
pub(crate) struct Tally<'a> {
    pub storage: &'a dyn Storage,
    pub bucket: &'static str,
}

impl Tally<'_> {
    /// Takes a place for record `id` of `principal` at `now_ms`, unless the
    /// principal already holds `limit`: then `Ok(Err(count))`, and nothing
    /// is written. `held(id, taken_at)` says whether a place counted so far
    /// still holds (its record still waits, or is not stored yet); the
    /// others are dropped. Taking a place `id` holds already is a no-op.
    pub fn take(
        &self,
        principal: &str,
        id: &str,
        limit: u64,
        now_ms: u64,
        held: impl Fn(&str, u64) -> Result<bool, StorageError>,
    ) -> Result<Result<(), u64>, StorageError> {
        for _ in 0..TAKE_TRIES {
            let read = self.storage.get(self.bucket, principal)?;
            let mut places = decode(self.bucket, principal, read.as_deref())?;
            if places.ids.contains_key(id) {
                return Ok(Ok(()));
            }
            let mut gone = Vec::new();
            for (other, &taken_at) in &places.ids {
                if !held(other, taken_at)? {
                    gone.push(other.clone());
                }
            }
            for other in gone {
                places.ids.remove(&other);
            }
            let count = places.ids.len() as u64;
            if count >= limit {
                return Ok(Err(count));
            }
            places.ids.insert(id.to_string(), now_ms);
            let value = encode(&places)?;
            if self.storage.put_if(
                self.bucket,
                principal,
                Swap::new(read.as_deref(), Some(&value)),
            )? {
                return Ok(Ok(()));
            }
        }
        Err(StorageError::Io(format!(
            "the places of `{principal}` in `{}` changed under {TAKE_TRIES} takes in a row: the hosts sharing the store keep writing them; try again",
            self.bucket
        )))
    }

    /// Gives back record `id`'s place of `principal` (it was settled, or
    /// never stored). A place left behind is dropped at a later take anyway.
    pub fn give_back(&self, principal: &str, id: &str) -> Result<(), StorageError> {
        for _ in 0..TAKE_TRIES {
            let Some(read) = self.storage.get(self.bucket, principal)? else {
                return Ok(());
            };
            let mut places = decode(self.bucket, principal, Some(&read))?;
            if places.ids.remove(id).is_none() {
                return Ok(());
            }
            let value = if places.ids.is_empty() {
                None
            } else {
                Some(encode(&places)?)
            };
            if self.storage.put_if(
                self.bucket,
                principal,
                Swap::new(Some(&read), value.as_deref()),
            )? {
                return Ok(());
            }
        }
        Ok(())
    }

    /// How many places `principal` holds, as the store says (stale ones included).
    #[cfg(test)]
    pub fn count(&self, principal: &str) -> usize {
        let read = self.storage.get(self.bucket, principal).ok().flatten();
        decode(self.bucket, principal, read.as_deref()).map_or(0, |p| p.ids.len())
    }
}

fn decode(bucket: &str, key: &str, bytes: Option<&[u8]>) -> Result<Held, StorageError> {
    match bytes {
        None => Ok(Held::default()),
        Some(bytes) => serde_json::from_slice(bytes).map_err(|e| {
            StorageError::Corrupt(format!(
                "the places `{key}` in `{bucket}` do not decode: {e}"
            ))
        }),
    }
}

fn encode(places: &Held) -> Result<Vec<u8>, StorageError> {
    serde_json::to_vec(places).map_err(|e| StorageError::Io(format!("cannot encode places: {e}")))
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;

    #[test]
    fn the_last_place_goes_to_one_taker_and_settled_records_free_theirs() {
        let dir = tempfile::tempdir().unwrap();
        let storage: Arc<dyn Storage> = Arc::new(
            crate::storage::SledStore::open(dir.path(), crate::storage::Durability::Flush).unwrap(),
        );
        let tally = Tally {
            storage: &*storage,
            bucket: "test_places",
        };
        let waiting = |id: &str, _: u64| Ok(id != "settled");
        assert_eq!(tally.take("a", "one", 2, 1, waiting).unwrap(), Ok(()));
        assert_eq!(tally.take("a", "one", 2, 1, waiting).unwrap(), Ok(()));
        // Of 8 racers for the last place, exactly one gets it.
        let winners: usize = std::thread::scope(|s| {
            let handles: Vec<_> = (0..8)
                .map(|i| {
                    let storage = storage.clone();
                    s.spawn(move || {
                        let tally = Tally {
                            storage: &*storage,
                            bucket: "test_places",
                        };
                        let id = format!("r{i}");
                        tally.take("a", &id, 2, 1, waiting).unwrap().is_ok() as usize
                    })
                })
                .collect();
            handles.into_iter().map(|h| h.join().unwrap()).sum()
        });
        assert_eq!(winners, 1);
        assert_eq!(tally.take("a", "late", 2, 1, waiting).unwrap(), Err(2));
        assert_eq!(tally.count("a"), 2, "a refusal writes nothing");
        // Another principal counts its own.
        assert_eq!(tally.take("b", "settled", 1, 1, waiting).unwrap(), Ok(()));
        // A place whose record was settled is dropped at the next take.
        assert_eq!(tally.take("b", "next", 1, 1, waiting).unwrap(), Ok(()));
        tally.give_back("a", "one").unwrap();
        assert_eq!(tally.take("a", "late", 2, 1, waiting).unwrap(), Ok(()));
        assert_eq!(tally.count("a"), 2);
    }
}
