//! Job records in the storage bucket `jobs`: id → JSON [`JobInfo`].

use std::sync::{Arc, Mutex, PoisonError};

use super::records::{JobError, JobInfo};
use crate::storage::{Storage, StorageError, Swap};

pub(super) const BUCKET: &str = "jobs";

pub struct JobStore {
    storage: Arc<dyn Storage>,
    /// Held across read-modify-write, so status changes never interleave.
    write: Mutex<()>,
}

impl JobStore {
    pub fn new(storage: Arc<dyn Storage>) -> JobStore {
        JobStore {
            storage,
            write: Mutex::new(()),
        }
    }

    pub fn get(&self, id: &str) -> Result<JobInfo, JobError> {
        let bytes = self
            .storage
            .get(BUCKET, id)?
            .ok_or_else(|| JobError::NotFound(id.to_string()))?;
        decode(id, &bytes)
    }

    /// Stores a new record (or replaces one), durable on return.
    pub fn put(&self, job: &JobInfo) -> Result<(), JobError> {
        let _w = self.write.lock().unwrap_or_else(PoisonError::into_inner);
        self.put_unlocked(job)
    }

    fn put_unlocked(&self, job: &JobInfo) -> Result<(), JobError> {
        let bytes = encode(job)?;
        Ok(self.storage.put(BUCKET, &job.id, &bytes)?)
    }

    /// Every job, oldest first. Records that do not decode are skipped (and logged).
    pub fn all(&self) -> Result<Vec<JobInfo>, JobError> {
        let mut jobs: Vec<JobInfo> = self
            .storage
            .scan(BUCKET, "")?
            .into_iter()
            .filter_map(|(key, bytes)| match decode(&key, &bytes) {
                Ok(job) => Some(job),
                Err(e) => {
                    tracing::error!(job = %key, error = %e, "job record skipped");
                    None
                }
            })
            .collect();
        jobs.sort_by(|a, b| {
            a.created_at_ms
                .cmp(&b.created_at_ms)
                .then_with(|| a.id.cmp(&b.id))
        });
        Ok(jobs)
    }

    /// Removes the final jobs that ended before `before_ms`; returns how
    /// many. Queued and running jobs are never removed.
    pub fn collect(&self, before_ms: u64) -> Result<usize, JobError> {
        let mut removed = 0;
        for job in self.all()? {
            let ended = job.finished_at_ms.unwrap_or(job.created_at_ms);
            if job.status.is_final() && ended < before_ms {
                self.storage.delete(BUCKET, &job.id)?;
                removed += 1;
            }
        }
        Ok(removed)
    }

    /// The jobs of session `session` (its id) nobody waited for: still
    /// queued or running, or final with a result nobody read.
    pub fn unwaited_of(&self, session: &str) -> Result<Vec<JobInfo>, JobError> {
        Ok(self
            .all()?
            .into_iter()
            .filter(|j| j.session == session && j.unwaited())
            .collect())
    }

    /// Job `id`, marked as read (see [`JobInfo::result_read`]) when it is final.
    pub fn read(&self, id: &str) -> Result<JobInfo, JobError> {
        let job = self.get(id)?;
        if !(job.status.is_final() && job.result_read == Some(false)) {
            return Ok(job);
        }
        let (job, _) = self.update(id, |j| {
            let unread = j.status.is_final() && j.result_read == Some(false);
            if unread {
                j.result_read = Some(true);
            }
            unread
        })?;
        Ok(job)
    }

    /// Applies `change` to job `id` and stores it if `change` says it
    /// changed it. Returns the record as it is now and whether it changed.
    ///
    /// The write is a compare-and-set over the record as read
    /// ([`Storage::put_if`]): when another host changed it in between (a
    /// store several hosts share), `change` is applied again to what that
    /// host wrote. So of two hosts claiming one queued job, the second sees
    /// it running and leaves it.
    pub fn update(
        &self,
        id: &str,
        mut change: impl FnMut(&mut JobInfo) -> bool,
    ) -> Result<(JobInfo, bool), JobError> {
        let _w = self.write.lock().unwrap_or_else(PoisonError::into_inner);
        let mut tries = 0;
        loop {
            let read = self
                .storage
                .get(BUCKET, id)?
                .ok_or_else(|| JobError::NotFound(id.to_string()))?;
            let mut job = decode(id, &read)?;
            if !change(&mut job) {
                return Ok((job, false));
            }
            let bytes = encode(&job)?;
            if self
                .storage
                .put_if(BUCKET, id, Swap::new(Some(&read), Some(&bytes)))?
            {
                return Ok((job, true));
            }
            tries += 1;
            if tries >= UPDATE_TRIES {
                return Err(JobError::Storage(StorageError::Io(format!(
                    "job `{id}` changed under {UPDATE_TRIES} updates in a row: the hosts sharing its store keep writing it; try again"
                ))));
            }
        }
    }
}

/// Compare-and-set rounds an update tries before giving up: each lost round
/// means another host wrote the record between this one's read and write.
const UPDATE_TRIES: usize = 16;

fn encode(job: &JobInfo) -> Result<Vec<u8>, JobError> {
    serde_json::to_vec(job).map_err(|e| {
        JobError::Storage(StorageError::Io(format!(
            "cannot encode job `{}`: {e}",
            job.id
        )))
    })
}

fn decode(id: &str, bytes: &[u8]) -> Result<JobInfo, JobError> {
    serde_json::from_slice(bytes).map_err(|e| {
        JobError::Storage(StorageError::Corrupt(format!(
            "job record `{id}` does not decode: {e}"
        )))
    })
}

#[cfg(test)]
mod tests {
    use std::sync::Barrier;

    use super::*;
    use crate::jobs::JobStatus;

    /// Of hosts claiming one queued job at once, each with its own view of
    /// the shared store (its own `JobStore`, so only the store's
    /// compare-and-set orders them), exactly one turns it `running`, and the
    /// record names that one.
    #[test]
    fn of_hosts_claiming_one_queued_job_at_once_exactly_one_gets_it() {
        let dir = tempfile::tempdir().unwrap();
        let storage: Arc<dyn Storage> = Arc::new(
            crate::storage::SledStore::open(dir.path(), crate::storage::Durability::Flush).unwrap(),
        );
        JobStore::new(storage.clone())
            .put(&JobInfo::for_test("j", JobStatus::Queued))
            .unwrap();
        let hosts = 8;
        let barrier = Arc::new(Barrier::new(hosts));
        let claims: Vec<_> = (0..hosts)
            .map(|n| {
                let (store, barrier) = (JobStore::new(storage.clone()), barrier.clone());
                std::thread::spawn(move || {
                    barrier.wait();
                    store
                        .update("j", |j| {
                            if j.status != JobStatus::Queued {
                                return false;
                            }
                            j.status = JobStatus::Running;
                            j.runner = Some(format!("host{n}"));
                            true
                        })
                        .unwrap()
                })
            })
            .collect();
        let won: Vec<JobInfo> = claims
            .into_iter()
            .map(|c| c.join().unwrap())
            .filter_map(|(job, changed)| changed.then_some(job))
            .collect();
        assert_eq!(won.len(), 1, "{won:?}");
        let stored = JobStore::new(storage).get("j").unwrap();
        assert_eq!(stored.status, JobStatus::Running);
        assert_eq!(stored.runner, won[0].runner);
    }
}
