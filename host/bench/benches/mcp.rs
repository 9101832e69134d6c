//! The MCP round trip of a trivial tool (echo), over stdio and streamable HTTP.
//!
//! ```text
//! cargo test --no-run            # builds the plugins (tests/build.rs)
//! cargo bench -p glovebox-bench --bench mcp --profile dev
//! GLOVEBOX_BENCH_CALLS=5000 cargo bench -p glovebox-bench --bench mcp
//! ```
//!
//! One client, one call at a time, in a session (so every call is logged
//! durably, as every MCP call is). The server runs in this process; the
//! "stdio" client talks to it over a pair of OS pipes with newline-delimited
//! JSON-RPC, exactly the bytes `glovebox serve` reads and writes; the HTTP
//! client over loopback TCP with keep-alive, to `/mcp` (SSE responses, an
//! MCP session). The first row is the same call through `call_in_session`
//! without MCP, for the overhead.
//!
//! Then fairness (admission control, threat 44): 64 MCP clients over HTTP
//! at once, each in a session of its own, with and without every tenth call
//! of each looping to its deadline: the fast calls refused (`busy`) or
//! failed, and their p50 and p99; the last row is the loops with
//! `runtime.admission_wait = "0s"` (refused at once, as before the queue).
//! `GLOVEBOX_BENCH_FAIR_CALLS` sets each client's calls (default 40).

#![forbid(unsafe_code)]

mod support;

use support::env_number;
use support::mcp::{
    Fairness, LOOP_DEADLINE, Stats, echo_server, fairness, http, in_session, stdio,
};

fn print(name: &str, s: &Stats) {
    println!(
        "{name:<24} {:>10.0}  {:>9.1} µs  {:>9.1} µs",
        s.calls_per_s,
        s.p50.as_secs_f64() * 1e6,
        s.p99.as_secs_f64() * 1e6
    );
}

#[tokio::main]
async fn main() {
    let n: usize = env_number("GLOVEBOX_BENCH_CALLS", 2000);
    let data = tempfile::tempdir().expect("tempdir");
    let (gateway, server) = echo_server(data.path()).await;

    println!("{n} sequential echo calls in a session, one client, after 200 warm-up calls");
    println!(
        "{:<24} {:>10}  {:>12}  {:>12}",
        "path", "calls/s", "p50", "p99"
    );
    let direct = in_session(&gateway, n).await;
    print("call_in_session (no MCP)", &direct);
    print("MCP over stdio (pipes)", &stdio(&server, n).await);
    print("MCP over HTTP", &http(&server, n).await);

    let calls: usize = env_number("GLOVEBOX_BENCH_FAIR_CALLS", 40);
    println!();
    println!(
        "fairness: 64 MCP clients over HTTP at once, {calls} calls each, 16 call slots, \
         admission wait 5s; with loops, every tenth call loops to its {LOOP_DEADLINE:?} deadline"
    );
    println!(
        "{:<24} {:>10}  {:>8}  {:>8}  {:>12}  {:>12}  {:>9}",
        "run", "fast calls", "refused", "failed", "fast p50", "fast p99", "wall"
    );
    let fair = |name: &str, f: &Fairness| {
        println!(
            "{name:<24} {:>10}  {:>8}  {:>8}  {:>9.1} ms  {:>9.1} ms  {:>7.2} s",
            f.fast,
            f.refused,
            f.failed,
            f.p50.as_secs_f64() * 1e3,
            f.p99.as_secs_f64() * 1e3,
            f.took.as_secs_f64()
        );
        for (kind, n) in &f.failures {
            println!("{:<24} {n} failed: {kind}", "");
        }
        if !f.loops.is_empty() {
            let loops: Vec<String> = f.loops.iter().map(|(k, n)| format!("{n} {k}")).collect();
            println!("{:<24} looping calls: {}", "", loops.join(", "));
        }
    };
    let wait = std::time::Duration::from_secs(5);
    let quiet = fairness(&data.path().join("fair-quiet"), 64, calls, false, wait).await;
    fair("echo only", &quiet);
    let loud = fairness(&data.path().join("fair-loops"), 64, calls, true, wait).await;
    fair("echo + 10% loops", &loud);
    let zero = std::time::Duration::ZERO;
    let old = fairness(&data.path().join("fair-no-queue"), 64, calls, true, zero).await;
    fair("  the same, wait 0s", &old);
}
