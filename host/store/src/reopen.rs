//! A store that reopens itself after it failed, once it can.
//!
//! Why: when a flush fails (the disk is full, an I/O error), a backend can no
//! longer tell which of its applied writes reached the disk, so it refuses
//! all work from then on (see `SledStore` and `SqliteStore`). Only a new
//! open can say what is there: it runs the backend's recovery, as after a
//! crash, and what it finds is whole and holds every acknowledged write.
//! Before this, that new open took a restart of the host, which stops every
//! call and job in flight; [`Reopening`] does it in place.
//!
//! How: every operation goes to the current backend. After an operation
//! failed with an I/O error, the next one asks the backend whether it has
//! failed ([`Storage::failure`]); if so, and if the last attempt is at least
//! [`RETRY`] old, and the caller's `ready` check passes (the host's disk
//! watermark: reopening a store on a full disk only fails again), it closes
//! the failed backend (waiting briefly for operations still holding it, which
//! fail at once) and opens the dir again. Meanwhile every operation fails at
//! once with the failure, which names the fix.
//!
//! What it means above: everything cached from the store before a reopen may
//! be ahead of the disk (writes applied and never flushed are kept or lost,
//! as after a crash). [`Storage::generation`] changes at every reopen; the
//! sessions reload a session whose cache is older than it.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError, RwLock};
use std::time::{Duration, Instant};

use crate::{FlushObserver, Result, Storage, StorageError, Swap};

/// How long after a failed attempt (or the failure itself) the next reopen
/// may start. Each attempt costs an open of the store.
pub const RETRY: Duration = Duration::from_secs(1);

/// How long a reopen waits for operations still holding the failed backend.
const DRAIN: Duration = Duration::from_secs(5);

/// Opens the store again; called for each reopen.
pub type Opener = Box<dyn Fn() -> Result<Arc<dyn Storage>, StorageError> + Send + Sync>;

/// Says whether a reopen may be tried now: `Err(why not)` (e.g. "the disk
/// still has only 12 MiB free ...") leaves the store failed until later. The
/// reason is the caller's own error (its `Display` is shown after "not
/// reopened yet: "), so a host check keeps its type.
pub type Ready = Box<dyn Fn() -> Result<(), NotReady> + Send + Sync>;

/// Why a [`Ready`] check says a reopen must wait: the caller's error.
pub type NotReady = Box<dyn std::error::Error + Send + Sync>;

/// A [`Storage`] that reopens its backend after it failed. See the module docs.
pub struct Reopening {
    current: RwLock<Current>,
    open: Opener,
    ready: Ready,
    /// Set when an operation failed with an I/O error: the next operation
    /// checks whether the backend has failed. Clear on the common path, so
    /// an operation costs one atomic load more than the backend's.
    suspect: AtomicBool,
    generation: AtomicU64,
    /// Serializes reopens; when the last attempt started.
    attempt: Mutex<Option<Instant>>,
    observer: Mutex<Option<FlushObserver>>,
}

enum Current {
    Open(Arc<dyn Storage>),
    /// The failed backend was closed and the open after it failed: why.
    Closed(String),
}

impl std::fmt::Debug for Reopening {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Reopening")
            .field("generation", &self.generation.load(Ordering::Relaxed))
            .finish_non_exhaustive()
    }
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

impl Reopening {
    /// `store` as opened; `open` opens the same dir again; `ready` gates each reopen.
    pub fn new(store: Arc<dyn Storage>, open: Opener, ready: Ready) -> Reopening {
        Reopening {
            current: RwLock::new(Current::Open(store)),
            open,
            ready,
            suspect: AtomicBool::new(false),
            generation: AtomicU64::new(0),
            attempt: Mutex::new(None),
            observer: Mutex::new(None),
        }
    }

    /// The backend to run an operation on, reopened first if it failed and
    /// a reopen is due.
    fn backend(&self) -> Result<Arc<dyn Storage>, StorageError> {
        if self.suspect.load(Ordering::Acquire) {
            self.heal()?;
        }
        match &*self.current.read().unwrap_or_else(PoisonError::into_inner) {
            Current::Open(store) => Ok(store.clone()),
            Current::Closed(why) => Err(StorageError::Io(why.clone())),
        }
    }

    fn run<T>(
        &self,
        op: impl FnOnce(&dyn Storage) -> Result<T, StorageError>,
    ) -> Result<T, StorageError> {
        let store = self.backend()?;
        let out = op(&*store);
        if matches!(out, Err(StorageError::Io(_))) {
            self.suspect.store(true, Ordering::Release);
        }
        out
    }

    /// The store's failure, if it failed; reopens it when due and ready.
    fn heal(&self) -> Result<(), StorageError> {
        let mut attempt = lock(&self.attempt);
        let failed = match &*self.current.read().unwrap_or_else(PoisonError::into_inner) {
            Current::Open(store) => match store.failure() {
                None => {
                    // An I/O error the backend recovers from by itself.
                    self.suspect.store(false, Ordering::Release);
                    return Ok(());
                }
                Some(why) => why,
            },
            Current::Closed(why) => why.clone(),
        };
        let now = Instant::now();
        match *attempt {
            Some(last) if now.duration_since(last) < RETRY => {
                return Err(StorageError::Io(failed));
            }
            // The first attempt waits a little too: writers failing with the
            // flush should see the failure, not a store reopened under them.
            None => {
                *attempt = Some(now);
                return Err(StorageError::Io(failed));
            }
            Some(_) => {}
        }
        *attempt = Some(now);
        if let Err(why) = (self.ready)() {
            tracing::warn!(reason = %why, "the failed store is not reopened yet");
            return Err(StorageError::Io(format!(
                "{failed} (not reopened yet: {why})"
            )));
        }
        let old = std::mem::replace(
            &mut *self.current.write().unwrap_or_else(PoisonError::into_inner),
            Current::Closed(failed.clone()),
        );
        if let Current::Open(old) = old
            && let Err(old) = close(old)
        {
            // Something still holds it: put it back and try again later.
            *self.current.write().unwrap_or_else(PoisonError::into_inner) = Current::Open(old);
            return Err(StorageError::Io(format!(
                "{failed} (not reopened yet: operations on the failed store were still running after {}s)",
                DRAIN.as_secs()
            )));
        }
        match (self.open)() {
            Ok(store) => {
                if let Some(observer) = lock(&self.observer).clone() {
                    store.observe_flushes(observer);
                }
                *self.current.write().unwrap_or_else(PoisonError::into_inner) =
                    Current::Open(store);
                let generation = self.generation.fetch_add(1, Ordering::AcqRel) + 1;
                self.suspect.store(false, Ordering::Release);
                *attempt = None;
                tracing::warn!(
                    generation,
                    after = %failed,
                    "the failed store was reopened: its recovery ran, and work goes on"
                );
                Ok(())
            }
            Err(e) => {
                let why = format!("{failed} (reopening it failed: {e})");
                tracing::error!(error = %e, "reopening the failed store failed; trying again later");
                *self.current.write().unwrap_or_else(PoisonError::into_inner) =
                    Current::Closed(why.clone());
                Err(StorageError::Io(why))
            }
        }
    }
}

/// Drops `store` once this is its last holder (so its files and locks are
/// released before the dir is opened again), or gives it back after [`DRAIN`].
fn close(store: Arc<dyn Storage>) -> Result<(), Arc<dyn Storage>> {
    let start = Instant::now();
    while Arc::strong_count(&store) > 1 {
        if start.elapsed() >= DRAIN {
            return Err(store);
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    // The last holder: dropping it closes the backend's files and its lock.
    drop(store);
    Ok(())
}

impl Storage for Reopening {
    fn append(&self, stream: &str, expected_last: u64, entries: &[Vec<u8>]) -> Result<u64> {
        self.run(|s| s.append(stream, expected_last, entries))
    }

    fn append_unsynced(&self, stream: &str, expected: u64, entries: &[Vec<u8>]) -> Result<u64> {
        self.run(|s| s.append_unsynced(stream, expected, entries))
    }

    fn sync(&self) -> Result<()> {
        self.run(|s| s.sync())
    }

    fn observe_flushes(&self, observer: FlushObserver) {
        *lock(&self.observer) = Some(observer.clone());
        if let Ok(store) = self.backend() {
            store.observe_flushes(observer);
        }
    }

    fn read(&self, stream: &str, from: u64, max: usize) -> Result<Vec<(u64, Vec<u8>)>> {
        self.run(|s| s.read(stream, from, max))
    }

    fn last_seq(&self, stream: &str) -> Result<u64> {
        self.run(|s| s.last_seq(stream))
    }

    fn streams(&self) -> Result<Vec<String>> {
        self.run(|s| s.streams())
    }

    fn put(&self, bucket: &str, key: &str, value: &[u8]) -> Result<()> {
        self.run(|s| s.put(bucket, key, value))
    }

    fn put_unsynced(&self, bucket: &str, key: &str, value: &[u8]) -> Result<()> {
        self.run(|s| s.put_unsynced(bucket, key, value))
    }

    fn put_if(&self, bucket: &str, key: &str, swap: Swap<'_>) -> Result<bool> {
        self.run(|s| s.put_if(bucket, key, swap))
    }

    fn put_if_unsynced(&self, bucket: &str, key: &str, swap: Swap<'_>) -> Result<bool> {
        self.run(|s| s.put_if_unsynced(bucket, key, swap))
    }

    fn get(&self, bucket: &str, key: &str) -> Result<Option<Vec<u8>>> {
        self.run(|s| s.get(bucket, key))
    }

    fn delete(&self, bucket: &str, key: &str) -> Result<()> {
        self.run(|s| s.delete(bucket, key))
    }

    fn scan(&self, bucket: &str, prefix: &str) -> Result<Vec<(String, Vec<u8>)>> {
        self.run(|s| s.scan(bucket, prefix))
    }

    fn scan_page(
        &self,
        bucket: &str,
        prefix: &str,
        after: Option<&str>,
        limit: usize,
    ) -> Result<Vec<(String, Vec<u8>)>> {
        self.run(|s| s.scan_page(bucket, prefix, after, limit))
    }

    fn buckets(&self) -> Result<Vec<String>> {
        self.run(|s| s.buckets())
    }

    fn failure(&self) -> Option<String> {
        match &*self.current.read().unwrap_or_else(PoisonError::into_inner) {
            Current::Open(store) => store.failure(),
            Current::Closed(why) => Some(why.clone()),
        }
    }

    fn generation(&self) -> u64 {
        self.generation.load(Ordering::Acquire)
    }
}
