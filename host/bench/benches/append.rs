//! Durable appends per second on each backend (sled, SQLite): the store
//! (group commit) and the session log against the raw engine; then the
//! store on NATS JetStream, R1 (one `nats-server`) and R3 (a three-node
//! cluster), both started by the bench on 127.0.0.1 (Debian's `nats-server`
//! is installed when missing; `GLOVEBOX_BENCH_NO_NATS=1` leaves these rows
//! out), against the sled store at `Durability::Flush`.
//!
//! ```text
//! cargo bench -p glovebox-bench --bench append                 # release build
//! cargo bench -p glovebox-bench --bench append --profile dev   # optimized deps, quicker to build
//! GLOVEBOX_BENCH_SECS=1 cargo bench -p glovebox-bench --bench append
//! ```
//!
//! Every writer thread appends 200-byte events to its own stream, one event
//! per append, for a fixed time per case (2.5 s unless `GLOVEBOX_BENCH_SECS`
//! says otherwise); latency is from the start of an append to its
//! acknowledgement. The raw cases write without the store, one flush or
//! commit per insert or per 64 inserts (an event's latency then runs to the
//! flush that covers it): raw sled inserts into one tree and calls `flush()`
//! (`sync_file_range`, the durability of `Durability::Flush`); raw SQLite is
//! set up as the SQLite store sets itself up at `Durability::Flush` (WAL,
//! `synchronous=NORMAL`, 4 KiB pages), all writers sharing one connection
//! (`support/append.rs` says why). Each store and session-log case is
//! compared with its own engine's raw batched rate.
//!
//! A NATS append is acknowledged once JetStream holds it (with R3, on the
//! stream's leader and one more node); the servers sync their files to disk
//! on their own schedule, not per write (docs/durability.md), so these rows
//! compare acknowledged appends, not fsyncs.

#![forbid(unsafe_code)]

mod support;

use std::time::Duration;

use glovebox::storage::{Backend, Durability};

use support::append::{CASES, Case, ENTRY_BYTES, NATS_CASES, Nats, WRITERS};
use support::env_number;

fn main() {
    let run_for = Duration::from_secs_f64(env_number("GLOVEBOX_BENCH_SECS", 2.5));
    println!(
        "durable appends of {ENTRY_BYTES}-byte events, one stream per writer, {:.1} s per case\n",
        run_for.as_secs_f64()
    );
    let width = CASES
        .iter()
        .map(|c| c.label().len())
        .chain(NATS_CASES.iter().map(|c| c.label().len()))
        .max()
        .unwrap_or(0);
    println!(
        "{:<width$} {:>7} {:>9} {:>10} {:>8} {:>8} {:>12}",
        "case", "writers", "events", "events/s", "p50 µs", "p99 µs", "events/flush"
    );
    // Each engine's raw batched rate, by writer count.
    let mut reference: Vec<(Backend, usize, f64)> = Vec::new();
    let mut at_16: Vec<(Case, f64)> = Vec::new();
    // The sled store's rate at `Durability::Flush`, by writer count: what
    // the NATS rows are compared with.
    let mut sled_flush: Vec<(usize, f64)> = Vec::new();
    for case in CASES {
        let name = case.label();
        for threads in WRITERS {
            let tmp = tempfile::tempdir().expect("temp dir");
            let mut o = case.run(tmp.path(), threads, run_for);
            let per_flush = o.per_flush().map(|f| format!("{f:.1}")).unwrap_or_default();
            let (p50, p99) = (o.percentile(0.50), o.percentile(0.99));
            println!(
                "{name:<width$} {threads:>7} {:>9} {:>10.0} {p50:>8} {p99:>8} {per_flush:>12}",
                o.events,
                o.per_sec(),
            );
            if case.is_reference() {
                reference.push((case.engine(), threads, o.per_sec()));
            }
            if threads == 16 {
                at_16.push((case, o.per_sec()));
            }
            if matches!(
                case,
                Case::Store {
                    backend: Backend::Sled,
                    durability: Durability::Flush
                }
            ) {
                sled_flush.push((threads, o.per_sec()));
            }
        }
    }
    // The NATS rows, in the same table: R1 (one server) and R3 (a 3-node
    // cluster), started by the bench on loopback, each run on fresh servers.
    let mut nats: Vec<(Nats, usize, f64)> = Vec::new();
    if std::env::var_os("GLOVEBOX_BENCH_NO_NATS").is_none() {
        for case in NATS_CASES {
            let name = case.label();
            for threads in WRITERS {
                let tmp = tempfile::tempdir().expect("temp dir");
                let mut o = case.run(tmp.path(), threads, run_for);
                let (p50, p99) = (o.percentile(0.50), o.percentile(0.99));
                println!(
                    "{name:<width$} {threads:>7} {:>9} {:>10.0} {p50:>8} {p99:>8} {:>12}",
                    o.events,
                    o.per_sec(),
                    ""
                );
                nats.push((case, threads, o.per_sec()));
            }
        }
    }
    println!("\nat 16 writers, against the engine's raw batched rate:");
    for (case, rate) in at_16 {
        let base = reference
            .iter()
            .find(|(engine, threads, _)| *engine == case.engine() && *threads == 16)
            .map(|(_, _, rate)| *rate);
        if let Some(base) = base.filter(|_| !case.is_reference()) {
            println!(
                "  {:<width$} {:.2}x {}",
                case.label(),
                rate / base,
                case.reference()
            );
        }
    }
    if !nats.is_empty() {
        println!("\nNATS against the sled store (SledStore::append, Flush), same writers:");
        for (case, threads, rate) in nats {
            if let Some((_, sled)) = sled_flush.iter().find(|(t, _)| *t == threads) {
                println!(
                    "  {:<width$} {threads:>2} writers: {:.2}x",
                    case.label(),
                    rate / sled
                );
            }
        }
    }
}
