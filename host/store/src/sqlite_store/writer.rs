//! The writer connection and what a group-commit leader runs on it: one
//! transaction for a whole batch of operations.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use rusqlite::{Connection, OptionalExtension, params};

use super::group_commit::{BatchError, BatchResult, OpResult};
use super::sqlite_error;
use crate::StorageError;

/// A write waiting for a batch. It owns its data: the leader running it is
/// usually another thread.
pub(super) enum Op {
    Append {
        stream: String,
        expected_last: u64,
        entries: Vec<Vec<u8>>,
    },
    Put {
        bucket: String,
        key: String,
        value: Vec<u8>,
    },
    Delete {
        bucket: String,
        key: String,
    },
    /// Compare-and-set: 1 when the value was `expected` and is now `value`, else 0.
    PutIf {
        bucket: String,
        key: String,
        expected: Option<Vec<u8>>,
        value: Option<Vec<u8>>,
    },
}

pub(super) struct Writer {
    conn: Connection,
    db_path: PathBuf,
    /// The committed heads of streams appended to lately, so an append needs
    /// no query before its insert. Only this connection writes (the data dir
    /// lock keeps other processes out), so a cached head stays true; entries
    /// are added only once their batch committed, and a batch that fails
    /// fails the store, so the cache never outlives a rollback.
    heads: HashMap<String, Head>,
}

/// Streams whose heads [`Writer::heads`] keeps at most; past that it starts
/// over. Far more than the sessions a host runs at once.
const CACHED_HEADS: usize = 16 * 1024;

/// What a batch knows of a stream it touched: its id (`None` while it has no
/// row in `streams`) and its last sequence, including the batch's own appends.
#[derive(Clone, Copy)]
struct Head {
    id: Option<i64>,
    last: u64,
}

/// What a batch did inside its transaction, before the commit.
struct Applied<'a> {
    results: Vec<OpResult>,
    /// Anything was written: the commit makes writes durable.
    wrote: bool,
    /// The heads of the streams appended to.
    heads: HashMap<&'a str, Head>,
}

/// An error that fails the whole batch (SQLite failed), as opposed to the
/// result of one operation (a conflict).
type Fatal = rusqlite::Error;

impl Writer {
    pub(super) fn new(conn: Connection, db_path: &Path) -> Writer {
        Writer {
            conn,
            db_path: db_path.to_path_buf(),
            heads: HashMap::new(),
        }
    }

    /// The connection, for whole-database work between batches (compaction).
    pub(super) fn conn(&self) -> &Connection {
        &self.conn
    }

    /// Runs `ops` in one transaction and commits it. `injected_fault`, asked
    /// just before the commit, may fail the batch instead (tests).
    pub(super) fn run(
        &mut self,
        ops: &[Op],
        injected_fault: impl FnOnce() -> Option<BatchError>,
    ) -> BatchResult {
        let failed = |what: &str, e: Fatal| BatchError::Sqlite {
            error: sqlite_error(&self.db_path, what, e),
        };
        // Cached: parsing these two costs as much as a small append.
        self.conn
            .prepare_cached("BEGIN IMMEDIATE")
            .and_then(|mut s| s.execute([]))
            .map_err(|e| failed("begin a transaction on", e))?;
        let applied = self.apply(ops);
        let outcome = match applied {
            Err(e) => Err(failed("write to", e)),
            Ok(applied) => match injected_fault() {
                Some(fault) => Err(fault),
                None => match self
                    .conn
                    .prepare_cached("COMMIT")
                    .and_then(|mut s| s.execute([]))
                {
                    Ok(_) => {
                        self.remember(applied.heads);
                        Ok((applied.results, applied.wrote))
                    }
                    Err(e) => Err(failed("commit to", e)),
                },
            },
        };
        if outcome.is_err() && !self.conn.is_autocommit() {
            // Whatever the batch wrote goes; the store fails from now on
            // anyway, so a rollback that fails too changes nothing.
            let _ = self.conn.execute_batch("ROLLBACK");
        }
        outcome
    }

    /// Keeps the heads a committed batch left.
    fn remember(&mut self, heads: HashMap<&str, Head>) {
        if self.heads.len() + heads.len() > CACHED_HEADS {
            self.heads.clear();
        }
        for (stream, head) in heads {
            if head.id.is_none() {
                continue;
            }
            match self.heads.get_mut(stream) {
                Some(cached) => *cached = head,
                None => {
                    self.heads.insert(stream.to_string(), head);
                }
            }
        }
    }

    /// Runs each op inside the open transaction.
    fn apply<'a>(&self, ops: &'a [Op]) -> Result<Applied<'a>, Fatal> {
        let mut heads: HashMap<&str, Head> = HashMap::new();
        let mut wrote = false;
        let mut results = Vec::with_capacity(ops.len());
        for op in ops {
            let result = match op {
                Op::Append {
                    stream,
                    expected_last,
                    entries,
                } => {
                    let result = self.append(&mut heads, stream, *expected_last, entries)?;
                    wrote |= result.is_ok() && !entries.is_empty();
                    result
                }
                Op::Put { bucket, key, value } => {
                    self.put(bucket, key, value)?;
                    wrote = true;
                    Ok(0)
                }
                Op::Delete { bucket, key } => {
                    wrote |= self.delete(bucket, key)?;
                    Ok(0)
                }
                Op::PutIf {
                    bucket,
                    key,
                    expected,
                    value,
                } => {
                    // Inside the batch's transaction, after the ops before it:
                    // nothing else writes between the read and the write.
                    let current: Option<Vec<u8>> = self
                        .conn
                        .prepare_cached("SELECT value FROM kv WHERE bucket = ?1 AND key = ?2")?
                        .query_row(params![bucket, key], |r| r.get(0))
                        .optional()?;
                    if current != *expected {
                        Ok(0)
                    } else {
                        match value {
                            Some(value) => {
                                self.put(bucket, key, value)?;
                                wrote = true;
                            }
                            None => wrote |= self.delete(bucket, key)?,
                        }
                        Ok(1)
                    }
                }
            };
            results.push(result);
        }
        Ok(Applied {
            results,
            wrote,
            heads,
        })
    }

    /// Sets `key` in `bucket` to `value`.
    fn put(&self, bucket: &str, key: &str, value: &[u8]) -> Result<(), Fatal> {
        self.conn
            .prepare_cached(
                "INSERT INTO kv (bucket, key, value) VALUES (?1, ?2, ?3)
                 ON CONFLICT (bucket, key) DO UPDATE SET value = excluded.value",
            )?
            .execute(params![bucket, key, value])?;
        Ok(())
    }

    /// Removes `key` from `bucket`; whether it was there.
    fn delete(&self, bucket: &str, key: &str) -> Result<bool, Fatal> {
        let deleted = self
            .conn
            .prepare_cached("DELETE FROM kv WHERE bucket = ?1 AND key = ?2")?
            .execute(params![bucket, key])?;
        Ok(deleted > 0)
    }

    /// One append: checks `expected_last` against the stream's head (as this
    /// batch left it) and inserts one row per entry.
    fn append<'a>(
        &self,
        heads: &mut HashMap<&'a str, Head>,
        stream: &'a str,
        expected_last: u64,
        entries: &[Vec<u8>],
    ) -> Result<OpResult, Fatal> {
        let head = match heads.get(stream).or_else(|| self.heads.get(stream)) {
            Some(head) => *head,
            None => match self.head(stream)? {
                Ok(head) => head,
                Err(damaged) => return Ok(Err(damaged)),
            },
        };
        if head.last != expected_last {
            return Ok(Err(StorageError::Conflict {
                stream: stream.to_string(),
                expected: expected_last,
                actual: head.last,
            }));
        }
        // An empty append only confirms the head; it is durable, being
        // committed, or part of this batch, which commits before it returns.
        if entries.is_empty() {
            heads.insert(stream, head);
            return Ok(Ok(expected_last));
        }
        let id = match head.id {
            Some(id) => id,
            None => {
                self.conn
                    .prepare_cached("INSERT INTO streams (name) VALUES (?1)")?
                    .execute([stream])?;
                self.conn.last_insert_rowid()
            }
        };
        // The caller checked that the new last sequence fits in an i64.
        let first = expected_last as i64 + 1;
        let mut insert = self
            .conn
            .prepare_cached("INSERT INTO entries (stream, seq, data) VALUES (?1, ?2, ?3)")?;
        for (seq, entry) in (first..).zip(entries) {
            insert.execute(params![id, seq, entry])?;
        }
        let last = expected_last + entries.len() as u64;
        heads.insert(stream, Head { id: Some(id), last });
        Ok(Ok(last))
    }

    /// The stream's id and last sequence, as committed.
    fn head(&self, stream: &str) -> Result<Result<Head, StorageError>, Fatal> {
        let id: Option<i64> = self
            .conn
            .prepare_cached("SELECT id FROM streams WHERE name = ?1")?
            .query_row([stream], |r| r.get(0))
            .optional()?;
        let Some(id) = id else {
            return Ok(Ok(Head { id: None, last: 0 }));
        };
        let last: Option<i64> = self
            .conn
            .prepare_cached("SELECT max(seq) FROM entries WHERE stream = ?1")?
            .query_row([id], |r| r.get(0))?;
        Ok(super::last_from_max(stream, last).map(|last| Head { id: Some(id), last }))
    }
}
