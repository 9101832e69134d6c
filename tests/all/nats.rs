//! The host on NATS JetStream (`[storage] backend = "nats"`): two data dirs
//! (two hosts) on one server share their sessions; a session is driven by
//! the host holding its lease, and taken over by another once the holder
//! died and the lease expired; names and approvals are claimed once across
//! hosts; a server that is down stops the host with its URL; the commands
//! on a data dir's store files refuse a store that is not in the data dir.
//! Each test starts its own `nats-server` on loopback (installed from
//! Debian's package if missing).

use std::process::Stdio;
use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};

use glovebox::approvals::{Approval, ApprovalStatus, Approvals};
use glovebox::session::{LeaseConfig, Role, SessionError, Sessions, SessionsConfig, StartSession};
use glovebox::storage::{Durability, Storage};
use glovebox_store_nats::testing::NatsServer;
use glovebox_store_nats::{NatsConfig, NatsStore};

use crate::util::{Site, free_port, glovebox, plugins};

fn site_on(url: &str) -> Site {
    Site::with_config(
        &format!("backend = \"nats\"\nurl = \"{url}\"\nprefix = \"it\"\n"),
        &[(
            "echo.toml",
            format!("name = \"echo\"\ncomponent = \"{}\"\n", plugins::TOOL_ECHO),
        )],
    )
}

#[test]
fn two_hosts_on_one_nats_server_share_a_session() {
    let tmp = tempfile::tempdir().unwrap();
    let server = NatsServer::start(tmp.path(), true);
    let (a, b) = (site_on(&server.url()), site_on(&server.url()));
    a.start_workagent("w");
    let call = |site: &Site, message: &str| {
        let input = format!(r#"{{"message":"{message}"}}"#);
        let (code, out, err) = site.run(&["call", "echo.echo", "-i", &input, "-s", "w"]);
        assert_eq!(code, 0, "{err}");
        assert!(out.contains(message), "{out}");
    };
    call(&a, "from a");
    // Another host, with a data dir of its own: the session is the store's.
    call(&b, "from b");
    for site in [&a, &b] {
        let (code, out, err) = site.run(&["log", "verify", "w"]);
        assert_eq!(code, 0, "{err}");
        assert!(out.starts_with("ok"), "{out}");
    }
    // Nothing of the session is in the data dirs.
    assert!(!a.data().join("sled").exists() && !b.data().join("sled").exists());
    // The commands that work on a data dir's store files say why they cannot.
    let (code, _, err) = a.run(&["store", "check"]);
    assert_ne!(code, 0);
    assert!(err.contains("is on NATS"), "{err}");
}

#[test]
fn a_host_whose_nats_server_is_down_stops_with_the_url() {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let url = format!("nats://127.0.0.1:{port}");
    let site = site_on(&url);
    let (code, _, err) = site.run(&[
        "session",
        "start",
        "--role",
        "workagent",
        "--project",
        "p",
        "--name",
        "w",
    ]);
    assert_ne!(code, 0);
    assert!(
        err.contains(&format!("cannot reach the NATS server at `{url}`")),
        "{err}"
    );
}

/// A host on `url` named `node`, with a short lease TTL, the sleep and echo
/// plugins, and (for `advertise`) the URL it says it serves MCP at.
fn node_on(url: &str, node: &str, advertise: Option<&str>) -> Site {
    node_with(
        url,
        "prefix = \"it\"\nlease_ttl = \"2s\"\n",
        node,
        advertise,
    )
}

/// A host on `url` named `node` with the `[storage]` lines `extra`, the
/// sleep (idempotent) and echo plugins, and (for `advertise`) the URL it
/// says it serves MCP at.
fn node_with(url: &str, extra: &str, node: &str, advertise: Option<&str>) -> Site {
    let advertise = advertise
        .map(|a| format!("advertise = \"{a}\"\n"))
        .unwrap_or_default();
    Site::with_config(
        &format!("backend = \"nats\"\nurl = \"{url}\"\nnode = \"{node}\"\n{extra}{advertise}"),
        &[
            (
                "sleep.toml",
                format!(
                    "name = \"sleep\"\ncomponent = \"{}\"\n[limits]\ndeadline = \"120s\"\n[tools.sleep]\nidempotent = true\n",
                    plugins::HOSTILE_SLEEP
                ),
            ),
            (
                "echo.toml",
                format!("name = \"echo\"\ncomponent = \"{}\"\n", plugins::TOOL_ECHO),
            ),
        ],
    )
}

/// The events of session `name`, as `log export` writes them.
fn events_of(site: &Site, name: &str) -> Vec<serde_json::Value> {
    let (code, out, err) = site.run(&["log", "export", name]);
    assert_eq!(code, 0, "{err}");
    out.lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

fn of_type<'a>(events: &'a [serde_json::Value], kind: &str) -> Vec<&'a serde_json::Value> {
    events
        .iter()
        .filter(|e| e["kind"]["type"] == kind)
        .collect()
}

/// Host A drives session `w` (a long call in it holds its lease); host B's
/// call in `w` is refused, naming A and where A serves; A is killed with
/// SIGKILL mid-call; once A's lease expired, B's call in `w` runs, the call
/// A left is marked interrupted (naming A), and the log verifies.
#[test]
fn a_session_is_driven_by_its_lease_holder_and_taken_over_when_it_dies() {
    let tmp = tempfile::tempdir().unwrap();
    let server = NatsServer::start(tmp.path(), true);
    let a = node_on(&server.url(), "a", Some("http://a.example:8080/mcp"));
    let b = node_on(&server.url(), "b", None);
    a.start_workagent("w");

    // A runs a long call in `w`, in a process of its own.
    let mut a_call = glovebox()
        .arg("--config")
        .arg(a.config())
        .args(["call", "sleep.sleep", "-i", r#"{"seconds":60}"#, "-s", "w"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(60);
    while of_type(&events_of(&b, "w"), "call_started").is_empty() {
        assert!(
            Instant::now() < deadline,
            "A's call never started: {:?}",
            events_of(&b, "w")
        );
        assert!(a_call.try_wait().unwrap().is_none(), "A's call ended early");
        std::thread::sleep(Duration::from_millis(100));
    }

    // B's call in `w` is refused while A holds the lease (B's start, which
    // recovers the sessions, left A's call alone).
    let echo = |site: &Site, message: &str| {
        site.run(&[
            "call",
            "echo.echo",
            "-i",
            &format!(r#"{{"message":"{message}"}}"#),
            "-s",
            "w",
        ])
    };
    let (code, _, err) = echo(&b, "from b");
    assert_eq!(code, 8, "{err}");
    assert!(
        err.contains("is driven by node `a` (http://a.example:8080/mcp) until its lease expires: send the call there, or wait"),
        "{err}"
    );
    let events = events_of(&b, "w");
    assert!(
        of_type(&events, "call_interrupted").is_empty(),
        "{events:?}"
    );
    assert_eq!(of_type(&events, "call_requested").len(), 1, "{events:?}");

    // A dies mid-call. Its lease lasts at most a TTL (2 s) from its last renewal.
    a_call.kill().unwrap();
    a_call.wait().unwrap();
    std::thread::sleep(Duration::from_millis(3000));
    let (code, out, err) = echo(&b, "from b");
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("from b"), "{out}");

    let events = events_of(&b, "w");
    let interrupted = of_type(&events, "call_interrupted");
    assert_eq!(interrupted.len(), 1, "{events:?}");
    let reason = interrupted[0]["kind"]["reason"].as_str().unwrap();
    assert!(
        reason.contains(
            "node `a` stopped driving the session (its lease expired) while the call was running"
        ),
        "{reason}"
    );
    let started = of_type(&events, "call_started");
    assert_eq!(started[0]["kind"]["tool"], "sleep.sleep");
    assert_eq!(
        interrupted[0]["kind"]["call_id"],
        started[0]["kind"]["call_id"]
    );
    assert_eq!(of_type(&events, "call_finished").len(), 1, "{events:?}");
    for site in [&a, &b] {
        let (code, out, err) = site.run(&["log", "verify", "w"]);
        assert_eq!(code, 0, "{err}");
        assert!(out.starts_with("ok"), "{out}");
    }
    // B released the lease when its command ended: A (restarted) drives
    // `w` again at once.
    let (code, out, err) = echo(&a, "from a again");
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("from a again"), "{out}");
}

/// `glovebox job wait ID` on `site` (a process that runs the jobs it
/// finds), in the background.
fn runner(site: &Site, id: &str) -> std::process::Child {
    glovebox()
        .arg("--config")
        .arg(site.config())
        .args(["job", "wait", id, "--timeout", "90s"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

/// What a `job wait` runner printed, once it ended: the job as it ended.
fn waited(child: std::process::Child) -> serde_json::Value {
    let out = child.wait_with_output().unwrap();
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    assert!(out.status.success(), "{stdout}{stderr}");
    let outcome: serde_json::Value =
        serde_json::from_str(&stdout).unwrap_or_else(|e| panic!("{e}: {stdout}{stderr}"));
    outcome["done"][0].clone()
}

/// The calls session `name` logged for job `id`, by event type.
fn job_events(site: &Site, name: &str, id: &str, kind: &str) -> usize {
    let events = events_of(site, name);
    let calls: Vec<&serde_json::Value> = of_type(&events, "call_requested")
        .into_iter()
        .filter(|e| e["kind"]["job_id"] == id)
        .collect();
    if kind == "call_requested" {
        return calls.len();
    }
    of_type(&events, kind)
        .into_iter()
        .filter(|e| {
            calls
                .iter()
                .any(|c| c["kind"]["call_id"] == e["kind"]["call_id"])
        })
        .count()
}

/// Host A runs an idempotent background job; A is killed with SIGKILL
/// mid-job while host B, which runs jobs too, is up. B leaves the job alone
/// while A's lease on the session lasts, then (without a restart: its pass
/// over unrun jobs every third of the lease TTL) marks A's attempt
/// interrupted, runs the job again and completes it, once; the log verifies.
#[test]
fn a_job_running_on_a_host_that_dies_is_run_again_by_another_host_once() {
    let tmp = tempfile::tempdir().unwrap();
    let server = NatsServer::start(tmp.path(), true);
    let a = node_on(&server.url(), "a", None);
    let b = node_on(&server.url(), "b", None);
    a.start_workagent("w");
    let job = a.json(&[
        "job",
        "spawn",
        "--session",
        "w",
        "sleep.sleep",
        "--input",
        r#"{"seconds":4}"#,
    ]);
    let id = job["id"].as_str().unwrap().to_string();
    assert_eq!(job["status"], "queued");

    let mut on_a = runner(&a, &id);
    let deadline = Instant::now() + Duration::from_secs(60);
    while b.json(&["job", "status", &id])["status"] != "running" {
        assert!(Instant::now() < deadline, "the job never started on A");
        assert!(on_a.try_wait().unwrap().is_none(), "A's runner ended early");
        std::thread::sleep(Duration::from_millis(100));
    }
    let status = b.json(&["job", "status", &id]);
    assert!(
        status["runner"].as_str().unwrap().starts_with("a/"),
        "{status}"
    );

    // B starts while A runs the job: it leaves it alone.
    let on_b = runner(&b, &id);
    std::thread::sleep(Duration::from_millis(1000));
    let status = b.json(&["job", "status", &id]);
    assert_eq!(status["status"], "running", "{status}");
    assert_eq!(status["attempts"], 1, "{status}");

    on_a.kill().unwrap();
    on_a.wait().unwrap();
    let done = waited(on_b);
    assert_eq!(done["status"], "completed", "{done}");
    assert_eq!(done["attempts"], 2, "{done}");
    assert!(done["runner"].as_str().unwrap().starts_with("b/"), "{done}");
    assert_eq!(done["result"]["output"]["slept_seconds"], 4, "{done}");

    assert_eq!(job_events(&b, "w", &id, "call_requested"), 2);
    assert_eq!(job_events(&b, "w", &id, "call_interrupted"), 1);
    assert_eq!(job_events(&b, "w", &id, "call_finished"), 1);
    let (code, out, err) = b.run(&["log", "verify", "w"]);
    assert_eq!(code, 0, "{err}");
    assert!(out.starts_with("ok"), "{out}");
}

/// Two hosts that run jobs start at the same moment and both find one
/// queued job: it runs once (one attempt, one call in the log).
#[test]
fn a_queued_job_found_by_two_hosts_at_once_runs_once() {
    let tmp = tempfile::tempdir().unwrap();
    let server = NatsServer::start(tmp.path(), true);
    let a = node_on(&server.url(), "a", None);
    let b = node_on(&server.url(), "b", None);
    a.start_workagent("w");
    for round in 0..3 {
        let job = a.json(&[
            "job",
            "spawn",
            "--session",
            "w",
            "echo.echo",
            "--input",
            &format!(r#"{{"message":"round {round}"}}"#),
        ]);
        let id = job["id"].as_str().unwrap().to_string();
        let runners = [runner(&a, &id), runner(&b, &id)];
        let done: Vec<serde_json::Value> = runners.into_iter().map(waited).collect();
        for job in &done {
            assert_eq!(job["status"], "completed", "round {round}: {job}");
            assert_eq!(job["attempts"], 1, "round {round}: {job}");
        }
        assert_eq!(done[0]["runner"], done[1]["runner"], "round {round}");
        assert_eq!(
            job_events(&a, "w", &id, "call_requested"),
            1,
            "round {round}"
        );
    }
}

fn nats_store(server: &NatsServer) -> Arc<dyn Storage> {
    let config = NatsConfig {
        prefix: "ledger".to_string(),
        timeout: Duration::from_secs(5),
        ..NatsConfig::new(server.url())
    };
    Arc::new(NatsStore::open(&config, Durability::Flush).unwrap())
}

fn leased_sessions(store: Arc<dyn Storage>, node: &str) -> Sessions {
    Sessions::with_config(
        store,
        SessionsConfig {
            lease: Some(LeaseConfig {
                node: node.to_string(),
                addr: None,
                ttl: Duration::from_secs(15),
            }),
            ..SessionsConfig::default()
        },
    )
}

/// Two hosts (two `Sessions` on two NATS clients) start a session with the
/// same name at the same moment: exactly one gets the name, the other is
/// told it is taken.
#[test]
fn two_hosts_starting_sessions_of_one_name_get_it_once() {
    let tmp = tempfile::tempdir().unwrap();
    let server = NatsServer::start(tmp.path(), true);
    let hosts: Vec<Arc<Sessions>> = ["a", "b"]
        .iter()
        .map(|node| Arc::new(leased_sessions(nats_store(&server), node)))
        .collect();
    for round in 0..10 {
        let name = format!("build-{round}");
        let barrier = Arc::new(Barrier::new(2));
        let results: Vec<Result<String, SessionError>> = hosts
            .iter()
            .map(|host| {
                let (host, barrier, name) = (host.clone(), barrier.clone(), name.clone());
                std::thread::spawn(move || {
                    barrier.wait();
                    host.start(StartSession {
                        role: Role::Workagent,
                        project: "p".to_string(),
                        name: Some(name),
                        tags: vec![],
                        expected_duration: None,
                        budget: Default::default(),
                        completion: Default::default(),
                    })
                    .map(|s| s.header.id)
                })
            })
            .collect::<Vec<_>>()
            .into_iter()
            .map(|t| t.join().unwrap())
            .collect();
        let won: Vec<&String> = results.iter().filter_map(|r| r.as_ref().ok()).collect();
        assert_eq!(won.len(), 1, "round {round}: {results:?}");
        let lost = results.iter().find_map(|r| r.as_ref().err()).unwrap();
        assert!(
            matches!(lost, SessionError::NameTaken { .. }),
            "round {round}: {lost}"
        );
        // Both hosts resolve the name to the winner.
        for host in &hosts {
            assert_eq!(&host.show(&name).unwrap().header.id, won[0]);
        }
    }
}

/// An approval settled on two hosts at once (approved on one, denied on
/// the other) is settled once: one settlement is recorded, the other is
/// told how it was settled.
#[test]
fn an_approval_settled_on_two_hosts_at_once_is_settled_once() {
    let tmp = tempfile::tempdir().unwrap();
    let server = NatsServer::start(tmp.path(), true);
    let hosts: Vec<Arc<Approvals>> = (0..2)
        .map(|_| Arc::new(Approvals::new(nats_store(&server))))
        .collect();
    for round in 0..10 {
        let pending = Approval {
            id: Approvals::new_id(),
            session: "s-1".to_string(),
            session_name: None,
            call_id: format!("c-{round}"),
            tool: "echo.echo".to_string(),
            tool_digest: "d".to_string(),
            input_hash: "h".to_string(),
            input: "{}".to_string(),
            action: "exec".to_string(),
            hook: "gate".to_string(),
            pattern: "*".to_string(),
            reason: "ask".to_string(),
            requested_at_ms: round,
            status: ApprovalStatus::Pending,
            principal: None,
            job: None,
        };
        hosts[0].put(&pending).unwrap();
        let barrier = Arc::new(Barrier::new(2));
        let results: Vec<Result<(), SessionError>> = hosts
            .iter()
            .enumerate()
            .map(|(i, host)| {
                let (host, barrier) = (host.clone(), barrier.clone());
                let mut settled = pending.clone();
                settled.status = match i {
                    0 => ApprovalStatus::Approved {
                        at_ms: 1,
                        by: Some("op-a".to_string()),
                    },
                    _ => ApprovalStatus::Denied {
                        at_ms: 1,
                        reason: "no".to_string(),
                        by: Some("op-b".to_string()),
                    },
                };
                std::thread::spawn(move || {
                    barrier.wait();
                    host.settle(&settled).map(|_| ())
                })
            })
            .collect::<Vec<_>>()
            .into_iter()
            .map(|t| t.join().unwrap())
            .collect();
        let winners: Vec<usize> = (0..2).filter(|&i| results[i].is_ok()).collect();
        assert_eq!(winners.len(), 1, "round {round}: {results:?}");
        let loser = results[1 - winners[0]].as_ref().unwrap_err().to_string();
        assert!(loser.contains("was already"), "round {round}: {loser}");
        let stored = hosts[1 - winners[0]].get(&pending.id).unwrap().status;
        match winners[0] {
            0 => assert!(
                matches!(stored, ApprovalStatus::Approved { .. }),
                "{stored:?}"
            ),
            _ => assert!(
                matches!(stored, ApprovalStatus::Denied { .. }),
                "{stored:?}"
            ),
        }
    }
}

/// A host on the three-node cluster at `urls`, with three replicas, as
/// node `node` advertising `advertise`. A 5 s lease TTL: short for the
/// test, long enough that a loaded machine's late renewals do not let the
/// other node take a live session.
fn cluster_node(urls: &str, node: &str, advertise: Option<&str>) -> Site {
    node_with(
        urls,
        "prefix = \"failover\"\nreplicas = 3\nlease_ttl = \"5s\"\n",
        node,
        advertise,
    )
}

/// Issue 17's failover, as an agent lives it: two Glovebox nodes serving
/// MCP over HTTP on a three-node JetStream cluster (R3); the agent's
/// session is served by node A, which is killed with SIGKILL mid-call while
/// a background job of the session runs there; the agent (the official
/// Python MCP SDK) reconnects to node B and resumes the session by name,
/// with its handoff and the interrupted call marked; the job is run again
/// on B and completes once for its idempotency key; `log verify` passes
/// (read from a third host). And a 2026-07-28 (stateless) client whose node
/// is killed between two requests carries on in the same session on the
/// other node. The steps are in `tests/mcp_cluster/`.
#[test]
fn an_agent_whose_node_is_killed_mid_call_resumes_its_session_on_another_node_over_mcp() {
    let tmp = tempfile::tempdir().unwrap();
    let cluster = glovebox_store_nats::testing::NatsCluster::start(tmp.path());
    let (port_a, port_b) = (free_port(), free_port());
    let a = cluster_node(
        &cluster.urls(),
        "a",
        Some(&format!("http://127.0.0.1:{port_a}/mcp")),
    );
    let b = cluster_node(
        &cluster.urls(),
        "b",
        Some(&format!("http://127.0.0.1:{port_b}/mcp")),
    );
    let observer = cluster_node(&cluster.urls(), "observer", None);
    let (port_a, port_b) = (port_a.to_string(), port_b.to_string());
    let stdout = crate::mcp_sdk::pytest(
        "mcp_cluster",
        &[
            ("GLOVEBOX_NODE_A", a.config().as_os_str()),
            ("GLOVEBOX_NODE_B", b.config().as_os_str()),
            ("GLOVEBOX_PORT_A", port_a.as_ref()),
            ("GLOVEBOX_PORT_B", port_b.as_ref()),
            ("GLOVEBOX_OBSERVER", observer.config().as_os_str()),
        ],
    );
    assert!(stdout.contains("2 passed"), "{stdout}");
}

/// The CLI against a cluster from a machine that holds nothing of it: with
/// `[storage] node` set, an operator's commands (sessions, logs, approvals,
/// jobs, bills, principals, a pause and its lift) run on the NATS store
/// alone, and the data dir is never made.
#[test]
fn the_cli_works_against_nats_with_no_local_data_dir() {
    let tmp = tempfile::tempdir().unwrap();
    let server = NatsServer::start(tmp.path(), true);
    let ops = Site::with_config(
        &format!(
            "backend = \"nats\"\nurl = \"{}\"\nprefix = \"it\"\nnode = \"ops-laptop\"\n",
            server.url()
        ),
        &[(
            "echo.toml",
            format!("name = \"echo\"\ncomponent = \"{}\"\n", plugins::TOOL_ECHO),
        )],
    );
    // Another host made the session and ran a call in it.
    let host = site_on(&server.url());
    host.start_workagent("w");
    let (code, _, err) = host.run(&["call", "echo.echo", "-i", r#"{"message":"hi"}"#, "-s", "w"]);
    assert_eq!(code, 0, "{err}");

    for args in [
        &["session", "list"][..],
        &["session", "show", "w"],
        &["log", "export", "w"],
        &["log", "verify", "w"],
        &["log", "show", "w"],
        &["approvals"],
        &["job", "list"],
        &["billing"],
        &["principal", "list"],
        &["session", "pause", "w", "--reason", "looking at it"],
        &["session", "resume", "w"],
    ] {
        let (code, out, err) = ops.run(args);
        assert_eq!(code, 0, "glovebox {args:?}: {err}");
        if args.starts_with(&["log", "verify"]) {
            assert!(out.starts_with("ok"), "{out}");
        }
        if args.starts_with(&["session", "list"]) {
            assert!(out.contains(" w "), "{out}");
        }
    }
    assert!(
        !ops.data().exists(),
        "the CLI made a data dir: {:?}",
        std::fs::read_dir(ops.data()).map(|d| d.count())
    );
    let events = events_of(&host, "w");
    assert_eq!(of_type(&events, "paused").len(), 1, "{events:?}");
    assert_eq!(of_type(&events, "resumed").len(), 1, "{events:?}");
}

/// A host in this process on the NATS server at `url`, as node `node`, with
/// `quotas`: its ledger (leased sessions) and its jobs service.
async fn jobs_node(
    url: &str,
    node: &str,
    quotas: glovebox::manifest::QuotasConfig,
    lease_ttl: Duration,
) -> (Arc<glovebox::Jobs>, tempfile::TempDir) {
    jobs_node_running(
        url,
        node,
        quotas,
        lease_ttl,
        glovebox::JobsConfig::default(),
    )
    .await
}

/// [`jobs_node`] with its own `[jobs]` settings.
async fn jobs_node_running(
    url: &str,
    node: &str,
    quotas: glovebox::manifest::QuotasConfig,
    lease_ttl: Duration,
    jobs: glovebox::JobsConfig,
) -> (Arc<glovebox::Jobs>, tempfile::TempDir) {
    use glovebox::manifest::{NatsStorage, StorageBackend};
    let mut sleep = crate::util::manifest("sleep", plugins::HOSTILE_SLEEP);
    sleep.limits.deadline = Duration::from_secs(60);
    // It only waits: running it again is harmless.
    sleep.tools.insert(
        "sleep".into(),
        glovebox::manifest::ToolOverride {
            idempotent: Some(true),
            ..Default::default()
        },
    );
    let echo = crate::util::manifest("echo", plugins::TOOL_ECHO);
    let (mut config, data) = crate::util::config(vec![sleep, echo]);
    config.quotas = quotas;
    config.storage.backend = StorageBackend::Nats;
    config.storage.nats = Some(NatsStorage {
        url: url.to_string(),
        creds: None,
        user: None,
        password: None,
        prefix: "quotas".into(),
        replicas: 1,
        node: Some(node.to_string()),
        advertise: None,
        lease_ttl,
    });
    let host = Arc::new(glovebox::Host::load(config).await.expect("host loads"));
    let durable = Arc::new(glovebox::open_sessions(host.config()).expect("store opens"));
    let jobs = glovebox::Jobs::new(glovebox::Gateway::new(host, durable), jobs);
    (jobs, data)
}

/// A host that runs jobs (`jobs`; 60 s lease TTL) with a session `w` it
/// drives, and a client of the same store that only queues them.
async fn runner_and_client(
    url: &str,
    jobs: glovebox::JobsConfig,
) -> (
    Arc<glovebox::Jobs>,
    Arc<glovebox::Jobs>,
    String,
    [tempfile::TempDir; 2],
) {
    let ttl = Duration::from_secs(60);
    let quotas = glovebox::manifest::QuotasConfig::default();
    let (runner, runner_data) = jobs_node_running(url, "runner", quotas.clone(), ttl, jobs).await;
    let session = runner
        .gateway()
        .sessions()
        .start(crate::jobs::start("w"))
        .unwrap()
        .header
        .id;
    let (client, client_data) = jobs_node(url, "client", quotas, ttl).await;
    (runner, client, session, [runner_data, client_data])
}

/// The operator the job tests act as (the CLI's, as `glovebox job` does).
static OPERATOR: std::sync::LazyLock<glovebox::Principal> =
    std::sync::LazyLock::new(glovebox::cli_operator);

/// Waits until `jobs` reads job `id` as running; fails saying `why` if it
/// is not within `limit`.
async fn running_within(jobs: &Arc<glovebox::Jobs>, id: &str, limit: Duration, why: &str) {
    let deadline = Instant::now() + limit;
    while jobs.scope(&OPERATOR).status(id).await.unwrap().status != glovebox::JobStatus::Running {
        assert!(Instant::now() < deadline, "{why}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Job `id` as `jobs` reads it once it is final; fails saying `why` if it
/// is not by `deadline`.
async fn final_by(
    jobs: &Arc<glovebox::Jobs>,
    id: &str,
    deadline: Instant,
    why: &str,
) -> glovebox::JobInfo {
    loop {
        let now = jobs.scope(&OPERATOR).status(id).await.unwrap();
        if now.status.is_final() {
            return now;
        }
        assert!(Instant::now() < deadline, "{why}: {now:?}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// `[quotas] jobs_per_principal` counts an agent's live jobs on every host
/// of the store, not on each alone: an agent with two jobs running on node
/// `a` is refused a third on node `b` (before, `b` counted only its own and
/// took it), nothing is stored for the refused one, and once one of the two
/// ends (cancelled on `a`), `b` takes it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_agents_job_quota_holds_across_the_nodes_of_one_store() {
    let tmp = tempfile::tempdir().unwrap();
    let server = NatsServer::start(tmp.path(), true);
    let quotas = glovebox::manifest::QuotasConfig {
        jobs_per_principal: 2,
        ..Default::default()
    };
    let ttl = Duration::from_secs(15);
    let (a, _a_data) = jobs_node(&server.url(), "a", quotas.clone(), ttl).await;
    let (b, _b_data) = jobs_node(&server.url(), "b", quotas, ttl).await;
    let agent = crate::jobs::worker_bot();
    let start = crate::jobs::start;
    let on_a = a
        .gateway()
        .sessions()
        .scope(&agent)
        .start(start("on-a"), &Default::default())
        .unwrap()
        .header
        .id;
    let on_b = b
        .gateway()
        .sessions()
        .scope(&agent)
        .start(start("on-b"), &Default::default())
        .unwrap()
        .header
        .id;
    let slow = |jobs: &glovebox::Jobs| jobs.gateway().admit("sleep", r#"{"seconds":30}"#).unwrap();
    let first = a.scope(&agent).spawn(&on_a, slow(&a)).await.unwrap();
    a.scope(&agent).spawn(&on_a, slow(&a)).await.unwrap();

    let err = b.scope(&agent).spawn(&on_b, slow(&b)).await.unwrap_err();
    let message = err.to_string();
    assert!(
        matches!(
            err,
            glovebox::JobError::Session(SessionError::Quota { ref limit, .. }
            ) if limit.key == "jobs_per_principal"
        ),
        "{message}"
    );
    assert!(
        message.contains("already has 2 live jobs on the hosts sharing this store"),
        "{message}"
    );
    assert_eq!(
        crate::jobs::list_all(b.scope(&OPERATOR), None, None)
            .await
            .unwrap()
            .len(),
        2,
        "the refused job is not stored"
    );

    a.scope(&OPERATOR).cancel(&first.id).await.unwrap();
    let third = b.scope(&agent).spawn(&on_b, slow(&b)).await.unwrap();
    assert_eq!(third.session, on_b);
    for job in crate::jobs::list_all(a.scope(&OPERATOR), None, None)
        .await
        .unwrap()
    {
        let runs_on = if job.session == on_b { &b } else { &a };
        let _ = runs_on.scope(&OPERATOR).cancel(&job.id).await;
    }
}

// Threat 49: `[quotas] job_bytes_per_principal` counts the bytes an agent's
// jobs keep on every host of the store: bytes stored through node `a` are
// counted when the agent spawns on node `b`, which refuses it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn threat_49_an_agents_job_bytes_are_counted_across_the_nodes_of_one_store() {
    let tmp = tempfile::tempdir().unwrap();
    let server = NatsServer::start(tmp.path(), true);
    let mut quotas = glovebox::manifest::QuotasConfig {
        job_bytes_per_principal: 1024 * 1024,
        ..Default::default()
    };
    quotas.set.insert("job_bytes_per_principal");
    let ttl = Duration::from_secs(15);
    let (a, _a_data) = jobs_node(&server.url(), "a", quotas.clone(), ttl).await;
    let (b, _b_data) = jobs_node(&server.url(), "b", quotas, ttl).await;
    let agent = crate::jobs::worker_bot();
    let mut sessions = Vec::new();
    for (node, name) in [(&a, "bytes-a"), (&b, "bytes-b")] {
        sessions.push(
            node.gateway()
                .sessions()
                .scope(&agent)
                .start(crate::jobs::start(name), &Default::default())
                .unwrap()
                .header
                .id,
        );
    }
    let big = serde_json::json!({ "message": "x".repeat(600_000) }).to_string();
    let echo = |jobs: &glovebox::Jobs| jobs.gateway().admit("echo", &big).unwrap();
    a.recover().await.unwrap();
    let job = a.scope(&agent).spawn(&sessions[0], echo(&a)).await.unwrap();
    let done = final_by(
        &a,
        &job.id,
        Instant::now() + Duration::from_secs(60),
        "the big echo never ended",
    )
    .await;
    assert_eq!(done.status, glovebox::JobStatus::Completed, "{done:?}");
    let err = b
        .scope(&agent)
        .spawn(&sessions[1], echo(&b))
        .await
        .unwrap_err();
    let message = err.to_string();
    assert!(
        message.contains("`quotas.job_bytes_per_principal` = 1 MiB"),
        "{message}"
    );
    assert_eq!(
        crate::jobs::list_all(b.scope(&OPERATOR), None, None)
            .await
            .unwrap()
            .len(),
        1,
        "the refused job is not stored"
    );
}

/// A job queued by a client (as `glovebox job spawn` outside a server does)
/// reaches a host that runs jobs through the store's work queue at once,
/// not at that host's next pass over the stored jobs: with a 60 s lease TTL
/// the pass runs every 20 s, and the job completes well before the first
/// one.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_job_queued_by_a_client_reaches_a_host_through_the_work_queue_at_once() {
    let tmp = tempfile::tempdir().unwrap();
    let server = NatsServer::start(tmp.path(), true);
    let (runner, client, session, _data) =
        runner_and_client(&server.url(), glovebox::JobsConfig::default()).await;
    let started = Instant::now();
    runner.recover().await.unwrap();
    let job = client
        .scope(&OPERATOR)
        .enqueue(&session, "sleep", r#"{"seconds":0}"#)
        .await
        .unwrap();
    let done = final_by(
        &runner,
        &job.id,
        Instant::now() + Duration::from_secs(10),
        "the job was not run within 10 s (the pass over stored jobs runs every 20 s)",
    )
    .await;
    assert_eq!(done.status, glovebox::JobStatus::Completed, "{done:?}");
    assert!(
        done.runner
            .as_deref()
            .is_some_and(|r| r.starts_with("runner/")),
        "{done:?}"
    );
    assert!(
        started.elapsed() < Duration::from_secs(20),
        "done before the first pass: {:?}",
        started.elapsed()
    );
}

/// A host that stops hands the jobs it will not finish to the other hosts at
/// once: its running idempotent job goes back to `queued`, the job's
/// work-queue message is handed back, and the job's session is let go. So
/// host `b` runs the job seconds after `a` stops, not after the ack wait
/// (the 60 s lease TTL) or at its next pass over the stored jobs (every
/// 20 s).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stopping_host_hands_its_unfinished_job_to_another_host_at_once() {
    let tmp = tempfile::tempdir().unwrap();
    let server = NatsServer::start(tmp.path(), true);
    let ttl = Duration::from_secs(60);
    let quotas = glovebox::manifest::QuotasConfig::default();
    let (a, _a_data) = jobs_node(&server.url(), "a", quotas.clone(), ttl).await;
    let (b, _b_data) = jobs_node(&server.url(), "b", quotas, ttl).await;
    a.recover().await.unwrap();
    let session = a
        .gateway()
        .sessions()
        .start(crate::jobs::start("w"))
        .unwrap()
        .header
        .id;
    let job = a
        .scope(&OPERATOR)
        .spawn_call(&session, "sleep", r#"{"seconds":3}"#)
        .await
        .unwrap();
    running_within(
        &a,
        &job.id,
        Duration::from_secs(10),
        "the job never ran on `a`",
    )
    .await;
    b.recover().await.unwrap();

    let stopped_at = Instant::now();
    let stopped = a.shutdown(Duration::ZERO).await;
    assert_eq!(stopped.len(), 1, "{stopped:?}");
    assert_eq!(
        stopped[0].status,
        glovebox::JobStatus::Queued,
        "{stopped:?}"
    );
    let done = final_by(
        &b,
        &job.id,
        stopped_at + Duration::from_secs(15),
        "`b` did not finish the job within 15 s of `a` stopping (the ack wait is 60 s, `b`'s next pass over the stored jobs 20 s)",
    )
    .await;
    assert_eq!(done.status, glovebox::JobStatus::Completed, "{done:?}");
    assert!(
        done.runner.as_deref().is_some_and(|r| r.starts_with("b/")),
        "{done:?}"
    );
}

/// Regression: a host that stopped while its pull of the work queue was
/// under way took the job that pull brought and handed its message back for
/// later (a third of the ack wait, 20 s here), so the host that runs waited
/// that long, or for its next pass over the stored jobs (also 20 s). It
/// broke `a_stopping_host_hands_its_unfinished_job_to_another_host_at_once`
/// one run in three, when the job pushed at the stop reached the stopping
/// host's own pull. Here that is the only pull: `b` runs one job at a time
/// and is busy, so the job queued just after `a` stops reaches `a`, which
/// must hand it back at once; `b` runs it as soon as it has room.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stopping_host_hands_back_at_once_a_job_its_last_pull_brought() {
    let tmp = tempfile::tempdir().unwrap();
    let server = NatsServer::start(tmp.path(), true);
    let ttl = Duration::from_secs(60);
    let quotas = glovebox::manifest::QuotasConfig::default();
    let one_at_a_time = glovebox::JobsConfig {
        max_running: 1,
        ..Default::default()
    };
    let (b, _b_data) =
        jobs_node_running(&server.url(), "b", quotas.clone(), ttl, one_at_a_time).await;
    let (a, _a_data) = jobs_node(&server.url(), "a", quotas.clone(), ttl).await;
    let (client, _client_data) = jobs_node(&server.url(), "client", quotas, ttl).await;
    let session = b
        .gateway()
        .sessions()
        .start(crate::jobs::start("w"))
        .unwrap()
        .header
        .id;
    b.recover().await.unwrap();
    a.recover().await.unwrap();
    let busy = b
        .scope(&OPERATOR)
        .spawn_call(&session, "sleep", r#"{"seconds":3}"#)
        .await
        .unwrap();
    running_within(
        &b,
        &busy.id,
        Duration::from_secs(10),
        "the busy job never ran on `b`",
    )
    .await;
    // `b`'s last pull from before it was busy (one waits up to 1 s) is over.
    tokio::time::sleep(Duration::from_millis(1200)).await;

    assert!(a.shutdown(Duration::ZERO).await.is_empty());
    let queued_at = Instant::now();
    let job = client
        .scope(&OPERATOR)
        .enqueue(&session, "sleep", r#"{"seconds":0}"#)
        .await
        .unwrap();
    let done = final_by(
        &b,
        &job.id,
        queued_at + Duration::from_secs(10),
        "`b` did not run the job within 10 s: the stopped host `a` held its message back",
    )
    .await;
    assert_eq!(done.status, glovebox::JobStatus::Completed, "{done:?}");
    assert!(
        done.runner.as_deref().is_some_and(|r| r.starts_with("b/")),
        "{done:?}"
    );
    let busy = b.scope(&OPERATOR).status(&busy.id).await.unwrap();
    assert_eq!(busy.status, glovebox::JobStatus::Completed, "{busy:?}");
}

/// Principals take turns in the work queue, from the runner's side: the
/// spawner of a job (`by`) is its turn's group. A client queues three jobs
/// as principal `x`, then one as `y`; a host that runs one job at a time
/// runs `y`'s first or second, not fourth (first in, first out would).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_principals_one_job_runs_before_anothers_earlier_backlog() {
    let tmp = tempfile::tempdir().unwrap();
    let server = NatsServer::start(tmp.path(), true);
    let one_at_a_time = glovebox::JobsConfig {
        max_running: 1,
        ..Default::default()
    };
    let (runner, client, session, _data) = runner_and_client(&server.url(), one_at_a_time).await;
    let queue_as = |by: &'static str| {
        let (client, session) = (client.clone(), session.clone());
        glovebox::tasks::acting_with(by, None, async move {
            client
                .scope(&OPERATOR)
                .enqueue(&session, "sleep", r#"{"seconds":1}"#)
                .await
                .unwrap()
        })
    };
    let mut backlog = Vec::new();
    for _ in 0..3 {
        backlog.push(queue_as("x").await.id);
    }
    let quiet = queue_as("y").await.id;
    runner.recover().await.unwrap();

    let deadline = Instant::now() + Duration::from_secs(30);
    let mut ran = Vec::new();
    for id in backlog.iter().chain([&quiet]) {
        let done = final_by(
            &runner,
            id,
            deadline,
            "the jobs did not all run within 30 s",
        )
        .await;
        assert_eq!(done.status, glovebox::JobStatus::Completed, "{done:?}");
        assert_eq!(
            done.by.as_deref(),
            Some(if *id == quiet { "y" } else { "x" })
        );
        ran.push((done.started_at_ms.unwrap(), id.clone()));
    }
    ran.sort();
    let rank = ran.iter().position(|(_, id)| *id == quiet).unwrap() + 1;
    assert!(
        rank <= 2,
        "`y`'s job ran {rank}th of 4, after `x`'s backlog: {ran:?}"
    );
}
