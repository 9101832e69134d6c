//! A job's bodies, apart from its record: bucket `job_data`, keys
//! `<id>/input` (the input's JSON text) and `<id>/result/<attempt>` (the
//! whole [`JobResult`] that attempt produced, as JSON).
//!
//! Why apart: see `summary.rs`. Why the attempt in the key: two runs of one
//! job (a host thought dead whose run still finished, and the run that took
//! the job over) each store their result under their own key, and the record
//! names the one it took, so neither overwrites what the other's record
//! points at; the loser removes its own.
//!
//! Bodies are written before the record that names them (unsynced: the
//! record's durable write makes them durable too) and removed before the
//! record, so a record never names a body that was not written, and a body
//! left behind by a crash is at worst a body nobody reads.

use super::records::{JobError, JobResult};
use super::summary::{JobSummary, Kept};
use crate::storage::{Storage, StorageError};

pub(super) const BUCKET: &str = "job_data";

fn input_key(id: &str) -> String {
    format!("{id}/input")
}

fn result_key(id: &str, attempt: u32) -> String {
    format!("{id}/result/{attempt}")
}

/// Stores job `id`'s input (applied now, durable with the next durable write).
pub(super) fn put_input(storage: &dyn Storage, id: &str, input: &str) -> Result<(), JobError> {
    Ok(storage.put_unsynced(BUCKET, &input_key(id), input.as_bytes())?)
}

/// Stores the whole result of job `id`'s attempt `attempt`.
pub(super) fn put_result(
    storage: &dyn Storage,
    id: &str,
    attempt: u32,
    whole: &[u8],
) -> Result<(), JobError> {
    Ok(storage.put_unsynced(BUCKET, &result_key(id, attempt), whole)?)
}

/// Job `id`'s input.
pub(super) fn input(storage: &dyn Storage, id: &str) -> Result<String, JobError> {
    let bytes = storage
        .get(BUCKET, &input_key(id))?
        .ok_or_else(|| missing(id, "input"))?;
    String::from_utf8(bytes).map_err(|_| {
        JobError::Storage(StorageError::Corrupt(format!(
            "the input of job `{id}` is not UTF-8"
        )))
    })
}

/// The whole result job `id` keeps apart as `kept`.
pub(super) fn result(storage: &dyn Storage, id: &str, kept: Kept) -> Result<JobResult, JobError> {
    let bytes = storage
        .get(BUCKET, &result_key(id, kept.attempt))?
        .ok_or_else(|| missing(id, "result"))?;
    serde_json::from_slice(&bytes).map_err(|e| {
        JobError::Storage(StorageError::Corrupt(format!(
            "the result of job `{id}` does not decode: {e}"
        )))
    })
}

/// Removes the result attempt `attempt` of job `id` stored (one its record
/// did not take).
pub(super) fn remove_result(storage: &dyn Storage, id: &str, attempt: u32) -> Result<(), JobError> {
    Ok(storage.delete(BUCKET, &result_key(id, attempt))?)
}

/// Removes every body `job` names.
pub(super) fn remove(storage: &dyn Storage, job: &JobSummary) -> Result<(), JobError> {
    storage.delete(BUCKET, &input_key(&job.id))?;
    if let Some(kept) = job.kept() {
        remove_result(storage, &job.id, kept.attempt)?;
    }
    Ok(())
}

fn missing(id: &str, what: &str) -> JobError {
    JobError::Storage(StorageError::Corrupt(format!(
        "the {what} of job `{id}` is missing from the store (removed with the job by the retention sweep, or lost): `glovebox job status {id}` again, or spawn it again"
    )))
}
