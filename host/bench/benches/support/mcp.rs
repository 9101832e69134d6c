//! MCP clients of the in-process server: stdio over OS pipes and streamable
//! HTTP over loopback, one call at a time (used by `mcp` and `compare`).

use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use glovebox::manifest::HookConfig;
use glovebox::{Gateway, Host, HostConfig, Jobs, JobsConfig, PluginManifest, open_sessions};
use glovebox_mcp::{HttpServer, McpServer};
use http_body_util::{BodyExt, Full};
use hyper_util::rt::TokioIo;
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

use super::{artifact, start_session};

/// A host with the echo plugin and no hooks in `data`, its store, and an MCP
/// server over both.
pub async fn echo_server(data: &Path) -> (Gateway, McpServer) {
    echo_server_judged(data, Vec::new()).await
}

/// [`echo_server`] whose calls `hooks` judge (none: no hooks).
pub async fn echo_server_judged(data: &Path, hooks: Vec<HookConfig>) -> (Gateway, McpServer) {
    let mut echo = PluginManifest::for_component(artifact("tool_echo"), &Default::default());
    echo.name = "echo".into();
    let mut config = HostConfig::from_plugins(data.to_path_buf(), vec![echo]);
    config.hooks_explicitly_none = hooks.is_empty();
    config.hooks = hooks;
    // The 64-client row starts a session per client: more than the default
    // quota of live sessions per principal (they are all the local one).
    config.quotas.sessions_per_principal = 1024;
    let host = Arc::new(Host::load(config).await.expect("host loads"));
    let durable = Arc::new(open_sessions(host.config()).expect("store opens"));
    let gateway = Gateway::new(host, durable);
    let jobs = Jobs::new(gateway.clone(), JobsConfig::default());
    let server = McpServer::new(gateway.clone(), jobs);
    (gateway, server)
}

/// The permission hooks of the example config (`examples/glovebox.toml`),
/// as an operator who starts from it gets them: components and settings.
pub fn example_hooks() -> Vec<HookConfig> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/glovebox.toml");
    let config =
        HostConfig::load(&path).unwrap_or_else(|e| panic!("{} does not load: {e}", path.display()));
    assert!(
        !config.hooks.is_empty(),
        "the example config lists no hooks"
    );
    config.hooks
}

pub struct Stats {
    pub calls_per_s: f64,
    pub p50: Duration,
    pub p99: Duration,
}

pub fn stats(mut samples: Vec<Duration>, total: Duration) -> Stats {
    samples.sort();
    let p = |q: f64| samples[((samples.len() as f64 - 1.0) * q) as usize];
    Stats {
        calls_per_s: samples.len() as f64 / total.as_secs_f64(),
        p50: p(0.5),
        p99: p(0.99),
    }
}

pub async fn measure<F, Fut>(n: usize, mut call: F) -> Stats
where
    F: FnMut(u64) -> Fut,
    Fut: std::future::Future<Output = ()>,
{
    for i in 0..200 {
        call(1_000_000 + i).await;
    }
    let mut samples = Vec::with_capacity(n);
    let all = Instant::now();
    for i in 0..n as u64 {
        let start = Instant::now();
        call(i + 100).await;
        samples.push(start.elapsed());
    }
    stats(samples, all.elapsed())
}

/// `n` echo calls through `call_in_session` in a new session, without MCP:
/// the reference for the MCP rows.
pub async fn in_session(gateway: &Gateway, n: usize) -> Stats {
    let session = start_session(gateway.sessions());
    measure(n, |_| {
        let session = &session;
        async move {
            gateway
                .scope(&glovebox::cli_operator())
                .call_in_session(session, "echo.echo", r#"{"message":"hi"}"#)
                .await
                .expect("session call")
                .outcome
                .expect("echo");
        }
    })
    .await
}

pub fn echo_call(id: u64) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
           "params": {"name": "echo.echo", "arguments": {"message": "hi"}}})
}

pub fn check_echo(v: &Value) {
    assert_eq!(
        v["result"]["structuredContent"]["message"], "hi",
        "unexpected answer: {v}"
    );
}

pub const INIT: &str = r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"bench","version":"0"}}}"#;
pub const INITIALIZED: &str = r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#;
pub const START: &str = r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"session_start","arguments":{"role":"workagent","project":"bench"}}}"#;

/// A stdio MCP client of the in-process `server`, over a pair of OS pipes:
/// the bytes `glovebox serve` reads and writes. Initialized, in a session of
/// its own (a workagent's).
pub struct StdioClient {
    to_server: tokio::net::unix::pipe::Sender,
    lines: tokio::io::Lines<BufReader<tokio::net::unix::pipe::Receiver>>,
}

impl StdioClient {
    pub async fn connect(server: &McpServer) -> StdioClient {
        let (to_server, server_in) = tokio::net::unix::pipe::pipe().expect("pipe");
        let (server_out, from_server) = tokio::net::unix::pipe::pipe().expect("pipe");
        let conn = server.connection(Some(glovebox::Principal::local()));
        tokio::spawn(async move {
            use rmcp::ServiceExt;
            let running = conn
                .serve((server_in, server_out))
                .await
                .expect("handshake");
            let _ = running.waiting().await;
        });
        let mut client = StdioClient {
            to_server,
            lines: BufReader::new(from_server).lines(),
        };
        for line in [INIT, INITIALIZED, START] {
            client.send(line.to_string()).await;
        }
        client
    }

    /// Sends one JSON-RPC line; the answer with its id (`Null` for a notification).
    pub async fn send(&mut self, line: String) -> Value {
        self.to_server.write_all(line.as_bytes()).await.unwrap();
        self.to_server.write_all(b"\n").await.unwrap();
        let Some(want) = serde_json::from_str::<Value>(&line)
            .unwrap()
            .get("id")
            .cloned()
        else {
            return Value::Null;
        };
        loop {
            let line = self
                .lines
                .next_line()
                .await
                .unwrap()
                .expect("server output");
            let v: Value = serde_json::from_str(&line).unwrap();
            if v["id"] == want {
                return v;
            }
        }
    }
}

pub async fn stdio(server: &McpServer, n: usize) -> Stats {
    let mut client = StdioClient::connect(server).await;
    let mut samples = Vec::with_capacity(n);
    for i in 0..200 {
        check_echo(&client.send(echo_call(1_000_000 + i).to_string()).await);
    }
    let all = Instant::now();
    for i in 0..n as u64 {
        let start = Instant::now();
        let v = client.send(echo_call(i + 100).to_string()).await;
        samples.push(start.elapsed());
        check_echo(&v);
    }
    stats(samples, all.elapsed())
}

/// One keep-alive HTTP/1.1 connection to `/mcp`.
pub struct HttpClient {
    sender: hyper::client::conn::http1::SendRequest<Full<Bytes>>,
    addr: SocketAddr,
    session: Option<String>,
}

impl HttpClient {
    async fn connect(addr: SocketAddr) -> HttpClient {
        let stream = tokio::net::TcpStream::connect(addr).await.expect("connect");
        stream.set_nodelay(true).unwrap();
        let (sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
            .await
            .expect("http handshake");
        tokio::spawn(conn);
        HttpClient {
            sender,
            addr,
            session: None,
        }
    }

    /// A client that has made the MCP handshake and started a session.
    async fn in_session(addr: SocketAddr) -> HttpClient {
        let mut client = HttpClient::connect(addr).await;
        client.post(INIT.to_string()).await;
        client.post(INITIALIZED.to_string()).await;
        client.post(START.to_string()).await;
        client
    }

    async fn post(&mut self, body: String) -> Value {
        let want = serde_json::from_str::<Value>(&body)
            .unwrap()
            .get("id")
            .cloned();
        let mut req = hyper::Request::post("/mcp")
            .header("host", self.addr.to_string())
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .header("mcp-protocol-version", "2025-06-18");
        if let Some(s) = &self.session {
            req = req.header("mcp-session-id", s);
        }
        let req = req.body(Full::new(Bytes::from(body))).unwrap();
        self.sender.ready().await.unwrap();
        let resp = self.sender.send_request(req).await.expect("response");
        if let Some(s) = resp.headers().get("mcp-session-id") {
            self.session = Some(s.to_str().unwrap().to_string());
        }
        let status = resp.status();
        let body = resp.into_body().collect().await.unwrap().to_bytes();
        let Some(want) = want else {
            assert!(status.is_success(), "{status}");
            return Value::Null;
        };
        let text = String::from_utf8_lossy(&body);
        for line in text.lines() {
            let data = line.strip_prefix("data:").unwrap_or(line).trim();
            if let Ok(v) = serde_json::from_str::<Value>(data)
                && v.get("id") == Some(&want)
            {
                return v;
            }
        }
        panic!("no answer in the HTTP response ({status}): {text}");
    }
}

/// `server` over streamable HTTP on a loopback port of its own, until the
/// token returned is cancelled.
async fn serve_http(server: &McpServer) -> (SocketAddr, tokio_util::sync::CancellationToken) {
    let http = HttpServer::bind(server.clone(), "127.0.0.1:0".parse().unwrap())
        .await
        .expect("bind");
    let addr = http.local_addr().unwrap();
    let stop = http.stop_token();
    tokio::spawn(http.run());
    (addr, stop)
}

pub async fn http(server: &McpServer, n: usize) -> Stats {
    let (addr, stop) = serve_http(server).await;
    let client = tokio::sync::Mutex::new(HttpClient::in_session(addr).await);
    let s = measure(n, |id| {
        let client = &client;
        async move { check_echo(&client.lock().await.post(echo_call(id).to_string()).await) }
    })
    .await;
    stop.cancel();
    s
}

/// `clients` MCP clients over HTTP at once, each in a session of its own,
/// each making `calls` echo calls one after another (after 20 warm-up
/// calls each): the calls per second of them all, and how many failed (any
/// answer but the echo, `busy` included).
pub async fn many_http(server: &McpServer, clients: usize, calls: usize) -> (Stats, usize) {
    let (addr, stop) = serve_http(server).await;
    let mut ready = Vec::with_capacity(clients);
    for c in 0..clients {
        let mut client = HttpClient::in_session(addr).await;
        for i in 0..20 {
            check_echo(
                &client
                    .post(echo_call(10_000_000 + (c * 20 + i) as u64).to_string())
                    .await,
            );
        }
        ready.push(client);
    }
    let all = Instant::now();
    let runs: Vec<_> = ready
        .into_iter()
        .enumerate()
        .map(|(c, mut client)| {
            tokio::spawn(async move {
                let mut samples = Vec::with_capacity(calls);
                let mut failed = 0;
                for i in 0..calls {
                    let start = Instant::now();
                    let v = client
                        .post(echo_call((c * calls + i) as u64 + 100).to_string())
                        .await;
                    samples.push(start.elapsed());
                    if v["result"]["structuredContent"]["message"] != "hi" {
                        failed += 1;
                    }
                }
                (samples, failed)
            })
        })
        .collect();
    let (mut samples, mut failed) = (Vec::new(), 0);
    for run in runs {
        let (s, f) = run.await.expect("client");
        samples.extend(s);
        failed += f;
    }
    let took = all.elapsed();
    stop.cancel();
    (stats(samples, took), failed)
}

/// The fast calls of a fairness run: how many, how many were refused
/// (`busy`) or failed otherwise, and their latency.
pub struct Fairness {
    pub fast: usize,
    pub refused: usize,
    pub failed: usize,
    /// The failures other than `busy`, by kind.
    pub failures: std::collections::BTreeMap<String, usize>,
    pub p50: Duration,
    pub p99: Duration,
    pub took: Duration,
    /// The looping calls, by how they ended (`timeout`: ran to their
    /// deadline; `busy`: refused a slot).
    pub loops: std::collections::BTreeMap<String, usize>,
}

/// The deadline of the looping calls of [`fairness`].
pub const LOOP_DEADLINE: Duration = Duration::from_millis(250);

/// `clients` MCP clients over HTTP at once, each with a session of its own,
/// each making `calls` calls one after another; with `loops`, every tenth
/// call of each is a loop that runs to its deadline ([`LOOP_DEADLINE`]), the
/// rest echo calls. What the fast (echo) calls got. A host of its own in
/// `data` with the default `[runtime]` (16 call slots) but its admission wait,
/// the stuck-agent detector off.
/// `admission_wait` is `runtime.admission_wait` (zero: refused at once, as
/// before the queue).
pub async fn fairness(
    data: &Path,
    clients: usize,
    calls: usize,
    loops: bool,
    admission_wait: Duration,
) -> Fairness {
    let limits = Default::default();
    let mut echo = PluginManifest::for_component(artifact("tool_echo"), &limits);
    echo.name = "echo".into();
    let mut spin = PluginManifest::for_component(artifact("hostile_infinite_loop"), &limits);
    spin.name = "loop".into();
    spin.limits.deadline = LOOP_DEADLINE;
    let mut config = HostConfig::from_plugins(data.to_path_buf(), vec![echo, spin]);
    config.hooks_explicitly_none = true;
    // The same loop timing out again would flag the session as stuck and
    // pause it (the detector): not what this measures.
    config.detector.enabled = false;
    config.runtime.admission_wait = admission_wait;
    let host = Arc::new(Host::load(config).await.expect("host loads"));
    let durable = Arc::new(open_sessions(host.config()).expect("store opens"));
    let gateway = Gateway::new(host, durable);
    let jobs = Jobs::new(gateway.clone(), JobsConfig::default());
    let server = McpServer::new(gateway.clone(), jobs);
    let http = HttpServer::bind(server, "127.0.0.1:0".parse().unwrap())
        .await
        .expect("bind");
    let addr = http.local_addr().unwrap();
    let stop = http.stop_token();
    tokio::spawn(http.run());

    let all = Instant::now();
    let runs = (0..clients).map(|c| {
        tokio::spawn(async move {
            let mut client = HttpClient::in_session(addr).await;
            // (latency, "ok" | "busy" | another error kind) of each fast call.
            let mut fast = Vec::new();
            // How each looping call ended.
            let mut looped = Vec::new();
            for i in 0..calls {
                let id = (c * calls + i) as u64 + 100;
                if loops && i % 10 == 9 {
                    let spin = json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
                                      "params": {"name": "loop.spin", "arguments": {}}});
                    let v = client.post(spin.to_string()).await;
                    let kind = v["result"]["structuredContent"]["error"]["kind"]
                        .as_str()
                        .unwrap_or("ok")
                        .to_string();
                    looped.push(kind);
                    continue;
                }
                let start = Instant::now();
                let v = client.post(echo_call(id).to_string()).await;
                let took = start.elapsed();
                let outcome = if v["result"]["structuredContent"]["message"] == "hi" {
                    "ok".to_string()
                } else {
                    let error = &v["result"]["structuredContent"]["error"];
                    match error["kind"].as_str() {
                        Some(kind) => kind.to_string(),
                        None => format!("malformed: {v}"),
                    }
                };
                fast.push((took, outcome));
            }
            (fast, looped)
        })
    });
    let runs: Vec<_> = runs.collect();
    let mut samples = Vec::new();
    let (mut refused, mut failed) = (0, 0);
    let mut failures = std::collections::BTreeMap::new();
    let mut loops = std::collections::BTreeMap::new();
    for run in runs {
        let (fast, looped) = run.await.expect("client");
        for kind in looped {
            *loops.entry(kind).or_default() += 1;
        }
        for (took, outcome) in fast {
            match outcome.as_str() {
                "ok" => {}
                "busy" => refused += 1,
                _ => {
                    failed += 1;
                    *failures.entry(outcome).or_default() += 1;
                }
            }
            samples.push(took);
        }
    }
    let took = all.elapsed();
    stop.cancel();
    let fast = samples.len();
    let s = stats(samples, took);
    Fairness {
        fast,
        refused,
        failed,
        failures,
        p50: s.p50,
        p99: s.p99,
        took,
        loops,
    }
}
