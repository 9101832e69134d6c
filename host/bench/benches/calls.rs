//! Per-call cost of a trivial tool, and what permission hooks add to it.
//!
//! ```text
//! cargo test --no-run            # builds the plugins (tests/build.rs)
//! cargo bench -p glovebox-bench --bench calls --profile dev
//! GLOVEBOX_BENCH_CALLS=5000 cargo bench -p glovebox-bench --bench calls
//! ```
//!
//! A fresh instance per call (the echo plugin), through `Host::call`, with 0,
//! 1 and 3 hooks (cost control, role allow-list, destructive gate, all
//! allowing). Reports median and p99 per call, and the ratio to no hooks; then,
//! for 1 and 3 hooks, the chain alone (`HookChain::evaluate` on the same call,
//! no tool run): the difference is what the pipeline adds around the chain.
//!
//! Then the same call in a session (`Scope::call_in_session`, sled, logged
//! durably) with nothing counted (as before the tallies), with only the
//! principal's daily events counted (batched), with the principal's
//! ceiling, and with the principal's, project's and role's (one
//! compare-and-set of a tally per scope): A/B in one run, interleaved in
//! rounds so drift of the machine falls on all of them.

#![forbid(unsafe_code)]

mod support;

use support::calls::{
    Ceilings, host_reusing, sample, sample_chain, sample_session, session_gateway, stats,
};
use support::env_number;

/// `[[hook]] reuse` of the rows that keep hook instances.
const REUSE: u32 = 1000;

#[tokio::main]
async fn main() {
    let n: usize = env_number("GLOVEBOX_BENCH_CALLS", 2000);
    let data = tempfile::tempdir().expect("tempdir");
    println!(
        "{:>6}  {:>12}  {:>12}  {:>8}",
        "hooks", "p50", "p99", "vs 0"
    );
    let mut base = None;
    // Fresh instances (the default), then each hook's instances reused.
    for (k, reuse) in [(0usize, 1), (1, 1), (3, 1), (1, REUSE), (3, REUSE)] {
        let h = host_reusing(k, reuse, data.path()).await;
        let (p50, p99) = stats(sample(&h, n).await);
        let base50 = *base.get_or_insert(p50);
        let kept = if reuse > 1 { ", reused" } else { "" };
        println!(
            "{k:>6}  {:>9.1} µs  {:>9.1} µs  {:>7.2}x{kept}",
            p50.as_secs_f64() * 1e6,
            p99.as_secs_f64() * 1e6,
            p50.as_secs_f64() / base50.as_secs_f64()
        );
        if k > 0 {
            let (c50, c99) = stats(sample_chain(&h, n).await);
            println!(
                "{:>6}  {:>9.1} µs  {:>9.1} µs  (the chain alone)",
                k,
                c50.as_secs_f64() * 1e6,
                c99.as_secs_f64() * 1e6,
            );
        }
    }
    ceilings_ab(n).await;
}

/// The call in a session with 0, 1 and 3 scopes under spend ceilings.
async fn ceilings_ab(n: usize) {
    const ROUNDS: usize = 5;
    let kinds = [
        Ceilings::Off,
        Ceilings::None,
        Ceilings::Principal,
        Ceilings::All,
    ];
    let mut runs = Vec::new();
    for kind in kinds {
        let dir = tempfile::tempdir().expect("tempdir");
        let (gateway, session) = session_gateway(kind, dir.path()).await;
        runs.push((kind, gateway, session, dir, Vec::new()));
    }
    for _ in 0..ROUNDS {
        for (_, gateway, session, _, samples) in &mut runs {
            samples.extend(sample_session(gateway, session, n.div_ceil(ROUNDS)).await);
        }
    }
    println!();
    println!(
        "{:>22}  {:>12}  {:>12}  {:>8}",
        "in a session, ceilings", "p50", "p99", "vs off"
    );
    let mut base = None;
    for (kind, _, _, _, samples) in runs {
        let (p50, p99) = stats(samples);
        let base50 = *base.get_or_insert(p50);
        println!(
            "{:>22}  {:>9.1} µs  {:>9.1} µs  {:>7.2}x",
            format!("{kind:?}"),
            p50.as_secs_f64() * 1e6,
            p99.as_secs_f64() * 1e6,
            p50.as_secs_f64() / base50.as_secs_f64()
        );
    }
}
