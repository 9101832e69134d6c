//! Durable appends, on each backend: the raw engine (sled; SQLite set up as
//! the SQLite store sets it up), the store (group commit) and the session
//! log, with N writer threads for a fixed time (used by `append` and
//! `compare`).

use std::io::Write as _;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Barrier, Mutex, PoisonError};
use std::time::{Duration, Instant};

use glovebox::Sessions;
use glovebox::session::EventKind;
use glovebox::storage::{Backend, Durability, SqliteStore, Storage};
use glovebox_store_nats::testing::{NatsCluster, NatsServer};
use glovebox_store_nats::{NatsConfig, NatsStore};
use rusqlite::{Connection, params};

use super::{Store, start_session};

pub const ENTRY_BYTES: usize = 200;
pub const WRITERS: [usize; 3] = [1, 4, 16];
pub const RAW_BATCH: usize = 64;

/// One kind of row of the append benches, run at each of [`WRITERS`].
#[derive(Clone, Copy, Debug)]
pub enum Case {
    /// The engine alone, `batch` inserts per flush (sled) or commit (SQLite).
    Raw { engine: Backend, batch: usize },
    /// `Storage::append` of one entry per call (group commit).
    Store {
        backend: Backend,
        durability: Durability,
    },
    /// `Sessions::append` of a note event: encoding, hash chain, checkpoints,
    /// on a store at `Durability::Flush`.
    Sessions { backend: Backend },
}

/// Every case, in the order they are printed: each engine's reference (the
/// raw batched rows) first, since every other row is compared with it, and
/// the two backends next to each other throughout.
pub const CASES: [Case; 10] = [
    Case::Raw {
        engine: Backend::Sled,
        batch: RAW_BATCH,
    },
    Case::Raw {
        engine: Backend::Sqlite,
        batch: RAW_BATCH,
    },
    Case::Raw {
        engine: Backend::Sled,
        batch: 1,
    },
    Case::Raw {
        engine: Backend::Sqlite,
        batch: 1,
    },
    Case::Store {
        backend: Backend::Sled,
        durability: Durability::Flush,
    },
    Case::Store {
        backend: Backend::Sqlite,
        durability: Durability::Flush,
    },
    Case::Store {
        backend: Backend::Sled,
        durability: Durability::Strict,
    },
    Case::Store {
        backend: Backend::Sqlite,
        durability: Durability::Strict,
    },
    Case::Sessions {
        backend: Backend::Sled,
    },
    Case::Sessions {
        backend: Backend::Sqlite,
    },
];

impl Case {
    /// The engine the case writes to.
    pub fn engine(self) -> Backend {
        match self {
            Case::Raw { engine, .. } => engine,
            Case::Store { backend, .. } | Case::Sessions { backend } => backend,
        }
    }

    /// The raw batched row: what the engine does with the most batching,
    /// which the other rows of its engine are compared with.
    pub fn is_reference(self) -> bool {
        matches!(self, Case::Raw { batch, .. } if batch == RAW_BATCH)
    }

    /// How the reference of this case's engine is named in a ratio.
    pub fn reference(self) -> String {
        format!("raw {}/{RAW_BATCH}", self.engine())
    }

    /// The row's name, backend included (the writer count is added by the caller).
    pub fn label(self) -> String {
        match self {
            Case::Raw {
                engine: Backend::Sled,
                batch,
            } => format!("raw sled, flush per {}", inserts(batch)),
            Case::Raw {
                engine: Backend::Sqlite,
                batch,
            } => format!(
                "raw sqlite (one shared connection), commit per {}",
                inserts(batch)
            ),
            Case::Store {
                backend,
                durability,
            } => {
                let method = match backend {
                    Backend::Sled => "SledStore::append",
                    Backend::Sqlite => "SqliteStore::append",
                };
                format!("Glovebox store, {backend} ({method}, group commit, {durability:?})")
            }
            Case::Sessions { backend } => {
                format!("Glovebox session log, {backend} (Sessions::append, Flush)")
            }
        }
    }

    /// Runs the case on `threads` writers for `run_for`, in the empty dir `dir`.
    pub fn run(self, dir: &Path, threads: usize, run_for: Duration) -> Outcome {
        match self {
            Case::Raw {
                engine: Backend::Sled,
                batch,
            } => raw_sled(dir, batch, threads, run_for),
            Case::Raw {
                engine: Backend::Sqlite,
                batch,
            } => raw_sqlite(dir, batch, threads, run_for),
            Case::Store {
                backend,
                durability,
            } => store_append(dir, backend, durability, threads, run_for),
            Case::Sessions { backend } => sessions_append(dir, backend, threads, run_for),
        }
    }
}

fn inserts(batch: usize) -> String {
    if batch == 1 {
        "insert".into()
    } else {
        format!("{batch} inserts")
    }
}

pub struct Outcome {
    pub events: u64,
    pub elapsed: Duration,
    /// Latency of every event, in microseconds.
    pub latencies: Vec<u32>,
    pub flushes: Option<u64>,
}

impl Outcome {
    pub fn per_sec(&self) -> f64 {
        self.events as f64 / self.elapsed.as_secs_f64()
    }

    pub fn percentile(&mut self, p: f64) -> u32 {
        if self.latencies.is_empty() {
            return 0;
        }
        self.latencies.sort_unstable();
        let i = ((self.latencies.len() - 1) as f64 * p).round() as usize;
        self.latencies[i]
    }

    /// Events per flush or commit, when the case counts them.
    pub fn per_flush(&self) -> Option<f64> {
        self.flushes
            .filter(|f| *f > 0)
            .map(|f| self.events as f64 / f as f64)
    }
}

pub fn micros(d: Duration) -> u32 {
    u32::try_from(d.as_micros()).unwrap_or(u32::MAX)
}

/// Runs `writer(index, deadline)` on `threads` threads started together;
/// each returns its events' latencies.
pub fn run_threads(
    threads: usize,
    run_for: Duration,
    writer: impl Fn(usize, Instant) -> Vec<u32> + Sync,
) -> Outcome {
    let barrier = Barrier::new(threads + 1);
    let (latencies, elapsed) = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..threads)
            .map(|w| {
                let (barrier, writer) = (&barrier, &writer);
                scope.spawn(move || {
                    barrier.wait();
                    let start = Instant::now();
                    let lat = writer(w, start + run_for);
                    (lat, start.elapsed())
                })
            })
            .collect();
        barrier.wait();
        let mut all = Vec::new();
        let mut longest = Duration::ZERO;
        for h in handles {
            let (lat, took) = h.join().expect("writer thread panicked");
            all.extend(lat);
            longest = longest.max(took);
        }
        (all, longest)
    });
    Outcome {
        events: latencies.len() as u64,
        elapsed,
        latencies,
        flushes: None,
    }
}

/// Each writer appends one entry at a time to its own stream of a `backend`
/// store, waiting for each to be durable.
pub fn store_append(
    dir: &Path,
    backend: Backend,
    durability: Durability,
    threads: usize,
    run_for: Duration,
) -> Outcome {
    let store = Store::open(dir, backend, durability);
    let before = store.flush_count();
    let mut outcome = append_each(&*store.storage(), threads, run_for);
    outcome.flushes = Some(store.flush_count() - before);
    outcome
}

/// Each writer appends one entry at a time to its own stream of `storage`,
/// waiting for each to be acknowledged.
pub fn append_each(storage: &dyn Storage, threads: usize, run_for: Duration) -> Outcome {
    let entry = vec![0xABu8; ENTRY_BYTES];
    run_threads(threads, run_for, |w, deadline| {
        let stream = format!("session-{w}");
        let mut last = 0;
        let mut lat = Vec::new();
        loop {
            let t = Instant::now();
            if t >= deadline {
                break;
            }
            last = storage
                .append(&stream, last, std::slice::from_ref(&entry))
                .expect("append");
            lat.push(micros(t.elapsed()));
        }
        lat
    })
}

/// The NATS rows: the store on JetStream, on servers the bench starts on
/// 127.0.0.1 (installing Debian's `nats-server` when it is missing).
#[derive(Clone, Copy, Debug)]
pub enum Nats {
    /// One server, one copy of every message.
    R1,
    /// A three-node cluster, three copies: an append is acknowledged once
    /// the stream's leader and one other node hold it.
    R3,
}

pub const NATS_CASES: [Nats; 2] = [Nats::R1, Nats::R3];

impl Nats {
    pub fn label(self) -> String {
        match self {
            Nats::R1 => {
                "Glovebox store, nats R1 (NatsStore::append, one server on loopback)".into()
            }
            Nats::R3 => {
                "Glovebox store, nats R3 (NatsStore::append, 3-node cluster on loopback)".into()
            }
        }
    }

    /// Starts the server(s) in the empty dir `dir`, opens a store on them,
    /// and runs `threads` writers for `run_for`, one stream each.
    pub fn run(self, dir: &Path, threads: usize, run_for: Duration) -> Outcome {
        let (config, _servers): (_, Box<dyn std::any::Any>) = match self {
            Nats::R1 => {
                let server = NatsServer::start(dir, true);
                (NatsConfig::new(server.url()), Box::new(server))
            }
            Nats::R3 => {
                let cluster = NatsCluster::start(dir);
                let config = NatsConfig {
                    replicas: 3,
                    ..NatsConfig::new(cluster.urls())
                };
                (config, Box::new(cluster))
            }
        };
        let store = NatsStore::open(&config, Durability::Flush).expect("open the NATS store");
        append_each(&store, threads, run_for)
    }
}

/// Each writer appends note events to its own session through
/// `Sessions::append` (the session log: encoding, hash chain, checkpoints,
/// group commit) on a `backend` store at `Durability::Flush`.
pub fn sessions_append(dir: &Path, backend: Backend, threads: usize, run_for: Duration) -> Outcome {
    let store = Store::open(dir, backend, Durability::Flush);
    let sessions = Sessions::new(store.storage());
    let ids: Vec<String> = (0..threads).map(|_| start_session(&sessions)).collect();
    let text = "x".repeat(ENTRY_BYTES);
    // Starting the sessions committed too; those commits are not the run's.
    let before = store.flush_count();
    let mut outcome = run_threads(threads, run_for, |w, deadline| {
        let mut lat = Vec::new();
        loop {
            let t = Instant::now();
            if t >= deadline {
                break;
            }
            sessions
                .append(&ids[w], EventKind::Note { text: text.clone() })
                .expect("append");
            lat.push(micros(t.elapsed()));
        }
        lat
    });
    outcome.flushes = Some(store.flush_count() - before);
    outcome
}

/// sled alone: one tree, `batch` inserts then `flush()` (`sync_file_range`,
/// what `Durability::Flush` does); an event's latency runs to the flush that
/// covers it.
pub fn raw_sled(dir: &Path, batch: usize, threads: usize, run_for: Duration) -> Outcome {
    let db = sled::Config::new().path(dir).open().expect("open sled");
    let tree = db.open_tree("events").expect("open tree");
    let entry = vec![0xABu8; ENTRY_BYTES];
    let flushes = AtomicU64::new(0);
    let mut outcome = run_threads(threads, run_for, |w, deadline| {
        let mut seq = 0u64;
        let mut lat = Vec::new();
        let mut starts = Vec::with_capacity(batch);
        while Instant::now() < deadline {
            starts.clear();
            for _ in 0..batch {
                seq += 1;
                let mut key = (w as u64).to_be_bytes().to_vec();
                key.extend_from_slice(&seq.to_be_bytes());
                starts.push(Instant::now());
                tree.insert(key, entry.as_slice()).expect("insert");
            }
            db.flush().expect("flush");
            flushes.fetch_add(1, Ordering::Relaxed);
            let done = Instant::now();
            lat.extend(starts.iter().map(|s| micros(done - *s)));
        }
        lat
    });
    outcome.flushes = Some(flushes.into_inner());
    outcome
}

/// What a pause row writes before each flush it times.
#[derive(Clone, Copy)]
pub enum Flushed {
    /// sled: one insert.
    SledInsert,
    /// sled: what a call in a session writes, an append of three events
    /// and an index entry (the write-ahead record, not flushed), then, after
    /// the pause, the outcome's event and an index entry.
    SledCall,
    /// A plain file: one entry written, then `fdatasync`.
    File,
}

impl Flushed {
    pub fn label(self) -> &'static str {
        match self {
            Flushed::SledInsert => "raw sled, 1 writer, a flush per insert",
            Flushed::SledCall => "raw sled, 1 writer, a call's writes and a flush",
            Flushed::File => "a plain file, 1 writer, fdatasync per write",
        }
    }
}

/// One writer writes `what` and flushes, each time after `gap` of other
/// work (the writer spins, as a call's guest and its caller's tasks keep a
/// core busy between two flushes). The latency is from the last write
/// before the flush to the flush's end, not the gap's. On this project's
/// VMs a flush costs more the longer the disk has had none, so a flush
/// inside a call costs more than the back-to-back flushes of the rows
/// above; these rows measure by how much.
pub fn flush_after(dir: &Path, what: Flushed, gap: Duration, run_for: Duration) -> Outcome {
    let spin = || {
        let from = Instant::now();
        while from.elapsed() < gap {
            std::hint::spin_loop();
        }
    };
    let entry = vec![0xABu8; ENTRY_BYTES];
    if let Flushed::File = what {
        let file = std::fs::File::create(dir.join("entries")).expect("create the file");
        return run_threads(1, run_for, |_, deadline| {
            let mut lat = Vec::new();
            loop {
                spin();
                let t = Instant::now();
                if t >= deadline {
                    break;
                }
                (&file).write_all(&entry).expect("write");
                file.sync_data().expect("fdatasync");
                lat.push(micros(t.elapsed()));
            }
            lat
        });
    }
    let db = sled::Config::new().path(dir).open().expect("open sled");
    let (events, index) = (
        db.open_tree("events").expect("open tree"),
        db.open_tree("index").expect("open tree"),
    );
    run_threads(1, run_for, |_, deadline| {
        let mut lat = Vec::new();
        let mut seq = 0u64;
        let mut insert = |tree: &sled::Tree| {
            seq += 1;
            tree.insert(seq.to_be_bytes(), entry.as_slice())
                .expect("insert");
        };
        loop {
            if let Flushed::SledCall = what {
                for _ in 0..3 {
                    insert(&events);
                }
                insert(&index);
            }
            spin();
            let t = Instant::now();
            if t >= deadline {
                break;
            }
            insert(&events);
            if let Flushed::SledCall = what {
                insert(&index);
            }
            db.flush().expect("flush");
            lat.push(micros(t.elapsed()));
        }
        lat
    })
}

/// SQLite alone, on a database file `SqliteStore` created (its schema, 4 KiB
/// pages), set up as the store sets up its writer at `Durability::Flush`
/// (WAL, `synchronous=NORMAL`, a 16 MiB page cache, the WAL cut back to
/// 64 MiB): each writer runs `batch` INSERTs into the store's `entries`
/// table, as a stream of its own, then COMMIT, so the raw rows and the
/// store's differ by what the store does, not by the rows they write. An
/// event's latency runs to the commit that covers it (for the first of a
/// batch, from before it waited for the connection).
///
/// All writers share one connection behind a mutex. SQLite lets one
/// connection write at a time however many there are. With a connection per
/// writer (`BEGIN IMMEDIATE`) the throughput came out about the same, but
/// only because whichever writer holds the write lock keeps taking it again:
/// the others sleep in SQLite's busy handler (1, 2, 5, 10 ... ms between
/// retries) and hardly append, so the row would describe one writer and its
/// latencies those sleeps. The mutex hands the connection to a waiting
/// writer when a commit returns, so every writer appends, as every writer
/// of the store does: the fairer floor. (`std`'s mutex is not strictly
/// fair either; the p99 column shows what waiting for it costs.)
///
/// The one difference from the store's set-up: checkpoints. The store's
/// thread runs them off the commit path once the WAL holds 16 MiB; here
/// SQLite's own automatic checkpoint does, at the same size, inside the
/// commit that crosses it, as plain SQLite would.
pub fn raw_sqlite(dir: &Path, batch: usize, threads: usize, run_for: Duration) -> Outcome {
    // The store creates its file (`<dir>/sqlite/store.db`) and closes it.
    drop(SqliteStore::open(dir, Durability::Flush).expect("create the sqlite store"));
    let conn = Connection::open(dir.join("sqlite/store.db")).expect("open sqlite");
    let mode: String = conn
        .pragma_update_and_check(None, "journal_mode", "wal", |r| r.get(0))
        .expect("journal mode");
    assert!(mode.eq_ignore_ascii_case("wal"), "not in WAL mode: {mode}");
    for (pragma, value) in [
        ("synchronous", "NORMAL"),
        ("cache_size", "-16384"),
        ("wal_autocheckpoint", "4096"),
        ("journal_size_limit", "67108864"),
    ] {
        conn.pragma_update(None, pragma, value)
            .unwrap_or_else(|e| panic!("PRAGMA {pragma}: {e}"));
    }
    let conn = Mutex::new(conn);
    let entry = vec![0xABu8; ENTRY_BYTES];
    let commits = AtomicU64::new(0);
    let mut outcome = run_threads(threads, run_for, |w, deadline| {
        let stream = w as i64 + 1;
        let mut seq = 0i64;
        let mut lat = Vec::new();
        let mut starts = Vec::with_capacity(batch);
        while Instant::now() < deadline {
            starts.clear();
            starts.push(Instant::now());
            let mut conn = conn.lock().unwrap_or_else(PoisonError::into_inner);
            let tx = conn.transaction().expect("begin");
            {
                let mut insert = tx
                    .prepare_cached("INSERT INTO entries (stream, seq, data) VALUES (?1, ?2, ?3)")
                    .expect("prepare");
                for i in 0..batch {
                    seq += 1;
                    if i > 0 {
                        starts.push(Instant::now());
                    }
                    insert.execute(params![stream, seq, entry]).expect("insert");
                }
            }
            tx.commit().expect("commit");
            drop(conn);
            commits.fetch_add(1, Ordering::Relaxed);
            let done = Instant::now();
            lat.extend(starts.iter().map(|s| micros(done - *s)));
        }
        lat
    });
    outcome.flushes = Some(commits.into_inner());
    outcome
}
