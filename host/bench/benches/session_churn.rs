//! Session churn (issue 36's third figure, threat 49): one agent starts and
//! ends `GLOVEBOX_BENCH_SESSIONS` (default 100,000) short sessions, one after
//! another, through MCP over streamable HTTP (`session_start`, then
//! `session_end`, as an agent's client does) against the real `glovebox
//! serve` on the example config (plus an agent and an operator principal):
//! every session goes through the host's hooks, its log and its indexes in
//! the store, nothing is written to the ledger behind the host's back. The
//! goals: the host's RSS after them at most 64 MiB above the idle server's,
//! and `session_list` pages as fast at the end as at the start. Every tenth
//! of the way it prints the RSS and times the agent's `session_list` (the
//! first page of 100, a page of 500, and the fifth page of 100 following
//! `next_cursor`) and the operator's dashboard `/ui/sessions`, so growth
//! shows where it starts.
//!
//! It needs the `glovebox` binary of the same profile:
//!
//! ```sh
//! cargo build --release --bin glovebox
//! cargo bench -p glovebox-bench --bench session_churn
//! GLOVEBOX_BENCH_SESSIONS=5000 cargo bench --profile dev -p glovebox-bench --bench session_churn
//! ```
//!
//! The example's quotas bite nowhere here: an ended session is not live
//! (`quotas.sessions_per_principal`), one MCP session carries every call,
//! and a session's few events are far from `principal_events_per_day`.
//! Not part of `docs/run-benchmarks.sh`: it runs for many minutes.

mod support;

use std::time::{Duration, Instant};

use serde_json::{Value, json};
use support::env_number;
use support::serve::{
    AGENT_TOKEN, McpClient, OPERATOR_TOKEN, Server, Site, cut, du, glovebox_binary, http, humanize,
    hwm_kib, profile, rss_kib,
};

/// How long the server is left alone before its RSS is read (idle, and
/// after the churn).
const SETTLE: Duration = Duration::from_secs(3);

fn main() {
    let n: u64 = env_number("GLOVEBOX_BENCH_SESSIONS", 100_000);
    let binary = glovebox_binary();
    let site = Site::new("");
    eprintln!(
        "session_churn: {} ({} profile), {n} sessions, data dir {}",
        binary.display(),
        profile(),
        site.dir.path().display()
    );
    let server = Server::start(&binary, &site);
    let mut agent = McpClient::connect(&server.mcp, AGENT_TOKEN);
    std::thread::sleep(SETTLE);
    let idle = rss_kib(server.pid());
    let mib = |kib: u64| kib as f64 / 1024.0;
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    println!(
        "| sessions | elapsed | sessions/s (this tenth) | RSS MiB | above idle MiB | `session_list` first 100 / 500 / 5th page ms | `/ui/sessions` ms |\n|---|---|---|---|---|---|---|"
    );
    println!("| 0 (idle) | | | {:.1} | | | |", mib(idle));
    let step = (n / 10).max(1);
    let t0 = Instant::now();
    let mut last = (0, t0);
    let mut probes: Vec<Probe> = Vec::new();
    for i in 1..=n {
        let started = agent.call(
            "session_start",
            json!({"role": "workagent", "project": "churn"}),
        );
        assert_eq!(started["isError"], false, "session_start #{i}: {started}");
        let ended = agent.call("session_end", json!({}));
        assert_eq!(ended["isError"], false, "session_end #{i}: {ended}");
        if i % step == 0 || i == n {
            let rate = (i - last.0) as f64 / last.1.elapsed().as_secs_f64();
            let rss = rss_kib(server.pid());
            let probe = Probe::take(&mut agent, &server);
            println!(
                "| {i} | {} | {rate:.0} | {:.1} | {:+.1} | {:.1} / {:.1} / {:.1} | {:.1} |",
                humanize(t0.elapsed()),
                mib(rss),
                mib(rss) - mib(idle),
                ms(probe.first),
                ms(probe.big),
                ms(probe.fifth),
                ms(probe.page),
            );
            probes.push(probe);
            last = (i, Instant::now());
        }
    }
    let took = t0.elapsed();
    std::thread::sleep(SETTLE);
    let after = rss_kib(server.pid());
    let peak = hwm_kib(server.pid());
    let above = mib(after) - mib(idle);
    let slowest = probes
        .iter()
        .map(|p| p.first.max(p.big).max(p.fifth).max(p.page))
        .max()
        .unwrap_or_default();
    let (first, end) = (&probes[0], &probes[probes.len() - 1]);
    println!(
        "\n| {n} short sessions, one agent, MCP over HTTP (`{}` profile) | measured | goal |\n|---|---|---|",
        profile()
    );
    println!(
        "| time | {} ({:.0} sessions/s) | |",
        humanize(took),
        n as f64 / took.as_secs_f64()
    );
    println!(
        "| RSS idle / after (settled {}s) / peak | {:.1} / {:.1} / {:.1} MiB | |",
        SETTLE.as_secs(),
        mib(idle),
        mib(after),
        mib(peak)
    );
    println!(
        "| RSS after, above the idle server | {above:+.1} MiB | at most 64 MiB: {} |",
        if above <= 64.0 { "met" } else { "MISSED" }
    );
    println!(
        "| `session_list` first 100 / 500 / 5th page of 100, `/ui/sessions`: at {} sessions | {:.1} / {:.1} / {:.1} / {:.1} ms | |",
        step,
        ms(first.first),
        ms(first.big),
        ms(first.fifth),
        ms(first.page)
    );
    println!(
        "| the same at {n} sessions | {:.1} / {:.1} / {:.1} / {:.1} ms | |",
        ms(end.first),
        ms(end.big),
        ms(end.fifth),
        ms(end.page)
    );
    println!(
        "| slowest page of the {} probes | {:.1} ms | at most 1 s: {} |",
        probes.len(),
        ms(slowest),
        if slowest <= Duration::from_secs(1) {
            "met"
        } else {
            "MISSED"
        }
    );
    println!(
        "| the data dir on disk | {} MiB | |",
        du(&site.data()) / (1024 * 1024)
    );
}

/// One round of `session_list` and dashboard timings.
struct Probe {
    /// The agent's first page (100, newest first).
    first: Duration,
    /// A page of 500.
    big: Duration,
    /// The fifth page of 100, reached by following `next_cursor` (the
    /// time of that page alone).
    fifth: Duration,
    /// The operator's `/ui/sessions`.
    page: Duration,
}

impl Probe {
    fn take(agent: &mut McpClient, server: &Server) -> Probe {
        let (first, mut cursor) = list(agent, json!({}));
        let (big, _) = list(agent, json!({"limit": 500}));
        let mut fifth = first;
        for _ in 2..=5 {
            let Some(c) = cursor.take() else { break };
            (fifth, cursor) = list(agent, json!({"cursor": c}));
        }
        let auth = format!("Bearer {OPERATOR_TOKEN}");
        let t = Instant::now();
        let (status, body) = http(
            &server.admin,
            "/ui/sessions",
            &[("Authorization", &auth)],
            None,
        );
        let page = t.elapsed();
        assert_eq!(status, 200, "/ui/sessions: {}", cut(&body, 500));
        Probe {
            first,
            big,
            fifth,
            page,
        }
    }
}

/// One `session_list`: its time and the next page's cursor.
fn list(agent: &mut McpClient, arguments: Value) -> (Duration, Option<String>) {
    let t = Instant::now();
    let out = agent.call("session_list", arguments);
    let took = t.elapsed();
    assert_eq!(
        out["isError"],
        false,
        "session_list: {}",
        cut(&out.to_string(), 500)
    );
    let cursor = out["structuredContent"]["next_cursor"]
        .as_str()
        .map(str::to_string);
    (took, cursor)
}
