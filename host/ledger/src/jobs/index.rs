//! The jobs' indexes: bucket `job_index`, one key per job and listing, so a
//! listing, a recovery or a sweep reads the jobs it is about and no others.
//!
//! Keys (`<created>` is the creation time, 16 hex digits, so keys sort by
//! it; `<id>` the job's id; names are escaped so a `/` in one cannot reach
//! another's keys):
//!
//! | key | which jobs | written |
//! |---|---|---|
//! | `c/<created>/<id>` | every job, oldest first | before its record |
//! | `s/<session>/<created>/<id>` | of one session | before its record |
//! | `p/<owner>/<created>/<id>` | of the sessions one principal owns | before its record |
//! | `l/<created>/<id>` | live (queued or running) | before its record; removed once the record is final |
//! | `t/<status>/<created>/<id>` | final, by status | once the record is final |
//! | `d/<newest first>/<id>` | final, the latest to end first | once the record is final |
//!
//! The record is the truth, an entry only a pointer: every reader loads the
//! record and checks it belongs to the listing, and skips an entry whose
//! record is gone or says otherwise. Entries are written so that a crash
//! between two writes loses nothing: the entries of a new job before its
//! record (a crash leaves an entry with no record, skipped, and removed
//! once old); a final job's `t/` and `d/` after its record turned final and
//! before its `l/` entry goes (a crash leaves the `l/` entry, and whoever
//! walks `l/` next finds the record final and finishes the move). A final
//! record never changes its status or end again, so moving it is safe from
//! any host, any number of times. So a live job is always under `l/`, and
//! the recovery at start reads `l/` alone.

use super::records::{JobError, JobStatus};
use super::summary::JobSummary;
use crate::storage::Storage;

pub(super) const BUCKET: &str = "job_index";

/// An entry with no record this long after its job's creation is left over
/// from a spawn that died between its writes, and is removed. (A spawn
/// writes its record right after its entries; the margin is for a store
/// that stalls.)
pub(super) const DANGLING_GRACE_MS: u64 = 3_600_000;

/// Which jobs an index walks.
#[derive(Clone, Copy, Debug)]
pub(super) enum Listing<'a> {
    All,
    Session(&'a str),
    Owner(&'a str),
    Live,
    Final(JobStatus),
    /// Final, the latest to end first.
    Done,
}

impl Listing<'_> {
    pub(super) fn prefix(&self) -> String {
        match self {
            Listing::All => "c/".into(),
            Listing::Session(id) => format!("s/{}/", escape(id)),
            Listing::Owner(name) => format!("p/{}/", escape(name)),
            Listing::Live => "l/".into(),
            Listing::Final(status) => format!("t/{}/", status.as_str()),
            Listing::Done => "d/".into(),
        }
    }

    /// Whether `job`'s record belongs to this listing (an entry is only a
    /// pointer; see the module docs).
    pub(super) fn holds(&self, job: &JobSummary) -> bool {
        match self {
            Listing::All => true,
            Listing::Session(id) => job.session == *id,
            Listing::Owner(name) => job.owner.as_deref() == Some(*name),
            Listing::Live => !job.status.is_final(),
            Listing::Final(status) => job.status == *status,
            Listing::Done => job.status.is_final(),
        }
    }
}

/// `/` and `%` escaped, so a name is one key segment.
fn escape(name: &str) -> String {
    name.replace('%', "%25").replace('/', "%2F")
}

fn stamp(ms: u64) -> String {
    format!("{ms:016x}")
}

fn tail(created_ms: u64, id: &str) -> String {
    format!("{}/{id}", stamp(created_ms))
}

/// The job id an entry points at: its key's last segment.
pub(super) fn id_of(key: &str) -> &str {
    key.rsplit('/').next().unwrap_or(key)
}

/// The time an entry's key is stamped with (creation, or for `d/` the
/// inverted end), read from the segment before the id.
pub(super) fn stamp_of(key: &str) -> Option<u64> {
    let mut parts = key.rsplit('/');
    parts.next()?;
    u64::from_str_radix(parts.next()?, 16).ok()
}

/// Whether `cursor` is a position a listing hands out: a stamp and an id.
pub(super) fn valid_cursor(cursor: &str) -> bool {
    let Some((stamp, id)) = cursor.split_once('/') else {
        return false;
    };
    stamp.len() == 16
        && stamp.bytes().all(|b| b.is_ascii_hexdigit())
        && !id.is_empty()
        && id.len() <= 128
        && !id.contains('/')
}

/// The entries every job has from its creation: `c/`, `s/`, `p/` (with an
/// owner) and, while it is live, `l/`.
fn created_keys(job: &JobSummary) -> Vec<String> {
    let tail = tail(job.created_at_ms, &job.id);
    let mut keys = vec![
        format!("{}{tail}", Listing::All.prefix()),
        format!("{}{tail}", Listing::Session(&job.session).prefix()),
    ];
    if let Some(owner) = &job.owner {
        keys.push(format!("{}{tail}", Listing::Owner(owner).prefix()));
    }
    keys
}

fn live_key(job: &JobSummary) -> String {
    format!(
        "{}{}",
        Listing::Live.prefix(),
        tail(job.created_at_ms, &job.id)
    )
}

/// The entries of a final job.
fn final_keys(job: &JobSummary) -> Vec<String> {
    vec![
        format!(
            "{}{}",
            Listing::Final(job.status).prefix(),
            tail(job.created_at_ms, &job.id)
        ),
        format!(
            "{}{}",
            Listing::Done.prefix(),
            tail(u64::MAX - job.ended_at_ms(), &job.id)
        ),
    ]
}

/// Writes the entries of `job`, about to be stored as it is: those of its
/// creation, and `l/` while it is live or `t/` and `d/` once final. Applied
/// now, durable with the record's write that follows.
pub(super) fn write(storage: &dyn Storage, job: &JobSummary) -> Result<(), JobError> {
    let mut keys = created_keys(job);
    if job.status.is_final() {
        keys.extend(final_keys(job));
    } else {
        keys.push(live_key(job));
    }
    for key in keys {
        storage.put_unsynced(BUCKET, &key, job.id.as_bytes())?;
    }
    Ok(())
}

/// Moves `job`, whose record is final, from `l/` to `t/` and `d/`.
pub(super) fn finalize(storage: &dyn Storage, job: &JobSummary) -> Result<(), JobError> {
    for key in final_keys(job) {
        storage.put_unsynced(BUCKET, &key, job.id.as_bytes())?;
    }
    // Durable: the entries above are too.
    storage.delete(BUCKET, &live_key(job))?;
    Ok(())
}

/// Removes every entry of `job` but its `c/` one (which the retention
/// sweep walks, and removes last).
pub(super) fn remove_but_all(storage: &dyn Storage, job: &JobSummary) -> Result<(), JobError> {
    let mut keys = created_keys(job);
    keys.remove(0);
    keys.push(live_key(job));
    if job.status.is_final() {
        keys.extend(final_keys(job));
    }
    for key in keys {
        storage.delete(BUCKET, &key)?;
    }
    Ok(())
}

/// Removes `job`'s `c/` entry.
pub(super) fn remove_all_entry(storage: &dyn Storage, job: &JobSummary) -> Result<(), JobError> {
    Ok(storage.delete(
        BUCKET,
        &format!(
            "{}{}",
            Listing::All.prefix(),
            tail(job.created_at_ms, &job.id)
        ),
    )?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_sort_by_time_and_names_stay_one_segment() {
        assert!(stamp(9) < stamp(10) && stamp(255) < stamp(4096));
        assert_eq!(Listing::Owner("a/b").prefix(), "p/a%2Fb/");
        assert_ne!(
            Listing::Owner("a").prefix(),
            Listing::Owner("a%2F").prefix()
        );
        let key = format!("{}{}", Listing::Session("s-1").prefix(), tail(42, "job-1"));
        assert_eq!(id_of(&key), "job-1");
        assert_eq!(stamp_of(&key), Some(42));
        assert!(valid_cursor(&tail(42, "job-1")));
        assert!(!valid_cursor("zz/job-1"));
        assert!(!valid_cursor(&format!("{}/a/b", stamp(1))));
    }
}
