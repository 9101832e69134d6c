//! Durable storage behind one small trait: what Glovebox keeps across crashes.
//!
//! The trait is shaped like a distributed log store (NATS JetStream): an append
//! to a stream states the sequence it expects to follow, so two hosts can never
//! both extend one session; checkpoints and indexes are values under a key in
//! a bucket. Each embedded backend lives in its own module and its engine's
//! types never leave it.
//!
//! This crate owns the bytes on disk and nothing above them: it never imports
//! the manifest, the ledger, the runtime or wasmtime.

#![forbid(unsafe_code)]

mod backend;
pub mod batch;
/// The storage contract's tests, for every backend (see its docs).
#[cfg(any(test, feature = "testing"))]
pub mod conformance;
mod copy;
mod dir_lock;
#[cfg(feature = "fault-injection")]
mod fault;
mod pages;
mod queue;
mod reopen;
#[cfg(feature = "sled")]
mod sled_store;
#[cfg(feature = "sqlite")]
mod sqlite_store;
#[cfg(any(test, feature = "testing"))]
mod test_support;

pub use backend::{Backend, Opened, open};

/// What [`Storage::observe_flushes`] calls with each flush's batch size.
pub type FlushObserver = std::sync::Arc<dyn Fn(usize) + Send + Sync>;
pub use copy::{CopyStats, copy_all};
pub use dir_lock::DirLock;
pub use pages::{PAGE, Pages, pages};
pub use queue::{Delivery, WorkQueue};
pub use reopen::{NotReady, Opener, RETRY, Ready, Reopening};
#[cfg(feature = "sled")]
pub use sled_store::SledStore;
#[cfg(all(feature = "sled", any(test, feature = "testing")))]
pub use sled_store::raw as sled_raw;
#[cfg(feature = "sqlite")]
pub use sqlite_store::SqliteStore;
#[cfg(all(feature = "sqlite", any(test, feature = "testing")))]
pub use sqlite_store::raw as sqlite_raw;

/// What to do about a failed store, in every error that says it failed
/// (see [`Reopening`]).
pub(crate) const REOPEN_FIX: &str = "free disk space or fix the disk; a running glovebox reopens the data dir by itself once there is room (a one-off command: run it again)";

/// When a write counts as durable, that is, when a store acknowledges it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Durability {
    /// Survives a killed or crashed process (the write reached the kernel),
    /// not a power cut or a kernel crash. What each backend does for it is
    /// in its module docs and `docs/durability.md`.
    Flush,
    /// Survives a power cut on a disk that honours flushes: the files the
    /// write went to are `fdatasync`ed before it is acknowledged. Costs a
    /// disk flush per group commit, shared by every writer waiting on it.
    Strict,
}

/// Why a storage operation failed.
#[derive(Debug, thiserror::Error)]
pub enum StorageError {
    /// The stream does not end where the caller expected: another writer got there first.
    #[error(
        "stream `{stream}` ends at sequence {actual}, not {expected}: another writer appended first"
    )]
    Conflict {
        stream: String,
        expected: u64,
        actual: u64,
    },
    /// The data dir is in use by another process.
    #[error(
        "data dir `{dir}` is in use by another glovebox process{}: stop it, or give this one another data dir",
        .holder.as_ref().map(|h| format!(" ({h})")).unwrap_or_default()
    )]
    Locked { dir: String, holder: Option<String> },
    /// The disk or the database failed; nothing of the operation is acknowledged.
    #[error("storage i/o error: {0}")]
    Io(String),
    /// A stream cannot be read from sequence `seq` on: an entry is missing
    /// (a gap), or the stored record holding it does not decode. `seq` is the
    /// first sequence that cannot be read; the entries before it may be read
    /// by reading fewer of them. Only damage to the data dir (or a bug) does
    /// this; other streams are unaffected.
    #[error("stream `{stream}` cannot be read at sequence {seq}: {reason}")]
    Damaged {
        stream: String,
        seq: u64,
        reason: String,
    },
    /// Stored bytes do not decode, and not at one stream position (a stream
    /// name, a key in a bucket, sled's own files).
    #[error("corrupt record: {0}")]
    Corrupt(String),
}

impl StorageError {
    /// [`StorageError::Damaged`]: `stream` cannot be read from `seq` on.
    pub(crate) fn damaged(stream: &str, seq: u64, reason: impl Into<String>) -> StorageError {
        StorageError::Damaged {
            stream: stream.to_string(),
            seq,
            reason: reason.into(),
        }
    }
}

/// Refuses a stream name holding a NUL, which the embedded backends end a
/// name with in their keys.
pub(crate) fn check_stream_name(stream: &str) -> Result<(), StorageError> {
    if stream.contains('\0') {
        return Err(StorageError::Io(format!(
            "stream name {stream:?} contains a NUL character, which stream names cannot hold: pick another name"
        )));
    }
    Ok(())
}

/// The last sequence of `stream` once an append of `count` entries after
/// `expected_last` went in, if it is at most `largest`.
pub(crate) fn last_after_append(
    stream: &str,
    expected_last: u64,
    count: usize,
    largest: u64,
) -> Result<u64, StorageError> {
    u64::try_from(count)
        .ok()
        .and_then(|n| expected_last.checked_add(n))
        .filter(|last| *last <= largest)
        .ok_or_else(|| {
            StorageError::Io(format!(
                "stream `{stream}` would pass the largest sequence number"
            ))
        })
}

/// What the storage's methods return: `Result<T, StorageError>`.
pub type Result<T, E = StorageError> = std::result::Result<T, E>;

/// A compare-and-set of one key ([`Storage::put_if`]): the value the key
/// must hold now (`None`: absent), and the value it is given (`None`: it is
/// removed).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Swap<'a> {
    pub from: Option<&'a [u8]>,
    pub to: Option<&'a [u8]>,
}

impl<'a> Swap<'a> {
    /// From `from` (`None`: absent) to `to` (`None`: removed).
    pub fn new(from: Option<&'a [u8]>, to: Option<&'a [u8]>) -> Swap<'a> {
        Swap { from, to }
    }
}

/// The storage a host keeps its sessions in.
///
/// Every method that writes returns only once the write is durable (see
/// [`Durability`]); concurrent writers share flushes (group commit).
pub trait Storage: Send + Sync + 'static {
    /// Appends `entries` to `stream`, which must currently end at sequence
    /// `expected` (0 for an empty stream). The entries get sequence numbers
    /// `expected + 1 ..`; returns the new last sequence once durable.
    /// The append is atomic: after a crash, all of its entries are there or
    /// none. With no entries it only checks `expected`.
    fn append(&self, stream: &str, expected: u64, entries: &[Vec<u8>]) -> Result<u64>;

    /// [`Storage::append`] that may return before the entries are durable:
    /// they are applied (read back, and ordered before every later write), but
    /// a crash may lose them until [`Storage::sync`], or a later durable write,
    /// returns. What a durable write makes durable includes every write applied
    /// before it. A backend whose write is its own flush keeps the default,
    /// which is `append`.
    fn append_unsynced(&self, stream: &str, expected: u64, entries: &[Vec<u8>]) -> Result<u64> {
        self.append(stream, expected, entries)
    }

    /// Returns once every write applied before the call is durable. With the
    /// default [`Storage::append_unsynced`] every write is durable on return,
    /// so there is nothing to wait for.
    fn sync(&self) -> Result<()> {
        Ok(())
    }

    /// Tells `observer`, after each flush that made writes durable, how many
    /// writers it covered (a group commit's batch size, for the metrics).
    /// Backends that do not batch flushes never call it.
    fn observe_flushes(&self, observer: FlushObserver) {
        let _ = observer;
    }

    /// Up to `max` entries of `stream` with sequence >= `from`, in order.
    ///
    /// Fails with [`StorageError::Damaged`] when an entry it would return, or
    /// the stored record holding it, is missing or does not decode; a read
    /// that stops before the damage succeeds.
    fn read(&self, stream: &str, from: u64, max: usize) -> Result<Vec<(u64, Vec<u8>)>>;

    /// The last sequence of `stream` (0 when empty or absent). Fails with
    /// [`StorageError::Damaged`] when the record that ends the stream does not decode.
    fn last_seq(&self, stream: &str) -> Result<u64>;

    /// Names of all streams.
    fn streams(&self) -> Result<Vec<String>>;

    /// Stores `value` under `key` in `bucket`; durable on return.
    fn put(&self, bucket: &str, key: &str, value: &[u8]) -> Result<()>;

    /// [`Storage::put`] that may return before the value is durable, with
    /// the ordering of [`Storage::append_unsynced`]: it is applied after
    /// every write before it, so once it is durable they are too. A backend
    /// whose write is its own flush keeps the default, which is `put`.
    fn put_unsynced(&self, bucket: &str, key: &str, value: &[u8]) -> Result<()> {
        self.put(bucket, key, value)
    }

    /// Sets `key` in `bucket` to `swap.to` (removes it when that is `None`)
    /// if, and only if, its current value is `swap.from` (`None`: the key is
    /// absent); durable on return. Returns whether it did: `false` when the
    /// current value is not `swap.from`, and then nothing is written.
    ///
    /// The compare and the write are one step against every other writer of
    /// the store, in this process or, on a store several hosts share, on
    /// another host: of several calls that expect the same value, at most
    /// one returns `true`. This is what a record that must change once (an
    /// approval resolved, a name claimed, a lease taken) is written with.
    /// An error says nothing of whether the write happened: read the key again.
    fn put_if(&self, bucket: &str, key: &str, swap: Swap<'_>) -> Result<bool>;

    /// [`Storage::put_if`] that may return before the write is durable, with
    /// the ordering of [`Storage::put_unsynced`]: once a later durable write
    /// (or [`Storage::sync`]) returns, it is durable too. The compare is as
    /// strict as `put_if`'s. For a record kept beside a log and written just
    /// before an append that makes it durable (a spend tally charged before
    /// the call's record). A backend whose write is its own flush keeps the
    /// default, which is `put_if`.
    fn put_if_unsynced(&self, bucket: &str, key: &str, swap: Swap<'_>) -> Result<bool> {
        self.put_if(bucket, key, swap)
    }

    /// The value under `key` in `bucket`.
    fn get(&self, bucket: &str, key: &str) -> Result<Option<Vec<u8>>>;

    /// Removes `key` from `bucket`; durable on return.
    fn delete(&self, bucket: &str, key: &str) -> Result<()>;

    /// All keys of `bucket` starting with `prefix`, in key order, with their values.
    ///
    /// It holds the whole answer at once: for a bucket that grows with what
    /// agents do (jobs, approvals, sessions), read it a page at a time with
    /// [`Storage::scan_page`] or [`pages`] instead.
    fn scan(&self, bucket: &str, prefix: &str) -> Result<Vec<(String, Vec<u8>)>>;

    /// At most `limit` keys of `bucket` that start with `prefix` and sort
    /// after `after` (from the first key with `prefix` when `None`), in key
    /// order, with their values: one page of [`Storage::scan`], whose last
    /// key is the `after` of the next page. What a caller holds is at most
    /// one page, however large the bucket grows.
    ///
    /// Each page is read as of its own moment: a key written or removed
    /// between two pages is seen or not, as with any listing under writers.
    fn scan_page(
        &self,
        bucket: &str,
        prefix: &str,
        after: Option<&str>,
        limit: usize,
    ) -> Result<Vec<(String, Vec<u8>)>>;

    /// Names of all buckets that hold (or once held) a key, in name order.
    fn buckets(&self) -> Result<Vec<String>>;

    /// Why the store refuses all work, once a write or a flush failed and it
    /// can no longer tell what is on disk; `None` while it works. Only a new
    /// open clears it: see [`Reopening`].
    fn failure(&self) -> Option<String> {
        None
    }

    /// How many times the store was opened again after a failure (see
    /// [`Reopening`]). What was read before it changed may be ahead of the
    /// disk: a cache of it must be dropped.
    fn generation(&self) -> u64 {
        0
    }

    /// Work queue `name` of this store (created at its first use), whose
    /// deliveries come back after `ack_wait` without an acknowledgement
    /// (every host should ask for the same wait). `None` for a store one process
    /// holds: that process queues its work in memory (see [`WorkQueue`]).
    fn work_queue(
        &self,
        name: &str,
        ack_wait: std::time::Duration,
    ) -> Result<Option<std::sync::Arc<dyn WorkQueue>>> {
        let _ = (name, ack_wait);
        Ok(None)
    }
}
