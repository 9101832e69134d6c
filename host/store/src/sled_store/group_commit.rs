//! Group commit: concurrent writers share one flush.
//!
//! A flush costs the same whether it carries one write or fifty (~90 µs with
//! sled's `sync_file_range`, ~4 ms with an `fdatasync` on this kind of
//! machine), so writers must not each flush. After its write is applied in
//! memory, a writer calls [`GroupCommit::wait_durable`] and blocks until a
//! flush that *started after* that call has completed. No flush under way?
//! The writer leads one itself, for everyone waiting; writers arriving
//! meanwhile wait for the next, which one of them leads. There is no
//! background thread, so nothing needs stopping on drop, and a lone writer
//! pays no thread hand-off.
//!
//! Flushes are numbered (generations). A writer takes `started + 1`, the
//! number of the first flush that starts after its write, and is durable when
//! that flush completed. A flush that fails fails every writer waiting on it,
//! and the committer turns *failed*: from then on every call fails with the
//! first error, because the database may now hold writes that were never
//! acknowledged and no later flush can be trusted to say which are on disk.

use std::sync::{Condvar, Mutex, MutexGuard, OnceLock, PoisonError};

use super::FlushError;
use crate::{FlushObserver, StorageError};

pub(super) struct GroupCommit {
    state: Mutex<State>,
    /// Writers waiting on an even flush wait on the first, on an odd one on
    /// the second: the end of a flush wakes only the writers it made durable,
    /// plus one writer of the next flush to lead it.
    flushed: [Condvar; 2],
    /// Told how many writers each successful flush made durable (metrics).
    observer: OnceLock<FlushObserver>,
}

fn parity(generation: u64) -> usize {
    (generation % 2) as usize
}

#[derive(Default)]
struct State {
    /// Number of the latest flush that started.
    started: u64,
    /// Number of the latest flush that ended, well or not.
    finished: u64,
    /// A writer is flushing for the others right now.
    flushing: bool,
    /// The first failure, and the number of the first flush it spoils:
    /// writers covered by an earlier flush are durable all the same.
    failed: Option<(u64, String)>,
    /// Flushes that succeeded.
    flushes: u64,
    /// Writers waiting on each flush to come, by the parity of its number
    /// (at most two flushes have writers: the running one and the next).
    joined: [usize; 2],
}

impl GroupCommit {
    pub(super) fn new() -> Self {
        GroupCommit {
            state: Mutex::new(State::default()),
            flushed: [Condvar::new(), Condvar::new()],
            observer: OnceLock::new(),
        }
    }

    /// Tells `observer` the size of every successful flush's batch (the
    /// first observer set stays).
    pub(super) fn observe(&self, observer: FlushObserver) {
        let _ = self.observer.set(observer);
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        // The lock is never held across user code or I/O, so a poisoned lock
        // can only come from a panic in this file's bookkeeping; its state is
        // still consistent.
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Fails with the first error once the committer has failed.
    pub(super) fn check(&self) -> Result<(), StorageError> {
        match &self.lock().failed {
            Some((_, e)) => Err(StorageError::Io(e.clone())),
            None => Ok(()),
        }
    }

    /// The first failure, once the committer has failed.
    pub(super) fn failure(&self) -> Option<String> {
        self.lock().failed.as_ref().map(|(_, e)| e.clone())
    }

    /// Marks the committer failed outside a flush (a write that failed half
    /// way): flushes already started still acknowledge their writers.
    pub(super) fn poison(&self, error: String) {
        let mut st = self.lock();
        let spoiled = st.started + 1;
        st.failed.get_or_insert((spoiled, error));
        drop(st);
        self.flushed.iter().for_each(Condvar::notify_all);
    }

    /// Number of flushes that succeeded.
    pub(super) fn flush_count(&self) -> u64 {
        self.lock().flushes
    }

    /// Returns once everything the caller wrote before this call is durable,
    /// running `flush` itself when no flush is under way.
    pub(super) fn wait_durable(
        &self,
        flush: impl Fn() -> Result<(), FlushError>,
    ) -> Result<(), StorageError> {
        let mut st = self.lock();
        if let Some((_, e)) = &st.failed {
            return Err(StorageError::Io(e.clone()));
        }
        let mine = st.started + 1;
        st.joined[parity(mine)] += 1;
        loop {
            if st.finished >= mine {
                return match &st.failed {
                    Some((spoiled, e)) if *spoiled <= mine => Err(StorageError::Io(e.clone())),
                    _ => Ok(()),
                };
            }
            if let Some((spoiled, e)) = &st.failed {
                // No flush starts any more; ours may still be in flight, and
                // it counts unless the failure came first.
                if *spoiled <= mine {
                    return Err(StorageError::Io(e.clone()));
                }
            }
            if !st.flushing && st.failed.is_none() {
                // Nothing in flight and nothing finished at or after `mine`, so
                // `started == finished == mine - 1`: the flush we lead is ours.
                st.flushing = true;
                st.started += 1;
                let leader = Leader {
                    commit: self,
                    generation: st.started,
                    result: None,
                };
                drop(st);
                leader.run(&flush);
                st = self.lock();
                continue;
            }
            st = self.flushed[parity(mine)]
                .wait(st)
                .unwrap_or_else(PoisonError::into_inner);
        }
    }
}

/// The writer running one flush. Its `Drop` ends the flush and wakes the
/// waiters even if `flush` panicked, so nobody waits forever; a panicked
/// flush counts as failed.
struct Leader<'a> {
    commit: &'a GroupCommit,
    generation: u64,
    result: Option<Result<(), FlushError>>,
}

impl Leader<'_> {
    fn run(mut self, flush: &impl Fn() -> Result<(), FlushError>) {
        self.result = Some(flush());
    }
}

impl Drop for Leader<'_> {
    fn drop(&mut self) {
        let result = self.result.take().unwrap_or(Err(FlushError::Panicked));
        let mut st = self.commit.lock();
        st.flushing = false;
        st.finished = self.generation;
        let batch = std::mem::take(&mut st.joined[parity(self.generation)]);
        let ok = result.is_ok();
        match result {
            Ok(()) => st.flushes += 1,
            Err(e) => {
                tracing::error!(error = %e, "storage flush failed; the store refuses all work from now on");
                // Keep the first error, but this flush's writers are not durable.
                match &mut st.failed {
                    Some((spoiled, _)) => *spoiled = (*spoiled).min(self.generation),
                    None => st.failed = Some((self.generation, e.to_string())),
                }
            }
        }
        drop(st);
        if ok && let Some(observer) = self.commit.observer.get() {
            observer(batch);
        }
        let [this, next] = [self.generation, self.generation + 1].map(parity);
        self.commit.flushed[this].notify_all();
        if ok {
            self.commit.flushed[next].notify_one();
        } else {
            self.commit.flushed[next].notify_all();
        }
    }
}
