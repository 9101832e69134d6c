//! Durable appends: `SledStore` (group commit) and raw sled, with N writer
//! threads for a fixed time (used by `append` and `compare`).

use std::path::Path;
use std::sync::Barrier;
use std::time::{Duration, Instant};

use glovebox::storage::{Durability, SledStore, Storage};

pub const ENTRY_BYTES: usize = 200;
pub const WRITERS: [usize; 3] = [1, 4, 16];
pub const RAW_BATCH: usize = 64;

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

pub fn glovebox(dir: &Path, durability: Durability, threads: usize, run_for: Duration) -> Outcome {
    let store = SledStore::open(dir, durability).expect("open store");
    let entry = vec![0xABu8; ENTRY_BYTES];
    let mut outcome = run_threads(threads, run_for, |w, deadline| {
        let stream = format!("session-{w}");
        let mut last = 0;
        let mut lat = Vec::new();
        loop {
            let t = Instant::now();
            if t >= deadline {
                break;
            }
            last = store
                .append(&stream, last, std::slice::from_ref(&entry))
                .expect("append");
            lat.push(micros(t.elapsed()));
        }
        lat
    });
    outcome.flushes = Some(store.flush_count());
    outcome
}

pub fn raw_sled(dir: &Path, batch: usize, threads: usize, run_for: Duration) -> Outcome {
    let db = sled::Config::new().path(dir).open().expect("open sled");
    let tree = db.open_tree("events").expect("open tree");
    let entry = vec![0xABu8; ENTRY_BYTES];
    let flushes = std::sync::atomic::AtomicU64::new(0);
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
            flushes.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            let done = Instant::now();
            lat.extend(starts.iter().map(|s| micros(done - *s)));
        }
        lat
    });
    outcome.flushes = Some(flushes.into_inner());
    outcome
}
