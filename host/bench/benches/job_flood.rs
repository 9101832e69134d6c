//! The job flood (issue 36's first figure, threat 49): an agent loops
//! `job_spawn` of `code-python.run` with a 2 MB output for `--duration`
//! (default 10 minutes) against the real `glovebox serve` on the example
//! config (`examples/glovebox.toml`, its plugins and hooks as they are, plus
//! an agent and an operator principal), over streamable HTTP. Meanwhile it
//! samples the server's RSS, and times `job_list` (the agent's) and the
//! dashboard's jobs page (the operator's) every few seconds; at the end it
//! stops the server (SIGTERM) and times a restart up to its first `job_list`
//! answer. The goals: host RSS under 512 MiB; `job_list`, the dashboard and
//! a restart each answer in at most 1 s; the agent is refused by a named
//! quota (`quotas.job_bytes_per_principal`, 256 MiB by default).
//!
//! It needs the `glovebox` binary of the same profile (`target/<profile>/glovebox`)
//! and the plugins:
//!
//! ```sh
//! cargo build --release --bin glovebox
//! cargo bench -p glovebox-bench --bench job_flood -- --duration 10m
//! # a short look in the dev profile:
//! cargo build --bin glovebox
//! cargo bench --profile dev -p glovebox-bench --bench job_flood -- --duration 60s
//! ```
//!
//! (`GLOVEBOX_BENCH_DURATION` sets the duration too.) Not part of
//! `docs/run-benchmarks.sh`: it runs for minutes by design. The compile
//! cache is kept in `target/glovebox-bench-cache`, so only the first run
//! compiles the Python runner.

mod support;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use serde_json::json;
use support::serve::{
    AGENT_TOKEN, McpClient, OPERATOR_TOKEN, Server, Site, cut, du, glovebox_binary, http, humanize,
    hwm_kib, profile, rss_kib,
};

/// The code each job runs: a 2 MB string as its value (its output).
const CODE: &str = "'a' * 2_000_000";
/// How often `job_list` and the dashboard are timed while the agent loops.
const PROBE_EVERY: Duration = Duration::from_secs(5);
/// Jobs the agent lets run at once before it waits for them.
const IN_FLIGHT: usize = 8;

fn main() {
    let duration = duration_arg();
    let binary = glovebox_binary();
    let site = Site::new("");
    eprintln!(
        "job_flood: {} ({} profile) for {}, data dir {}",
        binary.display(),
        profile(),
        humanize(duration),
        site.dir.path().display()
    );
    let mut server = Server::start(&binary, &site);
    let rss_idle = rss_kib(server.pid());
    let peak = Arc::new(AtomicU64::new(rss_idle));
    let sampling = Arc::new(AtomicBool::new(true));
    let sampler = {
        let (peak, sampling, pid) = (peak.clone(), sampling.clone(), server.pid());
        std::thread::spawn(move || {
            while sampling.load(Ordering::SeqCst) {
                peak.fetch_max(rss_kib(pid), Ordering::SeqCst);
                std::thread::sleep(Duration::from_millis(100));
            }
        })
    };
    let mut agent = McpClient::connect(&server.mcp, AGENT_TOKEN);
    let started = agent.call(
        "session_start",
        json!({"role": "workagent", "project": "flood", "name": "flood"}),
    );
    assert_eq!(started["isError"], false, "session_start: {started}");

    let mut flood = Flood::default();
    let t0 = Instant::now();
    let mut next_probe = t0;
    let mut pending: Vec<String> = Vec::new();
    while t0.elapsed() < duration {
        if Instant::now() >= next_probe {
            flood.probe(&mut agent, &server);
            next_probe = Instant::now() + PROBE_EVERY;
        }
        let answer = agent.call(
            "job_spawn",
            json!({"tool": "code-python.run", "input": {"code": CODE}}),
        );
        if answer["isError"] == true {
            let error = &answer["structuredContent"]["error"];
            let message = error["message"].as_str().unwrap_or_default().to_string();
            flood.refused(&message, t0.elapsed());
            // What the loop does after a refusal: wait for what runs, then
            // try again a little later; refused for its session (paused by
            // the detector, say) rather than by a quota, it starts another,
            // as a hostile agent would.
            flood.wait(&mut agent, &mut pending);
            if error["kind"] != "quota" {
                let again = agent.call(
                    "session_start",
                    json!({"role": "workagent", "project": "flood"}),
                );
                if again["isError"] == true {
                    let error = &again["structuredContent"]["error"];
                    flood.refused(error["message"].as_str().unwrap_or_default(), t0.elapsed());
                } else {
                    flood.sessions += 1;
                }
            }
            std::thread::sleep(Duration::from_millis(200));
            continue;
        }
        flood.spawned += 1;
        pending.push(
            answer["structuredContent"]["id"]
                .as_str()
                .expect("a job id")
                .to_string(),
        );
        if pending.len() >= IN_FLIGHT {
            flood.wait(&mut agent, &mut pending);
        }
    }
    flood.wait(&mut agent, &mut pending);
    flood.probe(&mut agent, &server);
    let ran = t0.elapsed();
    let rss_end = rss_kib(server.pid());

    // A restart: SIGTERM, then a new process up to its first `job_list`.
    sampling.store(false, Ordering::SeqCst);
    sampler.join().expect("sampler");
    let rss_peak = peak.load(Ordering::SeqCst).max(hwm_kib(server.pid()));
    drop(agent);
    server.stop();
    let restart_t0 = Instant::now();
    let mut again = Server::start(&binary, &site);
    let mut agent = McpClient::connect(&again.mcp, AGENT_TOKEN);
    let list_t0 = Instant::now();
    let first = agent.call("job_list", json!({}));
    let restart = restart_t0.elapsed();
    let list_after_restart = list_t0.elapsed();
    assert_eq!(
        first["isError"], false,
        "job_list after the restart: {first}"
    );
    let rss_after_restart = rss_kib(again.pid());
    drop(agent);
    again.stop();

    flood.report(Report {
        ran,
        rss_idle,
        rss_peak,
        rss_end,
        restart,
        list_after_restart,
        rss_after_restart,
        store_bytes: du(&site.data()),
    });
}

/// `--duration 10m` (`s`, `m`, `h` or bare seconds), else
/// `GLOVEBOX_BENCH_DURATION`, else 10 minutes. `cargo bench` adds `--bench`,
/// which is ignored.
fn duration_arg() -> Duration {
    let args: Vec<String> = std::env::args().collect();
    let given = args
        .iter()
        .position(|a| a == "--duration")
        .and_then(|i| args.get(i + 1).cloned())
        .or_else(|| {
            args.iter()
                .find_map(|a| a.strip_prefix("--duration=").map(str::to_string))
        })
        .or_else(|| std::env::var("GLOVEBOX_BENCH_DURATION").ok());
    let Some(text) = given else {
        return Duration::from_secs(600);
    };
    let text = text.trim();
    let (number, unit) = text.split_at(text.trim_end_matches(char::is_alphabetic).len());
    let n: u64 = number
        .parse()
        .unwrap_or_else(|_| panic!("--duration `{text}`: write seconds, or `30s`, `10m`, `1h`"));
    Duration::from_secs(match unit {
        "" | "s" => n,
        "m" => n * 60,
        "h" => n * 3600,
        _ => panic!("--duration `{text}`: the unit is s, m or h"),
    })
}

/// What the flood saw.
#[derive(Default)]
struct Flood {
    spawned: u64,
    /// Sessions started after the first, each after a refusal that was not a quota's.
    sessions: u64,
    completed: u64,
    failed: u64,
    output_bytes: u64,
    /// Refusals by the quota key they name (or their first words).
    refusals: std::collections::BTreeMap<String, u64>,
    /// The first refusal: when, after how many jobs, and its words.
    first_refusal: Option<(Duration, u64, String)>,
    /// `job_list` timings and the answer's bytes.
    lists: Vec<(Duration, usize)>,
    /// The dashboard's jobs page: timings and the page's bytes.
    pages: Vec<(Duration, usize)>,
}

impl Flood {
    fn refused(&mut self, message: &str, at: Duration) {
        let key = message
            .split("`quotas.")
            .nth(1)
            .and_then(|rest| rest.split('`').next())
            .map(|k| format!("quotas.{k}"))
            .unwrap_or_else(|| cut(message, 60).to_string());
        *self.refusals.entry(key).or_default() += 1;
        if self.first_refusal.is_none() {
            self.first_refusal = Some((at, self.spawned, message.to_string()));
        }
    }

    /// Waits for the jobs in flight.
    fn wait(&mut self, agent: &mut McpClient, pending: &mut Vec<String>) {
        if pending.is_empty() {
            return;
        }
        let out = agent.call(
            "job_wait",
            json!({"ids": pending, "mode": "all", "timeout_ms": 600_000}),
        );
        let done = out["structuredContent"]["done"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        for job in &done {
            match job["status"].as_str() {
                Some("completed") => {
                    self.completed += 1;
                    self.output_bytes += job["result"]["output"]["value"]
                        .as_str()
                        .map_or(0, |v| v.len() as u64);
                }
                _ => self.failed += 1,
            }
        }
        pending.clear();
    }

    /// Times one `job_list` (the agent's first page) and one dashboard jobs page.
    fn probe(&mut self, agent: &mut McpClient, server: &Server) {
        let t = Instant::now();
        let list = agent.call("job_list", json!({}));
        let took = t.elapsed();
        assert_eq!(
            list["isError"],
            false,
            "job_list: {}",
            cut(&list.to_string(), 500)
        );
        self.lists.push((took, list.to_string().len()));
        let auth = format!("Bearer {OPERATOR_TOKEN}");
        let t = Instant::now();
        let (status, page) = http(&server.admin, "/ui/jobs", &[("Authorization", &auth)], None);
        let took = t.elapsed();
        assert_eq!(
            status,
            200,
            "the dashboard's jobs page: {}",
            cut(&page, 500)
        );
        self.pages.push((took, page.len()));
    }

    fn report(&self, r: Report) {
        let max = |v: &[(Duration, usize)]| v.iter().map(|(d, _)| *d).max().unwrap_or_default();
        let median = |v: &[(Duration, usize)]| {
            let mut d: Vec<Duration> = v.iter().map(|(d, _)| *d).collect();
            d.sort();
            d.get(d.len() / 2).copied().unwrap_or_default()
        };
        let biggest = |v: &[(Duration, usize)]| v.iter().map(|(_, n)| *n).max().unwrap_or(0);
        let mib = |kib: u64| kib as f64 / 1024.0;
        let verdict = |ok: bool| if ok { "met" } else { "MISSED" };
        let one_s = Duration::from_secs(1);
        let refused = self.first_refusal.as_ref();
        let named = refused.is_some_and(|(_, _, m)| m.contains("`quotas."));
        println!(
            "\n| job flood ({} of looping `job_spawn`, 2 MB outputs; `{}` profile) | measured | goal |",
            humanize(r.ran),
            profile()
        );
        println!("|---|---|---|");
        println!(
            "| jobs spawned / completed / failed | {} / {} / {} ({} MiB of output; {} sessions) | |",
            self.spawned,
            self.completed,
            self.failed,
            self.output_bytes / (1024 * 1024),
            self.sessions + 1
        );
        match refused {
            Some((at, after, message)) => println!(
                "| first refusal | after {after} jobs, at {}: {} | a named quota: {} |",
                humanize(*at),
                message.replace('|', "\\|"),
                verdict(named)
            ),
            None => println!("| first refusal | none | a named quota: MISSED |"),
        }
        let refusals: Vec<String> = self
            .refusals
            .iter()
            .map(|(k, n)| format!("`{k}` {n}"))
            .collect();
        println!("| refusals | {} | |", refusals.join(", "));
        println!(
            "| host RSS: idle / peak / at the end | {:.0} / {:.0} / {:.0} MiB | under 512 MiB: {} |",
            mib(r.rss_idle),
            mib(r.rss_peak),
            mib(r.rss_end),
            verdict(r.rss_peak < 512 * 1024)
        );
        println!(
            "| `job_list` (first page), {} probes: median / max | {:.1} / {:.1} ms ({} bytes at most) | at most 1 s: {} |",
            self.lists.len(),
            median(&self.lists).as_secs_f64() * 1e3,
            max(&self.lists).as_secs_f64() * 1e3,
            biggest(&self.lists),
            verdict(max(&self.lists) <= one_s)
        );
        println!(
            "| dashboard `/ui/jobs`, {} probes: median / max | {:.1} / {:.1} ms ({} bytes at most) | at most 1 s: {} |",
            self.pages.len(),
            median(&self.pages).as_secs_f64() * 1e3,
            max(&self.pages).as_secs_f64() * 1e3,
            biggest(&self.pages),
            verdict(max(&self.pages) <= one_s)
        );
        println!(
            "| restart: process start to its first `job_list` answer | {:.0} ms (the `job_list` itself {:.1} ms; RSS then {:.0} MiB) | at most 1 s: {} |",
            r.restart.as_secs_f64() * 1e3,
            r.list_after_restart.as_secs_f64() * 1e3,
            mib(r.rss_after_restart),
            verdict(r.restart <= one_s)
        );
        println!(
            "| the data dir on disk | {} MiB | |",
            r.store_bytes / (1024 * 1024)
        );
    }
}

struct Report {
    ran: Duration,
    rss_idle: u64,
    rss_peak: u64,
    rss_end: u64,
    restart: Duration,
    list_after_restart: Duration,
    rss_after_restart: u64,
    store_bytes: u64,
}
