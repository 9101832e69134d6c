//! Places among the live jobs, kept in the store: how `[quotas]
//! jobs_per_session` and `jobs_per_principal` hold across the hosts that
//! share one store (`[storage] backend = "nats"`).
//!
//! Why: a host counts the jobs it runs, but on a shared store an agent can
//! spawn on every node, and each node alone would let it have the whole
//! quota. The count has to be where every node sees it, and taking the
//! last place has to be one step against every other node.
//!
//! What: a key per scope (`s/<session id>`, `p/<principal>`) in bucket
//! `job_places`, holding the ids of the scope's live jobs and when each
//! place was taken. Taking a place is a compare-and-set over the value read
//! ([`Storage::put_if`]): of two nodes taking the last place, one gets it
//! and the other reads again and is refused. A place is given back when its
//! job ends ([`JobPlaces::give_back`], best effort); one a dead node never
//! gave back is dropped at the next take, when the job's record says it
//! ended, or is gone and the place is older than [`UNSTORED_GRACE_MS`] (the
//! node died between taking the place and storing the job).
//!
//! The embedded backends need none of this: one process holds the data dir
//! and counts its own jobs.

use std::collections::BTreeMap;
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use super::records::JobError;
use crate::storage::{Storage, StorageError, Swap};

const BUCKET: &str = "job_places";

/// A place whose job has no record yet is kept this long: the spawn that
/// took it stores the job next, or failed (and gives it back) or died.
pub const UNSTORED_GRACE_MS: u64 = 60_000;

/// Compare-and-set rounds a take tries before giving up.
const TAKE_TRIES: usize = 32;

/// One scope's places: job id → when its place was taken (unix millis).
#[derive(Default, Serialize, Deserialize)]
struct Places {
    jobs: BTreeMap<String, u64>,
}

/// A scope that counts live jobs.
#[derive(Clone, Copy, Debug)]
pub enum Scope<'a> {
    Session(&'a str),
    Principal(&'a str),
}

impl Scope<'_> {
    fn key(&self) -> String {
        match self {
            Scope::Session(id) => format!("s/{id}"),
            Scope::Principal(name) => format!("p/{name}"),
        }
    }
}

/// The places of every scope, in the store.
pub struct JobPlaces {
    storage: Arc<dyn Storage>,
}

impl JobPlaces {
    pub fn new(storage: Arc<dyn Storage>) -> JobPlaces {
        JobPlaces { storage }
    }

    /// Takes a place in `scope` for job `id` at `now_ms`, unless the scope
    /// already has `limit` live jobs: then `Ok(Err(count))`. Taking a place
    /// `id` holds already is a no-op.
    pub fn take(
        &self,
        scope: Scope<'_>,
        id: &str,
        limit: u64,
        now_ms: u64,
    ) -> Result<Result<(), u64>, JobError> {
        let key = scope.key();
        for _ in 0..TAKE_TRIES {
            let read = self.storage.get(BUCKET, &key)?;
            let mut places = decode(&key, read.as_deref())?;
            if places.jobs.contains_key(id) {
                return Ok(Ok(()));
            }
            self.drop_ended(&mut places, now_ms)?;
            let count = places.jobs.len() as u64;
            if count >= limit {
                // What was dropped stays in the store until a take succeeds:
                // a refusal writes nothing.
                return Ok(Err(count));
            }
            places.jobs.insert(id.to_string(), now_ms);
            if self.storage.put_if(
                BUCKET,
                &key,
                Swap::new(read.as_deref(), Some(&encode(&places)?)),
            )? {
                return Ok(Ok(()));
            }
        }
        Err(JobError::Storage(StorageError::Io(format!(
            "the job places of `{key}` changed under {TAKE_TRIES} takes in a row: the hosts sharing the store keep spawning in it; try again"
        ))))
    }

    /// Gives back job `id`'s place in `scope` (its job ended, or was never
    /// stored). A place left behind is dropped at a later take anyway.
    pub fn give_back(&self, scope: Scope<'_>, id: &str) -> Result<(), JobError> {
        let key = scope.key();
        for _ in 0..TAKE_TRIES {
            let Some(read) = self.storage.get(BUCKET, &key)? else {
                return Ok(());
            };
            let mut places = decode(&key, Some(&read))?;
            if places.jobs.remove(id).is_none() {
                return Ok(());
            }
            let value = if places.jobs.is_empty() {
                None
            } else {
                Some(encode(&places)?)
            };
            if self
                .storage
                .put_if(BUCKET, &key, Swap::new(Some(&read), value.as_deref()))?
            {
                return Ok(());
            }
        }
        Ok(())
    }

    /// How many live jobs `scope` has, as the store says.
    #[cfg(test)]
    fn count(&self, scope: Scope<'_>) -> Result<usize, JobError> {
        let key = scope.key();
        Ok(decode(&key, self.storage.get(BUCKET, &key)?.as_deref())?
            .jobs
            .len())
    }

    /// Drops the places whose jobs ended, or were never stored.
    fn drop_ended(&self, places: &mut Places, now_ms: u64) -> Result<(), JobError> {
        let mut ended = Vec::new();
        for (id, &taken_at) in &places.jobs {
            match self.storage.get(super::store::BUCKET, id)? {
                Some(bytes) => {
                    let ends = super::store::status_of(&bytes)
                        .map(|status| status.is_final())
                        // A record that does not decode cannot be counted on
                        // to end: its place goes.
                        .unwrap_or(true);
                    if ends {
                        ended.push(id.clone());
                    }
                }
                None if now_ms.saturating_sub(taken_at) > UNSTORED_GRACE_MS => {
                    ended.push(id.clone())
                }
                None => {}
            }
        }
        for id in ended {
            places.jobs.remove(&id);
        }
        Ok(())
    }
}

fn decode(key: &str, bytes: Option<&[u8]>) -> Result<Places, JobError> {
    match bytes {
        None => Ok(Places::default()),
        Some(bytes) => serde_json::from_slice(bytes).map_err(|e| {
            JobError::Storage(StorageError::Corrupt(format!(
                "the job places `{key}` do not decode: {e}"
            )))
        }),
    }
}

fn encode(places: &Places) -> Result<Vec<u8>, JobError> {
    serde_json::to_vec(places)
        .map_err(|e| JobError::Storage(StorageError::Io(format!("cannot encode job places: {e}"))))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::jobs::{JobInfo, JobStatus, JobStore};

    #[test]
    fn the_last_place_goes_to_one_taker_and_ended_jobs_free_theirs() {
        let dir = tempfile::tempdir().unwrap();
        let storage: Arc<dyn Storage> = Arc::new(
            crate::storage::SledStore::open(dir.path(), crate::storage::Durability::Flush).unwrap(),
        );
        let records = JobStore::new(storage.clone());
        // Two hosts' views of one store.
        let (a, b) = (
            JobPlaces::new(storage.clone()),
            JobPlaces::new(storage.clone()),
        );
        let scope = Scope::Principal("agent");
        for id in ["j1", "j2"] {
            records
                .put(&JobInfo::for_test(id, JobStatus::Running))
                .unwrap();
        }
        assert_eq!(a.take(scope, "j1", 3, 1_000).unwrap(), Ok(()));
        assert_eq!(b.take(scope, "j2", 3, 1_000).unwrap(), Ok(()));
        // The last place, raced for from 8 threads: exactly one gets it.
        let winners: usize = std::thread::scope(|s| {
            let handles: Vec<_> = (0..8)
                .map(|i| {
                    let places = JobPlaces::new(storage.clone());
                    s.spawn(move || {
                        places
                            .take(scope, &format!("r{i}"), 3, 1_000)
                            .unwrap()
                            .is_ok() as usize
                    })
                })
                .collect();
            handles.into_iter().map(|h| h.join().unwrap()).sum()
        });
        assert_eq!(winners, 1);
        assert_eq!(a.count(scope).unwrap(), 3);
        assert_eq!(a.take(scope, "j9", 3, 2_000).unwrap(), Err(3));
        // j1 ends (on a host that then died without giving its place back):
        // the next take drops it.
        records
            .put(&JobInfo::for_test("j1", JobStatus::Completed))
            .unwrap();
        // The racer's job was never stored: its place stays for the grace.
        assert_eq!(a.take(scope, "j9", 3, 2_000).unwrap(), Ok(()));
        assert_eq!(b.take(scope, "j10", 3, 2_000).unwrap(), Err(3));
        // Past the grace, the never-stored place goes as well.
        assert_eq!(
            b.take(scope, "j10", 3, 2_000 + UNSTORED_GRACE_MS + 1)
                .unwrap(),
            Ok(())
        );
        b.give_back(scope, "j10").unwrap();
        assert_eq!(a.count(scope).unwrap(), 1);
        // Another scope counts its own.
        assert_eq!(
            a.take(Scope::Session("s1"), "j9", 1, 2_000).unwrap(),
            Ok(())
        );
        assert_eq!(
            a.take(Scope::Session("s1"), "j10", 1, 2_000).unwrap(),
            Err(1)
        );
    }
}
