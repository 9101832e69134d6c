//! Resume time against session length, with and without checkpoints, and
//! the space the session takes on disk, on each backend (sled, SQLite) and
//! on NATS JetStream (a `nats-server` the bench starts on 127.0.0.1, R1;
//! `GLOVEBOX_BENCH_NO_NATS=1` leaves it out). On NATS the disk column is
//! the server's files, measured after it is killed.
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

use glovebox::storage::Backend;
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
    // Where the session is stored: each embedded backend, then NATS (one
    // server of the bench's own) unless `GLOVEBOX_BENCH_NO_NATS` is set.
    let mut backends: Vec<Option<Backend>> = BACKENDS.into_iter().map(Some).collect();
    if std::env::var_os("GLOVEBOX_BENCH_NO_NATS").is_none() {
        backends.push(None);
    }
    let name = |backend: Option<Backend>| backend.map_or("nats", |b| b.as_str());
    // Each backend's checkpointed resume of the first size, and of the last
    // (in the order of `backends`).
    let mut first: Vec<Option<Duration>> = vec![None; backends.len()];
    let mut last = first.clone();
    for &n in &sizes {
        for (i, &backend) in backends.iter().enumerate() {
            let session = match backend {
                Some(backend) => Filled::new(backend, n),
                None => Filled::on_nats(n),
            };
            let (with, read_with) = session.median_load(true);
            let (without, read_without) = session.median_load(false);
            let disk = session.close();
            let bytes = disk.allocated;
            println!(
                "{:>7}  {n:>9}  {:>13.2} ms  {:>12}  {:>15.2} ms  {:>12}  {:>9.1} MiB  {:>8.1} MiB  {:>8.0}",
                name(backend),
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
        for (&backend, (base, with)) in backends.iter().zip(first.iter().zip(&last)) {
            let (Some(base), Some(with)) = (base, with) else {
                continue;
            };
            println!(
                "{}: resume of {} events with checkpoints = {:.2}x the time of {} events",
                name(backend),
                sizes[sizes.len() - 1],
                with.as_secs_f64() / base.as_secs_f64(),
                sizes[0]
            );
        }
    }
}
