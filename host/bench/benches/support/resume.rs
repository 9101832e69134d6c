//! Sessions of a given length on each backend (and on NATS JetStream),
//! timed reloads of them, and the space they take on disk (used by `resume`
//! and `compare`).

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use glovebox::Sessions;
use glovebox::session::EventKind;
use glovebox::storage::{Backend, Durability};
use glovebox_store_nats::testing::NatsServer;
use glovebox_store_nats::{NatsConfig, NatsStore};

use super::{Store, start_session};

/// Starts a session and appends `n` note events to it from 4 threads, as
/// concurrent calls of one session would; returns its id.
pub fn fill(sessions: &Sessions, n: u64) -> String {
    let id = start_session(sessions);
    std::thread::scope(|s| {
        for w in 0..4 {
            let id = &id;
            s.spawn(move || {
                for i in 0..(n - 1) / 4 + 1 {
                    let text = format!("writer {w} step {i}: {}", "x".repeat(120));
                    sessions
                        .append(id, EventKind::Note { text })
                        .expect("append");
                }
            });
        }
    });
    id
}

/// The median of 7 reloads of session `id` from storage, and the events each read.
pub fn median_load(sessions: &Sessions, id: &str, checkpoints: bool) -> (Duration, u64) {
    let mut times = Vec::new();
    let mut read = 0;
    for _ in 0..7 {
        let start = Instant::now();
        let (_, stats) = sessions.reload(id, checkpoints).expect("reload");
        times.push(start.elapsed());
        read = stats.events_read;
    }
    times.sort();
    (times[times.len() / 2], read)
}

pub fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

/// A session of `n` events, alone in a fresh store at `Durability::Flush`
/// (so the space the dir takes is that session's: its events, checkpoints
/// and index entries).
pub struct Filled {
    sessions: Sessions,
    /// The NATS server the store is on, for a NATS session (its files are
    /// in `dir`); dropped after `sessions`.
    server: Option<NatsServer>,
    dir: tempfile::TempDir,
    id: String,
    /// Appending its events (from 4 threads).
    pub fill: Duration,
}

impl Filled {
    pub fn new(backend: Backend, n: u64) -> Filled {
        let dir = tempfile::tempdir().expect("tempdir");
        let sessions = Sessions::new(Store::open(dir.path(), backend, Durability::Flush).storage());
        Filled::fill(sessions, None, dir, n)
    }

    /// The same on NATS JetStream: a `nats-server` of its own (R1) on
    /// 127.0.0.1, its files in the session's temp dir.
    pub fn on_nats(n: u64) -> Filled {
        let dir = tempfile::tempdir().expect("tempdir");
        let server = NatsServer::start(dir.path(), true);
        let store = NatsStore::open(&NatsConfig::new(server.url()), Durability::Flush)
            .expect("open the NATS store");
        Filled::fill(Sessions::new(Arc::new(store)), Some(server), dir, n)
    }

    fn fill(
        sessions: Sessions,
        server: Option<NatsServer>,
        dir: tempfile::TempDir,
        n: u64,
    ) -> Filled {
        let started = Instant::now();
        let id = fill(&sessions, n);
        Filled {
            fill: started.elapsed(),
            sessions,
            server,
            dir,
            id,
        }
    }

    /// The median of 7 reloads, from the newest checkpoint or replaying
    /// every event, and the events each read.
    pub fn median_load(&self, checkpoints: bool) -> (Duration, u64) {
        median_load(&self.sessions, &self.id, checkpoints)
    }

    /// Closes the store, then measures its dir. Closed first because an
    /// open store's files are not what stays on disk: SQLite's WAL is copied
    /// into the database and removed when the last connection closes.
    pub fn close(self) -> DiskUsage {
        // The sessions hold the only reference to the store.
        drop(self.sessions);
        // A NATS server's files are measured as it stopped: killed, as it
        // keeps no more than it has acknowledged.
        drop(self.server);
        disk_usage(self.dir.path())
    }
}

/// Bytes under a directory: allocated on disk, and the files' lengths (less,
/// when a file's tail block is partly used; more, for sparse files).
#[derive(Clone, Copy, Debug, Default)]
pub struct DiskUsage {
    pub allocated: u64,
    pub length: u64,
    pub files: u64,
}

pub fn disk_usage(dir: &Path) -> DiskUsage {
    use std::os::unix::fs::MetadataExt;
    let mut usage = DiskUsage::default();
    let mut pending = vec![dir.to_path_buf()];
    while let Some(dir) = pending.pop() {
        for entry in std::fs::read_dir(&dir).expect("read store dir") {
            let entry = entry.expect("read store dir");
            let meta = entry.metadata().expect("stat");
            if meta.is_dir() {
                pending.push(entry.path());
            } else {
                // `st_blocks` is in 512-byte units whatever the file system's block size.
                usage.allocated += meta.blocks() * 512;
                usage.length += meta.len();
                usage.files += 1;
            }
        }
    }
    usage
}
