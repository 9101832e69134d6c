//! The SQLite backend: one database file in WAL mode, written by one
//! connection fed by group commit, read through a small pool of connections.
//!
//! # Layout of a data dir
//!
//! - `LOCK`: held by the process using the dir (see [`dir_lock`](crate::dir_lock)).
//!   A read-only store ([`SqliteStore::open_read_only`]) does not take it.
//! - `sqlite/store.db`: the database. Beside it SQLite keeps `store.db-wal`
//!   (the write-ahead log: commits land there first) and `store.db-shm` (the
//!   WAL index, shared memory between the connections of every process).
//!
//! The tables (see `schema.rs`):
//!
//! - `streams(id, name)`: each stream's name once, under a small integer id.
//! - `entries(id, stream, seq, data)`: one row per stream entry, with a
//!   unique index on `(stream, seq)`. A stream's head is `max(seq)`, one
//!   descent of that index; a read is a range scan of it.
//! - `kv(id, bucket, key, value)`: one row per key, with a unique index on
//!   `(bucket, key)`; a bucket exists while it holds a key.
//!
//! Why rowid tables with a separate index, not `WITHOUT ROWID` tables keyed on
//! `(stream, seq)`: a `WITHOUT ROWID` table is a B-tree whose interior pages
//! hold whole rows, so it only pays off for rows well under a twentieth of a
//! page. Entries and checkpoints are often kilobytes (tool output, model
//! replies); in a rowid table they live in the leaves alone, and the index
//! that orders them holds three integers per row. Why stream ids rather than
//! names in every row: a session's name is tens of bytes, as much again as a
//! small entry, and would be repeated in both the table and its index.
//!
//! The tables are `STRICT`, so a sequence is always an integer and an entry a
//! blob; `seq >= 1` is checked. What is left to detect on read is a row that
//! is missing: [`Storage::read`] checks that the sequences it returns follow
//! each other from `from`, and reports the first one missing as
//! [`StorageError::Damaged`]. (Only damage to the file, or a bug, makes a gap:
//! an append's rows are inserted in one transaction.)
//!
//! # Durability
//!
//! A commit appends the pages the transaction changed to the WAL, as frames,
//! the last one marked as ending a commit; a crash at any instant leaves
//! either the whole transaction in the WAL or, to recovery, none of it.
//! Pages are copied back into `store.db` by checkpoints, which a thread of
//! the store runs beside the writer ([`checkpoint`]) once the WAL holds
//! 16 MiB.
//!
//! - [`Durability::Flush`] is `synchronous=NORMAL`: a commit is a `write` of
//!   its frames, nothing is synced, so an acknowledged write is in the
//!   kernel and survives a killed process, not a power cut. A checkpoint
//!   `fsync`s the WAL before copying it and `store.db` after, so a power cut
//!   loses at most the commits since the last checkpoint and never leaves a
//!   database that does not open. (`synchronous=OFF` would skip those syncs,
//!   and a power cut could then corrupt the database.)
//! - [`Durability::Strict`] is `synchronous=FULL`: each commit also
//!   `fdatasync`s the WAL, once for the whole batch. At open the store
//!   `fsync`s `store.db`, the `sqlite` dir and the data dir, so the files and
//!   their names survive a power cut; SQLite itself syncs the dir when it
//!   creates a WAL file.
//!
//! # Writes: group commit
//!
//! SQLite has one writer at a time, and a commit costs about the same for one
//! write as for fifty, so every write goes through one connection in batches
//! ([`group_commit`]): a writer queues its operation, the first writer that
//! finds no batch running runs everything queued in one `BEGIN IMMEDIATE ...
//! COMMIT`, each operation with its own result (an append whose
//! `expected_last` does not match gets [`StorageError::Conflict`] and writes
//! nothing, without failing the others), and wakes each writer once the
//! commit returned. The data dir lock keeps other processes from writing, so
//! the head an append checks against cannot move under the batch, and the
//! writer keeps the heads of the streams it appended to in memory: an append
//! is one `INSERT` per entry, with no query before it.
//!
//! On the 2-core VM this was tuned on, 200-byte appends under `Flush` ran at
//! 40k to 45k/s from one writer and 50k to 65k/s from 16 (sled: 11k to 14k/s,
//! and 30k to 45k/s); under `Strict`, 8k to 12k/s and 36k to 44k/s (sled: 7k
//! to 8k/s and 26k to 38k/s).
//!
//! # Reads
//!
//! Reads use their own connections ([`pool`]), opened read-only: in WAL mode
//! they read the last committed snapshot while the writer appends, and never
//! wait for it.
//!
//! # Tuning, and why
//!
//! - Page size 4 KiB, SQLite's default: the unit the kernel caches and most
//!   disks write. Each commit writes every page it changed, whole, to the
//!   WAL, and small appends to many streams change one index leaf per
//!   stream, so larger pages would multiply the bytes each commit writes.
//!   Smaller ones would too, the other way: 1 KiB pages made 200-byte appends
//!   about 25% faster here, but an entry of a few kilobytes would then span a
//!   chain of overflow pages, read one by one, and checkpoints would write
//!   parts of the kernel's pages.
//! - `wal_autocheckpoint` off: the checkpointer thread does it, off the
//!   commit path, when the WAL reaches 16 MiB (its docs say how). SQLite's
//!   own checkpoint runs inside the commit that crosses the mark, and its two
//!   `fsync`s cost the writers of that batch, and all queued behind it,
//!   tens of milliseconds: a third of the throughput at 16 writers here.
//! - `journal_size_limit` 64 MiB: after a checkpoint the WAL is rewritten
//!   from its start rather than truncated, so commits overwrite allocated
//!   blocks (an `fdatasync` need not update the file size); only a WAL that
//!   grew past the limit (commits outrunning a checkpoint, a long read
//!   holding one back) is cut back. It is read whole by the first open after
//!   a crash: tens of MiB take well under a second.
//! - Page cache 16 MiB for the writer (the indexes' interior pages and the
//!   streams' last leaves stay hot), 4 MiB per reader.
//! - `busy_timeout` 5 s: only another process's connection (a read-only
//!   store recovering the WAL index) can hold a lock we need, briefly.
//! - `application_id` "GBXS" and `user_version` (the schema version) in the
//!   header: a store refuses a database of another application or of a newer
//!   schema before writing anything to it.
//!
//! # Failure
//!
//! When a batch fails (a full disk, an I/O error, a corrupt page), SQLite
//! rolls it back, each of its writers gets [`StorageError::Io`], and the store
//! turns *failed*: every later call, reads included, fails at once with that
//! first error, as [`SledStore`](crate::SledStore)'s does. Reopening the dir
//! finds every acknowledged write, and none of the failed batch.
//!
//! [`Storage::read`]: crate::Storage::read

mod backup;
mod checkpoint;
mod group_commit;
mod limits;
mod pool;
#[cfg(any(test, feature = "testing"))]
pub mod raw;
mod schema;
mod storage;
#[cfg(test)]
mod tests;
mod writer;

use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};

use rusqlite::ErrorCode;

use self::checkpoint::Checkpointer;
use self::group_commit::GroupCommit;
use self::pool::Pool;
use self::writer::{Op, Writer};
use super::{Durability, Result, StorageError};

/// The database file, under the data dir.
const DB_FILE: &str = "sqlite/store.db";

/// [`Storage`] on SQLite. Open one per data dir and share it (`Arc`) between
/// threads; a second [`open`](SqliteStore::open) of the same dir, in this
/// process or another, is refused with [`StorageError::Locked`] until the
/// first is dropped. Read-only stores
/// ([`open_read_only`](SqliteStore::open_read_only)) may be opened beside it.
///
/// # Failure
///
/// See the module docs: after a failed commit every call fails with its error
/// until the dir is reopened.
///
/// [`Storage`]: crate::Storage
pub struct SqliteStore {
    dir: PathBuf,
    db_path: PathBuf,
    durability: Durability,
    commit: GroupCommit<Op>,
    /// Declared, like the readers, before the writer so that they close
    /// first: the last connection to close checkpoints the WAL and removes
    /// it. Dropping it stops its thread. `None` in a read-only store.
    _checkpointer: Option<Checkpointer>,
    readers: Pool,
    /// `None` in a read-only store.
    writer: Option<Arc<Mutex<Writer>>>,
    #[cfg(feature = "fault-injection")]
    failing_commits: crate::fault::FailNext,
    /// Declared last, so it is released only after the connections closed.
    /// `None` in a read-only store.
    _lock: Option<File>,
}

impl std::fmt::Debug for SqliteStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SqliteStore")
            .field("dir", &self.dir)
            .field("durability", &self.durability)
            .field("read_only", &self.writer.is_none())
            .finish_non_exhaustive()
    }
}

/// The error for `e`, raised while doing `what` (a verb phrase taking the
/// file) to the database at `path`: names the file, and what to do.
fn sqlite_error(path: &Path, what: &str, e: rusqlite::Error) -> StorageError {
    let path = path.display();
    match e.sqlite_error_code() {
        Some(ErrorCode::DatabaseCorrupt | ErrorCode::NotADatabase) => {
            StorageError::Corrupt(format!(
                "cannot {what} `{path}`: {e}: run `glovebox store check` on its data dir, and restore the dir from a backup if the check fails"
            ))
        }
        Some(ErrorCode::DiskFull) => StorageError::Io(format!(
            "cannot {what} `{path}`: the disk is full ({e}): free disk space"
        )),
        Some(ErrorCode::DatabaseBusy | ErrorCode::DatabaseLocked) => StorageError::Io(format!(
            "cannot {what} `{path}`: another connection holds a lock on it ({e}): stop whatever else has the file open"
        )),
        Some(ErrorCode::CannotOpen | ErrorCode::PermissionDenied | ErrorCode::ReadOnly) => {
            StorageError::Io(format!(
                "cannot {what} `{path}`: {e}: check that the file and its directory exist and that glovebox may read and write them"
            ))
        }
        _ => StorageError::Io(format!("cannot {what} `{path}`: {e}")),
    }
}

/// A stream's last sequence from `max(seq)` over its rows (`None`: no rows).
fn last_from_max(stream: &str, max: Option<i64>) -> Result<u64, StorageError> {
    match max {
        None => Ok(0),
        Some(seq) => u64::try_from(seq)
            .ok()
            .filter(|seq| *seq >= 1)
            .ok_or_else(|| {
                StorageError::damaged(stream, 1, format!("its last row has sequence {seq}"))
            }),
    }
}

impl SqliteStore {
    /// Opens (creating it if needed) the store in `dir`: locks `<dir>/LOCK`,
    /// then opens `<dir>/sqlite/store.db`. Fails at once with
    /// [`StorageError::Locked`] if another store has the dir.
    #[tracing::instrument(skip_all, fields(dir = %dir.display(), ?durability))]
    pub fn open(dir: &Path, durability: Durability) -> Result<SqliteStore, StorageError> {
        let lock = crate::dir_lock::create_and_lock(dir)?;
        let db_path = dir.join(DB_FILE);
        let sqlite_dir = db_path.parent().expect("DB_FILE has a parent");
        std::fs::create_dir_all(sqlite_dir).map_err(|e| {
            StorageError::Io(format!("cannot create `{}`: {e}", sqlite_dir.display()))
        })?;
        let trigger = Checkpointer::trigger();
        let on_commit = trigger.clone();
        let conn = schema::open_writer(&db_path, durability, move |pages| {
            on_commit.committed(pages)
        })?;
        if durability == Durability::Strict {
            for path in [&db_path, sqlite_dir, dir] {
                File::open(path).and_then(|f| f.sync_all()).map_err(|e| {
                    StorageError::Io(format!("cannot fsync `{}`: {e}", path.display()))
                })?;
            }
        }
        let writer = Arc::new(Mutex::new(Writer::new(conn, &db_path)));
        let checkpointer = Checkpointer::start(&trigger, &db_path, durability, writer.clone())?;
        tracing::debug!("storage opened");
        Ok(SqliteStore {
            dir: dir.to_path_buf(),
            durability,
            commit: GroupCommit::new(),
            _checkpointer: Some(checkpointer),
            readers: Pool::new(&db_path, None),
            writer: Some(writer),
            db_path,
            #[cfg(feature = "fault-injection")]
            failing_commits: Default::default(),
            _lock: Some(lock),
        })
    }

    /// Opens the store in `dir` for reading only, without taking the data dir
    /// lock: for an operator's commands (check, backup) while a server has
    /// the dir. Every read sees the store as the server had committed it when
    /// this open returned (one snapshot, held until the store is dropped), so
    /// a check or a backup sees one state, never a log from before a
    /// checkpoint from after. Every write fails with [`StorageError::Io`].
    ///
    /// Fails with [`StorageError::Io`] naming the file when `dir` holds no
    /// SQLite store yet (never opened with this backend, or the wrong dir):
    /// it creates nothing.
    pub fn open_read_only(dir: &Path) -> Result<SqliteStore, StorageError> {
        let db_path = dir.join(DB_FILE);
        if !db_path.is_file() {
            return Err(StorageError::Io(format!(
                "there is no SQLite store at `{}`: `{}` is not a data dir the SQLite backend has opened; check the path (or open the store read-write once to create it)",
                db_path.display(),
                dir.display()
            )));
        }
        let conn = schema::open_reader(&db_path)?;
        match schema::inspect(&conn, &db_path)? {
            schema::Found::Current => {}
            schema::Found::Fresh => {
                return Err(StorageError::Io(format!(
                    "`{}` holds no glovebox store yet (it is empty): open the store read-write once to create it",
                    db_path.display()
                )));
            }
        }
        Ok(SqliteStore {
            dir: dir.to_path_buf(),
            durability: Durability::Flush,
            commit: GroupCommit::new(),
            _checkpointer: None,
            readers: Pool::snapshot(&db_path, conn)?,
            writer: None,
            db_path,
            #[cfg(feature = "fault-injection")]
            failing_commits: Default::default(),
            _lock: None,
        })
    }

    /// The data dir.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The durability writes are acknowledged at ([`Durability::Flush`] for
    /// a read-only store, which writes nothing).
    pub fn durability(&self) -> Durability {
        self.durability
    }

    /// Number of commits that made writes durable. Concurrent writers share
    /// commits, so this grows slower than the number of writes.
    pub fn flush_count(&self) -> u64 {
        self.commit.commit_count()
    }

    /// Makes the next `n` group commits fail with an I/O error: each is
    /// rolled back, its writers are not acknowledged, and the store turns
    /// failed (see [`SqliteStore`]).
    #[cfg(feature = "fault-injection")]
    pub fn fail_next_flushes(&self, n: usize) {
        self.failing_commits.arm(n);
    }

    /// Asked by each batch just before its commit: fail it instead?
    fn injected_fault(&self) -> Option<group_commit::BatchError> {
        #[cfg(feature = "fault-injection")]
        {
            if self.failing_commits.take() {
                return Some(group_commit::BatchError::Injected {
                    db: self.db_path.clone(),
                });
            }
        }
        None
    }

    /// Returns the database's free pages to the file system (`VACUUM`).
    /// SQLite reuses the pages deleted records free (old checkpoints, retired
    /// entries) by itself; this only shrinks the file. Writers wait while it
    /// runs (it rewrites the whole database); readers do not. The rewritten
    /// pages pass through the WAL, which the close of the store folds back.
    pub fn compact(&self) -> Result<(), StorageError> {
        self.commit.check()?;
        let Some(writer) = &self.writer else {
            return Err(StorageError::Io(format!(
                "cannot compact `{}`: the store was opened read-only",
                self.db_path.display()
            )));
        };
        let writer = writer.lock().unwrap_or_else(PoisonError::into_inner);
        writer
            .conn()
            .execute_batch("VACUUM")
            .map_err(|e| sqlite_error(&self.db_path, "compact", e))
    }

    /// Queues `op` for the next group commit and returns its result.
    fn write(&self, op: Op) -> Result<u64, StorageError> {
        let Some(writer) = &self.writer else {
            return Err(StorageError::Io(format!(
                "cannot write to `{}`: the store was opened read-only: open it read-write (stop the process holding the data dir first)",
                self.db_path.display()
            )));
        };
        self.commit.submit(op, |ops| {
            // A leader that panicked left the store failed, and failed stores
            // run no batch; the connection itself is still whole.
            let mut writer = writer.lock().unwrap_or_else(PoisonError::into_inner);
            writer.run(ops, || self.injected_fault())
        })
    }
}
