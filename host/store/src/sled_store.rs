//! The embedded backend: sled 0.34, one process per data dir.
//!
//! Layout of a data dir:
//!
//! - `LOCK`: held by the process using the dir (see [`dir_lock`]).
//! - `sled/`: the database, with these trees:
//!   - `streams`: one key per append, `<stream> 0x00 <sequence of its first
//!     entry, 8 bytes big-endian>`, whose value holds the append's entries
//!     ([`chunk`]). A prefix scan yields a stream's entries in order, and its
//!     last key gives its head.
//!   - `kv:<bucket>`: one tree per bucket, keys and values as given.
//!
//! Why one key per append rather than a key per entry plus a tree of heads:
//! an append must be atomic (after a crash, head and entries agree), and
//! sled 0.34 makes a write of several keys atomic only through a `Batch` or a
//! transaction. Each of those takes a process-wide lock and seals sled's I/O
//! buffer, writing it out on its own (a `pwrite` plus a `sync_file_range`,
//! ~100 µs here), which capped appends at ~10k/s however many writers shared
//! a flush. A single key is one log record, which sled recovers whole or not
//! at all, and concurrent appends share I/O buffers and flushes.
//!
//! A stream that does not read back whole (a record missing between two
//! others, a record or key that does not decode) is reported as
//! [`StorageError::Damaged`] at the first sequence that cannot be read, so a
//! caller can tell which stream, and from where, is damaged.
//!
//! Appends to one stream are serialized in this process by a striped lock
//! (read the head, compare, insert), and the data dir lock keeps other
//! processes out, so `expected_last` needs no transaction. Durability comes
//! from group commit ([`group_commit`]):
//!
//! - [`Durability::Flush`] is sled's `flush()`: the log is written out with
//!   `sync_file_range`, ~100 µs per flush on this kind of VM. sled also
//!   `fsync`s its log from a background thread every 500 ms, which bounds the
//!   loss on a power cut without promising anything.
//! - [`Durability::Strict`] adds `fdatasync` on the files sled wrote (its
//!   log, new blob files; see the `strict` module): 0.1 to 4 ms more per
//!   flush here.

mod group_commit;
#[cfg(any(test, feature = "testing"))]
pub mod raw;
mod records;
mod repair;
mod storage;
mod strict;
#[cfg(test)]
mod tests;

use std::collections::HashMap;
use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, PoisonError, RwLock};

use self::group_commit::GroupCommit;
use self::records::APPEND_STRIPES;
use self::strict::StrictSync;
use super::{Durability, REOPEN_FIX, Result, StorageError};

/// [`Storage`] on sled. Open one per data dir and share it (`Arc`) between
/// threads; a second open of the same dir, in this process or another, is
/// refused with [`StorageError::Locked`] until the first is dropped.
///
/// # Failure
///
/// When a flush fails (disk full, I/O error), every write waiting on it gets
/// [`StorageError::Io`] and the store turns *failed*: every later call,
/// reads included, fails at once with that first error. sled's memory may by
/// then hold writes that were never acknowledged, and they may or may not be
/// on disk, so neither reads nor later flushes can be trusted. Drop the store
/// and open the dir again ([`crate::Reopening`] does it in place): what
/// recovery finds is consistent (whole appends, no gaps), and includes every
/// acknowledged write and perhaps some unacknowledged ones, as with any
/// database.
///
/// [`Storage`]: crate::Storage
pub struct SledStore {
    dir: PathBuf,
    durability: Durability,
    db: sled::Db,
    streams: sled::Tree,
    /// Serializes appends to one stream: a stream always maps to one stripe.
    append_locks: Box<[Mutex<()>]>,
    buckets: RwLock<HashMap<String, sled::Tree>>,
    commit: GroupCommit,
    strict: Option<StrictSync>,
    /// What [`repair::before_open`] moved aside at open.
    repairs: Vec<String>,
    #[cfg(feature = "fault-injection")]
    failing_flushes: crate::fault::FailNext,
    /// Declared last, so it is released only after sled has closed its files.
    _lock: File,
}

impl std::fmt::Debug for SledStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SledStore")
            .field("dir", &self.dir)
            .field("durability", &self.durability)
            .finish_non_exhaustive()
    }
}

fn sled_error(e: sled::Error) -> StorageError {
    match e {
        sled::Error::Corruption { .. } => StorageError::Corrupt(e.to_string()),
        _ => StorageError::Io(e.to_string()),
    }
}

/// Why a group-commit flush failed: every writer waiting on it fails with
/// it, and the store refuses all work from then on (see [`GroupCommit`]).
/// Each names the data dir and says how the store comes back.
#[derive(thiserror::Error, Debug)]
enum FlushError {
    /// sled's flush, or the strict sync after it, failed.
    #[error("flushing `{}` failed: {reason}: {}", .dir.display(), REOPEN_FIX)]
    Failed { dir: PathBuf, reason: String },
    /// A test made this flush fail (`fail_next_flushes`).
    #[cfg(feature = "fault-injection")]
    #[error("injected fault: flushing `{}` failed: {}", .dir.display(), REOPEN_FIX)]
    Injected { dir: PathBuf },
    /// The flush panicked: nothing tells what reached the disk.
    #[error("a storage flush panicked")]
    Panicked,
}

/// The sled tree holding every stream's records.
const STREAMS_TREE: &str = "streams";

/// What sled keeps of the tree in memory. sled's own default is 1 GiB, so a
/// host's RSS grew with everything it wrote, up to that: 100,000 short
/// sessions added 390 MiB. Bounded at 64 MiB they added 114 MiB (sled's
/// cache takes about a sixth more than its bound, and its churn leaves holes
/// in the allocator); at 16 MiB, with one allocator heap a core
/// (`src/allocator.rs`), about 58 MiB, under the 64 MiB issue 36 allows
/// (`session_churn`, `docs/benchmarks.md`). What a call reads (a session's
/// head, its latest checkpoint, an index page) was mostly written moments
/// before and is still cached; reads past the bound come from the OS page
/// cache. sled counts a value over 128 KiB as its pointer, so this bounds
/// only short values: long job bodies are kept in pieces for that
/// (`glovebox-ledger`'s `jobs/data.rs`).
const CACHE_BYTES: u64 = 16 * 1024 * 1024;

/// Opens sled in `dir`. We hold the data dir's `LOCK`, so a lock sled still
/// sees on its files belongs to a store of this process that was just dropped
/// and whose sled threads have not finished yet: wait for them, briefly.
/// sled 0.34 panics on some damage it finds while recovering; that is an
/// error here, not the end of the process.
fn open_sled(dir: &Path) -> Result<sled::Db, StorageError> {
    let start = std::time::Instant::now();
    loop {
        let opened = std::panic::catch_unwind(|| {
            sled::Config::new()
                .path(dir)
                .cache_capacity(CACHE_BYTES)
                .open()
        })
        .map_err(|panic| {
            let what = panic
                .downcast_ref::<String>()
                .map(String::as_str)
                .or_else(|| panic.downcast_ref::<&str>().copied())
                .unwrap_or("(no message)");
            StorageError::Corrupt(format!(
                "sled panicked while recovering `{}`: {what}",
                dir.display()
            ))
        })?;
        match opened {
            Err(sled::Error::Io(e))
                if e.to_string().contains("could not acquire lock")
                    && start.elapsed() < std::time::Duration::from_secs(5) =>
            {
                std::thread::sleep(std::time::Duration::from_millis(10));
            }
            other => return other.map_err(sled_error),
        }
    }
}

impl SledStore {
    /// Opens (creating it if needed) the store in `dir`: locks `<dir>/LOCK`,
    /// then opens sled in `<dir>/sled`. Fails at once with
    /// [`StorageError::Locked`] if another store has the dir.
    #[tracing::instrument(skip_all, fields(dir = %dir.display(), ?durability))]
    pub fn open(dir: &Path, durability: Durability) -> Result<SledStore, StorageError> {
        let lock = crate::dir_lock::create_and_lock(dir)?;
        let sled_dir = dir.join("sled");
        let quarantine = dir.join("quarantine").join(
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.as_millis())
                .unwrap_or(0)
                .to_string(),
        );
        let repairs = repair::before_open(&sled_dir, &quarantine)?;
        for repair in &repairs {
            tracing::warn!(dir = %dir.display(), "{repair}");
        }
        let db = open_sled(&sled_dir)?;
        let streams = db.open_tree(STREAMS_TREE).map_err(sled_error)?;
        let strict = match durability {
            Durability::Flush => None,
            Durability::Strict => {
                db.flush().map_err(sled_error)?;
                Some(
                    StrictSync::open(dir, &sled_dir)
                        .map_err(|e| StorageError::Io(e.to_string()))?,
                )
            }
        };
        tracing::debug!("storage opened");
        Ok(SledStore {
            dir: dir.to_path_buf(),
            durability,
            db,
            streams,
            append_locks: (0..APPEND_STRIPES).map(|_| Mutex::new(())).collect(),
            buckets: RwLock::new(HashMap::new()),
            commit: GroupCommit::new(),
            strict,
            repairs,
            #[cfg(feature = "fault-injection")]
            failing_flushes: Default::default(),
            _lock: lock,
        })
    }

    /// The data dir.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The durability writes are acknowledged at.
    pub fn durability(&self) -> Durability {
        self.durability
    }

    /// What the open moved aside so that sled would open (see the `repair`
    /// module); empty almost always. After a repair the caller verifies
    /// what it keeps here before serving.
    pub fn repairs(&self) -> &[String] {
        &self.repairs
    }

    /// Number of flushes done so far (each one `db.flush()`, plus the
    /// `fdatasync`s in [`Durability::Strict`]). Concurrent writers share
    /// flushes, so this grows slower than the number of writes.
    pub fn flush_count(&self) -> u64 {
        self.commit.flush_count()
    }

    /// Makes the next `n` flushes fail with an I/O error, without flushing:
    /// the writes waiting on them are not acknowledged, and the store turns
    /// failed (see [`SledStore`]).
    #[cfg(feature = "fault-injection")]
    pub fn fail_next_flushes(&self, n: usize) {
        self.failing_flushes.arm(n);
    }

    /// One flush, run by a group-commit leader for every writer waiting.
    fn flush(&self) -> Result<(), FlushError> {
        #[cfg(feature = "fault-injection")]
        {
            if self.failing_flushes.take() {
                return Err(FlushError::Injected {
                    dir: self.dir.clone(),
                });
            }
        }
        let fail = |reason: String| FlushError::Failed {
            dir: self.dir.clone(),
            reason,
        };
        self.db.flush().map_err(|e| fail(e.to_string()))?;
        if let Some(strict) = &self.strict {
            strict.sync().map_err(|e| fail(e.to_string()))?;
        }
        Ok(())
    }

    fn wait_durable(&self) -> Result<(), StorageError> {
        self.commit.wait_durable(|| self.flush())
    }

    /// A write to sled failed: nothing tells how much of it is in memory, so
    /// the store fails from now on.
    fn write_failed(&self, e: sled::Error) -> StorageError {
        let error = format!(
            "writing to `{}` failed: {e}: {REOPEN_FIX}",
            self.dir.display()
        );
        self.commit.poison(error.clone());
        StorageError::Io(error)
    }

    /// The tree of `bucket` if it exists. Reads use this: they must not
    /// create trees.
    fn existing_bucket(&self, bucket: &str) -> Result<Option<sled::Tree>, StorageError> {
        if let Some(tree) = self
            .buckets
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .get(bucket)
        {
            return Ok(Some(tree.clone()));
        }
        let name = format!("kv:{bucket}");
        if self
            .db
            .tree_names()
            .iter()
            .any(|n| n.as_ref() == name.as_bytes())
        {
            self.bucket(bucket).map(Some)
        } else {
            Ok(None)
        }
    }

    /// The tree of `bucket`, created if needed.
    fn bucket(&self, bucket: &str) -> Result<sled::Tree, StorageError> {
        if let Some(tree) = self
            .buckets
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .get(bucket)
        {
            return Ok(tree.clone());
        }
        let tree = self
            .db
            .open_tree(format!("kv:{bucket}"))
            .map_err(|e| self.write_failed(e))?;
        self.buckets
            .write()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(bucket.to_string(), tree.clone());
        Ok(tree)
    }
}
