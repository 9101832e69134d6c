//! The [`Storage`] trait on SQLite: a write is checked (the store not
//! failed, the sizes SQLite takes) and queued for the next group commit;
//! a read runs on a connection of the reader pool and checks that the
//! sequences it returns follow each other (see the module docs of
//! `sqlite_store`).

use rusqlite::{OptionalExtension, params};

use super::limits::{check_key_size, check_size, check_value_size, shorten};
use super::writer::Op;
use super::{SqliteStore, last_from_max, sqlite_error};
use crate::{Result, Storage, StorageError, Swap, check_stream_name};

/// The smallest string greater than every string starting with `prefix`, in
/// SQLite's `BINARY` order (that of UTF-8 bytes, which is that of code
/// points); `None` when there is none. Bounds a prefix scan to a range of the
/// index; `LIKE` would treat `%` and `_` in keys as wildcards.
pub(super) fn prefix_end(prefix: &str) -> Option<String> {
    let mut chars: Vec<char> = prefix.chars().collect();
    while let Some(last) = chars.pop() {
        let next = (u32::from(last) + 1..=u32::from(char::MAX)).find_map(char::from_u32);
        if let Some(next) = next {
            chars.push(next);
            return Some(chars.into_iter().collect());
        }
    }
    None
}

impl SqliteStore {
    fn read_error(&self, e: rusqlite::Error) -> StorageError {
        sqlite_error(&self.db_path, "read", e)
    }

    /// The first missing sequence of `stream` at or before `from`, which is
    /// missing: just after the last entry before it.
    fn gap_start(
        &self,
        conn: &rusqlite::Connection,
        stream: &str,
        from: i64,
    ) -> Result<u64, StorageError> {
        let before: Option<i64> = conn
            .prepare_cached(
                "SELECT max(seq) FROM entries
                 WHERE stream = (SELECT id FROM streams WHERE name = ?1) AND seq < ?2",
            )
            .and_then(|mut s| s.query_row(params![stream, from], |r| r.get(0)))
            .map_err(|e| self.read_error(e))?;
        Ok(before.map_or(1, |seq| seq.max(0) as u64 + 1))
    }
}

impl Storage for SqliteStore {
    fn append(&self, stream: &str, expected_last: u64, entries: &[Vec<u8>]) -> Result<u64> {
        self.commit.check()?;
        check_stream_name(stream)?;
        check_size(stream.len(), || {
            format!("stream name `{}`", shorten(stream))
        })?;
        // Sequences are stored as SQLite integers, which are i64.
        crate::last_after_append(stream, expected_last, entries.len(), i64::MAX as u64)?;
        for (i, entry) in entries.iter().enumerate() {
            check_size(entry.len(), || {
                format!(
                    "entry {} of the append to stream `{}`",
                    i + 1,
                    shorten(stream)
                )
            })?;
        }
        self.write(Op::Append {
            stream: stream.to_string(),
            expected_last,
            entries: entries.to_vec(),
        })
    }

    fn read(&self, stream: &str, from: u64, max: usize) -> Result<Vec<(u64, Vec<u8>)>> {
        self.commit.check()?;
        check_stream_name(stream)?;
        let from = from.max(1);
        // Past i64::MAX there is no entry to return.
        let (Ok(from_i64), false) = (i64::try_from(from), max == 0) else {
            return Ok(Vec::new());
        };
        let limit = i64::try_from(max).unwrap_or(i64::MAX);
        let conn = self.readers.get()?;
        let mut stmt = conn
            .prepare_cached(
                "SELECT seq, data FROM entries
                 WHERE stream = (SELECT id FROM streams WHERE name = ?1) AND seq >= ?2
                 ORDER BY seq LIMIT ?3",
            )
            .map_err(|e| self.read_error(e))?;
        let mut rows = stmt
            .query(params![stream, from_i64, limit])
            .map_err(|e| self.read_error(e))?;
        let mut out = Vec::new();
        let mut expected = from;
        while let Some(row) = rows.next().map_err(|e| self.read_error(e))? {
            let seq: i64 = row.get(0).map_err(|e| self.read_error(e))?;
            // The index yields sequences >= from, rising and each once.
            let seq = seq as u64;
            if seq != expected {
                let first_missing = if out.is_empty() {
                    self.gap_start(&conn, stream, from_i64)?
                } else {
                    expected
                };
                return Err(StorageError::damaged(
                    stream,
                    first_missing,
                    "it is missing",
                ));
            }
            let data: Vec<u8> = row.get(1).map_err(|e| {
                StorageError::damaged(
                    stream,
                    seq,
                    format!("the stored row holding it is malformed: {e}"),
                )
            })?;
            out.push((seq, data));
            expected += 1;
        }
        Ok(out)
    }

    fn last_seq(&self, stream: &str) -> Result<u64> {
        self.commit.check()?;
        check_stream_name(stream)?;
        let conn = self.readers.get()?;
        let max: Option<i64> = conn
            .prepare_cached(
                "SELECT max(seq) FROM entries
                 WHERE stream = (SELECT id FROM streams WHERE name = ?1)",
            )
            .and_then(|mut s| s.query_row([stream], |r| r.get(0)))
            .map_err(|e| self.read_error(e))?;
        last_from_max(stream, max)
    }

    fn streams(&self) -> Result<Vec<String>> {
        self.commit.check()?;
        let conn = self.readers.get()?;
        let mut stmt = conn
            .prepare_cached(
                "SELECT name FROM streams AS s
                 WHERE EXISTS (SELECT 1 FROM entries WHERE stream = s.id)
                 ORDER BY name",
            )
            .map_err(|e| self.read_error(e))?;
        stmt.query_map([], |r| r.get(0))
            .and_then(|rows| rows.collect())
            .map_err(|e| self.read_error(e))
    }

    fn put(&self, bucket: &str, key: &str, value: &[u8]) -> Result<()> {
        self.commit.check()?;
        check_key_size(bucket, key)?;
        check_value_size(bucket, key, value)?;
        self.write(Op::Put {
            bucket: bucket.to_string(),
            key: key.to_string(),
            value: value.to_vec(),
        })
        .map(|_| ())
    }

    /// One op of a group commit: its read and its write run in the batch's
    /// transaction, so no other write comes between them.
    fn put_if(&self, bucket: &str, key: &str, swap: Swap<'_>) -> Result<bool> {
        let (expected, value) = (swap.from, swap.to);
        self.commit.check()?;
        check_key_size(bucket, key)?;
        if let Some(value) = value {
            check_value_size(bucket, key, value)?;
        }
        self.write(Op::PutIf {
            bucket: bucket.to_string(),
            key: key.to_string(),
            expected: expected.map(<[u8]>::to_vec),
            value: value.map(<[u8]>::to_vec),
        })
        .map(|swapped| swapped == 1)
    }

    fn get(&self, bucket: &str, key: &str) -> Result<Option<Vec<u8>>> {
        self.commit.check()?;
        let conn = self.readers.get()?;
        conn.prepare_cached("SELECT value FROM kv WHERE bucket = ?1 AND key = ?2")
            .and_then(|mut s| s.query_row([bucket, key], |r| r.get(0)).optional())
            .map_err(|e| self.read_error(e))
    }

    fn delete(&self, bucket: &str, key: &str) -> Result<()> {
        self.commit.check()?;
        check_key_size(bucket, key)?;
        self.write(Op::Delete {
            bucket: bucket.to_string(),
            key: key.to_string(),
        })
        .map(|_| ())
    }

    fn scan(&self, bucket: &str, prefix: &str) -> Result<Vec<(String, Vec<u8>)>> {
        self.commit.check()?;
        let conn = self.readers.get()?;
        let end = prefix_end(prefix);
        let sql = match end {
            Some(_) => {
                "SELECT key, value FROM kv WHERE bucket = ?1 AND key >= ?2 AND key < ?3 ORDER BY key"
            }
            None => "SELECT key, value FROM kv WHERE bucket = ?1 AND key >= ?2 ORDER BY key",
        };
        let mut stmt = conn.prepare_cached(sql).map_err(|e| self.read_error(e))?;
        let rows = match &end {
            Some(end) => stmt.query(params![bucket, prefix, end]),
            None => stmt.query(params![bucket, prefix]),
        };
        rows.and_then(|rows| {
            rows.mapped(|r| Ok((r.get::<_, String>(0)?, r.get(1)?)))
                .collect::<Result<Vec<_>, _>>()
        })
        .map_err(|e| self.read_error(e))
    }

    fn scan_page(
        &self,
        bucket: &str,
        prefix: &str,
        after: Option<&str>,
        limit: usize,
    ) -> Result<Vec<(String, Vec<u8>)>> {
        self.commit.check()?;
        let conn = self.readers.get()?;
        // Keys compare as SQLite's BINARY collation compares them: bytewise,
        // which is the order of `scan` and of the other backends.
        let (lower, lower_op) = match after {
            Some(after) if after >= prefix => (after, ">"),
            _ => (prefix, ">="),
        };
        let end = prefix_end(prefix);
        let upper = if end.is_some() { " AND key < ?3" } else { "" };
        let sql = format!(
            "SELECT key, value FROM kv WHERE bucket = ?1 AND key {lower_op} ?2{upper} ORDER BY key LIMIT ?4"
        );
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        let mut stmt = conn.prepare_cached(&sql).map_err(|e| self.read_error(e))?;
        let rows = stmt.query(params![bucket, lower, end, limit]);
        rows.and_then(|rows| {
            rows.mapped(|r| Ok((r.get::<_, String>(0)?, r.get(1)?)))
                .collect::<Result<Vec<_>, _>>()
        })
        .map_err(|e| self.read_error(e))
    }

    fn failure(&self) -> Option<String> {
        self.commit.failure()
    }

    fn buckets(&self) -> Result<Vec<String>> {
        self.commit.check()?;
        let conn = self.readers.get()?;
        let mut next = conn
            .prepare_cached("SELECT bucket FROM kv WHERE bucket > ?1 ORDER BY bucket LIMIT 1")
            .map_err(|e| self.read_error(e))?;
        let mut names: Vec<String> = Vec::new();
        // One index seek per bucket, rather than a scan of every key.
        let mut current: Option<String> = conn
            .query_row("SELECT min(bucket) FROM kv", [], |r| r.get(0))
            .map_err(|e| self.read_error(e))?;
        while let Some(name) = current {
            current = next
                .query_row([&name], |r| r.get(0))
                .optional()
                .map_err(|e| self.read_error(e))?;
            names.push(name);
        }
        Ok(names)
    }
}
