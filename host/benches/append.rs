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

mod support;

use std::path::Path;
use std::time::Duration;

use glovebox::storage::Durability;

use support::append::{ENTRY_BYTES, Outcome, RAW_BATCH, WRITERS, glovebox, raw_sled};

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
