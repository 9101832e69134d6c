//! docs/threats.md "Network and secrets", and a slow HTTP peer (threat 4).
//!
//! HTTP tests use a small server on 127.0.0.1 that counts the connections it
//! accepts, so a test can prove a refused request never reached the network.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use glovebox::CallError;
use glovebox::manifest::HttpScheme;
use serde_json::json;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

use crate::util::{
    assert_serving, call_err, call_ok, host_with_echo, http_grant, manifest, plugins,
};

/// A tiny HTTP/1.1 server: `/hello` answers, `/redirect?to=URL` redirects,
/// `/slow` reads the request and never answers.
pub struct TestServer {
    pub port: u16,
    accepted: Arc<AtomicUsize>,
    open: Arc<AtomicUsize>,
}

impl TestServer {
    pub async fn start() -> TestServer {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let accepted = Arc::new(AtomicUsize::new(0));
        let open = Arc::new(AtomicUsize::new(0));
        let (acc, opn) = (accepted.clone(), open.clone());
        tokio::spawn(async move {
            loop {
                let Ok((mut sock, _)) = listener.accept().await else {
                    return;
                };
                acc.fetch_add(1, Ordering::SeqCst);
                opn.fetch_add(1, Ordering::SeqCst);
                let opn = opn.clone();
                tokio::spawn(async move {
                    let mut buf = vec![0u8; 16 * 1024];
                    let mut got = Vec::new();
                    // Read the request head.
                    while !got.windows(4).any(|w| w == b"\r\n\r\n") {
                        match sock.read(&mut buf).await {
                            Ok(0) | Err(_) => {
                                opn.fetch_sub(1, Ordering::SeqCst);
                                return;
                            }
                            Ok(n) => got.extend_from_slice(&buf[..n]),
                        }
                    }
                    let head = String::from_utf8_lossy(&got).to_string();
                    let target = head.split_whitespace().nth(1).unwrap_or("/").to_string();
                    let response = if target == "/hello" {
                        let body = "hello from the test server";
                        format!(
                            "HTTP/1.1 200 OK\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                            body.len()
                        )
                    } else if let Some(to) = target.strip_prefix("/redirect?to=") {
                        format!(
                            "HTTP/1.1 302 Found\r\nlocation: {to}\r\ncontent-length: 0\r\nconnection: close\r\n\r\n"
                        )
                    } else if target == "/slow" {
                        // Hold the connection open until the client goes away.
                        while let Ok(n) = sock.read(&mut buf).await {
                            if n == 0 {
                                break;
                            }
                        }
                        opn.fetch_sub(1, Ordering::SeqCst);
                        return;
                    } else {
                        "HTTP/1.1 404 Not Found\r\ncontent-length: 0\r\nconnection: close\r\n\r\n"
                            .to_string()
                    };
                    let _ = sock.write_all(response.as_bytes()).await;
                    let _ = sock.shutdown().await;
                    opn.fetch_sub(1, Ordering::SeqCst);
                });
            }
        });
        TestServer {
            port,
            accepted,
            open,
        }
    }

    pub fn accepted(&self) -> usize {
        self.accepted.load(Ordering::SeqCst)
    }

    pub fn open(&self) -> usize {
        self.open.load(Ordering::SeqCst)
    }
}

fn fetch_input(url: &str) -> String {
    json!({ "url": url }).to_string()
}

// Threat 15: without a network grant a tool cannot resolve names or connect anywhere.
#[tokio::test]
async fn a_tool_without_a_network_grant_cannot_resolve_or_connect() {
    let server = TestServer::start().await;
    let h = host_with_echo(manifest("net", plugins::HOSTILE_NET)).await;
    for host in ["localhost", "example.com"] {
        let out = call_ok(&h, "net.resolve", &json!({ "host": host }).to_string()).await;
        assert_eq!(out["ok"], false, "resolving {host}: {out}");
    }
    let addr = format!("127.0.0.1:{}", server.port);
    for tool in ["net.connect", "net.udp-send"] {
        let out = call_ok(&h, tool, &json!({ "addr": addr }).to_string()).await;
        assert_eq!(out["ok"], false, "{tool}: {out}");
    }
    // Even a plugin granted HTTP gets no raw sockets.
    let mut fetch = manifest("netplus", plugins::HOSTILE_NET);
    fetch
        .http
        .push(http_grant(HttpScheme::Http, "127.0.0.1", server.port));
    let h2 = host_with_echo(fetch).await;
    let out = call_ok(&h2, "netplus.connect", &json!({ "addr": addr }).to_string()).await;
    assert_eq!(out["ok"], false, "{out}");
    assert_eq!(server.accepted(), 0, "a socket reached the server");
    assert_serving(&h).await;
}

// Threat 16: HTTP outside the allowlist is denied before connecting.
#[tokio::test]
async fn http_outside_the_allowlist_is_denied_before_connecting() {
    let granted = TestServer::start().await;
    let other = TestServer::start().await;
    let mut m = manifest("fetch", plugins::TOOL_HTTP_FETCH);
    m.http
        .push(http_grant(HttpScheme::Http, "127.0.0.1", granted.port));
    let h = host_with_echo(m).await;
    let report = crate::util::call(
        &h,
        "fetch.fetch",
        &fetch_input(&format!("http://127.0.0.1:{}/hello", other.port)),
    )
    .await;
    let err = report.outcome.expect_err("not granted");
    assert!(matches!(err, CallError::ToolFailed { .. }), "{err}");
    assert_eq!(report.http_denials.len(), 1, "{:?}", report.http_denials);
    assert!(
        report.http_denials[0].contains("not in the plugin's `[[http]]` grants"),
        "{:?}",
        report.http_denials
    );
    assert_eq!(
        other.accepted(),
        0,
        "the refused request reached the network"
    );
    // A different scheme on the granted host:port is not granted either.
    let err = call_err(
        &h,
        "fetch.fetch",
        &fetch_input(&format!("https://127.0.0.1:{}/hello", granted.port)),
    )
    .await;
    assert!(matches!(err, CallError::ToolFailed { .. }), "{err}");
    assert_eq!(granted.accepted(), 0);
    // While the granted one works.
    call_ok(
        &h,
        "fetch.fetch",
        &fetch_input(&format!("http://127.0.0.1:{}/hello", granted.port)),
    )
    .await;
    assert_eq!(granted.accepted(), 1);
}

// Threat 16: a redirect to a host outside the allowlist is checked again and refused.
#[tokio::test]
async fn redirects_are_rechecked() {
    let granted = TestServer::start().await;
    let other = TestServer::start().await;
    let mut m = manifest("fetch", plugins::TOOL_HTTP_FETCH);
    m.http
        .push(http_grant(HttpScheme::Http, "127.0.0.1", granted.port));
    let h = host_with_echo(m).await;
    let evil = format!("http://127.0.0.1:{}/hello", other.port);
    let url = format!("http://127.0.0.1:{}/redirect?to={evil}", granted.port);
    let report = crate::util::call(&h, "fetch.fetch", &fetch_input(&url)).await;
    assert!(report.outcome.is_err(), "{:?}", report.outcome);
    assert!(
        report
            .http_denials
            .iter()
            .any(|d| d.contains(&format!(":{}", other.port))),
        "{:?}",
        report.http_denials
    );
    assert_eq!(granted.accepted(), 1, "the first hop was allowed");
    assert_eq!(other.accepted(), 0, "the redirect target was reached");
    // A redirect within the grant is followed.
    let inside = format!("http://127.0.0.1:{}/hello", granted.port);
    let url = format!("http://127.0.0.1:{}/redirect?to={inside}", granted.port);
    let out = call_ok(&h, "fetch.fetch", &fetch_input(&url)).await;
    assert_eq!(
        (out["status"].as_u64(), out["redirects"].as_u64()),
        (Some(200), Some(1))
    );
}

// Threat 17: loopback and other non-public addresses are denied unless granted by address.
#[tokio::test]
async fn loopback_is_denied_unless_granted_by_address() {
    let server = TestServer::start().await;
    let mut m = manifest("fetch", plugins::TOOL_HTTP_FETCH);
    // Granted by name: `localhost` resolves to loopback, which the name does not unlock.
    m.http
        .push(http_grant(HttpScheme::Http, "localhost", server.port));
    let h = host_with_echo(m).await;
    let report = crate::util::call(
        &h,
        "fetch.fetch",
        &fetch_input(&format!("http://localhost:{}/hello", server.port)),
    )
    .await;
    assert!(report.outcome.is_err());
    assert!(
        report
            .http_denials
            .iter()
            .any(|d| d.contains("non-public address")),
        "{:?}",
        report.http_denials
    );
    assert_eq!(server.accepted(), 0);
    // Cloud metadata by address is outside any grant.
    let err = call_err(
        &h,
        "fetch.fetch",
        &fetch_input("http://169.254.169.254/latest/meta-data/"),
    )
    .await;
    assert!(matches!(err, CallError::ToolFailed { .. }), "{err}");
}

// Threat 18: a tool sees only the env vars its manifest names.
#[tokio::test]
async fn a_tool_sees_only_the_env_vars_it_is_granted() {
    // Cargo sets these for the test process; the host has PATH and HOME too.
    assert!(std::env::var("CARGO_PKG_NAME").is_ok());
    let mut m = manifest("env", plugins::HOSTILE_ENV);
    m.env = vec!["CARGO_PKG_NAME".into(), "GLOVEBOX_SURELY_UNSET_VAR".into()];
    let h = host_with_echo(m).await;
    let out = call_ok(&h, "env.env", "{}").await;
    let vars = out["vars"].as_object().unwrap();
    let names: Vec<&String> = vars.keys().collect();
    assert_eq!(names, ["CARGO_PKG_NAME"], "{out}");
    assert_eq!(
        vars["CARGO_PKG_NAME"],
        std::env::var("CARGO_PKG_NAME").unwrap()
    );
    assert_eq!(out["args"], json!([]));
    // Without a grant, nothing at all.
    let h = host_with_echo(manifest("env", plugins::HOSTILE_ENV)).await;
    assert_eq!(call_ok(&h, "env.env", "{}").await["vars"], json!({}));
}

// Threat 4: a slow HTTP peer is cut off at the deadline; the socket is closed.
#[tokio::test]
async fn a_slow_http_peer_is_cut_off_at_the_deadline_without_leaking_sockets() {
    let server = TestServer::start().await;
    let mut m = manifest("fetch", plugins::TOOL_HTTP_FETCH);
    m.http
        .push(http_grant(HttpScheme::Http, "127.0.0.1", server.port));
    m.limits.deadline = Duration::from_millis(500);
    let h = host_with_echo(m).await;
    let url = format!("http://127.0.0.1:{}/slow", server.port);
    for _ in 0..5 {
        let start = Instant::now();
        let err = call_err(&h, "fetch.fetch", &fetch_input(&url)).await;
        assert!(matches!(err, CallError::Timeout { .. }), "{err}");
        assert!(
            start.elapsed() < Duration::from_secs(1),
            "{:?}",
            start.elapsed()
        );
    }
    assert_eq!(server.accepted(), 5);
    // Every connection the timed-out calls opened is closed by the host.
    let deadline = Instant::now() + Duration::from_secs(5);
    while server.open() > 0 && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(server.open(), 0, "sockets left open after the calls ended");
    assert_serving(&h).await;
}
