//! `glovebox serve` over stdio, driven with raw JSON-RPC lines: the handshake,
//! the tool list, a call, bad requests, the default session and a job.

use std::io::{BufRead, BufReader, Write};
use std::path::PathBuf;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use serde_json::{Value, json};

use crate::util::{cache_dir, plugins};

/// A config serving echo, with a 1 KiB input limit.
fn config(dir: &std::path::Path) -> PathBuf {
    let path = dir.join("glovebox.toml");
    std::fs::write(
        &path,
        format!(
            "data_dir = \"data\"\nhooks = \"none\"\n[runtime]\ncache_dir = \"{}\"\nmax_input_bytes = \"1 KiB\"\n[[plugin]]\nmanifest = \"echo.toml\"\n",
            cache_dir().display()
        ),
    )
    .unwrap();
    std::fs::write(
        dir.join("echo.toml"),
        format!("name = \"echo\"\ncomponent = \"{}\"\n", plugins::TOOL_ECHO),
    )
    .unwrap();
    path
}

/// A running `glovebox serve` and the lines it writes to stdout.
pub(crate) struct Server {
    child: Child,
    stdin: Option<ChildStdin>,
    lines: mpsc::Receiver<String>,
}

impl Server {
    pub(crate) fn start(config: &std::path::Path) -> Server {
        let mut child = Command::new(env!("CARGO_BIN_EXE_glovebox"))
            .env_remove("GLOVEBOX_CONFIG")
            .env_remove("RUST_LOG")
            .arg("--config")
            .arg(config)
            .arg("serve")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("start glovebox serve");
        let stdout = child.stdout.take().unwrap();
        let (tx, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        Server {
            stdin: child.stdin.take(),
            child,
            lines,
        }
    }

    pub(crate) fn send(&mut self, message: Value) {
        let stdin = self.stdin.as_mut().unwrap();
        writeln!(stdin, "{message}").unwrap();
        stdin.flush().unwrap();
    }

    /// Sends a request and returns the response with its id.
    pub(crate) fn request(&mut self, id: u64, method: &str, params: Value) -> Value {
        self.send(json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        loop {
            let line = self
                .lines
                .recv_timeout(Duration::from_secs(120))
                .unwrap_or_else(|e| panic!("no answer to `{method}` (id {id}): {e}"));
            let v: Value = serde_json::from_str(&line)
                .unwrap_or_else(|e| panic!("stdout carries a line that is not JSON ({e}): {line}"));
            if v["id"] == json!(id) {
                return v;
            }
        }
    }

    pub(crate) fn call(&mut self, id: u64, tool: &str, arguments: Value) -> Value {
        self.request(
            id,
            "tools/call",
            json!({"name": tool, "arguments": arguments}),
        )
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[test]
fn serve_over_stdio_lists_calls_and_refuses_bad_requests() {
    let dir = tempfile::tempdir().unwrap();
    let mut server = Server::start(&config(dir.path()));

    let init = server.request(
        1,
        "initialize",
        json!({
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "glovebox-tests", "version": "0"},
        }),
    );
    assert_eq!(init["result"]["serverInfo"]["name"], "glovebox", "{init}");
    assert!(
        init["result"]["capabilities"]["tools"].is_object(),
        "{init}"
    );
    server.send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));

    let list = server.request(2, "tools/list", json!({}));
    let tools = list["result"]["tools"].as_array().expect("a tool list");
    let names: Vec<&str> = tools.iter().filter_map(|t| t["name"].as_str()).collect();
    for expected in ["echo.echo"].iter().chain(glovebox_mcp::BUILTINS.iter()) {
        assert!(
            names.contains(expected),
            "`{expected}` missing from {names:?}"
        );
    }
    for tool in tools {
        assert_eq!(tool["inputSchema"]["type"], "object", "{tool}");
    }
    let echo = tools.iter().find(|t| t["name"] == "echo.echo").unwrap();
    assert_eq!(
        echo["inputSchema"]["properties"]["message"]["type"],
        "string"
    );

    // A call returns the tool's output, as text and as structured content.
    let called = server.call(3, "echo.echo", json!({"message": "hello, mcp"}));
    let result = &called["result"];
    assert_eq!(result["isError"], false, "{called}");
    assert_eq!(result["structuredContent"]["message"], "hello, mcp");
    let text: Value = serde_json::from_str(result["content"][0]["text"].as_str().unwrap()).unwrap();
    assert_eq!(text["message"], "hello, mcp");

    // Bad requests are JSON-RPC errors that say what is wrong.
    let unknown = server.call(4, "nope.nothing", json!({}));
    assert_eq!(unknown["error"]["code"], -32602, "{unknown}");
    let message = unknown["error"]["message"].as_str().unwrap();
    assert!(
        message.contains("unknown tool `nope.nothing`") && message.contains("echo.echo"),
        "{message}"
    );
    let bad = server.call(5, "echo.echo", json!({"message": 5}));
    assert_eq!(bad["error"]["code"], -32602, "{bad}");
    assert!(
        bad["error"]["message"]
            .as_str()
            .unwrap()
            .contains("input schema"),
        "{bad}"
    );
    let big = server.call(6, "echo.echo", json!({"message": "x".repeat(2000)}));
    assert_eq!(big["error"]["code"], -32602, "{big}");
    assert!(
        big["error"]["message"]
            .as_str()
            .unwrap()
            .contains("max_input_bytes"),
        "{big}"
    );
    let args = server.call(7, "session_start", json!({"role": "boss", "project": "p"}));
    assert_eq!(args["error"]["code"], -32602, "{args}");
    assert!(
        args["error"]["message"]
            .as_str()
            .unwrap()
            .contains("unknown role `boss`"),
        "{args}"
    );

    // The call ran in the connection's default session; the refused ones
    // were not logged.
    let status = server.call(8, "session_status", json!({}));
    let state = &status["result"]["structuredContent"];
    assert!(
        state["name"].as_str().unwrap().starts_with("mcp-"),
        "{status}"
    );
    assert_eq!(state["role"], "workagent");
    assert_eq!(state["bound"], true);
    assert_eq!(state["counters"]["calls"], 1, "{status}");

    // A background job in the same session.
    let spawned = server.call(
        9,
        "job_spawn",
        json!({"tool": "echo.echo", "input": {"message": "later"}}),
    );
    let id = spawned["result"]["structuredContent"]["id"]
        .as_str()
        .unwrap_or_else(|| panic!("{spawned}"))
        .to_string();
    let waited = server.call(10, "job_wait", json!({"ids": [id], "timeout_ms": 60000}));
    let outcome = &waited["result"]["structuredContent"];
    assert_eq!(outcome["timed_out"], false, "{waited}");
    assert_eq!(outcome["done"][0]["status"], "completed", "{waited}");
    assert_eq!(outcome["done"][0]["result"]["output"]["message"], "later");

    // Closing stdin ends the server cleanly.
    server.stdin = None;
    let status = server.child.wait().unwrap();
    assert!(status.success(), "{status}");
}
