//! Notifications over the real binary: `glovebox serve` with `[[notify]]`
//! targets pointing at a receiver this test runs on 127.0.0.1. Each event
//! kind reaches a target that asked for it, signed; a receiver that is down
//! at first still gets the delivery; a host killed with entries in its
//! outbox delivers them after a restart with the same idempotency key; and
//! `glovebox notify status` shows a target that keeps failing.

use std::collections::{BTreeSet, HashMap};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU16, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use hmac::{Hmac, Mac};
use serde_json::{Value, json};
use sha2::Sha256;

use crate::mcp::Server;
use crate::util::{self, free_port, plugins};

const SECRET: &str = "test-secret-0123456789abcdef";

/// One request the receiver got, and the status it answered.
#[derive(Clone, Debug)]
pub(crate) struct Delivery {
    pub(crate) path: String,
    pub(crate) headers: HashMap<String, String>,
    pub(crate) body: Vec<u8>,
    pub(crate) answered: u16,
}

impl Delivery {
    pub(crate) fn header(&self, name: &str) -> &str {
        self.headers
            .get(&name.to_ascii_lowercase())
            .map(String::as_str)
            .unwrap_or_else(|| panic!("no `{name}` header: {self:?}"))
    }

    pub(crate) fn json(&self) -> Value {
        serde_json::from_slice(&self.body).unwrap_or_else(|e| panic!("{e}: {self:?}"))
    }

    pub(crate) fn event(&self) -> String {
        self.header("X-Glovebox-Event").to_string()
    }
}

/// A small HTTP/1.1 receiver on 127.0.0.1: records every request and answers
/// with the status in `answer`.
pub(crate) struct Receiver {
    port: u16,
    got: Arc<Mutex<Vec<Delivery>>>,
    pub(crate) answer: Arc<AtomicU16>,
}

impl Receiver {
    pub(crate) fn start() -> Receiver {
        Receiver::listen(TcpListener::bind("127.0.0.1:0").unwrap())
    }

    fn start_on(port: u16) -> Receiver {
        Receiver::listen(TcpListener::bind(("127.0.0.1", port)).unwrap())
    }

    fn listen(listener: TcpListener) -> Receiver {
        let port = listener.local_addr().unwrap().port();
        let got = Arc::new(Mutex::new(Vec::new()));
        let answer = Arc::new(AtomicU16::new(200));
        let (g, a) = (got.clone(), answer.clone());
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(stream) = stream else { continue };
                let (g, a) = (g.clone(), a.clone());
                std::thread::spawn(move || serve_one(stream, &g, &a));
            }
        });
        Receiver { port, got, answer }
    }

    pub(crate) fn url(&self, path: &str) -> String {
        format!("http://127.0.0.1:{}{path}", self.port)
    }

    fn all(&self) -> Vec<Delivery> {
        self.got.lock().unwrap().clone()
    }

    /// Waits until `done` holds for what was received.
    pub(crate) fn wait_until(
        &self,
        what: &str,
        done: impl Fn(&[Delivery]) -> bool,
    ) -> Vec<Delivery> {
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            let got = self.all();
            if done(&got) {
                return got;
            }
            assert!(
                Instant::now() < deadline,
                "the receiver never got {what}; it got: {:#?}",
                got.iter()
                    .map(|d| (d.path.clone(), d.event(), d.answered))
                    .collect::<Vec<_>>()
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}

fn serve_one(stream: TcpStream, got: &Mutex<Vec<Delivery>>, answer: &AtomicU16) {
    let mut reader = BufReader::new(stream.try_clone().unwrap());
    let mut line = String::new();
    if reader.read_line(&mut line).unwrap_or(0) == 0 {
        return;
    }
    let path = line.split_whitespace().nth(1).unwrap_or("").to_string();
    let mut headers = HashMap::new();
    loop {
        let mut h = String::new();
        reader.read_line(&mut h).unwrap();
        let h = h.trim_end();
        if h.is_empty() {
            break;
        }
        let (k, v) = h.split_once(':').unwrap();
        headers.insert(k.trim().to_ascii_lowercase(), v.trim().to_string());
    }
    let len: usize = headers
        .get("content-length")
        .map_or(0, |v| v.parse().unwrap());
    let mut body = vec![0; len];
    reader.read_exact(&mut body).unwrap();
    let status = answer.load(Ordering::SeqCst);
    let slow = path.starts_with("/slow");
    got.lock().unwrap().push(Delivery {
        path,
        headers,
        body,
        answered: status,
    });
    if slow {
        // A receiver that takes its time: the entry stays in the outbox
        // while its delivery is in flight.
        std::thread::sleep(Duration::from_millis(500));
    }
    let mut stream = stream;
    let _ = write!(
        stream,
        "HTTP/1.1 {status} X\r\ncontent-length: 4\r\nconnection: close\r\n\r\nnope"
    );
}

/// Checks `X-Glovebox-Signature: t=<unix>,v1=<hex>` against the body.
fn assert_signed(d: &Delivery) {
    let sig = d.header("X-Glovebox-Signature");
    let (t, v1) = sig
        .split_once(',')
        .and_then(|(t, v)| Some((t.strip_prefix("t=")?, v.strip_prefix("v1=")?)))
        .unwrap_or_else(|| panic!("malformed signature `{sig}`"));
    let t: u64 = t.parse().unwrap();
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs();
    assert!(now.abs_diff(t) < 300, "timestamp {t} is not now ({now})");
    let mut mac = Hmac::<Sha256>::new_from_slice(SECRET.as_bytes()).unwrap();
    mac.update(format!("{t}.").as_bytes());
    mac.update(&d.body);
    mac.verify_slice(&hex_decode(v1))
        .unwrap_or_else(|_| panic!("bad signature on {:?}", d.event()));
}

fn hex_decode(text: &str) -> Vec<u8> {
    (0..text.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&text[i..i + 2], 16).unwrap())
        .collect()
}

/// A config with echo, sleep, files (writes ask a human) and a fast sweep,
/// plus `notify` (the `[[notify]]` tables).
pub(crate) fn site(dir: &Path, notify: &str) -> PathBuf {
    std::fs::create_dir_all(dir.join("work")).unwrap();
    for (name, component, extra) in [
        ("echo", plugins::TOOL_ECHO, ""),
        (
            "sleep",
            plugins::HOSTILE_SLEEP,
            "[limits]\ndeadline = \"60s\"\n",
        ),
        (
            "files",
            plugins::TOOL_FILES,
            "[[fs]]\nhost = \"work\"\nguest = \"/data\"\naccess = \"read-write\"\n",
        ),
    ] {
        std::fs::write(
            dir.join(format!("{name}.toml")),
            format!("name = \"{name}\"\ncomponent = \"{component}\"\n{extra}"),
        )
        .unwrap();
    }
    let path = dir.join("glovebox.toml");
    std::fs::write(
        &path,
        format!(
            "data_dir = \"data\"\n[approvals]\nwait = 0\n[runtime]\n{}\n\
             [detector]\nsweep_interval = \"200ms\"\nno_progress_after = \"1s\"\n\
             [[plugin]]\nmanifest = \"echo.toml\"\n[[plugin]]\nmanifest = \"sleep.toml\"\n[[plugin]]\nmanifest = \"files.toml\"\n\
             [[hook]]\nname = \"destructive\"\ncomponent = \"{}\"\n[hook.settings]\nmode = \"ask\"\n{notify}",
            crate::util::cache_keys(),
            plugins::HOOK_DESTRUCTIVE,
        ),
    )
    .unwrap();
    path
}

/// `glovebox serve` over stdio, past the MCP handshake.
pub(crate) fn serve(config: &Path) -> Server {
    let mut server = Server::start(config);
    let init = server.request(
        0,
        "initialize",
        json!({
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "glovebox-tests", "version": "0"},
        }),
    );
    assert!(init["result"].is_object(), "{init}");
    server.send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
    server
}

/// Calls a built-in or a tool and returns its structured result.
pub(crate) fn call(server: &mut Server, id: &mut u64, tool: &str, args: Value) -> Value {
    *id += 1;
    let answer = server.call(*id, tool, args);
    answer["result"]["structuredContent"].clone()
}

pub(crate) fn glovebox(config: &Path, args: &[&str]) -> (i32, String, String) {
    util::outcome(util::glovebox().arg("--config").arg(config).args(args))
}

pub(crate) fn ok_json(config: &Path, args: &[&str]) -> Value {
    let (code, out, err) = glovebox(config, args);
    assert_eq!(code, 0, "glovebox {args:?}: {err}");
    serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out}"))
}

fn kinds_received(got: &[Delivery], path: &str) -> BTreeSet<String> {
    got.iter()
        .filter(|d| d.path == path && d.answered == 200)
        .map(Delivery::event)
        .collect()
}

#[test]
fn each_event_kind_reaches_the_targets_that_asked_for_it_signed() {
    let receiver = Receiver::start();
    let dir = tempfile::tempdir().unwrap();
    let config = site(
        dir.path(),
        &format!(
            "[[notify]]\nname = \"all\"\nurl = \"{}\"\nsecret = \"{SECRET}\"\nretry_initial = \"50ms\"\n\
             events = [\"approval_needed\", \"flag:warning\", \"budget_warning\", \"budget_exceeded\", \"job_finished\", \"job_failed\", \"rescue_opened\", \"rescue_resolved\", \"session_stalled\", \"session_completed\"]\n\
             [[notify]]\nname = \"done\"\nurl = \"{}\"\nformat = \"slack\"\nevents = [\"session_completed\"]\n",
            receiver.url("/all"),
            receiver.url("/done"),
        ),
    );
    let mut server = serve(&config);
    let mut id = 0;

    // Budgets: a warning at 2 of 2 calls, then the third goes past the cap.
    call(
        &mut server,
        &mut id,
        "session_start",
        json!({"role": "workagent", "project": "p", "name": "spender", "budget": {"calls": 2}}),
    );
    for _ in 0..3 {
        call(&mut server, &mut id, "echo.echo", json!({"message": "hi"}));
    }
    // An approval: the destructive hook asks about writes.
    call(
        &mut server,
        &mut id,
        "session_start",
        json!({"role": "workagent", "project": "p", "name": "asker"}),
    );
    let waiting = call(
        &mut server,
        &mut id,
        "files.write",
        json!({"path": "/data/x.txt", "content": "x"}),
    );
    let approval = waiting["awaiting_approval"]["approval_id"]
        .as_str()
        .unwrap_or_else(|| panic!("{waiting}"))
        .to_string();
    // Jobs: one finishes, one is cancelled; then the session completes.
    call(
        &mut server,
        &mut id,
        "session_start",
        json!({"role": "workagent", "project": "p", "name": "worker"}),
    );
    let job = call(
        &mut server,
        &mut id,
        "job_spawn",
        json!({"tool": "echo.echo", "input": {"message": "later"}}),
    )["id"]
        .as_str()
        .unwrap()
        .to_string();
    let waited = call(
        &mut server,
        &mut id,
        "job_wait",
        json!({"ids": [job], "timeout_ms": 60000}),
    );
    assert_eq!(waited["done"][0]["status"], "completed", "{waited}");
    let slow = call(
        &mut server,
        &mut id,
        "job_spawn",
        json!({"tool": "sleep.sleep", "input": {"seconds": 30}}),
    )["id"]
        .as_str()
        .unwrap()
        .to_string();
    std::thread::sleep(Duration::from_millis(500));
    let cancelled = call(&mut server, &mut id, "job_cancel", json!({"id": slow}));
    assert_eq!(cancelled["status"], "cancelled", "{cancelled}");
    let ended = call(
        &mut server,
        &mut id,
        "session_end",
        json!({"outcome": "completed"}),
    );
    assert_eq!(ended["status"], "completed", "{ended}");
    // A session that never calls: the sweep flags it (no_progress, a warning).
    call(
        &mut server,
        &mut id,
        "session_start",
        json!({"role": "workagent", "project": "p", "name": "quiet"}),
    );

    let live = [
        "approval_needed",
        "flag",
        "budget_warning",
        "budget_exceeded",
        "job_finished",
        "job_failed",
        "session_stalled",
        "session_completed",
    ];
    receiver.wait_until("every kind raised while serving", |got| {
        let all = kinds_received(got, "/all");
        live.iter().all(|k| all.contains(*k)) && kinds_received(got, "/done").len() == 1
    });
    drop(server);

    // A rescue, opened and closed from the CLI while nothing serves: the
    // entries wait in the outbox for the next `serve`.
    let rescue = ok_json(&config, &["rescue", "open", "quiet"]);
    let rid = rescue["id"].as_str().unwrap().to_string();
    ok_json(
        &config,
        &[
            "rescue",
            "diagnose",
            &rid,
            "--category",
            "other",
            "--root-cause",
            "the agent went quiet",
        ],
    );
    ok_json(
        &config,
        &["rescue", "resolve", &rid, "--outcome", "resolved"],
    );
    let server = serve(&config);
    let got = receiver.wait_until("the rescue's notifications", |got| {
        let all = kinds_received(got, "/all");
        all.contains("rescue_opened") && all.contains("rescue_resolved")
    });
    drop(server);

    // Every delivery to `all` is signed and says what it is about.
    let mut names = HashMap::new();
    for d in got.iter().filter(|d| d.path == "/all") {
        assert_signed(d);
        let body = d.json();
        assert_eq!(body["event"], d.event(), "{body}");
        assert_eq!(body["delivery_id"], d.header("X-Glovebox-Delivery"));
        assert_eq!(body["target"], "all");
        assert_eq!(d.header("content-type"), "application/json");
        names
            .entry(d.event())
            .or_insert_with(BTreeSet::new)
            .insert(body["session_name"].as_str().unwrap_or("").to_string());
        if d.event() == "approval_needed" {
            assert_eq!(body["details"]["approval_id"], approval.as_str(), "{body}");
            assert_eq!(body["details"]["tool"], "files.write", "{body}");
        }
        if d.event() == "flag" {
            assert_ne!(body["severity"], "info", "below flag:warning: {body}");
        }
        if d.event() == "rescue_opened" {
            assert_eq!(body["details"]["rescue_id"], rid.as_str(), "{body}");
        }
    }
    let of = |kind: &str| names.get(kind).cloned().unwrap_or_default();
    assert!(of("approval_needed").contains("asker"), "{names:?}");
    assert!(of("budget_warning").contains("spender"), "{names:?}");
    assert!(of("budget_exceeded").contains("spender"), "{names:?}");
    assert_eq!(of("job_finished"), BTreeSet::from(["worker".to_string()]));
    assert_eq!(of("job_failed"), BTreeSet::from(["worker".to_string()]));
    assert_eq!(
        of("session_completed"),
        BTreeSet::from(["worker".to_string()])
    );
    assert!(of("session_stalled").contains("quiet"), "{names:?}");
    assert_eq!(of("rescue_opened"), BTreeSet::from(["quiet".to_string()]));
    assert_eq!(of("rescue_resolved"), BTreeSet::from(["quiet".to_string()]));

    // `done` asked for completed sessions only, as Slack text, unsigned.
    let done: Vec<&Delivery> = got.iter().filter(|d| d.path == "/done").collect();
    assert_eq!(done.len(), 1, "{done:?}");
    assert_eq!(done[0].event(), "session_completed");
    assert!(!done[0].headers.contains_key("x-glovebox-signature"));
    let text = done[0].json()["text"].as_str().unwrap().to_string();
    assert!(
        text.contains("session `worker` completed"),
        "a Slack body: {text}"
    );

    // Each (event, target) was delivered once: no duplicate idempotency keys
    // among the accepted deliveries.
    let ids: Vec<&str> = got
        .iter()
        .map(|d| d.header("X-Glovebox-Delivery"))
        .collect();
    let unique: BTreeSet<&str> = ids.iter().copied().collect();
    assert_eq!(unique.len(), ids.len(), "{ids:?}");
}

#[test]
fn a_receiver_that_is_down_at_first_gets_the_delivery_when_it_comes_up() {
    let port = free_port();
    let dir = tempfile::tempdir().unwrap();
    let config = site(
        dir.path(),
        &format!(
            "[[notify]]\nurl = \"http://127.0.0.1:{port}/hook\"\nevents = [\"session_completed\"]\n\
             retry_initial = \"50ms\"\nretry_max = \"200ms\"\nmax_attempts = 100\ntimeout = \"2s\"\n"
        ),
    );
    let mut server = serve(&config);
    let mut id = 0;
    call(
        &mut server,
        &mut id,
        "session_start",
        json!({"role": "workagent", "project": "p", "name": "s"}),
    );
    // A call in flight keeps working while the receiver is down.
    call(&mut server, &mut id, "session_end", json!({}));
    std::thread::sleep(Duration::from_millis(1000));
    let answer = server.call(99, "echo.echo", json!({"message": "still here"}));
    assert_eq!(answer["result"]["isError"], false, "{answer}");

    let receiver = Receiver::start_on(port);
    let got = receiver.wait_until("the delivery once it is up", |got| !got.is_empty());
    let attempt: u32 = got[0].header("X-Glovebox-Attempt").parse().unwrap();
    assert!(attempt > 1, "the first attempts found nobody: {attempt}");
    assert_eq!(got[0].event(), "session_completed");
    assert_eq!(got[0].json()["session_name"], "s");
    assert!(
        !got[0].headers.contains_key("x-glovebox-signature"),
        "no secret, no signature"
    );
    drop(server);

    // `notify test` sends one now, through the same delivery code.
    let (code, out, err) = glovebox(&config, &["notify", "test", &format!("127.0.0.1_{port}")]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("the receiver answered 200"), "{out}");
    receiver.wait_until("the test notification", |got| {
        got.iter().any(|d| d.event() == "test")
    });
    let (code, _, err) = glovebox(&config, &["notify", "test", "nope"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("the targets are 127.0.0.1_"), "{err}");
}

#[test]
fn a_killed_host_delivers_its_outbox_after_a_restart_and_status_shows_a_failing_target() {
    let receiver = Receiver::start();
    receiver.answer.store(503, Ordering::SeqCst);
    let dead = free_port();
    let dir = tempfile::tempdir().unwrap();
    let config = site(
        dir.path(),
        &format!(
            "[[notify]]\nname = \"flaky\"\nurl = \"{}\"\nsecret = \"{SECRET}\"\nevents = [\"session_completed\"]\n\
             retry_initial = \"50ms\"\nretry_max = \"200ms\"\nmax_attempts = 100\n\
             [[notify]]\nname = \"dead\"\nurl = \"http://127.0.0.1:{dead}/\"\nevents = [\"session_completed\"]\n\
             retry_initial = \"50ms\"\nmax_attempts = 2\n",
            receiver.url("/flaky"),
        ),
    );
    let mut server = serve(&config);
    let mut id = 0;
    for name in ["one", "two"] {
        call(
            &mut server,
            &mut id,
            "session_start",
            json!({"role": "workagent", "project": "p", "name": name}),
        );
        call(&mut server, &mut id, "session_end", json!({}));
    }
    // Both tried and refused (503): they stay in the outbox.
    let refused = receiver.wait_until("two refused deliveries", |got| {
        got.iter()
            .map(|d| d.header("X-Glovebox-Delivery").to_string())
            .collect::<BTreeSet<_>>()
            .len()
            == 2
    });
    let keys: BTreeSet<String> = refused
        .iter()
        .map(|d| d.header("X-Glovebox-Delivery").to_string())
        .collect();
    drop(server); // SIGKILL, with both entries in the outbox

    // While nothing serves, the status shows them pending, retried.
    let status = ok_json(&config, &["notify", "status", "--json"]);
    let flaky = &status[0];
    assert_eq!(flaky["target"], "flaky", "{status}");
    assert_eq!(flaky["pending"], 2, "{status}");
    assert_eq!(flaky["delivered"], 0, "{status}");
    assert!(
        flaky["retrying"][0]["last_error"]
            .as_str()
            .unwrap()
            .contains("503"),
        "{status}"
    );

    receiver.answer.store(200, Ordering::SeqCst);
    let server = serve(&config);
    let got = receiver.wait_until("both deliveries accepted after the restart", |got| {
        got.iter()
            .filter(|d| d.answered == 200)
            .map(|d| d.header("X-Glovebox-Delivery").to_string())
            .collect::<BTreeSet<_>>()
            .len()
            == 2
    });
    let accepted: BTreeSet<String> = got
        .iter()
        .filter(|d| d.answered == 200)
        .map(|d| d.header("X-Glovebox-Delivery").to_string())
        .collect();
    assert_eq!(
        accepted, keys,
        "the same idempotency keys as before the kill"
    );
    for d in got.iter().filter(|d| d.answered == 200) {
        assert_signed(d);
    }
    // Let the worker record the deliveries before the host stops.
    std::thread::sleep(Duration::from_millis(1000));
    drop(server);

    let status = ok_json(&config, &["notify", "status", "--json"]);
    let (flaky, dead) = (&status[0], &status[1]);
    assert_eq!(
        (&flaky["pending"], &flaky["delivered"], &flaky["failed"]),
        (&json!(0), &json!(2), &json!(0)),
        "{status}"
    );
    assert_eq!(dead["target"], "dead", "{status}");
    assert_eq!(dead["failed"], 2, "{status}");
    assert_eq!(dead["pending"], 0, "{status}");
    let entry = &dead["failed_entries"][0];
    assert_eq!(entry["attempts"], 2, "{status}");
    assert!(
        entry["last_error"]
            .as_str()
            .unwrap()
            .contains("cannot connect"),
        "{status}"
    );
    let (code, text, err) = glovebox(&config, &["notify", "status"]);
    assert_eq!(code, 0, "{err}");
    assert!(text.contains("dead — failed (gave up):"), "{text}");
    assert!(text.contains("last error: cannot connect"), "{text}");
    let (code, _, err) = glovebox(&config, &["notify", "test", "dead"]);
    assert_eq!(code, 5, "{err}");
    assert!(err.contains("was not delivered: cannot connect"), "{err}");
}

#[test]
fn notify_config_errors_name_the_key_and_the_fix() {
    let dir = tempfile::tempdir().unwrap();
    for (notify, key, words) in [
        (
            "[[notify]]\nurl = \"ftp://x\"\nevents = [\"flag\"]\n",
            "notify[0].url",
            "http",
        ),
        (
            "[[notify]]\nurl = \"http://127.0.0.1:1/\"\nevents = [\"flag:loud\"]\n",
            "notify[0].events",
            "flag:warning",
        ),
        (
            "[[notify]]\nurl = \"http://127.0.0.1:1/\"\nevents = [\"flag\"]\nsecret = \"short\"\n",
            "notify[0].secret",
            "openssl rand",
        ),
        (
            "[[notify]]\nurl = \"http://127.0.0.1:1/\"\nevents = [\"flag\"]\n[[notify]]\nurl = \"http://127.0.0.1:1/b\"\nevents = [\"flag\"]\n",
            "notify[1].url",
            "name",
        ),
        (
            "[[notify]]\nurl = \"http://127.0.0.1:1/\"\nevents = [\"flag\"]\nretries = 3\n",
            "retries",
            "unknown key",
        ),
    ] {
        let config = site(dir.path(), notify);
        let (code, _, err) = glovebox(&config, &["notify", "status"]);
        assert_eq!(code, 2, "{notify}: {err}");
        assert!(err.contains(key) && err.contains(words), "{notify}: {err}");
    }
}

/// Two hosts on one NATS store both run the delivery worker over the one
/// outbox they share: each notification reaches the receiver once (each
/// attempt is claimed by one host), whichever host sent it, though the
/// receiver takes half a second to answer (every entry is still in the
/// outbox, due, while its delivery is in flight).
#[test]
fn two_hosts_on_one_nats_store_deliver_each_notification_once() {
    let tmp = tempfile::tempdir().unwrap();
    let nats = glovebox_store_nats::testing::NatsServer::start(tmp.path(), true);
    let receiver = Receiver::start();
    let tables = |node: &str| {
        format!(
            "[storage]\nbackend = \"nats\"\nurl = \"{}\"\nprefix = \"notify\"\nnode = \"{node}\"\n\
             [[notify]]\nurl = \"{}\"\nevents = [\"session_completed\"]\ntimeout = \"5s\"\n",
            nats.url(),
            receiver.url("/slow-hook")
        )
    };
    let (dir_a, dir_b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let mut a = serve(&site(dir_a.path(), &tables("a")));
    let _b = serve(&site(dir_b.path(), &tables("b")));
    let mut id = 0;
    const SESSIONS: usize = 12;
    for i in 0..SESSIONS {
        let started = call(
            &mut a,
            &mut id,
            "session_start",
            json!({"role": "workagent", "project": "p", "name": format!("s{i}")}),
        );
        assert!(started["id"].is_string(), "{started}");
        call(&mut a, &mut id, "session_end", json!({}));
    }
    receiver.wait_until("every session's completion", |got| got.len() >= SESSIONS);
    // Both workers poll every 200 ms: wait for any second sending.
    std::thread::sleep(Duration::from_millis(2000));
    let got = receiver.all();
    let ids: BTreeSet<&str> = got
        .iter()
        .map(|d| d.header("X-Glovebox-Delivery"))
        .collect();
    assert_eq!(ids.len(), SESSIONS, "{ids:?}");
    assert_eq!(
        got.len(),
        SESSIONS,
        "sent more than once: {:?}",
        got.iter()
            .map(|d| d.header("X-Glovebox-Delivery"))
            .collect::<Vec<_>>()
    );
}
