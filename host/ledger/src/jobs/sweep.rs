//! The retention sweep over jobs (`quotas.retain_finished`), and the rewrite
//! of records stored before bodies and indexes were apart.

use super::index::{self, Listing};
use super::records::{JobError, JobInfo};
use super::store::{self, JobStore, Stored};
use super::summary::JobSummary;
use super::{bytes, data};
use crate::storage::{PAGE, Swap, pages};

/// The key of `job_index` saying every record of the store has the new
/// shape and its index entries: the rewrite at open ran to its end.
const FORMAT_KEY: &str = "format";
const FORMAT: &[u8] = b"2";

/// Records the rewrite at open reads at once: they may be old ones, with
/// their bodies inline.
const UPGRADE_PAGE: usize = 16;

impl JobStore {
    /// Removes the final jobs that ended before `before_ms`, with their
    /// bodies and index entries, and gives their bytes back to the quota of
    /// the principal they counted against; returns how many. Queued and
    /// running jobs are never removed.
    ///
    /// It walks the `c/` index, oldest first, and stops at the first job
    /// created at or after `before_ms` (none of those ended before it): so
    /// a pass reads the jobs it removes and the few older ones still live
    /// or lately ended, never the whole store.
    pub fn collect(&self, before_ms: u64) -> Result<usize, JobError> {
        let storage = self.storage();
        let mut removed = 0;
        for entry in pages(storage, index::BUCKET, &Listing::All.prefix(), PAGE) {
            let (key, _) = entry?;
            if index::stamp_of(&key).is_none_or(|created| created >= before_ms) {
                break;
            }
            match self.pointed(&key)? {
                // Gone already (a sweep stopped between the record and this
                // entry), or a spawn that died before storing it: long past
                // any spawn in progress. (A record that does not decode is
                // logged and its entry goes too: nothing can remove it by
                // its entries.)
                None => storage.delete(index::BUCKET, &key)?,
                Some(job) if job.status.is_final() && job.ended_at_ms() < before_ms => {
                    self.remove(&job)?;
                    removed += 1;
                }
                Some(_) => {}
            }
        }
        Ok(removed)
    }

    /// Removes `job` (final): its bodies, its index entries, its record,
    /// its `c/` entry last (what the sweep walks, so a pass stopped midway
    /// is finished by the next), then gives its bytes back. A crash before
    /// the give-back leaves them counted: the quota errs toward refusing.
    fn remove(&self, job: &JobSummary) -> Result<(), JobError> {
        let storage = self.storage();
        data::remove(storage, job)?;
        index::remove_but_all(storage, job)?;
        storage.delete(store::BUCKET, &job.id)?;
        index::remove_all_entry(storage, job)?;
        if let Some(principal) = &job.charged_to {
            bytes::give_back(storage, principal, job.stored_bytes())?;
        }
        Ok(())
    }

    /// Rewrites the records stored before bodies and indexes were apart
    /// (the whole job inline, no index entries) in the new shape, with their
    /// entries; `owner_of` names a session's owner (the `p/` index). Run at
    /// open, once: a key in the index says it ran to its end, so later opens
    /// read one key. Returns how many records it rewrote.
    ///
    /// At open, not at each record's first read: a record without index
    /// entries is invisible to the listings and the recovery, which read
    /// only the indexes, so waiting for it to be read would wait forever.
    /// The walk holds [`UPGRADE_PAGE`] records at a time, and a record
    /// changed meanwhile (another host of a shared store upgrading it too)
    /// is left to whoever changed it.
    pub fn upgrade(&self, owner_of: &dyn Fn(&str) -> Option<String>) -> Result<usize, JobError> {
        let storage = self.storage();
        if storage.get(index::BUCKET, FORMAT_KEY)?.as_deref() == Some(FORMAT) {
            return Ok(0);
        }
        let mut rewritten = 0;
        for entry in pages(storage, store::BUCKET, "", UPGRADE_PAGE) {
            let (id, bytes) = entry?;
            match store::decode(&id, &bytes) {
                Ok(Stored::Whole(job)) => {
                    let owner = owner_of(&job.session);
                    self.upgrade_record(&bytes, job, owner)?;
                    rewritten += 1;
                }
                Ok(Stored::Summary(_)) => {}
                Err(e) => tracing::error!(job = %id, error = %e, "job record skipped"),
            }
        }
        storage.put(index::BUCKET, FORMAT_KEY, FORMAT)?;
        Ok(rewritten)
    }

    /// Rewrites one record stored whole (`read`, its bytes as read) in the
    /// new shape: bodies apart and index entries first, then the record
    /// with a compare-and-set over what was read. Old jobs count against no
    /// quota (they predate it).
    pub(super) fn upgrade_record(
        &self,
        read: &[u8],
        mut job: JobInfo,
        owner: Option<String>,
    ) -> Result<(), JobError> {
        let storage = self.storage();
        job.owner = job.owner.or(owner);
        job.charged_to = None;
        let (summary, whole) = JobSummary::of(&job);
        data::put_input(storage, &job.id, &job.input)?;
        if let (Some(whole), Some(kept)) = (&whole, summary.kept()) {
            data::put_result(storage, &job.id, kept.attempt, whole)?;
        }
        index::write(storage, &summary)?;
        let swapped = storage.put_if(
            store::BUCKET,
            &job.id,
            Swap::new(Some(read), Some(&store::encode(&summary)?)),
        )?;
        if swapped {
            tracing::info!(job = %job.id, "job record rewritten with its bodies apart");
        }
        Ok(())
    }
}
