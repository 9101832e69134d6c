//! Resume time against session length, with and without checkpoints.
//!
//! ```text
//! cargo bench -p glovebox --bench resume --profile dev   # optimized deps
//! GLOVEBOX_BENCH_SIZES=1000,10000 cargo bench -p glovebox --bench resume --profile dev
//! ```
//!
//! For each size a session gets that many note events (checkpoint every 256
//! events, the default), then its cached state is dropped and loaded again
//! from storage: from the newest checkpoint plus the tail, and from the first
//! event. Each load is repeated and the median reported.

mod support;

use std::sync::Arc;

use glovebox::Sessions;
use glovebox::storage::{Durability, SledStore, Storage};

use support::resume::{fill, median_load, ms};

fn main() {
    let sizes: Vec<u64> = std::env::var("GLOVEBOX_BENCH_SIZES")
        .ok()
        .map(|s| s.split(',').filter_map(|n| n.trim().parse().ok()).collect())
        .unwrap_or_else(|| vec![1_000, 10_000, 100_000]);
    let dir = tempfile::tempdir().expect("tempdir");
    let store: Arc<dyn Storage> =
        Arc::new(SledStore::open(dir.path(), Durability::Flush).expect("open store"));
    let sessions = Sessions::new(store);
    println!(
        "{:>9}  {:>16}  {:>12}  {:>18}  {:>12}",
        "events", "with checkpoint", "events read", "without checkpoint", "events read"
    );
    let mut first = None;
    for &n in &sizes {
        let id = fill(&sessions, n);
        let (with, read_with) = median_load(&sessions, &id, true);
        let (without, read_without) = median_load(&sessions, &id, false);
        println!(
            "{n:>9}  {:>13.2} ms  {read_with:>12}  {:>15.2} ms  {read_without:>12}",
            ms(with),
            ms(without)
        );
        if first.is_none() {
            first = Some(with);
        } else if n == *sizes.last().unwrap_or(&n) {
            let base = first.unwrap_or(with);
            println!(
                "resume of {n} events with checkpoints = {:.2}x the time of {} events",
                with.as_secs_f64() / base.as_secs_f64(),
                sizes[0]
            );
        }
    }
}
