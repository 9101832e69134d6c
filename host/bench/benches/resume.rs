//! Resume time against session length, with and without checkpoints, and
//! the space the session takes on disk, on each backend (sled, SQLite).
//!
//! ```text
//! cargo bench -p glovebox-bench --bench resume --profile dev   # optimized deps
//! GLOVEBOX_BENCH_SIZES=1000,10000 cargo bench -p glovebox-bench --bench resume --profile dev
//! ```
//!
//! For each size and backend a session gets that many note events, alone in
//! a fresh store (checkpoint every 256 events, the default), then its cached
//! state is dropped and loaded again from storage: from the newest
//! checkpoint plus the tail, and from the first event. Each load is repeated
//! and the median reported. Then the store is closed and its dir measured.

#![forbid(unsafe_code)]

mod support;

use std::time::Duration;

use support::BACKENDS;
use support::resume::{Filled, ms};

const MIB: f64 = 1024.0 * 1024.0;

fn main() {
    let sizes: Vec<u64> = std::env::var("GLOVEBOX_BENCH_SIZES")
        .ok()
        .map(|s| s.split(',').filter_map(|n| n.trim().parse().ok()).collect())
        .unwrap_or_else(|| vec![1_000, 10_000, 100_000]);
    println!(
        "{:>7}  {:>9}  {:>16}  {:>12}  {:>18}  {:>12}  {:>13}  {:>12}  {:>8}",
        "backend",
        "events",
        "with checkpoint",
        "events read",
        "without checkpoint",
        "events read",
        "disk (closed)",
        "file lengths",
        "B/event"
    );
    // Each backend's checkpointed resume of the first size, and of the last
    // (in the order of `BACKENDS`).
    let mut first: [Option<Duration>; BACKENDS.len()] = Default::default();
    let mut last = first;
    for &n in &sizes {
        for (i, backend) in BACKENDS.into_iter().enumerate() {
            let session = Filled::new(backend, n);
            let (with, read_with) = session.median_load(true);
            let (without, read_without) = session.median_load(false);
            let disk = session.close();
            let bytes = disk.allocated;
            println!(
                "{:>7}  {n:>9}  {:>13.2} ms  {:>12}  {:>15.2} ms  {:>12}  {:>9.1} MiB  {:>8.1} MiB  {:>8.0}",
                backend.as_str(),
                ms(with),
                read_with,
                ms(without),
                read_without,
                bytes as f64 / MIB,
                disk.length as f64 / MIB,
                bytes as f64 / n as f64
            );
            first[i].get_or_insert(with);
            last[i] = Some(with);
        }
    }
    if sizes.len() > 1 {
        for (backend, (base, with)) in BACKENDS.iter().zip(first.iter().zip(&last)) {
            let (Some(base), Some(with)) = (base, with) else {
                continue;
            };
            println!(
                "{backend}: resume of {} events with checkpoints = {:.2}x the time of {} events",
                sizes[sizes.len() - 1],
                with.as_secs_f64() / base.as_secs_f64(),
                sizes[0]
            );
        }
    }
}
