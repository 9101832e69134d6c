//! Reading jobs through their indexes: a page of a listing, the live jobs
//! (recovery), a session's jobs (`session_end`), the counts by status
//! (metrics). Each reads the index entries of the jobs it is about and
//! their records, a page at a time, and never a body.

use std::collections::BTreeMap;

use super::index::{self, Listing};
use super::records::{JobError, JobStatus};
use super::store::JobStore;
use super::summary::JobSummary;
use crate::page::{Page, PageRequest};
use crate::session::bounded;
use crate::storage::{PAGE, StorageError, pages};

/// Index entries one page reads at most: a filter few jobs pass answers a
/// short page and a cursor to go on, rather than read the whole index at
/// once.
pub const SCAN_BUDGET: usize = 2_000;

/// Which jobs a listing shows, oldest first.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct JobQuery {
    /// Only the jobs of this session (its id).
    pub session: Option<String>,
    /// Only the jobs of the sessions this principal owns.
    pub owner: Option<String>,
    pub status: Option<JobStatus>,
}

impl JobQuery {
    fn matches(&self, job: &JobSummary) -> bool {
        self.session.as_ref().is_none_or(|s| job.session == *s)
            && self
                .owner
                .as_ref()
                .is_none_or(|o| job.owner.as_deref() == Some(o))
            && self.status.is_none_or(|s| job.status == s)
    }

    /// The narrowest index that holds every job it asks for.
    fn listing(&self) -> Listing<'_> {
        match (&self.session, &self.owner, self.status) {
            (Some(session), _, _) => Listing::Session(session),
            (None, Some(owner), _) => Listing::Owner(owner),
            (None, None, Some(status)) if status.is_final() => Listing::Final(status),
            (None, None, Some(_)) => Listing::Live,
            (None, None, None) => Listing::All,
        }
    }
}

impl JobStore {
    /// A page of the jobs `query` asks for, oldest first.
    pub fn list(&self, query: &JobQuery, page: &PageRequest) -> Result<Page<JobSummary>, JobError> {
        self.walk(query.listing(), page, |job| query.matches(job))
    }

    /// A page of the final jobs, the latest to end first (the dashboard's).
    pub fn recent(&self, page: &PageRequest) -> Result<Page<JobSummary>, JobError> {
        self.walk(Listing::Done, page, |_| true)
    }

    /// One page of `listing` after the page's cursor, of the jobs whose
    /// record belongs to it and `keep` accepts.
    fn walk(
        &self,
        listing: Listing<'_>,
        page: &PageRequest,
        keep: impl Fn(&JobSummary) -> bool,
    ) -> Result<Page<JobSummary>, JobError> {
        let prefix = listing.prefix();
        let mut after = match &page.cursor {
            None => None,
            Some(cursor) if index::valid_cursor(cursor) => Some(format!("{prefix}{cursor}")),
            Some(cursor) => {
                return Err(JobError::BadRequest(format!(
                    "the cursor `{}` is not one this listing handed out: pass the `next_cursor` of its previous page, or none for the first page",
                    bounded(cursor, 64)
                )));
            }
        };
        let want = page.size();
        let mut items = Vec::new();
        let mut examined = 0;
        loop {
            let batch = (want - items.len()).clamp(16, PAGE);
            let entries =
                self.storage()
                    .scan_page(index::BUCKET, &prefix, after.as_deref(), batch)?;
            let more = entries.len() == batch;
            for (key, _) in entries {
                examined += 1;
                if let Some(job) = self.pointed(&key)?
                    && listing.holds(&job)
                    && keep(&job)
                {
                    items.push(job);
                }
                let next = key.strip_prefix(&prefix).map(str::to_string);
                after = Some(key);
                if items.len() == want || examined >= SCAN_BUDGET {
                    return Ok(Page {
                        items,
                        next_cursor: next,
                    });
                }
            }
            if !more {
                return Ok(Page::last(items));
            }
        }
    }

    /// The record an index entry points at; `None` when there is none, or
    /// it does not decode (logged: one damaged record does not hide the
    /// others).
    pub(super) fn pointed(&self, key: &str) -> Result<Option<JobSummary>, JobError> {
        let id = index::id_of(key);
        match self.find(id) {
            Ok(found) => Ok(found),
            Err(JobError::Storage(StorageError::Corrupt(e))) => {
                tracing::error!(job = %id, error = %e, "job record skipped");
                Ok(None)
            }
            Err(e) => Err(e),
        }
    }

    /// Every live job (queued or running), oldest first: what the recovery
    /// at start reads, and nothing else. Entries left over are repaired on
    /// the way: a final job's moves to the final indexes, one whose record
    /// never came is removed past [`index::DANGLING_GRACE_MS`] (`now_ms`).
    pub fn live(&self, now_ms: u64) -> Result<Vec<JobSummary>, JobError> {
        let storage = self.storage();
        let mut live = Vec::new();
        for entry in pages(storage, index::BUCKET, &Listing::Live.prefix(), PAGE) {
            let (key, _) = entry?;
            match self.pointed(&key)? {
                Some(job) if !job.status.is_final() => live.push(job),
                Some(job) => index::finalize(storage, &job)?,
                None => {
                    let created = index::stamp_of(&key).unwrap_or(0);
                    if now_ms.saturating_sub(created) > index::DANGLING_GRACE_MS {
                        storage.delete(index::BUCKET, &key)?;
                    }
                }
            }
        }
        Ok(live)
    }

    /// The jobs of session `session` (its id) nobody waited for: still
    /// queued or running, or final with a result nobody read. Reads that
    /// session's jobs only.
    pub fn unwaited_of(&self, session: &str) -> Result<Vec<JobSummary>, JobError> {
        self.session_jobs(session, JobSummary::unwaited)
    }

    /// Every job of session `session` (its id), oldest first.
    pub fn of_session(&self, session: &str) -> Result<Vec<JobSummary>, JobError> {
        self.session_jobs(session, |_| true)
    }

    fn session_jobs(
        &self,
        session: &str,
        keep: impl Fn(&JobSummary) -> bool,
    ) -> Result<Vec<JobSummary>, JobError> {
        let listing = Listing::Session(session);
        let mut jobs = Vec::new();
        for entry in pages(self.storage(), index::BUCKET, &listing.prefix(), PAGE) {
            let (key, _) = entry?;
            if let Some(job) = self.pointed(&key)?
                && listing.holds(&job)
                && keep(&job)
            {
                jobs.push(job);
            }
        }
        Ok(jobs)
    }

    /// How many jobs there are of each status: the live ones read from
    /// their records, the final ones counted from their index entries.
    pub fn counts(&self) -> Result<BTreeMap<JobStatus, u64>, JobError> {
        let storage = self.storage();
        let mut counts = BTreeMap::new();
        for entry in pages(storage, index::BUCKET, &Listing::Live.prefix(), PAGE) {
            let (key, _) = entry?;
            if let Some(job) = self.pointed(&key)?
                && !job.status.is_final()
            {
                *counts.entry(job.status).or_default() += 1;
            }
        }
        for status in JobStatus::ALL.into_iter().filter(|s| s.is_final()) {
            let prefix = Listing::Final(status).prefix();
            let mut n = 0;
            for entry in pages(storage, index::BUCKET, &prefix, PAGE) {
                entry?;
                n += 1;
            }
            if n > 0 {
                counts.insert(status, n);
            }
        }
        Ok(counts)
    }
}
