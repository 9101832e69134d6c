//! Group commit for the SQLite backend: concurrent writers share one transaction.
//!
//! A commit costs nearly the same whether it carries one write or fifty (a
//! `write` of the WAL frames it dirtied, plus an `fdatasync` under
//! [`Durability::Strict`](crate::Durability::Strict)), and SQLite has one
//! writer at a time anyway. So a writer does not write itself: it queues its
//! operation and waits. The first writer that finds no leader becomes the
//! leader, takes everything queued, runs it in one transaction on the single
//! writer connection, and hands every writer its own result. Writers arriving
//! meanwhile queue for the next batch; when the leader is done it hands the
//! lead to the first of them, so leadership moves between the waiting threads
//! and there is no background thread to stop on drop, nor a thread hand-off
//! for a lone writer.
//!
//! A Flush commit takes tens of microseconds, about as long as waking a
//! thread, so batches do not fill by themselves: the leader, which holds a
//! CPU, would cut its batch before the writers it just woke are back. After
//! a shared batch, a leader therefore waits (at most [`GATHER_FOR`]) for as
//! many writers as that batch had, and after another thread's batch of one
//! it yields its CPU once; see [`GroupCommit::lead`]. With 16 writers this
//! took batches from one or two writes to ten or more, and throughput up by
//! half.
//!
//! Unlike sled's group commit, which waits for a flush *after* the write was
//! applied, here the write itself is deferred: nothing reaches the database
//! before the leader's transaction, so a batch that fails leaves no trace and
//! nothing is acknowledged before its commit returned.
//!
//! A batch that fails as a whole (the transaction or the commit failed, or a
//! fault was injected) fails each of its writers, and the store turns *failed*:
//! every later call fails with that first error. SQLite rolled the batch back,
//! but the error (a full disk, an I/O error, a corrupt page) says the disk can
//! no longer be trusted to hold what we acknowledge, so the store refuses
//! work until it is reopened, as sled's does.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, OnceLock, PoisonError};
use std::thread::ThreadId;
use std::time::{Duration, Instant};

use crate::StorageError;

/// What one operation of a batch came to: for an append the stream's new
/// last sequence, 0 for a put or a delete.
pub(super) type OpResult = Result<u64, StorageError>;

/// The outcome of a batch: one result per operation, in order, and whether
/// the commit made anything durable; or why the whole batch failed.
pub(super) type BatchResult = Result<(Vec<OpResult>, bool), BatchError>;

/// Why a whole batch failed: every writer of it fails with it (as
/// `StorageError::Io` of this text), and the store refuses all work from
/// then on. Each says what failed and how the store comes back.
#[derive(thiserror::Error, Debug)]
pub(super) enum BatchError {
    /// SQLite could not begin, write or commit the batch's transaction.
    #[error("{}: {}", message_of(.error), crate::REOPEN_FIX)]
    Sqlite { error: StorageError },
    /// A test made this commit fail (`fail_next_flushes`).
    #[cfg(feature = "fault-injection")]
    #[error("injected fault: committing to `{}` failed: {}", .db.display(), crate::REOPEN_FIX)]
    Injected { db: std::path::PathBuf },
    /// The batch's runner returned a result count other than its ops'.
    #[error("internal error: a storage batch of {ops} operations returned {results} results")]
    Miscounted { ops: usize, results: usize },
    /// The batch's runner panicked: nothing tells what was committed.
    #[error("a storage commit panicked: restart glovebox")]
    Panicked,
}

/// The message alone of SQLite's error, since the batch's text is wrapped in
/// `StorageError::Io` again.
fn message_of(error: &StorageError) -> String {
    match error {
        StorageError::Io(m) | StorageError::Corrupt(m) => m.clone(),
        other => other.to_string(),
    }
}

/// How long a leader waits for the writers of the last batch to queue again.
/// Past a few thread wake-ups, so that they make it; a fraction of a commit
/// under `Strict`, and only paid in full when writers have gone away.
const GATHER_FOR: Duration = Duration::from_micros(100);

pub(super) struct GroupCommit<Op> {
    queue: Mutex<Queue<Op>>,
    /// The first batch failure; once set, every call fails with it. A
    /// `OnceLock` so that the check every call makes takes no lock.
    failed: OnceLock<String>,
    /// Batches whose commit made writes durable.
    commits: AtomicU64,
    /// Wakes a leader gathering its batch once enough writers queued.
    gathered: Condvar,
}

struct Queue<Op> {
    waiting: Vec<Queued<Op>>,
    /// Number of operations in the last batch.
    last_batch: usize,
    /// The thread that led the last batch, and when that batch ended.
    last_leader: Option<(ThreadId, Instant)>,
    /// A leader is waiting for this many writers to queue (0: none is).
    gathering: usize,
    /// A writer is running a batch right now, or has been handed the lead
    /// and is about to.
    leading: bool,
}

struct Queued<Op> {
    op: Op,
    slot: Arc<Slot>,
}

/// Where a queued writer waits to hear its result, or that it leads next.
#[derive(Default)]
struct Slot {
    state: Mutex<Wake>,
    changed: Condvar,
}

#[derive(Default)]
enum Wake {
    #[default]
    Waiting,
    Lead,
    Done(OpResult),
}

/// Neither lock is held across user code, I/O or SQLite, so a poisoned one
/// can only come from a panic in this file's bookkeeping, whose state stays
/// consistent: recover it.
fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

impl Slot {
    fn set(&self, wake: Wake) {
        *lock(&self.state) = wake;
        self.changed.notify_one();
    }

    fn wait(&self) -> Wake {
        let mut state = lock(&self.state);
        loop {
            match std::mem::take(&mut *state) {
                Wake::Waiting => {
                    state = self
                        .changed
                        .wait(state)
                        .unwrap_or_else(PoisonError::into_inner);
                }
                wake => return wake,
            }
        }
    }
}

impl<Op> GroupCommit<Op> {
    pub(super) fn new() -> Self {
        GroupCommit {
            queue: Mutex::new(Queue {
                waiting: Vec::new(),
                last_batch: 0,
                last_leader: None,
                gathering: 0,
                leading: false,
            }),
            failed: OnceLock::new(),
            commits: AtomicU64::new(0),
            gathered: Condvar::new(),
        }
    }

    /// The first error, once the store has failed.
    pub(super) fn failure(&self) -> Option<String> {
        self.failed.get().cloned()
    }

    /// Fails with the first error once the store has failed.
    pub(super) fn check(&self) -> Result<(), StorageError> {
        match self.failed.get() {
            Some(e) => Err(StorageError::Io(e.clone())),
            None => Ok(()),
        }
    }

    /// Number of operations queued for the next batch.
    #[cfg(test)]
    pub(super) fn queued(&self) -> usize {
        lock(&self.queue).waiting.len()
    }

    /// Number of batches whose commit made writes durable.
    pub(super) fn commit_count(&self) -> u64 {
        self.commits.load(Ordering::Relaxed)
    }

    /// Runs `op` in a batch and returns its result once the batch committed,
    /// running the batch itself (`run`, on every operation queued) when no
    /// other writer leads one.
    pub(super) fn submit(&self, op: Op, run: impl FnOnce(&[Op]) -> BatchResult) -> OpResult {
        let slot = Arc::new(Slot::default());
        let someone_leads = {
            let mut queue = lock(&self.queue);
            // Checked under the queue lock: a failing leader drains the queue
            // under it after setting `failed`, so nothing queued is stranded.
            self.check()?;
            queue.waiting.push(Queued {
                op,
                slot: slot.clone(),
            });
            if queue.gathering == queue.waiting.len() {
                self.gathered.notify_one();
            }
            std::mem::replace(&mut queue.leading, true)
        };
        if someone_leads {
            match slot.wait() {
                Wake::Done(result) => return result,
                Wake::Lead => {}
                Wake::Waiting => unreachable!("Slot::wait returns only once woken"),
            }
        }
        self.lead(run);
        match slot.wait() {
            Wake::Done(result) => result,
            // The batch just led held this writer's op, and a leader only
            // hands the lead to an op still queued.
            Wake::Lead | Wake::Waiting => unreachable!("a leader's own op is in its batch"),
        }
    }

    /// Runs one batch of everything queued, as the leader.
    fn lead(&self, run: impl FnOnce(&[Op]) -> BatchResult) {
        let batch = {
            let mut queue = lock(&self.queue);
            // The writers of a shared batch were all woken when it ended, and
            // most write again at once; but the leader holds a CPU and would
            // cut its batch before they are back, committing alone while
            // they queue for the next one. So after a shared batch it waits,
            // briefly, for as many writers as that batch had. A lone writer
            // never waits, and a writer that leaves costs one wait at most:
            // the next batch is smaller, and so the next wait.
            let target = queue.last_batch;
            if target > 1 && queue.waiting.len() < target {
                let deadline = Instant::now() + GATHER_FOR;
                queue.gathering = target;
                while queue.waiting.len() < target {
                    let Some(left) = deadline.checked_duration_since(Instant::now()) else {
                        break;
                    };
                    queue = self
                        .gathered
                        .wait_timeout(queue, left)
                        .unwrap_or_else(PoisonError::into_inner)
                        .0;
                }
                queue.gathering = 0;
            } else if queue.waiting.len() == 1
                && queue.last_leader.is_some_and(|(leader, ended)| {
                    leader != std::thread::current().id() && ended.elapsed() < GATHER_FOR
                })
            {
                // Batches of one, but from different threads back to back:
                // writers are concurrent and the CPUs are taken, so each runs
                // its write alone before the next gets a CPU. Let the
                // runnable ones queue first. (A lone writer, whose batches
                // follow its own, does not give its CPU away.)
                drop(queue);
                std::thread::yield_now();
                queue = lock(&self.queue);
            }
            queue.last_batch = queue.waiting.len();
            std::mem::take(&mut queue.waiting)
        };
        let (ops, slots): (Vec<Op>, Vec<Arc<Slot>>) =
            batch.into_iter().map(|q| (q.op, q.slot)).unzip();
        let mut leader = Leader {
            commit: self,
            slots,
            result: None,
        };
        leader.result = Some(run(&ops));
    }
}

/// The writer running one batch. Its `Drop` hands out the results, or fails
/// the batch if `run` panicked, and passes the lead on, so no writer waits
/// forever.
struct Leader<'a, Op> {
    commit: &'a GroupCommit<Op>,
    slots: Vec<Arc<Slot>>,
    result: Option<BatchResult>,
}

impl<Op> Drop for Leader<'_, Op> {
    fn drop(&mut self) {
        let commit = self.commit;
        let results = match self.result.take() {
            Some(Ok((results, wrote))) if results.len() == self.slots.len() => {
                if wrote {
                    commit.commits.fetch_add(1, Ordering::Relaxed);
                }
                Ok(results)
            }
            Some(Ok((results, _))) => Err(BatchError::Miscounted {
                ops: self.slots.len(),
                results: results.len(),
            }),
            Some(Err(e)) => Err(e),
            None => Err(BatchError::Panicked),
        };
        let results = match results {
            Ok(results) => results,
            Err(e) => {
                tracing::error!(error = %e, "storage commit failed; the store refuses all work from now on");
                let first = commit.failed.get_or_init(|| e.to_string()).clone();
                self.slots
                    .iter()
                    .map(|_| Err(StorageError::Io(first.clone())))
                    .collect()
            }
        };
        // Pass the lead on first, so the next batch starts while this one's
        // writers wake up.
        let stranded = {
            let mut queue = lock(&commit.queue);
            queue.last_leader = Some((std::thread::current().id(), Instant::now()));
            if commit.failed.get().is_some() {
                queue.leading = false;
                std::mem::take(&mut queue.waiting)
            } else {
                match queue.waiting.first() {
                    Some(next) => next.slot.set(Wake::Lead),
                    None => queue.leading = false,
                }
                Vec::new()
            }
        };
        for queued in stranded {
            queued.slot.set(Wake::Done(commit.check().map(|()| 0)));
        }
        for (slot, result) in self.slots.iter().zip(results) {
            slot.set(Wake::Done(result));
        }
    }
}
