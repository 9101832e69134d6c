//! Durable appends per second: `SledStore` (group commit) against raw sled.
//!
//! ```text
//! cargo bench -p glovebox --bench append                 # release build
//! cargo bench -p glovebox --bench append --profile dev   # optimized deps, quicker to build
//! GLOVEBOX_BENCH_SECS=1 cargo bench -p glovebox --bench append
//! ```
//!
//! Every writer thread appends 200-byte events to its own stream, one event
//! per append, for a fixed time per case (2.5 s unless `GLOVEBOX_BENCH_SECS`
//! says otherwise); latency is from the start of an append to its
//! acknowledgement. The raw sled cases insert into one tree and call
//! `flush()` after every insert, or once per 64 inserts (an event's latency
//! then runs to the flush that covers it). Raw sled flushes are
//! `sync_file_range`, the same durability as `Durability::Flush`.

use std::path::Path;
use std::sync::Barrier;
use std::time::{Duration, Instant};

use glovebox::storage::{Durability, SledStore, Storage};

const ENTRY_BYTES: usize = 200;
const WRITERS: [usize; 3] = [1, 4, 16];
const RAW_BATCH: usize = 64;

struct Outcome {
    events: u64,
    elapsed: Duration,
    /// Latency of every event, in microseconds.
    latencies: Vec<u32>,
    flushes: Option<u64>,
}

impl Outcome {
    fn per_sec(&self) -> f64 {
        self.events as f64 / self.elapsed.as_secs_f64()
    }

    fn percentile(&mut self, p: f64) -> u32 {
        if self.latencies.is_empty() {
            return 0;
        }
        self.latencies.sort_unstable();
        let i = ((self.latencies.len() - 1) as f64 * p).round() as usize;
        self.latencies[i]
    }
}

fn micros(d: Duration) -> u32 {
    u32::try_from(d.as_micros()).unwrap_or(u32::MAX)
}

/// Runs `writer(index, deadline)` on `threads` threads started together;
/// each returns its events' latencies.
fn run_threads(
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

fn glovebox(dir: &Path, durability: Durability, threads: usize, run_for: Duration) -> Outcome {
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

fn raw_sled(dir: &Path, batch: usize, threads: usize, run_for: Duration) -> Outcome {
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

fn main() {
    let run_for = Duration::from_secs_f64(
        std::env::var("GLOVEBOX_BENCH_SECS")
            .ok()
            .and_then(|s| s.parse().ok())
            .unwrap_or(2.5),
    );
    println!(
        "durable appends of {ENTRY_BYTES}-byte events, one stream per writer, {:.1} s per case\n",
        run_for.as_secs_f64()
    );
    println!(
        "{:<34} {:>7} {:>9} {:>10} {:>8} {:>8} {:>12}",
        "case", "writers", "events", "events/s", "p50 µs", "p99 µs", "events/flush"
    );
    type Case<'a> = (&'a str, &'a dyn Fn(&Path, usize) -> Outcome);
    let cases: [Case; 4] = [
        ("glovebox Flush (group commit)", &|d, t| {
            glovebox(d, Durability::Flush, t, run_for)
        }),
        ("glovebox Strict (+ fdatasync)", &|d, t| {
            glovebox(d, Durability::Strict, t, run_for)
        }),
        ("raw sled, flush per insert", &|d, t| {
            raw_sled(d, 1, t, run_for)
        }),
        ("raw sled, flush per 64 inserts", &|d, t| {
            raw_sled(d, RAW_BATCH, t, run_for)
        }),
    ];
    let mut at_16 = Vec::new();
    for (name, case) in cases {
        for threads in WRITERS {
            let tmp = tempfile::tempdir().expect("temp dir");
            let mut o = case(tmp.path(), threads);
            let per_flush = o
                .flushes
                .filter(|f| *f > 0)
                .map(|f| format!("{:.1}", o.events as f64 / f as f64))
                .unwrap_or_default();
            let (p50, p99) = (o.percentile(0.50), o.percentile(0.99));
            println!(
                "{name:<34} {threads:>7} {:>9} {:>10.0} {p50:>8} {p99:>8} {per_flush:>12}",
                o.events,
                o.per_sec(),
            );
            if threads == 16 {
                at_16.push((name, o.per_sec()));
            }
        }
    }
    let rate = |prefix: &str| {
        at_16
            .iter()
            .find(|(n, _)| n.starts_with(prefix))
            .map(|(_, r)| *r)
    };
    if let (Some(flush), Some(strict), Some(raw)) = (
        rate("glovebox Flush"),
        rate("glovebox Strict"),
        rate("raw sled, flush per 64"),
    ) {
        println!(
            "\nat 16 writers: glovebox Flush / raw sled batched = {:.2}",
            flush / raw
        );
        println!(
            "at 16 writers: glovebox Strict / raw sled batched = {:.2}",
            strict / raw
        );
    }
}
