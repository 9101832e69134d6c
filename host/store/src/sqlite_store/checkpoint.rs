//! Checkpoints off the commit path.
//!
//! A checkpoint copies the pages committed to the WAL back into `store.db`,
//! so the WAL can start over from its beginning. It `fsync`s the WAL before
//! copying and `store.db` after (under both durabilities: that is what keeps
//! a power cut from corrupting the database), which takes milliseconds to
//! tens of milliseconds once the WAL holds megabytes. SQLite's own automatic
//! checkpoint runs inside the commit that crosses its threshold, so the
//! writers of that batch, and every writer queued behind it, would wait for
//! those syncs.
//!
//! Here a thread of the store's own, with a connection of its own, does it in
//! two passes when the writer reports (through SQLite's WAL hook) that the
//! WAL holds [`CHECKPOINT_PAGES`]:
//!
//! 1. While commits go on: copies everything committed so far and syncs.
//!    This is the bulk of the work.
//! 2. Holding the writer connection, so no commit happens: copies the few
//!    frames committed during pass 1 and syncs again (little to sync now).
//!    With every frame copied, the next commit restarts the WAL from its
//!    beginning. Without this pass, commits arriving faster than a checkpoint
//!    completes would keep the WAL from ever restarting, and it would grow
//!    without bound.
//!
//! A checkpoint that fails changes nothing and is retried at the next
//! report; SQLite's own automatic checkpoint ignores failures the same way.
//! Commits do not depend on it: they are durable in the WAL.

use std::path::Path;
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::thread::JoinHandle;

use rusqlite::Connection;

use super::writer::Writer;
use crate::{Durability, StorageError};

/// WAL size, in pages (16 MiB at 4 KiB), at which a checkpoint starts. Each
/// costs four syncs whatever its size, and the WAL is read whole by the
/// first open after a crash: 16 MiB reads in well under a second.
pub(super) const CHECKPOINT_PAGES: i32 = 4096;

pub(super) struct Checkpointer {
    shared: Arc<Shared>,
    thread: Option<JoinHandle<()>>,
}

#[derive(Default)]
struct Shared {
    state: Mutex<State>,
    wake: Condvar,
}

#[derive(Default)]
struct State {
    /// A commit left the WAL at or past the threshold.
    due: bool,
    stop: bool,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, State> {
        // Held only to flip the two flags.
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// What the writer's WAL hook calls after each commit.
#[derive(Clone)]
pub(super) struct Trigger(Arc<Shared>);

impl Trigger {
    /// The WAL holds `pages` pages after a commit.
    pub(super) fn committed(&self, pages: i32) {
        if pages >= CHECKPOINT_PAGES {
            let mut state = self.0.lock();
            if !state.due {
                state.due = true;
                drop(state);
                self.0.wake.notify_one();
            }
        }
    }
}

impl Checkpointer {
    /// The trigger for the writer's WAL hook, and the checkpointer it wakes
    /// once [`started`](Checkpointer::start).
    pub(super) fn trigger() -> Trigger {
        Trigger(Arc::new(Shared::default()))
    }

    /// Starts the checkpoint thread for the database at `db_path`, with its own
    /// connection (synced like the writer's), woken by `trigger`.
    pub(super) fn start(
        trigger: &Trigger,
        db_path: &Path,
        durability: Durability,
        writer: Arc<Mutex<Writer>>,
    ) -> Result<Checkpointer, StorageError> {
        let conn = super::schema::open_checkpointer(db_path, durability)?;
        let shared = trigger.0.clone();
        let db_path = db_path.to_path_buf();
        let thread = std::thread::Builder::new()
            .name("glovebox-sqlite-checkpoint".to_string())
            .spawn({
                let shared = shared.clone();
                move || run(&shared, &conn, &db_path, &writer)
            })
            .map_err(|e| StorageError::Io(format!("cannot start the checkpoint thread: {e}")))?;
        Ok(Checkpointer {
            shared,
            thread: Some(thread),
        })
    }
}

impl Drop for Checkpointer {
    fn drop(&mut self) {
        self.shared.lock().stop = true;
        self.shared.wake.notify_one();
        if let Some(thread) = self.thread.take() {
            // A panic there has been logged; the store is closing anyway.
            let _ = thread.join();
        }
    }
}

fn run(shared: &Shared, conn: &Connection, db_path: &Path, writer: &Mutex<Writer>) {
    loop {
        {
            let mut state = shared.lock();
            while !state.due && !state.stop {
                state = shared
                    .wake
                    .wait(state)
                    .unwrap_or_else(PoisonError::into_inner);
            }
            if state.stop {
                return;
            }
            state.due = false;
        }
        let started = std::time::Instant::now();
        if let Err(e) = checkpoint(conn) {
            tracing::warn!(db = %db_path.display(), error = %e, "WAL checkpoint failed; retrying at the next commit past the threshold");
            continue;
        }
        let concurrent = started.elapsed();
        let result = {
            // Not a poisoned writer's fault: the connection is whole (see `write`).
            let _no_commits = writer.lock().unwrap_or_else(PoisonError::into_inner);
            let result = checkpoint(conn);
            // The commits that reported a full WAL since pass 1 started are
            // covered; the next one restarts the WAL.
            shared.lock().due = false;
            result
        };
        match result {
            Ok(()) => tracing::debug!(
                db = %db_path.display(),
                ?concurrent,
                paused = ?(started.elapsed() - concurrent),
                "WAL checkpointed"
            ),
            Err(e) => {
                tracing::warn!(db = %db_path.display(), error = %e, "WAL checkpoint failed; retrying at the next commit past the threshold");
            }
        }
    }
}

/// One passive checkpoint: copies what it can without waiting for readers.
fn checkpoint(conn: &Connection) -> Result<(), rusqlite::Error> {
    // (busy, frames in the WAL, frames copied): a reader still using old
    // frames leaves some uncopied, and the next round copies them.
    conn.query_row("PRAGMA wal_checkpoint(PASSIVE)", [], |_| Ok(()))
}
