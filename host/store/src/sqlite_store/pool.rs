//! Reader connections: reads never wait for the writer.
//!
//! In WAL mode a reader sees the last committed snapshot while the writer
//! appends to the WAL, but one connection runs one statement at a time, so
//! reads get connections of their own. They are opened on demand, up to a cap,
//! and kept for reuse: opening one costs a file open, a read of the schema
//! and a cold page cache. Past the cap a read waits for a connection to come
//! back rather than opening more, since each holds its own page cache and
//! file descriptors.

use std::ops::Deref;
use std::path::{Path, PathBuf};
use std::sync::{Condvar, Mutex, MutexGuard, PoisonError};

use rusqlite::Connection;

use super::schema;
use crate::StorageError;

/// Reader connections kept at most. Reads are short (an index range scan), so
/// a handful serve many concurrent sessions; more would mostly add page
/// caches that hold the same hot pages.
const MAX_READERS: usize = 8;

pub(super) struct Pool {
    db_path: PathBuf,
    /// Connections open at most: [`MAX_READERS`], or 1 for a snapshot.
    cap: usize,
    state: Mutex<State>,
    returned: Condvar,
}

struct State {
    idle: Vec<Connection>,
    /// Connections open, idle or lent.
    open: usize,
}

/// A connection lent to one read; it goes back to the pool on drop.
pub(super) struct Reader<'a> {
    pool: &'a Pool,
    conn: Option<Connection>,
}

impl Deref for Reader<'_> {
    type Target = Connection;

    fn deref(&self) -> &Connection {
        self.conn
            .as_ref()
            .expect("a lent connection is present until dropped")
    }
}

impl Drop for Reader<'_> {
    fn drop(&mut self) {
        if let Some(conn) = self.conn.take() {
            self.pool.lock().idle.push(conn);
            self.pool.returned.notify_one();
        }
    }
}

impl Pool {
    /// A pool for the database at `db_path`, starting with `first` if given
    /// (a connection already open, so opening a store checks the file once).
    pub(super) fn new(db_path: &Path, first: Option<Connection>) -> Pool {
        let open = usize::from(first.is_some());
        Pool {
            db_path: db_path.to_path_buf(),
            cap: MAX_READERS,
            state: Mutex::new(State {
                idle: first.into_iter().collect(),
                open,
            }),
            returned: Condvar::new(),
        }
    }

    /// A pool of one connection, `conn`, whose read transaction is opened
    /// here and kept: every read through it sees the database as it was at
    /// this moment, whatever is committed meanwhile (a check or a backup
    /// beside a running server must not mix two states of the store).
    pub(super) fn snapshot(db_path: &Path, conn: Connection) -> Result<Pool, StorageError> {
        let pin = || -> rusqlite::Result<()> {
            conn.execute_batch("BEGIN DEFERRED")?;
            // A deferred transaction takes its snapshot at its first read.
            conn.query_row("SELECT count(*) FROM sqlite_master", [], |r| {
                r.get::<_, i64>(0)
            })?;
            Ok(())
        };
        pin().map_err(|e| {
            StorageError::Io(format!(
                "cannot start a read snapshot of `{}`: {e}",
                db_path.display()
            ))
        })?;
        let mut pool = Pool::new(db_path, Some(conn));
        pool.cap = 1;
        Ok(pool)
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        // Held only to move connections in and out of the vector.
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// A connection for one read.
    pub(super) fn get(&self) -> Result<Reader<'_>, StorageError> {
        let mut state = self.lock();
        loop {
            if let Some(conn) = state.idle.pop() {
                return Ok(Reader {
                    pool: self,
                    conn: Some(conn),
                });
            }
            if state.open < self.cap {
                state.open += 1;
                drop(state);
                return match schema::open_reader(&self.db_path) {
                    Ok(conn) => Ok(Reader {
                        pool: self,
                        conn: Some(conn),
                    }),
                    Err(e) => {
                        self.lock().open -= 1;
                        self.returned.notify_one();
                        Err(e)
                    }
                };
            }
            state = self
                .returned
                .wait(state)
                .unwrap_or_else(PoisonError::into_inner);
        }
    }
}
