//! Code mode against one call at a time (issue 40).
//!
//! ```text
//! cargo test --no-run            # builds the plugins (tests/build.rs)
//! cargo bench -p glovebox-bench --bench code_mode
//! GLOVEBOX_BENCH_RUNS=200 cargo bench -p glovebox-bench --bench code_mode
//! ```
//!
//! One MCP client over stdio (the bytes `glovebox serve` reads and writes, over
//! OS pipes, the server in this process), in a workagent session, every call
//! logged durably and judged by the example config's hooks. Rows, each the
//! median (and p99) over `GLOVEBOX_BENCH_RUNS` repetitions after 10 warm-up ones:
//!
//! - ten `echo.echo` calls, one after the other, as an agent makes them one per
//!   turn (without the model's own time between them);
//! - one `code-python.run` whose script makes the same ten calls with
//!   `tools.call` (each a call of the session: judged, logged);
//! - one `code-python.run` whose script calls nothing (what the run itself costs);
//! - the same two with `code-js.run`;
//! - then, per runner, a nested call's own cost ((ten calls - none) / 10) against
//!   one MCP call's.

#![forbid(unsafe_code)]

mod support;

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use glovebox::{Gateway, Host, HostConfig, Jobs, JobsConfig, PluginManifest, open_sessions};
use glovebox_mcp::McpServer;
use serde_json::{Value, json};

use support::mcp::{StdioClient, example_hooks};
use support::{artifact, env_number};

const TEN_CALLS: &str = "for i in range(10):\n    tools.call('echo.echo', {'message': 'hi'})\n10";
const NO_CALL: &str = "10";
const TEN_CALLS_JS: &str =
    "for (let i = 0; i < 10; i++) await tools.call('echo.echo', { message: 'hi' });\nreturn 10;";

/// Echo and the Python runner (10 nested calls a run), under the example hooks.
async fn server(data: &Path) -> McpServer {
    let mut echo = PluginManifest::for_component(artifact("tool_echo"), &Default::default());
    echo.name = "echo".into();
    let mut python = PluginManifest::for_component(artifact("code_python"), &Default::default());
    python.name = "code-python".into();
    python.limits.memory = 256 << 20;
    python.limits.deadline = Duration::from_secs(60);
    python.limits.nested_calls = 10;
    let mut js = PluginManifest::for_component(artifact("code_js"), &Default::default());
    js.name = "code-js".into();
    js.limits.memory = 128 << 20;
    js.limits.nested_calls = 10;
    let mut config = HostConfig::from_plugins(data.to_path_buf(), vec![echo, python, js]);
    config.hooks = example_hooks();
    let host = Arc::new(Host::load(config).await.expect("host loads"));
    let durable = Arc::new(open_sessions(host.config()).expect("store opens"));
    let gateway = Gateway::new(host, durable);
    let jobs = Jobs::new(gateway.clone(), JobsConfig::default());
    McpServer::new(gateway, jobs)
}

/// A stdio client of the server, counting its request ids.
struct Client {
    stdio: StdioClient,
    next: u64,
}

impl Client {
    async fn connect(server: &McpServer) -> Client {
        Client {
            stdio: StdioClient::connect(server).await,
            next: 10,
        }
    }

    /// Calls `tool` with `arguments`; its structured result, checked to be no error.
    async fn call(&mut self, tool: &str, arguments: Value) -> Value {
        self.next += 1;
        let request = json!({"jsonrpc": "2.0", "id": self.next, "method": "tools/call",
                             "params": {"name": tool, "arguments": arguments}});
        let answer = self.stdio.send(request.to_string()).await;
        assert_eq!(answer["result"]["isError"], false, "{tool}: {answer}");
        answer["result"]["structuredContent"].clone()
    }

    async fn ten_echoes(&mut self) {
        for _ in 0..10 {
            let v = self.call("echo.echo", json!({"message": "hi"})).await;
            assert_eq!(v["message"], "hi", "{v}");
        }
    }

    async fn run(&mut self, runner: &str, code: &str) {
        let v = self.call(runner, json!({ "code": code })).await;
        assert_eq!(v["value"], 10, "{v}");
    }
}

/// (median, p99) of `runs` timings of `f`, after 10 warm-up runs.
async fn time<F, Fut>(runs: usize, mut f: F) -> (Duration, Duration)
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = ()>,
{
    for _ in 0..10 {
        f().await;
    }
    let mut samples = Vec::with_capacity(runs);
    for _ in 0..runs {
        let start = Instant::now();
        f().await;
        samples.push(start.elapsed());
    }
    samples.sort();
    let at = |q: f64| samples[((samples.len() as f64 - 1.0) * q) as usize];
    (at(0.5), at(0.99))
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

#[tokio::main]
async fn main() {
    let runs: usize = env_number("GLOVEBOX_BENCH_RUNS", 100);
    let data = tempfile::tempdir().expect("tempdir");
    let server = server(data.path()).await;
    let client = tokio::sync::Mutex::new(Client::connect(&server).await);

    println!(
        "one MCP client over stdio, in a session, the example hooks, every call logged durably; median (p99) of {runs}"
    );
    let (mcp, mcp99) = time(runs, || async { client.lock().await.ten_echoes().await }).await;
    let py = "code-python.run";
    let (nested, nested99) = time(runs, || async {
        client.lock().await.run(py, TEN_CALLS).await
    })
    .await;
    let (bare, bare99) = time(runs, || async {
        client.lock().await.run(py, NO_CALL).await
    })
    .await;
    let js = "code-js.run";
    let (js_nested, js_nested99) = time(runs, || async {
        client.lock().await.run(js, TEN_CALLS_JS).await
    })
    .await;
    let (js_bare, js_bare99) = time(runs, || async {
        client.lock().await.run(js, NO_CALL).await
    })
    .await;
    println!("{:<48} {:>9}  {:>9}", "", "median", "p99");
    let row = |name: &str, p50: Duration, p99: Duration| {
        println!("{name:<48} {:>6.2} ms  {:>6.2} ms", ms(p50), ms(p99));
    };
    row("10 MCP calls of echo.echo", mcp, mcp99);
    row(
        "1 code-python.run making 10 echo.echo calls",
        nested,
        nested99,
    );
    row("1 code-python.run making none", bare, bare99);
    row(
        "1 code-js.run making 10 echo.echo calls",
        js_nested,
        js_nested99,
    );
    row("1 code-js.run making none", js_bare, js_bare99);
    let per_mcp = mcp / 10;
    println!();
    for (runner, nested, bare) in [("Python", nested, bare), ("JavaScript", js_nested, js_bare)] {
        let per_nested = nested.saturating_sub(bare) / 10;
        println!(
            "{runner}: the script is {:.2}x the speed of the 10 MCP calls (goal >= 5x); \
             a nested call {:.0} µs against an MCP call's {:.0} µs, ratio {:.2} (goal <= 0.5)",
            mcp.as_secs_f64() / nested.as_secs_f64(),
            per_nested.as_secs_f64() * 1e6,
            per_mcp.as_secs_f64() * 1e6,
            per_nested.as_secs_f64() / per_mcp.as_secs_f64()
        );
    }
}
