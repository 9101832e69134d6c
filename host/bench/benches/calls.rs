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

#![forbid(unsafe_code)]

mod support;

use support::calls::{host, sample, sample_chain, stats};
use support::env_number;

#[tokio::main]
async fn main() {
    let n: usize = env_number("GLOVEBOX_BENCH_CALLS", 2000);
    let data = tempfile::tempdir().expect("tempdir");
    println!(
        "{:>6}  {:>12}  {:>12}  {:>8}",
        "hooks", "p50", "p99", "vs 0"
    );
    let mut base = None;
    for k in [0usize, 1, 3] {
        let h = host(k, data.path()).await;
        let (p50, p99) = stats(sample(&h, n).await);
        let base50 = *base.get_or_insert(p50);
        println!(
            "{k:>6}  {:>9.1} µs  {:>9.1} µs  {:>7.2}x",
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
}
