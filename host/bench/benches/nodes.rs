//! 16 CPU-bound background jobs on one node against the same jobs spread
//! over two nodes that share a NATS JetStream store (issue 17), against the
//! same 16 jobs on sled with one node.
//!
//! ```text
//! cargo bench -p glovebox-bench --bench nodes                 # release
//! GLOVEBOX_BENCH_REPS=1 cargo bench -p glovebox-bench --bench nodes
//! ```
//!
//! Why: hosts on a shared store run each other's jobs (every job is pushed
//! on the store's work queue, which every node pulls from when it has a
//! slot free, and a start is a compare-and-set of the job's record), so the
//! row to know is what that queue costs, and whether the work is really
//! spread. On this one machine two nodes share the same cores, so once one
//! node uses every core the two-node rows cannot be faster: what they show
//! is the queue's overhead (the store's round trips, the wait before a node
//! pulls a job) and which node ran each job. `docs/benchmarks-history.md`
//! says what two machines would give.
//!
//! A node is the stack `glovebox serve` builds, in this process: its own
//! `Host::load`, its own data dir, its own NATS client (`open_sessions` of a
//! config with `[storage] backend = "nats"`, its own `node` name and
//! `lease_ttl = "3s"`), `Gateway::new` (which renews its leases) and
//! `Jobs::new` + `Jobs::recover` (which pulls from the work queue, and
//! looks over the stored jobs every second). In-process
//! rather than two `glovebox` processes so that the bench reads every job's
//! record directly and needs no separately built binary; the nodes share
//! the machine's cores, as two processes would, and the process's tokio
//! runtime (each host has its own slow lane, where the guests of these
//! calls run with the defaults; with `slow_call = "1h"` they run on the
//! shared workers, two threads here, as they would on one host's). A short
//! TTL (3 s; the default is 15 s) keeps the look over the stored jobs at
//! every second, as before the work queue, so the rows compare with the
//! earlier ones.
//!
//! Each job is one `cpu.burn` call of a fixed number of rounds, sized from
//! the faster of two timed calls to take ~1 s on one idle core
//! (`GLOVEBOX_BENCH_JOB_SECS`),
//! each in a session of its own: a job runs where its session's lease is,
//! so one session would pin all 16 jobs to whichever node ran the first.
//! The sessions are started by a client (a third host that runs no jobs,
//! as `glovebox session start` would) that then lets their leases go. The
//! rows, each on a fresh store (and a fresh `nats-server` on 127.0.0.1,
//! installed from Debian's package if missing; `GLOVEBOX_BENCH_NO_NATS=1`
//! leaves the NATS rows out), median of `GLOVEBOX_BENCH_REPS` (3):
//!
//! 1. sled, one node, the jobs spawned on it (`JobScope::spawn_call`): the baseline;
//! 2. NATS, one node, spawned on it: the store's cost;
//! 3. NATS, one node, queued by the client (`JobScope::enqueue`, as `glovebox
//!    job spawn` outside a server does): the node pulls them from the
//!    work queue;
//! 4. NATS, two nodes, queued by the client: both nodes pull them, each
//!    when it has a slot free;
//! 5. NATS, two nodes, spawned on node `a`: `a` starts two at once, `b`
//!    pulls the ones `a` has not started yet (a start is a compare-and-set
//!    of the job's record, so each runs once).
//!
//! The rows run twice. First with the host's defaults: `cpu.burn` is a slow
//! tool (its calls take `runtime.slow_call`, 100 ms, or more), so each
//! host runs its guests on its slow lane, a runtime of a worker per core.
//! Then with `runtime.slow_call = "1h"` (and one quick call of the tool on
//! each node first, as a tool not called yet counts as slow): the guests
//! run on the host's own workers. Both use every core, so one node uses the
//! machine as two do and the two-node rows show the queue's overhead; the
//! two tables differing would mean the slow lane costs jobs their cores.
//!
//! Wall time runs from just before the first spawn to the last job's
//! `finished_at_ms` (the ledger's clock, ms); "first start" to each node's
//! earliest `started_at_ms` (for `b`, how long until it pulled one). Every job
//! must end `completed` after one attempt, run by one of the nodes.

#![forbid(unsafe_code)]

mod support;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use glovebox::manifest::{NatsStorage, StorageBackend};
use glovebox::{
    CallContext, Durable, Gateway, Host, HostConfig, JobInfo, JobStatus, Jobs, JobsConfig,
    PluginManifest, WaitMode, open_sessions,
};
use glovebox_store_nats::testing::NatsServer;
use serde_json::json;

use support::cpu::{TICKS_PER_S, machine_busy_ticks, process_ticks};
use support::{artifact, env_number, start_session};

/// Jobs per run.
const JOBS: usize = 16;

/// The nodes' session lease TTL (and the work queue's ack wait): they look
/// over the stored jobs every third of it.
const LEASE_TTL: Duration = Duration::from_secs(3);

/// How a run's jobs reach the nodes.
#[derive(Clone, Copy, PartialEq)]
enum Submit {
    /// `JobScope::spawn_call` on the first node: queued there at once.
    Spawned,
    /// `JobScope::enqueue` by a client that runs no jobs: stored as queued and
    /// pushed on the work queue, which the nodes pull from.
    Queued,
}

#[derive(Clone, Copy)]
struct Case {
    nats: bool,
    nodes: usize,
    submit: Submit,
}

impl Case {
    fn label(&self) -> String {
        let store = if self.nats {
            "NATS R1, one server on loopback"
        } else {
            "sled"
        };
        let submit = match self.submit {
            Submit::Spawned => "spawned on node a",
            Submit::Queued => "queued by a client",
        };
        let nodes = if self.nodes == 1 { "1 node" } else { "2 nodes" };
        format!("{store} | {nodes} | {submit}")
    }
}

const CASES: [Case; 5] = [
    Case {
        nats: false,
        nodes: 1,
        submit: Submit::Spawned,
    },
    Case {
        nats: true,
        nodes: 1,
        submit: Submit::Spawned,
    },
    Case {
        nats: true,
        nodes: 1,
        submit: Submit::Queued,
    },
    Case {
        nats: true,
        nodes: 2,
        submit: Submit::Queued,
    },
    Case {
        nats: true,
        nodes: 2,
        submit: Submit::Spawned,
    },
];

fn main() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("runtime");
    rt.block_on(run());
}

async fn run() {
    let reps: usize = env_number("GLOVEBOX_BENCH_REPS", 3.0_f64).max(1.0) as usize;
    let job_secs = env_number("GLOVEBOX_BENCH_JOB_SECS", 1.0);
    let nats = std::env::var_os("GLOVEBOX_BENCH_NO_NATS").is_none();
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    // Compiled components, shared by every host of the run (loaded warm).
    let cache = tempfile::tempdir().expect("tempdir");
    let (iterations, alone) = size_job(cache.path(), job_secs).await;
    eprintln!(
        "each job: {:.1}M rounds of cpu.burn ({alone:.2} s alone on one idle core); {JOBS} jobs per run, {reps} runs per row, {cores} cores, max_running {} per node",
        iterations as f64 / 1e6,
        JobsConfig::default().max_running
    );

    for all_cores in [false, true] {
        if all_cores {
            println!(
                "\n`runtime.slow_call = \"1h\"`: the guests run on the host's workers (every core)\n"
            );
        } else {
            println!(
                "Defaults: the guests of slow calls run on each host's slow lane (a worker per core)\n"
            );
        }
        table(all_cores, reps, nats, cache.path(), iterations).await;
    }
    println!(
        "\n{reps} runs per row (median); {JOBS} jobs of {:.1}M rounds each, one alone {alone:.2} s; on {cores} cores at best {:.1} s ({JOBS} jobs / {cores} cores)",
        iterations as f64 / 1e6,
        JOBS as f64 * alone / cores as f64
    );
}

/// The rows of one configuration (see the module's doc).
async fn table(all_cores: bool, reps: usize, nats: bool, cache: &Path, iterations: u64) {
    println!(
        "| store | nodes | jobs reach the nodes | wall time, {JOBS} jobs | first start: a / b | against sled | ran on (each run) | cores: ours + server + others |"
    );
    println!("|---|---:|---|---:|---:|---:|---|---|");
    let mut sled = None;
    for case in CASES {
        if case.nats && !nats {
            continue;
        }
        let mut walls = Vec::new();
        let mut firsts: Vec<Vec<f64>> = vec![Vec::new(); case.nodes];
        let mut splits = Vec::new();
        let mut cpu = CpuUse::default();
        for rep in 0..reps {
            eprintln!("{} (run {}/{reps})", case.label(), rep + 1);
            let out = once(case, all_cores, cache, iterations).await;
            walls.push(out.wall);
            for (node, first) in out.first_start.into_iter().enumerate() {
                firsts[node].push(first);
            }
            splits.push(out.split);
            cpu = cpu.add(out.cpu);
        }
        let wall = median(walls);
        let first = firsts
            .into_iter()
            .map(|f| match median(f) {
                f if f.is_finite() => format!("{:.0} ms", f * 1000.0),
                _ => "none".to_string(),
            })
            .collect::<Vec<_>>()
            .join(" / ");
        if !case.nats {
            sled = Some(wall);
        }
        let against = sled.map_or(String::new(), |s| format!("{:.2}x", wall / s));
        println!(
            "| {} | {:.2} s | {first} | {against} | {} | {:.2} + {:.2} + {:.2} |",
            case.label(),
            wall,
            splits.join(", "),
            cpu.ours / reps as f64,
            cpu.server / reps as f64,
            cpu.others / reps as f64
        );
    }
}

/// The plugin of `cpu.burn`, with room for long jobs.
fn cpu_manifest() -> PluginManifest {
    let mut m = PluginManifest::for_component(artifact("tool_cpu"), &Default::default());
    m.name = "cpu".into();
    m.limits.deadline = Duration::from_secs(600);
    m
}

/// A host config with the cpu plugin in `data`, compiling to `cache`; with
/// `all_cores`, no call counts as slow once its tool was called (see the
/// module's doc).
fn config(data: &Path, cache: &Path, all_cores: bool) -> HostConfig {
    let mut config = HostConfig::from_plugins(data.to_path_buf(), vec![cpu_manifest()]);
    config.runtime.cache_dir = Some(cache.to_path_buf());
    if all_cores {
        config.runtime.slow_call = Duration::from_secs(3600);
    }
    config
}

/// The same on the NATS server at `url`, as node `node`.
fn nats_config(data: &Path, cache: &Path, all_cores: bool, url: &str, node: &str) -> HostConfig {
    let mut config = config(data, cache, all_cores);
    config.storage.backend = StorageBackend::Nats;
    config.storage.nats = Some(NatsStorage {
        url: url.to_string(),
        creds: None,
        user: None,
        password: None,
        prefix: "bench".into(),
        replicas: 1,
        node: Some(node.to_string()),
        advertise: None,
        lease_ttl: LEASE_TTL,
    });
    config
}

/// Rounds of `cpu.burn` that take `secs` on one idle core, from the faster
/// of two timed calls (after a warm-up) outside any session; and how long
/// a call of that many rounds then takes.
async fn size_job(cache: &Path, secs: f64) -> (u64, f64) {
    let data = tempfile::tempdir().expect("tempdir");
    let host = Host::load(config(data.path(), cache, false))
        .await
        .expect("host loads");
    let timed = async |iterations: u64| {
        let t = Instant::now();
        burn(&host, iterations).await;
        t.elapsed().as_secs_f64()
    };
    timed(1_000_000).await;
    let probe = 50_000_000;
    let took = timed(probe).await.min(timed(probe).await);
    let iterations = ((probe as f64) * secs / took) as u64;
    (iterations, timed(iterations).await)
}

/// One standalone call of `cpu.burn` of `iterations` rounds.
async fn burn(host: &Host, iterations: u64) {
    let input = json!({ "iterations": iterations }).to_string();
    host.call("cpu.burn", &input, CallContext::standalone())
        .await
        .outcome
        .expect("burn");
}

/// A host with its ledger, gateway and jobs service.
struct Node {
    durable: Arc<Durable>,
    jobs: Arc<Jobs>,
}

impl Node {
    async fn open(config: HostConfig, all_cores: bool) -> Node {
        let host = Arc::new(Host::load(config).await.expect("host loads"));
        if all_cores {
            // Known quick from now on (a tool not called yet counts as slow).
            burn(&host, 1_000).await;
        }
        let durable = Arc::new(open_sessions(host.config()).expect("store opens"));
        let jobs = Jobs::new(Gateway::new(host, durable.clone()), JobsConfig::default());
        Node { durable, jobs }
    }

    /// Opens a node that runs jobs: it recovers (and, on a shared store,
    /// pulls from the work queue), as a server does at start.
    async fn runner(config: HostConfig, all_cores: bool) -> Node {
        let node = Node::open(config, all_cores).await;
        node.jobs.recover().await.expect("recover");
        node
    }
}

struct Outcome {
    /// Seconds from the first spawn to the last job's end.
    wall: f64,
    /// Seconds from the first spawn to the first start of a job on each
    /// node (`a`, `b`).
    first_start: Vec<f64>,
    /// How many jobs each node ran, as `a 8 + b 8`.
    split: String,
    cpu: CpuUse,
}

/// One run of `case` on a fresh store.
async fn once(case: Case, all_cores: bool, cache: &Path, iterations: u64) -> Outcome {
    let dir = tempfile::tempdir().expect("tempdir");
    let data = |name: &str| -> PathBuf {
        let path = dir.path().join(name);
        std::fs::create_dir_all(&path).expect("data dir");
        path
    };
    let server = case.nats.then(|| NatsServer::start(&data("nats"), true));
    let (nodes, client) = match &server {
        None => {
            // One process holds a sled data dir: the node is its own client.
            let config = config(&data("a"), cache, all_cores);
            (vec![Node::runner(config, all_cores).await], None)
        }
        Some(server) => {
            let url = server.url();
            let mut nodes = Vec::new();
            for name in ["a", "b"].into_iter().take(case.nodes) {
                let config = nats_config(&data(name), cache, all_cores, &url, name);
                nodes.push(Node::runner(config, all_cores).await);
            }
            let config = nats_config(&data("client"), cache, all_cores, &url, "client");
            let client = Node::open(config, false).await;
            (nodes, Some(client))
        }
    };
    let client = client.as_ref().unwrap_or(&nodes[0]);
    let sessions: Vec<String> = (0..JOBS)
        .map(|_| start_session(&client.durable.sessions))
        .collect();
    // The client drives none of them: any node may run their jobs.
    client.durable.sessions.release_leases();

    let input = json!({ "iterations": iterations }).to_string();
    let mark = cpu_mark(server.as_ref().map(|_| dir.path()));
    let t0 = client.durable.sessions.clock_ms();
    let mut ids = Vec::new();
    let operator = glovebox::cli_operator();
    for session in &sessions {
        let job = match case.submit {
            Submit::Spawned => {
                (nodes[0].jobs.scope(&operator))
                    .spawn_call(session, "cpu.burn", &input)
                    .await
            }
            Submit::Queued => {
                (client.jobs.scope(&operator))
                    .enqueue(session, "cpu.burn", &input)
                    .await
            }
        };
        ids.push(job.expect("spawn").id);
    }
    let out = client
        .jobs
        .scope(&operator)
        .wait(&ids, WaitMode::All, Some(Duration::from_secs(600)))
        .await
        .expect("wait");
    let cpu = mark.since();
    assert!(!out.timed_out, "jobs timed out: {:?}", out.pending);
    let done: Vec<JobInfo> = out.done;
    assert_eq!(done.len(), JOBS);
    for job in &done {
        assert_eq!(job.status, JobStatus::Completed, "{job:?}");
        assert_eq!(job.attempts, 1, "{job:?}");
    }
    let end = done
        .iter()
        .filter_map(|j| j.finished_at_ms)
        .max()
        .expect("finished");
    // Who ran each job: `node/holder` on a shared store; the one node on sled.
    let node_of = |job: &JobInfo| -> String {
        match (&job.runner, case.nats) {
            (Some(runner), true) => runner.split('/').next().unwrap_or(runner).to_string(),
            _ => "a".to_string(),
        }
    };
    let mut split = Vec::new();
    let mut first_start = Vec::new();
    for name in ["a", "b"].into_iter().take(case.nodes) {
        let ran: Vec<&JobInfo> = done.iter().filter(|j| node_of(j) == name).collect();
        split.push(format!("{name} {}", ran.len()));
        // A node that ran nothing has no first start.
        first_start.push(
            ran.iter()
                .filter_map(|j| j.started_at_ms)
                .min()
                .map_or(f64::INFINITY, |ms| ms.saturating_sub(t0) as f64 / 1000.0),
        );
    }
    let strays = done
        .iter()
        .filter(|j| !["a", "b"][..case.nodes].contains(&node_of(j).as_str()))
        .count();
    assert_eq!(strays, 0, "jobs run by neither node: {done:?}");
    // The nodes stop before their server.
    drop(nodes);
    drop(server);
    Outcome {
        wall: end.saturating_sub(t0) as f64 / 1000.0,
        first_start,
        split: split.join(" + "),
        cpu,
    }
}

fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    values[values.len() / 2]
}

/// Cores kept busy during a measurement: by this process, by the bench's
/// `nats-server`, and by everything else on the machine.
#[derive(Clone, Copy, Default)]
struct CpuUse {
    ours: f64,
    server: f64,
    others: f64,
}

impl CpuUse {
    fn add(self, o: CpuUse) -> CpuUse {
        CpuUse {
            ours: self.ours + o.ours,
            server: self.server + o.server,
            others: self.others + o.others,
        }
    }
}

/// CPU ticks so far: this process's, the `nats-server` whose files are under
/// `server_dir`'s, and the whole machine's busy ones.
struct CpuMark {
    ours: u64,
    server: u64,
    busy: u64,
    server_dir: Option<PathBuf>,
    at: Instant,
}

fn cpu_mark(server_dir: Option<&Path>) -> CpuMark {
    let server_dir = server_dir.map(Path::to_path_buf);
    CpuMark {
        ours: process_ticks("self", false),
        server: server_dir.as_deref().map_or(0, server_ticks),
        busy: machine_busy_ticks(),
        server_dir,
        at: Instant::now(),
    }
}

impl CpuMark {
    fn since(&self) -> CpuUse {
        let secs = self.at.elapsed().as_secs_f64() * TICKS_PER_S;
        let ours = process_ticks("self", false).saturating_sub(self.ours);
        let server = self
            .server_dir
            .as_deref()
            .map_or(0, server_ticks)
            .saturating_sub(self.server);
        let busy = machine_busy_ticks().saturating_sub(self.busy);
        CpuUse {
            ours: ours as f64 / secs,
            server: server as f64 / secs,
            others: busy.saturating_sub(ours + server) as f64 / secs,
        }
    }
}

/// The ticks of the `nats-server` processes whose command line names `dir`.
fn server_ticks(dir: &Path) -> u64 {
    let needle = dir.to_string_lossy().into_owned();
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return 0;
    };
    entries
        .flatten()
        .filter_map(|e| e.file_name().into_string().ok())
        .filter(|pid| pid.bytes().all(|b| b.is_ascii_digit()))
        .filter(|pid| {
            std::fs::read(format!("/proc/{pid}/cmdline")).is_ok_and(|c| {
                let c = String::from_utf8_lossy(&c);
                c.contains("nats-server") && c.contains(&needle)
            })
        })
        .map(|pid| process_ticks(&pid, false))
        .sum()
}
