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

use std::sync::Arc;
use std::time::{Duration, Instant};

use glovebox::Sessions;
use glovebox::session::{EventKind, Role, StartSession};
use glovebox::storage::{Durability, SledStore, Storage};

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
        let id = sessions
            .start(StartSession {
                role: Role::Workagent,
                project: "bench".into(),
                name: None,
                tags: vec![],
                expected_duration: None,
            })
            .expect("start")
            .id;
        // Appends from 4 threads, as concurrent calls of one session would.
        std::thread::scope(|s| {
            for w in 0..4 {
                let (sessions, id) = (&sessions, &id);
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

fn median_load(sessions: &Sessions, id: &str, checkpoints: bool) -> (Duration, u64) {
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

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}
