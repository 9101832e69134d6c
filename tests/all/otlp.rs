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
