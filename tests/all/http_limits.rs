//! The HTTP server beyond MCP, over the real binary and raw TCP. Threat 43
//! (a client that holds the server's connections): a request whose headers
//! never finish is cut off after the header timeout, the connections served
//! at once are capped (`serve --max-connections`), and what waits beyond the
//! cap is served as soon as a slot frees. `/metrics`: an operator's, and it
//! counts what the server did.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Child, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::principals::{add, add_agent};
use crate::util::Site;

/// `glovebox serve --http 127.0.0.1:0` with `args`; the process and its address.
pub(crate) fn serve(site: &Site, args: &[&str]) -> (Child, String) {
    let (child, addr, _) = serve_logged(site, args);
    (child, addr)
}

/// [`serve`] at log level `info`, with the server's log lines kept as they come.
pub(crate) fn serve_logged(site: &Site, args: &[&str]) -> (Child, String, Arc<Mutex<Vec<String>>>) {
    serve_logged_with_env(site, args, &[])
}

/// [`serve_logged`] with more environment variables.
pub(crate) fn serve_logged_with_env(
    site: &Site,
    args: &[&str],
    env: &[(&str, &str)],
) -> (Child, String, Arc<Mutex<Vec<String>>>) {
    let mut child = crate::util::glovebox()
        .arg("--config")
        .arg(site.config())
        .args(["serve", "--http", "127.0.0.1:0"])
        .args(args)
        .envs(env.iter().copied())
        .env("RUST_LOG", "info")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
    let addr = loop {
        let line = lines.next().expect("serve printed its address").unwrap();
        if let Some(rest) = line.strip_prefix("glovebox: serving MCP at http://") {
            break rest.trim_end_matches("/mcp").to_string();
        }
    };
    // Keep draining stderr so the server never blocks on it.
    let log = Arc::new(Mutex::new(Vec::new()));
    let kept = log.clone();
    std::thread::spawn(move || {
        for line in lines.map_while(Result::ok) {
            kept.lock().unwrap().push(line);
        }
    });
    (child, addr, log)
}

/// A complete request: an HTTP answer comes back (any status).
fn answered(addr: &str, within: Duration) -> bool {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(within)).unwrap();
    write!(
        s,
        "GET /nothing HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut head = [0u8; 12];
    s.read_exact(&mut head).is_ok() && head.starts_with(b"HTTP/1.1")
}

#[test]
fn threat_43_dribbled_headers_are_cut_off_and_connections_are_capped() {
    let site = Site::new(false);
    let (mut child, addr) = serve(&site, &["--max-connections", "2"]);
    assert!(
        answered(&addr, Duration::from_secs(10)),
        "the server answers"
    );

    // Two connections that send half a request hold both slots...
    let mut holders: Vec<TcpStream> = (0..2)
        .map(|_| {
            let mut s = TcpStream::connect(&addr).unwrap();
            write!(s, "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\n").unwrap();
            s
        })
        .collect();
    std::thread::sleep(Duration::from_millis(300));
    // ...so a third waits, unanswered...
    assert!(
        !answered(&addr, Duration::from_secs(2)),
        "a connection past the cap was served"
    );
    // ...until the header timeout (10 s) cuts the dribblers off.
    let start = Instant::now();
    for holder in &mut holders {
        holder
            .set_read_timeout(Some(Duration::from_secs(30)))
            .unwrap();
        let mut rest = Vec::new();
        // The server closes it (an answer, if any, then EOF).
        let _ = holder.read_to_end(&mut rest);
    }
    let cut = start.elapsed();
    assert!(cut < Duration::from_secs(20), "held for {cut:?}");
    assert!(
        answered(&addr, Duration::from_secs(10)),
        "a freed slot is served"
    );
    let _ = child.kill();
    let _ = child.wait();
}

/// `GET path` with `headers`: (status, body).
fn get(addr: &str, path: &str, headers: &[(&str, &str)]) -> (u16, String) {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    let mut request = format!("GET {path} HTTP/1.1\r\nConnection: close\r\n");
    if !headers.iter().any(|(k, _)| k.eq_ignore_ascii_case("host")) {
        request += &format!("Host: {addr}\r\n");
    }
    for (k, v) in headers {
        request += &format!("{k}: {v}\r\n");
    }
    request += "\r\n";
    s.write_all(request.as_bytes()).unwrap();
    let mut answer = String::new();
    s.read_to_string(&mut answer).unwrap();
    let status = answer[9..12].parse().unwrap();
    let body = answer
        .split_once("\r\n\r\n")
        .map(|(_, b)| b.to_string())
        .unwrap_or_default();
    (status, body)
}

#[test]
fn metrics_are_an_operators_and_count_what_the_server_did() {
    let site = Site::new(false);
    // A hook that judges every call (and allows echo), and a sweep that
    // flags a session idle for a second.
    site.set_config(&format!(
        "[detector]\nsweep_interval = \"200ms\"\nno_progress_after = \"1s\"\n[[hook]]\nname = \"destructive\"\ncomponent = \"{}\"\n[hook.settings]\nmode = \"ask\"\n",
        crate::util::plugins::HOOK_DESTRUCTIVE
    ));
    let operator = add(&site, &["ops", "--kind", "operator"]);
    let agent = add_agent(&site, "alice", "demo");
    let (mut child, addr) = serve(&site, &[]);
    // Work done through the server (the command line reaches it on its socket).
    for args in [
        &[
            "session",
            "start",
            "--role",
            "workagent",
            "--project",
            "demo",
            "--name",
            "m1",
        ][..],
        &[
            "call",
            "--session",
            "m1",
            "echo.echo",
            "--input",
            r#"{"message":"hi"}"#,
        ],
        &[
            "call",
            "--session",
            "m1",
            "echo.echo",
            "--input",
            r#"{"message":"again"}"#,
        ],
    ] {
        let (code, _, err) = site.run(args);
        assert_eq!(code, 0, "{args:?}: {err}");
    }
    let job = site.json(&[
        "job",
        "spawn",
        "--session",
        "m1",
        "echo.echo",
        "--input",
        r#"{"message":"bg"}"#,
    ]);
    let (code, _, err) = site.run(&[
        "job",
        "wait",
        job["id"].as_str().unwrap(),
        "--timeout",
        "60s",
    ]);
    assert_eq!(code, 0, "{err}");
    // Idle past `no_progress_after`: the sweep flags the session.
    let start = Instant::now();
    while site.json(&["session", "list", "--blocked", "--json"]) == serde_json::json!([]) {
        assert!(start.elapsed() < Duration::from_secs(30), "never flagged");
        std::thread::sleep(Duration::from_millis(100));
    }
    let bearer = |t: &str| format!("Bearer {t}");
    assert_eq!(get(&addr, "/metrics", &[]).0, 401);
    assert_eq!(
        get(
            &addr,
            "/metrics",
            &[("Authorization", &bearer("gbx_wrong"))]
        )
        .0,
        401
    );
    assert_eq!(
        get(&addr, "/metrics", &[("Authorization", &bearer(&agent))]).0,
        403
    );
    assert_eq!(
        get(
            &addr,
            "/metrics",
            &[
                ("Authorization", &bearer(&operator)),
                ("Host", "rebound.example")
            ]
        )
        .0,
        403
    );
    let (status, text) = get(&addr, "/metrics", &[("Authorization", &bearer(&operator))]);
    assert_eq!(status, 200, "{text}");
    assert!(
        text.contains(r#"glovebox_calls_total{tool="echo.echo",outcome="ok"} 3"#),
        "{text}"
    );
    assert!(
        text.contains(r#"glovebox_call_duration_seconds_count{tool="echo.echo"} 3"#),
        "{text}"
    );
    assert!(
        text.contains(r#"glovebox_sessions{status="active"} 1"#),
        "{text}"
    );
    assert!(
        text.contains("glovebox_log_append_duration_seconds_count 3"),
        "{text}"
    );
    assert!(
        text.contains(r#"glovebox_hook_decisions_total{hook="destructive",decision="allow"} 3"#),
        "{text}"
    );
    assert!(
        text.contains(r#"glovebox_jobs{status="completed"} 1"#),
        "{text}"
    );
    assert!(
        text.contains(r#"glovebox_flags{rule="no_progress",severity="#),
        "{text}"
    );
    for family in [
        "glovebox_hook_decisions",
        "glovebox_hook_duration_seconds",
        "glovebox_jobs",
        "glovebox_approvals_pending",
        "glovebox_flags",
        "glovebox_calls_in_flight",
        "glovebox_admission_call_slots",
        "glovebox_admission_memory_reserved_bytes",
        "glovebox_admission_memory_budget_bytes",
        "glovebox_admission_queue_depth",
        "glovebox_admission_wait_seconds",
        "glovebox_group_commit_batch_writers",
        "glovebox_notify_outbox_depth",
    ] {
        assert!(
            text.contains(&format!("# TYPE {family} ")),
            "no {family}: {text}"
        );
    }
    // Nobody waits now; the calls and the hooks that judged them were admitted.
    assert!(
        text.contains(r#"glovebox_admission_queue_depth{pool="calls"} 0"#),
        "{text}"
    );
    for pool in ["calls", "hooks"] {
        assert!(
            text.contains(&format!(
                r#"glovebox_admission_wait_seconds_count{{pool="{pool}"}} "#
            )),
            "{text}"
        );
    }
    // Every durable write went through a group-commit flush of one or more.
    let flushed = text
        .lines()
        .find_map(|l| l.strip_prefix("glovebox_group_commit_batch_writers_sum "))
        .and_then(|n| n.trim().parse::<f64>().ok())
        .unwrap_or_else(|| panic!("no batch sizes: {text}"));
    assert!(flushed >= 3.0, "{text}");
    // Every durable write went through a group-commit flush of one or more.
    let flushed = text
        .lines()
        .find_map(|l| l.strip_prefix("glovebox_group_commit_batch_writers_sum "))
        .and_then(|n| n.trim().parse::<f64>().ok())
        .unwrap_or_else(|| panic!("no batch sizes: {text}"));
    assert!(flushed >= 3.0, "{text}");
    let _ = child.kill();
    let _ = child.wait();
}
