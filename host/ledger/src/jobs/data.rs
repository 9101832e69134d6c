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
//! A body longer than [`CHUNK`] is kept in pieces of at most that size,
//! `<key>/<n>`, with a [`MARK`]ed line under `<key>` itself saying how many
//! (a body written whole before, and every short one, is read as it is).
//! Why (issue 36): sled keeps a value over 128 KiB in a file of its own and
//! counts it in its cache as that file's pointer, so the tree node holding it
//! was never evicted: every output an agent's jobs produced stayed in the
//! host's memory until it restarted (a flood of 2 MB outputs, 260 MiB). Its
//! pieces are counted at their size and leave the cache like any other.
//!
//! Bodies are written before the record that names them (unsynced: the
//! record's durable write makes them durable too) and removed before the
//! record, so a record never names a body that was not written, and a body
//! left behind by a crash is at worst a body nobody reads. Pieces are
//! written before the line that names them, and removed after it.

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

/// The longest piece of a body: a sled leaf (at most 17 entries) of them
/// stays well under sled's 128 KiB, past which it would be kept apart and
/// miscounted again (see the module's docs).
pub(super) const CHUNK: usize = 4 * 1024;

/// What starts the line a body kept in pieces leaves under its own key:
/// no JSON text starts with a NUL, so a body written whole is never taken
/// for one. The line is `MARK`, the number of pieces, a space and the
/// body's length in bytes.
const MARK: &[u8] = b"\0pieces ";

fn piece_key(key: &str, n: usize) -> String {
    format!("{key}/{n}")
}

/// Stores `body` under `key`: whole when it is at most [`CHUNK`] long, else
/// in pieces (applied now, durable with the next durable write).
fn put_body(storage: &dyn Storage, key: &str, body: &[u8]) -> Result<(), StorageError> {
    if body.len() <= CHUNK {
        return storage.put_unsynced(BUCKET, key, body);
    }
    let pieces = body.chunks(CHUNK);
    let count = pieces.len();
    for (n, piece) in pieces.enumerate() {
        storage.put_unsynced(BUCKET, &piece_key(key, n), piece)?;
    }
    let mut line = MARK.to_vec();
    line.extend_from_slice(format!("{count} {}", body.len()).as_bytes());
    storage.put_unsynced(BUCKET, key, &line)
}

/// How many pieces the line `value` names, if it is one.
fn pieces(key: &str, value: &[u8]) -> Result<Option<(usize, usize)>, StorageError> {
    let Some(rest) = value.strip_prefix(MARK) else {
        return Ok(None);
    };
    let parsed = std::str::from_utf8(rest).ok().and_then(|rest| {
        let (count, len) = rest.split_once(' ')?;
        Some((count.parse().ok()?, len.parse().ok()?))
    });
    parsed.map(Some).ok_or_else(|| {
        StorageError::Corrupt(format!(
            "the job body `{key}` in bucket `{BUCKET}` is a damaged list of pieces"
        ))
    })
}

/// The body under `key`, put together from its pieces if it was kept so.
fn body(storage: &dyn Storage, key: &str) -> Result<Option<Vec<u8>>, StorageError> {
    let Some(value) = storage.get(BUCKET, key)? else {
        return Ok(None);
    };
    let Some((count, len)) = pieces(key, &value)? else {
        return Ok(Some(value));
    };
    let mut whole = Vec::with_capacity(len);
    for n in 0..count {
        let piece = storage.get(BUCKET, &piece_key(key, n))?.ok_or_else(|| {
            StorageError::Corrupt(format!(
                "piece {n} of the job body `{key}` in bucket `{BUCKET}` is missing"
            ))
        })?;
        whole.extend_from_slice(&piece);
    }
    if whole.len() != len {
        return Err(StorageError::Corrupt(format!(
            "the job body `{key}` in bucket `{BUCKET}` holds {} bytes, its line says {len}",
            whole.len()
        )));
    }
    Ok(Some(whole))
}

/// Removes the body under `key`: the line first, then its pieces.
fn remove_body(storage: &dyn Storage, key: &str) -> Result<(), StorageError> {
    let line = storage.get(BUCKET, key)?;
    storage.delete(BUCKET, key)?;
    // A damaged line names no pieces to remove: they are left behind,
    // as a crash leaves a body, read by nobody.
    if let Some((count, _)) = line.and_then(|v| pieces(key, &v).ok().flatten()) {
        for n in 0..count {
            storage.delete(BUCKET, &piece_key(key, n))?;
        }
    }
    Ok(())
}

/// Stores job `id`'s input (applied now, durable with the next durable write).
pub(super) fn put_input(storage: &dyn Storage, id: &str, input: &str) -> Result<(), JobError> {
    Ok(put_body(storage, &input_key(id), input.as_bytes())?)
}

/// Stores the whole result of job `id`'s attempt `attempt`.
pub(super) fn put_result(
    storage: &dyn Storage,
    id: &str,
    attempt: u32,
    whole: &[u8],
) -> Result<(), JobError> {
    Ok(put_body(storage, &result_key(id, attempt), whole)?)
}

/// Job `id`'s input.
pub(super) fn input(storage: &dyn Storage, id: &str) -> Result<String, JobError> {
    let bytes = body(storage, &input_key(id))?.ok_or_else(|| missing(id, "input"))?;
    String::from_utf8(bytes).map_err(|_| {
        JobError::Storage(StorageError::Corrupt(format!(
            "the input of job `{id}` is not UTF-8"
        )))
    })
}

/// The whole result job `id` keeps apart as `kept`.
pub(super) fn result(storage: &dyn Storage, id: &str, kept: Kept) -> Result<JobResult, JobError> {
    let bytes =
        body(storage, &result_key(id, kept.attempt))?.ok_or_else(|| missing(id, "result"))?;
    serde_json::from_slice(&bytes).map_err(|e| {
        JobError::Storage(StorageError::Corrupt(format!(
            "the result of job `{id}` does not decode: {e}"
        )))
    })
}

/// Removes the result attempt `attempt` of job `id` stored (one its record
/// did not take).
pub(super) fn remove_result(storage: &dyn Storage, id: &str, attempt: u32) -> Result<(), JobError> {
    Ok(remove_body(storage, &result_key(id, attempt))?)
}

/// Removes every body `job` names.
pub(super) fn remove(storage: &dyn Storage, job: &JobSummary) -> Result<(), JobError> {
    remove_body(storage, &input_key(&job.id))?;
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
