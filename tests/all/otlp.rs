//! The OTLP trace exporter (feature `otlp`, on by default): with
//! `OTEL_EXPORTER_OTLP_ENDPOINT` set, a call's span reaches the collector
//! with its session, call and principal ids.
//! The collector is a receiver this test starts on 127.0.0.1, which keeps
//! the OTLP/HTTP (protobuf) bodies it is sent; the ids are strings inside
//! them.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::sync::{Arc, Mutex};

use crate::util::Site;

/// The requests a collector got: each one's path and body.
type Got = Arc<Mutex<Vec<(String, Vec<u8>)>>>;

/// A collector on a free loopback port: its URL and the requests it got.
fn collector() -> (String, Got) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let got = Arc::new(Mutex::new(Vec::new()));
    let keep = got.clone();
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            let keep = keep.clone();
            std::thread::spawn(move || {
                let mut reader = BufReader::new(stream.try_clone().unwrap());
                let mut stream = stream;
                loop {
                    let mut line = String::new();
                    if reader.read_line(&mut line).unwrap_or(0) == 0 {
                        return;
                    }
                    let path = line.split_whitespace().nth(1).unwrap_or("").to_string();
                    let mut length = 0;
                    loop {
                        let mut header = String::new();
                        reader.read_line(&mut header).unwrap();
                        let header = header.trim_end();
                        if header.is_empty() {
                            break;
                        }
                        if let Some((k, v)) = header.split_once(':')
                            && k.eq_ignore_ascii_case("content-length")
                        {
                            length = v.trim().parse().unwrap();
                        }
                    }
                    let mut body = vec![0; length];
                    reader.read_exact(&mut body).unwrap();
                    keep.lock().unwrap().push((path, body));
                    let _ = stream.write_all(b"HTTP/1.1 200 OK\r\ncontent-length: 0\r\n\r\n");
                }
            });
        }
    });
    (url, got)
}

fn contains(body: &[u8], text: &str) -> bool {
    body.windows(text.len()).any(|w| w == text.as_bytes())
}

#[test]
fn a_calls_span_reaches_the_collector_with_its_session_call_and_principal() {
    let site = Site::new(false);
    let session = site.start_workagent("traced");
    let id = session["id"].as_str().unwrap().to_string();
    let (url, got) = collector();
    let out = crate::util::glovebox()
        .arg("--config")
        .arg(site.config())
        .args([
            "call",
            "--session",
            "traced",
            "echo.echo",
            "--input",
            r#"{"message":"hi"}"#,
        ])
        .env("OTEL_EXPORTER_OTLP_ENDPOINT", &url)
        .env("OTEL_SERVICE_NAME", "glovebox-under-test")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // The exporter flushes before the process exits.
    let got = got.lock().unwrap().clone();
    assert!(!got.is_empty(), "the collector got nothing");
    assert!(
        got.iter().all(|(path, _)| path == "/v1/traces"),
        "{:?}",
        got.iter().map(|g| &g.0).collect::<Vec<_>>()
    );
    let body: Vec<u8> = got.into_iter().flat_map(|(_, b)| b).collect();
    let uid = String::from_utf8(
        std::process::Command::new("id")
            .arg("-u")
            .output()
            .unwrap()
            .stdout,
    )
    .unwrap();
    for text in [
        "glovebox-under-test",
        "call",
        id.as_str(),
        "call_id",
        "echo.echo",
        &format!("cli:{}", uid.trim()),
    ] {
        assert!(
            contains(&body, text),
            "no `{text}` in what the collector got"
        );
    }
    let log = site.run(&["log", "show", "traced"]).1;
    let call_id = log
        .split("\"call_id\":\"")
        .nth(1)
        .and_then(|r| r.split('"').next())
        .expect("a call in the log");
    assert!(contains(&body, call_id), "the span names call {call_id}");
}

/// The caller's trace: a `tools/call` whose `_meta` carries a W3C
/// `traceparent` (over stdio), and one whose HTTP request carries the
/// header, are spans of the caller's trace (the collector gets the trace
/// id and, as the parent, the caller's span id, both as raw bytes in the
/// protobuf), and the call's `call_requested` event records the trace id.
#[test]
fn a_traceparent_makes_the_call_a_span_of_the_callers_trace_and_its_log_says_which() {
    const TRACE: &str = "4bf92f3577b34da6a3ce929d0e0e4736";
    const PARENT: &str = "00f067aa0ba902b7";
    const HEADER_TRACE: &str = "0af7651916cd43dd8448eb211c80319c";
    const HEADER_PARENT: &str = "b7ad6b7169203331";
    let site = Site::new(false);
    let (url, got) = collector();
    let mut child = crate::util::glovebox()
        .arg("--config")
        .arg(site.config())
        .arg("serve")
        .env("OTEL_EXPORTER_OTLP_ENDPOINT", &url)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let mut ask = |line: serde_json::Value| {
        writeln!(stdin, "{line}").unwrap();
        let mut answer = String::new();
        if line.get("id").is_some() {
            stdout.read_line(&mut answer).unwrap();
        }
        answer
    };
    ask(
        serde_json::json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name": "traced", "version": "0"}}}),
    );
    ask(serde_json::json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
    ask(
        serde_json::json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
        "name": "session_start",
        "arguments": {"role": "workagent", "project": "p", "name": "traced"}}}),
    );
    let answer = ask(
        serde_json::json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {
        "name": "echo.echo", "arguments": {"message": "traced"},
        "_meta": {"traceparent": format!("00-{TRACE}-{PARENT}-01")}}}),
    );
    assert!(answer.contains("\"isError\":false"), "{answer}");
    drop(stdin);
    assert!(child.wait().unwrap().success());

    // Over HTTP, the header.
    let (mut server, addr, _log) = crate::http_limits::serve_logged_with_env(
        &site,
        &[],
        &[("OTEL_EXPORTER_OTLP_ENDPOINT", url.as_str())],
    );
    let session = crate::identity::open_session(&addr, None);
    let body = serde_json::json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
        "name": "echo.echo", "arguments": {"message": "traced over http"}}})
    .to_string();
    let mut s = std::net::TcpStream::connect(&addr).unwrap();
    write!(
        s,
        "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: application/json, text/event-stream\r\nContent-Type: application/json\r\nMcp-Session-Id: {session}\r\nMcp-Protocol-Version: 2025-06-18\r\ntraceparent: 00-{HEADER_TRACE}-{HEADER_PARENT}-01\r\nConnection: close\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    let mut answer = String::new();
    s.read_to_string(&mut answer).unwrap();
    assert!(answer.contains("\"isError\":false"), "{answer}");
    // SIGTERM: the server drains and the exporter flushes.
    let _ = std::process::Command::new("kill")
        .args(["-TERM", &server.id().to_string()])
        .status();
    assert!(server.wait().unwrap().success());

    let body: Vec<u8> = got
        .lock()
        .unwrap()
        .iter()
        .flat_map(|(_, b)| b.clone())
        .collect();
    let bytes = |hex: &str| -> Vec<u8> {
        (0..hex.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&hex[i..i + 2], 16).unwrap())
            .collect()
    };
    for id in [TRACE, PARENT, HEADER_TRACE, HEADER_PARENT] {
        let raw = bytes(id);
        assert!(
            body.windows(raw.len()).any(|w| w == raw.as_slice()),
            "the collector got no span with {id}"
        );
    }
    let (code, log, err) = site.run(&["log", "export", "traced"]);
    assert_eq!(code, 0, "{err}");
    assert!(log.contains(&format!("\"trace_id\":\"{TRACE}\"")), "{log}");
}
