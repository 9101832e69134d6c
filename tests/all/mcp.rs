//! `glovebox serve` over stdio, driven with raw JSON-RPC lines: the handshake,
//! the tool list, a call, bad requests, the default session and a job.

use std::io::{BufRead, BufReader, Write};
use std::path::PathBuf;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use serde_json::{Value, json};

use crate::util::plugins;

/// A config serving echo, with a 1 KiB input limit.
fn config(dir: &std::path::Path) -> PathBuf {
    let path = dir.join("glovebox.toml");
    std::fs::write(
        &path,
        format!(
            "data_dir = \"data\"\nhooks = \"none\"\n[runtime]\n{}\nmax_input_bytes = \"1 KiB\"\n[[plugin]]\nmanifest = \"echo.toml\"\n",
            crate::util::cache_keys()
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
    /// Responses read while waiting for another one: requests in flight at
    /// once may be answered in any order.
    early: Vec<Value>,
}

impl Server {
    pub(crate) fn start(config: &std::path::Path) -> Server {
        Server::start_with(config, &[])
    }

    /// `glovebox serve` with more arguments (`--as NAME`).
    pub(crate) fn start_with(config: &std::path::Path, args: &[&str]) -> Server {
        let child = Command::new(env!("CARGO_BIN_EXE_glovebox"))
            .env_remove("GLOVEBOX_CONFIG")
            .env_remove("RUST_LOG")
            .arg("--config")
            .arg(config)
            .arg("serve")
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("start glovebox serve");
        Server::of(child)
    }

    /// A server already started with piped stdin and stdout (`glovebox dev`).
    pub(crate) fn of(mut child: Child) -> Server {
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
            early: Vec::new(),
        }
    }

    pub(crate) fn pid(&self) -> u32 {
        self.child.id()
    }

    pub(crate) fn send(&mut self, message: Value) {
        let stdin = self.stdin.as_mut().unwrap();
        writeln!(stdin, "{message}").unwrap();
        stdin.flush().unwrap();
    }

    /// Sends a request and returns the response with its id.
    pub(crate) fn request(&mut self, id: u64, method: &str, params: Value) -> Value {
        self.send(json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        self.response(id)
    }

    /// The next line the server writes within `within`, if any.
    pub(crate) fn next_line(&mut self, within: Duration) -> Option<Value> {
        let line = self.lines.recv_timeout(within).ok()?;
        Some(
            serde_json::from_str(&line)
                .unwrap_or_else(|e| panic!("stdout carries a line that is not JSON ({e}): {line}")),
        )
    }

    /// The response with `id` to a request already sent, and the lines
    /// without an id (notifications) that came before it.
    pub(crate) fn response_and_notifications(&mut self, id: u64) -> (Value, Vec<Value>) {
        let mut notifications = Vec::new();
        if let Some(v) = self.take_early(id) {
            return (v, notifications);
        }
        loop {
            let line = self
                .lines
                .recv_timeout(Duration::from_secs(120))
                .unwrap_or_else(|e| panic!("no answer to request {id}: {e}"));
            let v: Value = serde_json::from_str(&line)
                .unwrap_or_else(|e| panic!("stdout carries a line that is not JSON ({e}): {line}"));
            if v["id"] == json!(id) {
                return (v, notifications);
            }
            if v.get("id").is_none() {
                notifications.push(v);
            } else {
                self.keep_if_response(v);
            }
        }
    }

    /// The response with `id` to a request already sent (other lines
    /// skipped; other responses kept for their own wait).
    pub(crate) fn response(&mut self, id: u64) -> Value {
        if let Some(v) = self.take_early(id) {
            return v;
        }
        loop {
            let line = self
                .lines
                .recv_timeout(Duration::from_secs(120))
                .unwrap_or_else(|e| panic!("no answer to request {id}: {e}"));
            let v: Value = serde_json::from_str(&line)
                .unwrap_or_else(|e| panic!("stdout carries a line that is not JSON ({e}): {line}"));
            if v["id"] == json!(id) {
                return v;
            }
            self.keep_if_response(v);
        }
    }

    /// Why: two requests in flight at once (a call waiting for a human and
    /// the `session_end` that denies it) may be answered in either order;
    /// waiting for the first dropped the second's answer when it came
    /// first, and the wait for it then timed out.
    fn keep_if_response(&mut self, v: Value) {
        if v.get("id").is_some() && (v.get("result").is_some() || v.get("error").is_some()) {
            self.early.push(v);
        }
    }

    fn take_early(&mut self, id: u64) -> Option<Value> {
        let at = self.early.iter().position(|v| v["id"] == json!(id))?;
        Some(self.early.remove(at))
    }

    pub(crate) fn call(&mut self, id: u64, tool: &str, arguments: Value) -> Value {
        self.request(
            id,
            "tools/call",
            json!({"name": tool, "arguments": arguments}),
        )
    }
}

impl Server {
    /// Starts the server and completes the MCP handshake.
    pub(crate) fn initialized(config: &std::path::Path, args: &[&str]) -> Server {
        let mut server = Server::start_with(config, args);
        server.handshake();
        server
    }

    /// Completes the MCP handshake.
    pub(crate) fn handshake(&mut self) {
        let init = self.request(
            0,
            "initialize",
            json!({
                "protocolVersion": "2025-06-18",
                "capabilities": {},
                "clientInfo": {"name": "glovebox-tests", "version": "0"},
            }),
        );
        assert!(init["result"].is_object(), "{init}");
        self.send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
    }

    /// A built-in's structured result, which must be a success.
    pub(crate) fn ok(&mut self, id: u64, tool: &str, arguments: Value) -> Value {
        let answer = self.call(id, tool, arguments);
        assert_eq!(answer["result"]["isError"], false, "{tool}: {answer}");
        answer["result"]["structuredContent"].clone()
    }

    /// A built-in's tool error: (kind, message).
    pub(crate) fn refused(&mut self, id: u64, tool: &str, arguments: Value) -> (String, String) {
        let answer = self.call(id, tool, arguments);
        assert_eq!(answer["result"]["isError"], true, "{tool}: {answer}");
        let error = &answer["result"]["structuredContent"]["error"];
        (
            error["kind"].as_str().unwrap().to_string(),
            error["message"].as_str().unwrap().to_string(),
        )
    }

    /// Closes stdin and waits for a clean exit.
    fn close(mut self) {
        self.stdin = None;
        let status = self.child.wait().unwrap();
        assert!(status.success(), "{status}");
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

/// A config with echo, sleep (idempotent, 60 s deadline) and files (writes
/// under `work/` wait for a human: the destructive hook asks).
fn agents_config(dir: &std::path::Path) -> PathBuf {
    std::fs::create_dir_all(dir.join("work")).unwrap();
    let path = dir.join("glovebox.toml");
    std::fs::write(
        &path,
        format!(
            "data_dir = \"data\"\n[approvals]\nwait = 0\n[runtime]\n{}\n[[plugin]]\nmanifest = \"echo.toml\"\n[[plugin]]\nmanifest = \"sleep.toml\"\n[[plugin]]\nmanifest = \"files.toml\"\n[[hook]]\nname = \"destructive\"\ncomponent = \"{}\"\n[hook.settings]\nmode = \"ask\"\n",
            crate::util::cache_keys(),
            plugins::HOOK_DESTRUCTIVE,
        ),
    )
    .unwrap();
    for (name, component, extra) in [
        ("echo", plugins::TOOL_ECHO, ""),
        (
            "sleep",
            plugins::HOSTILE_SLEEP,
            "[limits]\ndeadline = \"60s\"\n[tools.sleep]\nidempotent = true\n",
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
    path
}

fn kinds(events: &Value) -> Vec<String> {
    events
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["kind"]["type"].as_str().unwrap().to_string())
        .collect()
}

#[test]
fn an_agent_notes_reports_usage_pauses_lists_and_pages_its_session_over_stdio() {
    let dir = tempfile::tempdir().unwrap();
    let config = agents_config(dir.path());
    let mut server = Server::initialized(&config, &[]);

    // session_start takes an expected duration and caps of its own.
    let state = server.ok(
        1,
        "session_start",
        json!({"role": "workagent", "project": "p", "name": "work", "tags": ["t1"],
               "expected_duration": "45m",
               "budget": {"cost": 1.5, "calls": 10, "wall": "30m"}}),
    );
    assert_eq!(state["expected_duration_ms"], 45 * 60 * 1000, "{state}");
    assert_eq!(
        state["budget"]["caps"],
        json!({"cost_micros": 1_500_000, "calls": 10, "wall_ms": 30 * 60 * 1000}),
        "{state}"
    );
    for (args, words) in [
        (json!({"expected_duration": "soon"}), "`expected_duration`"),
        (json!({"budget": {"wall": "forever"}}), "`budget.wall`"),
        (json!({"budget": {"cost": -1.0}}), "`budget.cost`"),
    ] {
        let mut args = args;
        args["role"] = json!("workagent");
        args["project"] = json!("p");
        let bad = server.call(2, "session_start", args);
        assert_eq!(bad["error"]["code"], -32602, "{bad}");
        assert!(
            bad["error"]["message"].as_str().unwrap().contains(words),
            "{bad}"
        );
    }

    assert_eq!(
        server.call(3, "echo.echo", json!({"message": "one"}))["result"]["isError"],
        false
    );
    let note = server.ok(4, "session_note", json!({"text": "halfway there"}));
    assert_eq!(
        note["kind"],
        json!({"type": "note", "text": "halfway there"})
    );
    let empty = server.call(5, "session_note", json!({"text": "  "}));
    assert_eq!(empty["error"]["code"], -32602, "{empty}");
    let usage = server.ok(
        6,
        "session_usage",
        json!({"tokens_in": 100, "tokens_out": 50, "model": "m-1", "cost": 0.25}),
    );
    assert_eq!(kinds(&usage["events"]), ["usage_reported"], "{usage}");
    assert_eq!(usage["events"][0]["kind"]["cost_micros"], 250_000);

    // The log, paged.
    let page = server.ok(7, "session_log", json!({"limit": 2}));
    assert_eq!(page["events"].as_array().unwrap().len(), 2, "{page}");
    assert_eq!(page["events"][0]["seq"], 1);
    let next = page["next_seq"].as_u64().unwrap();
    assert_eq!(next, 3);
    let rest = server.ok(8, "session_log", json!({"from_seq": next, "limit": 500}));
    let rest_kinds = kinds(&rest["events"]);
    assert_eq!(rest["events"][0]["seq"], 3, "{rest}");
    assert!(
        rest_kinds.ends_with(&["note".to_string(), "usage_reported".to_string()]),
        "{rest_kinds:?}"
    );
    assert_eq!(rest["next_seq"], Value::Null);
    let big = server.call(9, "session_log", json!({"limit": 501}));
    assert_eq!(big["error"]["code"], -32602, "{big}");
    assert!(
        big["error"]["message"]
            .as_str()
            .unwrap()
            .contains("`limit` is 501, more than the maximum of 500"),
        "{big}"
    );

    // The agent pauses its own session, for its own reasons, and lifts it.
    let paused = server.ok(10, "session_pause", json!({"reason": "waiting for review"}));
    assert_eq!(paused["status"], "paused", "{paused}");
    assert_eq!(paused["paused_reason"], "waiting for review");
    let call = server.call(11, "echo.echo", json!({"message": "two"}));
    assert_eq!(call["result"]["isError"], true, "{call}");
    let listed = server.ok(12, "session_list", json!({"status": "paused"}));
    let names: Vec<&str> = listed["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|s| s["name"].as_str())
        .collect();
    assert_eq!(names, ["work"], "{listed}");
    let none = server.ok(13, "session_list", json!({"tags": ["t1", "nope"]}));
    assert_eq!(none["sessions"], json!([]), "{none}");
    let tagged = server.ok(14, "session_list", json!({"tags": ["t1"]}));
    assert_eq!(tagged["sessions"].as_array().unwrap().len(), 1, "{tagged}");
    let resumed = server.ok(15, "session_resume", json!({"session": "work"}));
    assert_eq!(resumed["state"]["status"], "active", "{resumed}");

    // Unknown ids: refused, saying what and how to fix it.
    let (kind, message) = server.refused(16, "approval_status", json!({"id": "ap-nope"}));
    assert_eq!(kind, "approval_not_found");
    assert!(message.contains("no approval `ap-nope`"), "{message}");
    let (kind, message) = server.refused(17, "session_rerun", json!({"call_id": "c-nope"}));
    assert_eq!(kind, "session_invalid_input");
    assert!(
        message.contains("no interrupted call `c-nope`"),
        "{message}"
    );

    // Reported model cost feeds the session's cost cap: past it, the host pauses.
    let over = server.ok(18, "session_usage", json!({"cost": 2.0}));
    let over_kinds = kinds(&over["events"]);
    assert!(
        over_kinds.contains(&"budget_exceeded".to_string()),
        "{over}"
    );
    let status = server.ok(19, "session_status", json!({}));
    assert_eq!(status["status"], "paused", "{status}");
    assert_eq!(status["budget"]["exceeded"], "cost", "{status}");
    server.close();
}

#[test]
fn a_connections_default_session_is_paused_when_the_connection_goes_away() {
    let dir = tempfile::tempdir().unwrap();
    let config = agents_config(dir.path());
    let mut server = Server::initialized(&config, &[]);
    let called = server.call(1, "echo.echo", json!({"message": "hi"}));
    assert_eq!(called["result"]["isError"], false, "{called}");
    let state = server.ok(2, "session_status", json!({}));
    assert_eq!(state["status"], "active", "{state}");
    let name = state["name"].as_str().unwrap().to_string();
    // A session the agent started itself is left as it is.
    server.ok(
        3,
        "session_start",
        json!({"role": "workagent", "project": "p", "name": "mine"}),
    );
    server.call(4, "echo.echo", json!({"message": "in mine"}));
    server.close();

    let mut server = Server::initialized(&config, &[]);
    let paused = server.ok(1, "session_list", json!({"status": "paused"}));
    let names: Vec<&str> = paused["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|s| s["name"].as_str())
        .collect();
    assert_eq!(names, [name.as_str()], "{paused}");
    let log = server.ok(2, "session_log", json!({"session": name}));
    let last = log["events"].as_array().unwrap().last().unwrap().clone();
    assert_eq!(last["kind"]["type"], "paused", "{last}");
    let reason = last["kind"]["reason"].as_str().unwrap();
    assert!(
        reason.contains("MCP connection") && reason.contains("went away"),
        "{reason}"
    );
    let mine = server.ok(3, "session_status", json!({"session": "mine"}));
    assert_eq!(mine["status"], "active", "{mine}");
    // Its owner may resume it.
    let resumed = server.ok(4, "session_resume", json!({"session": name}));
    assert_eq!(resumed["state"]["status"], "active", "{resumed}");
    server.close();
}

#[test]
fn another_agent_cannot_note_pause_page_rerun_or_see_approvals_of_the_first_ones() {
    let dir = tempfile::tempdir().unwrap();
    let config = agents_config(dir.path());
    for name in ["alice", "bob"] {
        let out = Command::new(env!("CARGO_BIN_EXE_glovebox"))
            .env_remove("GLOVEBOX_CONFIG")
            .arg("--config")
            .arg(&config)
            .args(["principal", "add", name, "--kind", "agent"])
            .args(["--roles", "workagent", "--projects", "p"])
            .output()
            .unwrap();
        assert!(out.status.success(), "{out:?}");
    }
    let alice = ["--as", "alice"];
    let bob = ["--as", "bob"];

    // Alice: a call waiting for approval, and a call the host's death interrupts.
    let mut server = Server::initialized(&config, &alice);
    server.ok(
        1,
        "session_start",
        json!({"role": "workagent", "project": "p", "name": "alice-ask"}),
    );
    let waiting = server.call(
        2,
        "files.write",
        json!({"path": "/data/x.txt", "content": "x"}),
    );
    let approval = waiting["result"]["structuredContent"]["awaiting_approval"]["approval_id"]
        .as_str()
        .unwrap_or_else(|| panic!("{waiting}"))
        .to_string();
    server.ok(
        3,
        "session_start",
        json!({"role": "workagent", "project": "p", "name": "alice-work"}),
    );
    server.send(json!({"jsonrpc": "2.0", "id": 4, "method": "tools/call",
                       "params": {"name": "sleep.sleep", "arguments": {"seconds": 4}}}));
    std::thread::sleep(Duration::from_millis(2000));
    drop(server); // SIGKILL

    let mut server = Server::initialized(&config, &alice);
    let resumed = server.ok(1, "session_resume", json!({"session": "alice-work"}));
    let call_id = resumed["interrupted_calls"][0]["call_id"]
        .as_str()
        .unwrap_or_else(|| panic!("{resumed}"))
        .to_string();
    let alice_id = resumed["state"]["id"].as_str().unwrap().to_string();
    server.close();

    // Bob: every one of alice's sessions and approvals is as if it did not exist.
    let mut server = Server::initialized(&config, &bob);
    let mut id = 0;
    let mut refused = |server: &mut Server, tool: &str, args: Value| {
        id += 1;
        server.refused(id, tool, args)
    };
    for key in ["alice-work", alice_id.as_str()] {
        let calls = [
            (
                "session_pause",
                json!({"session": key, "reason": "mine now"}),
            ),
            ("session_log", json!({"session": key})),
            ("session_rerun", json!({"session": key, "call_id": call_id})),
        ];
        for (tool, args) in calls {
            let (kind, message) = refused(&mut server, tool, args.clone());
            assert_eq!(kind, "session_not_found", "{tool}: {message}");
            let mut absent = args;
            absent["session"] = json!("no-such-session");
            let (_, absent) = refused(&mut server, tool, absent);
            assert_eq!(message, absent.replace("no-such-session", key), "{tool}");
        }
    }
    let (kind, message) = refused(&mut server, "approval_status", json!({"id": approval}));
    assert_eq!(kind, "approval_not_found");
    let (_, absent) = refused(
        &mut server,
        "approval_status",
        json!({"id": "ap-000000000000"}),
    );
    assert_eq!(message, absent.replace("ap-000000000000", &approval));
    let listed = server.ok(100, "session_list", json!({}));
    assert!(
        listed["sessions"]
            .as_array()
            .unwrap()
            .iter()
            .all(|s| s["owner"] != "alice"),
        "{listed}"
    );
    server.close();

    // Nothing of alice's changed: she still sees and re-runs her own.
    let mut server = Server::initialized(&config, &alice);
    let status = server.ok(1, "approval_status", json!({"id": approval}));
    assert_eq!(status["status"]["state"], "pending", "{status}");
    assert_eq!(status["tool"], "files.write");
    let log = server.ok(2, "session_log", json!({"session": "alice-work"}));
    assert!(
        !kinds(&log["events"]).contains(&"paused".to_string()),
        "{log}"
    );
    // Pausing it again does not make the host's pause hers to lift.
    let (kind, message) = server.refused(
        5,
        "session_pause",
        json!({"session": "alice-ask", "reason": "mine"}),
    );
    assert_eq!(kind, "session_illegal_transition", "{message}");
    let ask = server.ok(6, "session_status", json!({"session": "alice-ask"}));
    assert_eq!(ask["paused_by"], Value::Null, "{ask}");
    // A re-run does not lift a pause the host took (the approval wait).
    let (kind, message) = server.refused(
        4,
        "session_rerun",
        json!({"session": "alice-ask", "call_id": call_id}),
    );
    assert_eq!(kind, "not_allowed", "{message}");
    assert!(message.contains("only an operator"), "{message}");
    let rerun = server.ok(
        3,
        "session_rerun",
        json!({"session": "alice-work", "call_id": call_id}),
    );
    assert!(rerun.is_object(), "{rerun}");
    server.close();
}

/// Both revisions over one stdio pipe, each request choosing: `server/discover`
/// lists 2026-07-28 beside the revisions with `initialize`; a 2026-07-28
/// request with no handshake is served and runs in the principal's default
/// session (`mcp-default`); a revision nobody serves is refused with -32022
/// and the revisions served; and a client that goes the old way still
/// connects with `initialize`.
#[test]
fn both_revisions_are_served_each_request_choosing() {
    let dir = tempfile::tempdir().unwrap();
    let path = config(dir.path());
    let mut server = Server::start(&path);
    let modern = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": {"name": "probe", "version": "0"},
    });
    let discovered = server.request(1, "server/discover", json!({"_meta": modern}));
    let versions = discovered["result"]["supportedVersions"]
        .as_array()
        .unwrap_or_else(|| panic!("{discovered}"));
    for served in ["2025-11-25", "2026-07-28"] {
        assert!(versions.contains(&json!(served)), "{discovered}");
    }
    let listed = server.request(2, "tools/list", json!({"_meta": modern}));
    assert!(
        listed["result"]["tools"].as_array().unwrap().len() > 5,
        "{listed}"
    );
    // The cache hints 2026-07-28 asks for: immediately stale (a reload may
    // change the list), for this caller only.
    assert_eq!(listed["result"]["ttlMs"], 0, "{listed}");
    assert_eq!(listed["result"]["cacheScope"], "private", "{listed}");
    let called = server.request(
        3,
        "tools/call",
        json!({"name": "echo.echo", "arguments": {"message": "stateless"}, "_meta": modern}),
    );
    assert_eq!(called["result"]["isError"], false, "{called}");
    let mut with_status = modern.clone();
    with_status["io.glovebox/session"] = json!("mcp-default");
    let status = server.request(
        4,
        "tools/call",
        json!({"name": "session_status", "arguments": {}, "_meta": with_status}),
    );
    let status: Value =
        serde_json::from_str(status["result"]["content"][0]["text"].as_str().unwrap()).unwrap();
    assert_eq!(status["name"], "mcp-default", "{status}");
    assert_eq!(status["counters"]["calls"], 1, "{status}");
    let mut future = modern.clone();
    future["io.modelcontextprotocol/protocolVersion"] = json!("2099-01-01");
    let refused = server.request(5, "tools/list", json!({"_meta": future}));
    assert_eq!(refused["error"]["code"], -32022, "{refused}");
    assert!(
        refused["error"]["data"]["supported"]
            .as_array()
            .unwrap()
            .contains(&json!("2026-07-28")),
        "{refused}"
    );
    server.close();

    // The old way, `initialize` and an MCP session, on a new pipe.
    let mut server = Server::start(&path);
    let init = server.request(
        1,
        "initialize",
        json!({
            "protocolVersion": "2025-11-25",
            "capabilities": {},
            "clientInfo": {"name": "glovebox-tests", "version": "0"},
        }),
    );
    assert_eq!(init["result"]["protocolVersion"], "2025-11-25", "{init}");
    server.send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
    let answer = server.call(2, "echo.echo", json!({"message": "hi"}));
    assert_eq!(answer["result"]["isError"], false, "{answer}");
    server.close();
}

/// `subscriptions/listen` (2026-07-28): acknowledged with what is served;
/// a call appended to a watched session's log is heard of as
/// `notifications/resources/updated` with its URI, a session nobody
/// watches is not, and a reload (SIGHUP) as `tools/list_changed`. The
/// 2025-11-25 `initialize` does not advertise what only listening serves.
#[test]
fn a_listening_client_hears_of_a_watched_log_and_of_a_reload() {
    let dir = tempfile::tempdir().unwrap();
    let path = config(dir.path());
    let mut server = Server::start(&path);
    let modern = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": {"name": "listener", "version": "0"},
    });
    let discovered = server.request(1, "server/discover", json!({"_meta": modern}));
    let caps = &discovered["result"]["capabilities"];
    assert_eq!(caps["tools"]["listChanged"], true, "{discovered}");
    assert_eq!(caps["resources"]["subscribe"], true, "{discovered}");
    let start = |server: &mut Server, id: u64, name: &str| -> String {
        let answer = server.request(
            id,
            "tools/call",
            json!({"name": "session_start", "arguments": {"role": "workagent", "project": "p", "name": name}, "_meta": modern}),
        );
        answer["result"]["structuredContent"]["id"]
            .as_str()
            .unwrap_or_else(|| panic!("{answer}"))
            .to_string()
    };
    let watched = start(&mut server, 2, "watched");
    let other = start(&mut server, 3, "other");
    let uri = format!("glovebox://sessions/{watched}/log");
    server.send(json!({"jsonrpc": "2.0", "id": 10, "method": "subscriptions/listen", "params": {
        "notifications": {"toolsListChanged": true, "resourceSubscriptions": [uri, "glovebox://nothing"]},
        "_meta": modern}}));
    let acknowledged = loop {
        let line = server
            .next_line(Duration::from_secs(30))
            .expect("an acknowledgment");
        if line["method"] == "notifications/subscriptions/acknowledged" {
            break line;
        }
    };
    let honored = &acknowledged["params"]["notifications"];
    assert_eq!(honored["toolsListChanged"], true, "{acknowledged}");
    assert_eq!(
        honored["resourceSubscriptions"],
        json!([uri]),
        "{acknowledged}"
    );

    // A call in the other session: nothing; in the watched one: its URI.
    let in_session = |session: &str| {
        let mut meta = modern.clone();
        meta["io.glovebox/session"] = json!(session);
        json!({"name": "echo.echo", "arguments": {"message": "hi"}, "_meta": meta})
    };
    server.send(
        json!({"jsonrpc": "2.0", "id": 11, "method": "tools/call", "params": in_session(&other)}),
    );
    let mut heard = Vec::new();
    let deadline = std::time::Instant::now() + Duration::from_secs(2);
    while std::time::Instant::now() < deadline {
        if let Some(line) = server.next_line(Duration::from_millis(200)) {
            heard.push(line);
        }
    }
    assert!(
        !heard
            .iter()
            .any(|l| l["method"] == "notifications/resources/updated"),
        "{heard:?}"
    );
    server.send(
        json!({"jsonrpc": "2.0", "id": 12, "method": "tools/call", "params": in_session(&watched)}),
    );
    let updated = loop {
        let line = server
            .next_line(Duration::from_secs(10))
            .expect("an update");
        if line["method"] == "notifications/resources/updated" {
            break line;
        }
    };
    assert_eq!(updated["params"]["uri"], uri, "{updated}");

    let hup = Command::new("kill")
        .args(["-HUP", &server.pid().to_string()])
        .status()
        .unwrap();
    assert!(hup.success());
    let changed = loop {
        let line = server
            .next_line(Duration::from_secs(30))
            .expect("tools/list_changed after the reload");
        if line["method"] == "notifications/tools/list_changed" {
            break line;
        }
    };
    assert!(
        changed["params"].is_null() || changed["params"].is_object(),
        "{changed}"
    );
    server.close();

    // The old lifecycle is not told it could listen.
    let mut server = Server::start(&path);
    let init = server.request(
        1,
        "initialize",
        json!({"protocolVersion": "2025-11-25", "capabilities": {},
               "clientInfo": {"name": "old", "version": "0"}}),
    );
    let caps = &init["result"]["capabilities"];
    assert!(caps["tools"].get("listChanged").is_none(), "{init}");
    assert!(caps["resources"].get("subscribe").is_none(), "{init}");
    server.close();
}
