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

mod support;

use support::mcp::{Stats, echo_server, http, in_session, stdio};

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
    let n: usize = std::env::var("GLOVEBOX_BENCH_CALLS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(2000);
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
}
