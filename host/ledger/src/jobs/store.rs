//! Job records in the storage bucket `jobs`: id → JSON [`JobSummary`], the
//! job without its bodies. The bodies live apart (`data.rs`), the indexes
//! beside (`index.rs`), and the bytes of an agent's bodies are counted
//! against its quota (`bytes.rs`).
//!
//! A record written before the split holds the whole [`JobInfo`] inline. It
//! still reads (both shapes decode here), and is rewritten in the new shape
//! at open (`upgrade.rs`) or, should one be met later, at its next change.

use std::sync::{Arc, Mutex, PoisonError};

use super::records::{JobError, JobInfo, JobResult, JobStatus};
use super::summary::{JobSummary, ResultSummary};
use super::{bytes, data, index};
use crate::manifest::{QuotaLimit, approximate_size};
use crate::session::SessionError;
use crate::storage::{Storage, StorageError, Swap};

pub(super) const BUCKET: &str = "jobs";

/// A record as stored: the summary, or (written before the split) the
/// whole job inline.
pub(super) enum Stored {
    Summary(JobSummary),
    Whole(JobInfo),
}

impl Stored {
    pub(super) fn summary(self) -> JobSummary {
        match self {
            Stored::Summary(s) => s,
            Stored::Whole(job) => JobSummary::of(&job).0,
        }
    }
}

/// A result stored apart, not yet named by its job's record (see
/// [`JobStore::stage_result`]).
#[derive(Clone, Debug)]
pub struct StagedResult {
    id: String,
    charged_to: Option<String>,
    /// What the record is given.
    pub summary: ResultSummary,
}

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

    pub(super) fn storage(&self) -> &dyn Storage {
        &*self.storage
    }

    /// The record of job `id` as stored (its bytes, for a compare-and-set).
    fn load(&self, id: &str) -> Result<(Vec<u8>, Stored), JobError> {
        let bytes = self
            .storage
            .get(BUCKET, id)?
            .ok_or_else(|| JobError::NotFound(id.to_string()))?;
        let stored = decode(id, &bytes)?;
        Ok((bytes, stored))
    }

    /// Job `id`'s record, or `None` when there is none.
    pub(super) fn find(&self, id: &str) -> Result<Option<JobSummary>, JobError> {
        match self.storage.get(BUCKET, id)? {
            None => Ok(None),
            Some(bytes) => Ok(Some(decode(id, &bytes)?.summary())),
        }
    }

    /// Job `id` without its bodies: what a listing shows of it.
    pub fn summary(&self, id: &str) -> Result<JobSummary, JobError> {
        Ok(self.load(id)?.1.summary())
    }

    /// Job `id` with its bodies: its input and whole result.
    pub fn get(&self, id: &str) -> Result<JobInfo, JobError> {
        match self.load(id)?.1 {
            Stored::Whole(job) => Ok(job),
            Stored::Summary(summary) => self.bodies(summary),
        }
    }

    /// Job `id`'s input (JSON text).
    pub fn input(&self, id: &str) -> Result<String, JobError> {
        match self.load(id)?.1 {
            Stored::Whole(job) => Ok(job.input),
            Stored::Summary(_) => data::input(&*self.storage, id),
        }
    }

    fn bodies(&self, summary: JobSummary) -> Result<JobInfo, JobError> {
        let input = data::input(&*self.storage, &summary.id)?;
        let result = match summary.kept() {
            Some(kept) => Some(data::result(&*self.storage, &summary.id, kept)?),
            None => None,
        };
        Ok(summary.with_bodies(input, result))
    }

    /// Stores a job (a new one, or one in place of its record), durable on
    /// return: its bodies apart, its index entries, then its record. Its
    /// bytes are not counted (see [`JobStore::create`]).
    pub fn put(&self, job: &JobInfo) -> Result<JobSummary, JobError> {
        let _w = self.write.lock().unwrap_or_else(PoisonError::into_inner);
        self.put_unlocked(job)
    }

    pub(super) fn put_unlocked(&self, job: &JobInfo) -> Result<JobSummary, JobError> {
        let (summary, whole) = JobSummary::of(job);
        let storage = &*self.storage;
        data::put_input(storage, &job.id, &job.input)?;
        if let (Some(whole), Some(kept)) = (&whole, summary.kept()) {
            data::put_result(storage, &job.id, kept.attempt, whole)?;
        }
        index::write(storage, &summary)?;
        // Durable, and with it every write above.
        storage.put(BUCKET, &job.id, &encode(&summary)?)?;
        if summary.status.is_final() {
            // A record replaced by a final one may have left its `l/` entry.
            index::finalize(storage, &summary)?;
        }
        Ok(summary)
    }

    /// Stores a new job as [`JobStore::put`] does, its bytes counted
    /// against `job.charged_to`: refused, with nothing stored, when that
    /// principal's jobs already keep `quota` (`quotas.job_bytes_per_principal`)
    /// or more.
    pub fn create(&self, job: &JobInfo, quota: QuotaLimit) -> Result<JobSummary, JobError> {
        let _w = self.write.lock().unwrap_or_else(PoisonError::into_inner);
        let storage = &*self.storage;
        let charged = match &job.charged_to {
            Some(principal) => {
                let n = JobSummary::of(job).0.stored_bytes();
                if let Err(held) = bytes::charge(storage, principal, n, Some(quota.value))? {
                    return Err(JobError::Session(SessionError::Quota {
                        limit: quota,
                        what: format!(
                            "the jobs of principal `{principal}` keep {} in the store",
                            approximate_size(held)
                        ),
                        fix: "wait until `quotas.retain_finished` removes finished jobs, or ask an operator to raise the quota".into(),
                    }));
                }
                Some((principal.clone(), n))
            }
            None => None,
        };
        match self.put_unlocked(job) {
            Ok(summary) => Ok(summary),
            Err(e) => {
                // Nothing was acknowledged: what was written goes, and so do
                // the bytes counted (best effort; see `bytes.rs`).
                let (summary, _) = JobSummary::of(job);
                let _ = index::remove_but_all(storage, &summary);
                let _ = index::remove_all_entry(storage, &summary);
                let _ = data::remove(storage, &summary);
                if let Some((principal, n)) = charged {
                    let _ = bytes::give_back(storage, &principal, n);
                }
                Err(e)
            }
        }
    }

    /// Applies `change` to job `id`'s record and stores it if `change` says
    /// it changed it. Returns the record as it is now and whether it
    /// changed. A record that turns final moves to the final indexes.
    ///
    /// The write is a compare-and-set over the record as read
    /// ([`Storage::put_if`]): when another host changed it in between (a
    /// store several hosts share), `change` is applied again to what that
    /// host wrote. So of two hosts claiming one queued job, the second sees
    /// it running and leaves it.
    pub fn update(
        &self,
        id: &str,
        mut change: impl FnMut(&mut JobSummary) -> bool,
    ) -> Result<(JobSummary, bool), JobError> {
        let _w = self.write.lock().unwrap_or_else(PoisonError::into_inner);
        let mut tries = 0;
        loop {
            let (read, stored) = self.load(id)?;
            let mut job = match stored {
                Stored::Summary(summary) => summary,
                Stored::Whole(whole) => {
                    // Its bodies go apart first, or this write would drop them.
                    self.upgrade_record(&read, whole, None)?;
                    continue;
                }
            };
            let was_final = job.status.is_final();
            if !change(&mut job) {
                return Ok((job, false));
            }
            let bytes = encode(&job)?;
            if self
                .storage
                .put_if(BUCKET, id, Swap::new(Some(&read), Some(&bytes)))?
            {
                if !was_final
                    && job.status.is_final()
                    && let Err(e) = index::finalize(&*self.storage, &job)
                {
                    // Its `l/` entry stays: the next walk of `l/` moves it.
                    tracing::warn!(job = %id, error = %e, "a final job's index entries could not be moved yet");
                }
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

    /// Stores `result`, what attempt `attempt` of `job` produced, apart
    /// from the record when the summary is not all of it, and counts its
    /// bytes against `job.charged_to` (never refused: the work is done).
    /// The record is given the returned summary next ([`JobStore::update`]);
    /// then [`JobStore::settle_result`].
    pub fn stage_result(
        &self,
        job: &JobSummary,
        attempt: u32,
        result: &JobResult,
    ) -> Result<StagedResult, JobError> {
        let (summary, whole) = ResultSummary::of(result, attempt);
        if let (Some(whole), Some(kept)) = (&whole, summary.kept) {
            data::put_result(&*self.storage, &job.id, attempt, whole)?;
            if let Some(principal) = &job.charged_to {
                // Without a limit it always counts.
                let _counted = bytes::charge(&*self.storage, principal, kept.bytes, None)?;
            }
        }
        Ok(StagedResult {
            id: job.id.clone(),
            charged_to: job.charged_to.clone(),
            summary,
        })
    }

    /// After the record was given `staged` or not (`job`: the record as it
    /// is now): a result its record did not take is removed, and its bytes
    /// given back.
    pub fn settle_result(&self, staged: &StagedResult, job: &JobSummary) {
        let Some(kept) = staged.summary.kept else {
            return;
        };
        if job.kept() == Some(kept) {
            return;
        }
        let storage = &*self.storage;
        let removed = data::remove_result(storage, &staged.id, kept.attempt).and_then(|()| {
            match &staged.charged_to {
                Some(principal) => bytes::give_back(storage, principal, kept.bytes),
                None => Ok(()),
            }
        });
        if let Err(e) = removed {
            tracing::warn!(job = %staged.id, error = %e, "a result its record did not take could not be removed");
        }
    }

    /// Job `id` with its bodies, marked as read (see
    /// [`JobInfo::result_read`]) when it is final.
    pub fn read(&self, id: &str) -> Result<JobInfo, JobError> {
        let (_, stored) = self.load(id)?;
        let unread = |s: JobStatus, read: Option<bool>| s.is_final() && read == Some(false);
        let summary = match stored {
            Stored::Whole(job) if !unread(job.status, job.result_read) => return Ok(job),
            Stored::Summary(s) if !unread(s.status, s.result_read) => s,
            _ => {
                self.update(id, |j| {
                    let unread = unread(j.status, j.result_read);
                    if unread {
                        j.result_read = Some(true);
                    }
                    unread
                })?
                .0
            }
        };
        self.bodies(summary)
    }

    /// The bytes `principal`'s jobs keep in the store, as counted against
    /// `quotas.job_bytes_per_principal`.
    pub fn held_bytes(&self, principal: &str) -> Result<u64, JobError> {
        bytes::held(&*self.storage, principal)
    }
}

/// Compare-and-set rounds an update tries before giving up: each lost round
/// means another host wrote the record between this one's read and write.
const UPDATE_TRIES: usize = 16;

pub(super) fn encode(job: &JobSummary) -> Result<Vec<u8>, JobError> {
    serde_json::to_vec(job).map_err(|e| {
        JobError::Storage(StorageError::Io(format!(
            "cannot encode job `{}`: {e}",
            job.id
        )))
    })
}

/// A record in either shape.
pub(super) fn decode(id: &str, bytes: &[u8]) -> Result<Stored, JobError> {
    match serde_json::from_slice::<JobSummary>(bytes) {
        Ok(summary) => Ok(Stored::Summary(summary)),
        Err(e) => match serde_json::from_slice::<JobInfo>(bytes) {
            Ok(whole) => Ok(Stored::Whole(whole)),
            Err(_) => Err(JobError::Storage(StorageError::Corrupt(format!(
                "job record `{id}` does not decode: {e}"
            )))),
        },
    }
}

/// The status of a record in either shape, read without its bodies' text
/// mattering; `None` when it does not decode.
pub(super) fn status_of(bytes: &[u8]) -> Option<JobStatus> {
    #[derive(serde::Deserialize)]
    struct Status {
        status: JobStatus,
    }
    serde_json::from_slice::<Status>(bytes)
        .ok()
        .map(|s| s.status)
}

#[cfg(test)]
mod tests {
    use std::sync::Barrier;

    use super::*;

    fn store() -> (tempfile::TempDir, Arc<dyn Storage>) {
        let dir = tempfile::tempdir().unwrap();
        let storage: Arc<dyn Storage> = Arc::new(
            crate::storage::SledStore::open(dir.path(), crate::storage::Durability::Flush).unwrap(),
        );
        (dir, storage)
    }

    /// Of hosts claiming one queued job at once, each with its own view of
    /// the shared store (its own `JobStore`, so only the store's
    /// compare-and-set orders them), exactly one turns it `running`, and the
    /// record names that one.
    #[test]
    fn of_hosts_claiming_one_queued_job_at_once_exactly_one_gets_it() {
        let (_dir, storage) = store();
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
        let won: Vec<JobSummary> = claims
            .into_iter()
            .map(|c| c.join().unwrap())
            .filter_map(|(job, changed)| changed.then_some(job))
            .collect();
        assert_eq!(won.len(), 1, "{won:?}");
        let stored = JobStore::new(storage).get("j").unwrap();
        assert_eq!(stored.status, JobStatus::Running);
        assert_eq!(stored.runner, won[0].runner);
    }

    /// The record holds no body; `get` puts them back; a result its record
    /// did not take (another run's won) is removed with its bytes.
    #[test]
    fn bodies_live_apart_and_a_result_not_taken_goes() {
        let (_dir, storage) = store();
        let jobs = JobStore::new(storage.clone());
        let mut job = JobInfo::for_test("j", JobStatus::Running);
        job.input = format!(r#"{{"message":"{}"}}"#, "x".repeat(5000));
        job.charged_to = Some("agent".into());
        job.attempts = 1;
        jobs.create(
            &job,
            crate::manifest::QuotasConfig::default().limit("job_bytes_per_principal"),
        )
        .unwrap();
        let record = storage.get(BUCKET, "j").unwrap().unwrap();
        assert!(record.len() < 1000, "{} bytes", record.len());
        assert_eq!(jobs.get("j").unwrap().input, job.input);
        assert_eq!(jobs.held_bytes("agent").unwrap(), job.input.len() as u64);
        let result = |text: &str| JobResult {
            output: Some(serde_json::json!({ "text": text })),
            error: None,
            stdout: Default::default(),
            stderr: Default::default(),
            metering: Default::default(),
        };
        let summary = jobs.summary("j").unwrap();
        let won = jobs.stage_result(&summary, 1, &result("won")).unwrap();
        let lost = jobs.stage_result(&summary, 2, &result("lost")).unwrap();
        for staged in [&won, &lost] {
            let (now, _) = jobs
                .update("j", |j| {
                    if j.status != JobStatus::Running {
                        return false;
                    }
                    j.status = JobStatus::Completed;
                    j.result = Some(staged.summary.clone());
                    true
                })
                .unwrap();
            jobs.settle_result(staged, &now);
        }
        let done = jobs.get("j").unwrap();
        assert_eq!(done.result.unwrap().output.unwrap()["text"], "won");
        assert_eq!(
            jobs.held_bytes("agent").unwrap(),
            jobs.summary("j").unwrap().stored_bytes()
        );
        assert_eq!(
            storage.get(data::BUCKET, "j/result/2").unwrap(),
            None,
            "the lost result is gone"
        );
    }
}
