//! The operator plane while a server runs: every command that opens the
//! store reaches the running server through its control socket with the
//! same output and exit code as without one; an operator approves or denies
//! a call an MCP client is waiting on, and is recorded as the approver;
//! `glovebox reload` (and SIGHUP) swaps the config, and a broken one is
//! refused while the old one keeps serving. All over the real binary.

use std::path::Path;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::mcp::Server;
use crate::util::{self, Site, plugins};

/// The uid this test runs as: the operator the server records.
fn operator() -> String {
    let out = std::process::Command::new("id").arg("-u").output().unwrap();
    format!("cli:{}", String::from_utf8_lossy(&out.stdout).trim())
}

fn mcp_server(site: &Site) -> Server {
    let server = Server::initialized(&site.config(), &[]);
    site.wait_for_control_socket();
    server
}

/// The commands an operator runs against a data dir, read-only ones whose
/// output does not depend on when they run.
const READS: &[&[&str]] = &[
    &["session", "show", "s1"],
    &["session", "list", "--json"],
    &["session", "budget", "s1"],
    &["log", "verify", "s1"],
    &["log", "show", "s1"],
    &["log", "export", "s1"],
    &["approvals", "--all", "--json"],
    &["job", "list"],
    &["rescue", "list"],
    &["context", "list", "--project", "demo"],
    &["billing", "--json", "--by", "role"],
    &["policy", "replay", "--session", "s1"],
    &["notify", "status", "--json"],
    &["notify", "status"],
    &["schedule", "list", "--json"],
    // Refusals: the same words and exit codes.
    &["session", "show", "nosuch"],
    &["log", "verify", "nosuch"],
    &["job", "status", "job-nosuch"],
    &["approve", "ap-nosuch"],
];

#[test]
fn every_store_command_answers_the_same_through_a_running_server() {
    let site = Site::new(false);
    let (code, _, err) = site.run(&[
        "session",
        "start",
        "--role",
        "workagent",
        "--project",
        "demo",
        "--name",
        "s1",
    ]);
    assert_eq!(code, 0, "{err}");
    let (code, _, err) = site.run(&[
        "call",
        "--session",
        "s1",
        "echo.echo",
        "--input",
        r#"{"message":"hi"}"#,
    ]);
    assert_eq!(code, 0, "{err}");

    // Without a server: each command opens the store itself.
    let alone: Vec<(i32, String, String)> = READS.iter().map(|args| site.run(args)).collect();

    let server = mcp_server(&site);
    for (args, before) in READS.iter().zip(&alone) {
        let now = site.run(args);
        assert!(
            !now.2.contains("in use by another glovebox process"),
            "{args:?} did not reach the server: {}",
            now.2
        );
        assert_eq!(now.0, before.0, "exit code of {args:?}: {}", now.2);
        assert_eq!(now.1, before.1, "stdout of {args:?}");
        assert_eq!(now.2, before.2, "stderr of {args:?}");
    }

    // Writes work too, and land in the log the server keeps.
    for args in [
        &[
            "session",
            "usage",
            "s1",
            "--tokens-in",
            "10",
            "--cost",
            "0.5",
        ][..],
        &["session", "budget", "s1", "--cost", "20"],
        &["session", "pause", "s1", "--reason", "operator looks"],
        &["session", "resume", "s1"],
        &["session", "tag", "s1", "--add", "reviewed"],
    ] {
        let (code, _, err) = site.run(args);
        assert_eq!(code, 0, "{args:?}: {err}");
    }
    // Input from stdin and from a file is read here and sent along.
    let input = site.path().join("input.json");
    std::fs::write(&input, r#"{"message":"from a file"}"#).unwrap();
    let (code, out, err) = site.run(&[
        "call",
        "--session",
        "s1",
        "echo.echo",
        "--input-file",
        input.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("from a file"), "{out}");
    let mut child = util::glovebox()
        .arg("--config")
        .arg(site.config())
        .args([
            "job",
            "spawn",
            "--session",
            "s1",
            "echo.echo",
            "--input",
            "-",
        ])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    use std::io::Write as _;
    child
        .stdin
        .take()
        .unwrap()
        .write_all(br#"{"message":"from stdin"}"#)
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success());
    let job: Value = serde_json::from_slice(&out.stdout).unwrap();
    let id = job["id"].as_str().unwrap();
    // The server's own runner runs it; `job wait` only waits.
    let (code, out, err) = site.run(&["job", "wait", id, "--timeout", "60s"]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("from stdin"), "{out}");

    let (code, _, err) = site.run(&["rescue", "open", "s1"]);
    assert_eq!(code, 0, "{err}");

    let (_, log, _) = site.run(&["log", "export", "s1"]);
    for kind in [
        "usage_reported",
        "cap_raised",
        "paused",
        "resumed",
        "rescue",
    ] {
        assert!(log.contains(kind), "no {kind} in the log: {log}");
    }
    let (code, out, err) = site.run(&["log", "verify", "s1"]);
    assert_eq!(code, 0, "{out}{err}");
    drop(server);

    // With the server gone, the commands open the store themselves again.
    let (code, out, err) = site.run(&["session", "show", "s1"]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("reviewed"), "{out}");
}

/// A config whose `files.write` waits for a human, served to the built-in
/// agent over stdio.
fn approval_site(extra: &str) -> Site {
    let site = Site::with_plugins(&[(
        "files.toml",
        format!(
            "name = \"files\"\ncomponent = \"{}\"\n[[fs]]\nhost = \"work\"\nguest = \"/data\"\naccess = \"read-write\"\n",
            plugins::TOOL_FILES
        ),
    )]);
    set_approval_config(&site, extra);
    std::fs::create_dir(site.path().join("work")).unwrap();
    site
}

/// The site's config with `extra` tables and the destructive hook asking.
fn set_approval_config(site: &Site, extra: &str) {
    site.set_config(&format!(
        "{extra}[[hook]]\nname = \"destructive\"\ncomponent = \"{}\"\n[hook.settings]\nmode = \"ask\"\n",
        plugins::HOOK_DESTRUCTIVE
    ));
}

/// The one pending approval's id, once there is one.
fn pending_approval(site: &Site) -> Value {
    let start = Instant::now();
    loop {
        let list = site.json(&["approvals", "--json"]);
        if let Some(first) = list.as_array().and_then(|l| l.first()) {
            return first.clone();
        }
        // Only a bound on a hang, as the suite's other waits on a server.
        if start.elapsed() > Duration::from_secs(120) {
            let (_, all, _) = site.run(&["approvals", "--all", "--json"]);
            let (_, sessions, _) = site.run(&["session", "list", "--json"]);
            panic!("no pending approval after 120 s; every approval: {all}; sessions: {sessions}");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn an_operator_settles_a_call_an_mcp_client_waits_on_and_is_recorded() {
    let site = approval_site("");
    let mut server = mcp_server(&site);
    let input = json!({"path": "/data/notes.txt", "content": "approved"});

    // The client's call waits for the operator (`[approvals] wait`, 5 min).
    server.send(json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
        "params": {"name": "files.write", "arguments": input}}));
    let approval = pending_approval(&site);
    assert_eq!(approval["tool"], "files.write");
    assert!(!site.path().join("work/notes.txt").exists());
    let id = approval["id"].as_str().unwrap();
    let (code, out, err) = site.run(&["approve", id]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("\"written\": 8"), "{out}");
    // The client gets the result of the call it made.
    let answer = server.response(1);
    assert_eq!(answer["result"]["isError"], false, "{answer}");
    assert_eq!(
        answer["result"]["structuredContent"]["written"], 8,
        "{answer}"
    );
    assert_eq!(
        std::fs::read_to_string(site.path().join("work/notes.txt")).unwrap(),
        "approved"
    );
    let all = site.json(&["approvals", "--all", "--json"]);
    assert_eq!(all[0]["status"]["state"], "approved", "{all}");
    assert_eq!(all[0]["status"]["by"], operator(), "{all}");

    // A denial reaches the waiting client with who denied it and why.
    let input = json!({"path": "/data/other.txt", "content": "no"});
    server.send(json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
        "params": {"name": "files.write", "arguments": input}}));
    let approval = pending_approval(&site);
    let id = approval["id"].as_str().unwrap();
    let (code, out, err) = site.run(&["deny", id, "--reason", "not today"]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("not today"), "{out}");
    let answer = server.response(2);
    assert_eq!(answer["result"]["isError"], true, "{answer}");
    let message = answer["result"]["structuredContent"]["denied"]["reason"]
        .as_str()
        .unwrap_or_else(|| panic!("{answer}"))
        .to_string();
    assert!(
        message.contains(&format!("denied by {}", operator())),
        "{message}"
    );
    assert!(message.contains("not today"), "{message}");
    assert!(!site.path().join("work/other.txt").exists());
    let (_, log, _) = site.run(&["log", "export", approval["session"].as_str().unwrap()]);
    assert!(log.contains(&format!("denied by {}", operator())), "{log}");
}

#[test]
fn a_call_answers_at_once_when_approvals_do_not_wait() {
    let site = approval_site("[approvals]\nwait = 0\n");
    let mut server = mcp_server(&site);
    let answer = server.call(
        1,
        "files.write",
        json!({"path": "/data/notes.txt", "content": "later"}),
    );
    assert_eq!(answer["result"]["isError"], true, "{answer}");
    assert!(
        answer["result"]["structuredContent"]["awaiting_approval"]["approval_id"].is_string(),
        "{answer}"
    );
    // Settled later from the command line, it runs then.
    let approval = pending_approval(&site);
    let (code, _, err) = site.run(&["approve", approval["id"].as_str().unwrap()]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(
        std::fs::read_to_string(site.path().join("work/notes.txt")).unwrap(),
        "later"
    );
}

fn tool_names(server: &mut Server, id: u64) -> Vec<String> {
    let list = server.request(id, "tools/list", json!({}));
    list["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap().to_string())
        .filter(|n| n.contains('.'))
        .collect()
}

fn add_plugin(config: &Path, manifest: &str) {
    let mut text = std::fs::read_to_string(config).unwrap();
    text += &format!("[[plugin]]\nmanifest = \"{manifest}\"\n");
    std::fs::write(config, text).unwrap();
}

#[test]
fn reload_swaps_the_config_and_refuses_a_broken_one_while_the_old_one_serves() {
    let site = Site::with_plugins(&[(
        "echo.toml",
        format!("name = \"echo\"\ncomponent = \"{}\"\n", plugins::TOOL_ECHO),
    )]);
    std::fs::write(
        site.path().join("files.toml"),
        format!(
            "name = \"files\"\ncomponent = \"{}\"\n",
            plugins::TOOL_FILES
        ),
    )
    .unwrap();
    // No server: nothing to reload, and the error says so.
    let (code, _, err) = site.run(&["reload"]);
    assert_eq!(code, 2);
    assert!(err.contains("no glovebox server is running"), "{err}");

    let mut server = mcp_server(&site);
    assert_eq!(tool_names(&mut server, 1), ["echo.echo"]);

    // A broken config is refused with its error; the old one keeps serving.
    let good = std::fs::read_to_string(site.config()).unwrap();
    std::fs::write(site.config(), format!("{good}[bogus]\n")).unwrap();
    let (code, _, err) = site.run(&["reload"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("bogus"), "{err}");
    assert!(err.contains("keeps serving the config it had"), "{err}");
    let answer = server.call(2, "echo.echo", json!({"message": "still here"}));
    assert_eq!(answer["result"]["isError"], false, "{answer}");

    // What a running server cannot change is refused too, saying what.
    std::fs::write(
        site.config(),
        good.replace("[runtime]\n", "[runtime]\nmax_concurrent_calls = 3\n"),
    )
    .unwrap();
    let (code, _, err) = site.run(&["reload"]);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("changes [runtime]") && err.contains("restart"),
        "{err}"
    );

    // A good one is served from now on: the new plugin's tools are listed.
    std::fs::write(site.config(), &good).unwrap();
    add_plugin(&site.config(), "files.toml");
    let (code, out, err) = site.run(&["reload"]);
    assert_eq!(code, 0, "{err}");
    assert!(out.starts_with("reloaded `"), "{out}");
    let mut names = tool_names(&mut server, 3);
    names.sort();
    assert!(names.contains(&"files.write".to_string()), "{names:?}");

    // SIGHUP does the same: back to the echo plugin alone.
    std::fs::write(site.config(), &good).unwrap();
    let pid = server.pid();
    let status = std::process::Command::new("kill")
        .args(["-HUP", &pid.to_string()])
        .status()
        .unwrap();
    assert!(status.success());
    let start = Instant::now();
    while tool_names(&mut server, 4) != ["echo.echo"] {
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "SIGHUP did not reload"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

#[test]
fn an_entry_the_operator_adds_while_serving_is_found_by_an_agents_context_search() {
    let site = Site::new(false);
    let mut server = mcp_server(&site);
    let (code, _, err) = site.run(&[
        "context",
        "add",
        "--project",
        "demo",
        "never write to the production bucket on Fridays",
    ]);
    assert_eq!(code, 0, "{err}");
    let search = |server: &mut Server, id: u64, args: Value| {
        let answer = server.call(id, "context_search", args);
        assert_eq!(answer["result"]["isError"], false, "{answer}");
        answer["result"]["structuredContent"]["entries"].clone()
    };
    let found = search(
        &mut server,
        1,
        json!({"query": "PRODUCTION fridays", "project": "demo"}),
    );
    assert_eq!(found.as_array().unwrap().len(), 1, "{found}");
    assert_eq!(found[0]["project"], "demo");
    let none = search(&mut server, 2, json!({"query": "production mondays"}));
    assert_eq!(none, json!([]));
}

#[test]
fn an_approval_left_pending_past_expire_after_is_denied_and_cannot_be_approved() {
    let site = approval_site("[approvals]\nwait = 0\nexpire_after = \"1s\"\n");
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
    assert_eq!(code, 0, "{err}");
    let write = |path: &str| {
        let input = format!(r#"{{"path":"{path}","content":"late"}}"#);
        let (code, _, err) =
            site.run(&["call", "--session", "w", "files.write", "--input", &input]);
        assert_eq!(code, 9, "awaits approval: {err}");
        pending_approval(&site)["id"].as_str().unwrap().to_string()
    };
    // Approved too late, from the command line: refused, and denied by the host.
    let id = write("/data/a.txt");
    std::thread::sleep(Duration::from_millis(1200));
    let (code, _, err) = site.run(&["approve", &id]);
    assert_ne!(code, 0);
    assert!(err.contains("has expired"), "{err}");
    assert!(!site.path().join("work/a.txt").exists());
    let all = site.json(&["approvals", "--all", "--json"]);
    assert_eq!(all[0]["status"]["state"], "denied", "{all}");
    assert_eq!(all[0]["status"]["by"], "host", "{all}");
    let show = site.json(&["session", "show", "w"]);
    assert_eq!(show["status"], "active", "{show}");

    // While serving, the sweep expires one nobody touched.
    set_approval_config(
        &site,
        "[approvals]\nwait = 0\nexpire_after = \"1s\"\n[detector]\nsweep_interval = \"200ms\"\n",
    );
    let _server = mcp_server(&site);
    let id = write("/data/b.txt");
    let start = Instant::now();
    loop {
        let all = site.json(&["approvals", "--all", "--json"]);
        let this = all
            .as_array()
            .unwrap()
            .iter()
            .find(|a| a["id"] == id.as_str())
            .unwrap()
            .clone();
        if this["status"]["state"] == "denied" {
            assert_eq!(this["status"]["by"], "host", "{this}");
            break;
        }
        assert!(
            start.elapsed() < Duration::from_secs(30),
            "never expired: {this}"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// Every event of a log names the principal that caused it: the agent for
/// its session, calls, notes and jobs; the operator (`cli:<uid>`) for what
/// it does through the server or without one, and for the call it approved;
/// the host for what it finds by itself. A forged `by` breaks the chain.
#[test]
fn every_event_names_the_principal_that_caused_it() {
    let site = approval_site("");
    let mut server = mcp_server(&site);
    let me = operator();
    let call = |server: &mut Server, id: u64, name: &str, args: Value| {
        let answer = server.call(id, name, args);
        assert_eq!(answer["result"]["isError"], false, "{answer}");
        answer
    };
    call(
        &mut server,
        1,
        "session_start",
        json!({"name": "mine", "role": "workagent", "project": "demo"}),
    );
    call(&mut server, 2, "session_note", json!({"text": "thinking"}));
    let job = call(
        &mut server,
        3,
        "job_spawn",
        json!({"tool": "files.list", "input": {"path": "/data"}}),
    );
    let job_id = job["result"]["structuredContent"]["id"]
        .as_str()
        .unwrap_or_else(|| panic!("{job}"))
        .to_string();
    call(
        &mut server,
        4,
        "job_wait",
        json!({"ids": [job_id], "timeout_ms": 60000}),
    );
    // A destructive call waits; the operator approves it through the server.
    server.send(json!({"jsonrpc": "2.0", "id": 5, "method": "tools/call",
        "params": {"name": "files.write", "arguments": {"path": "/data/a.txt", "content": "x"}}}));
    let approval = pending_approval(&site);
    let (code, _, err) = site.run(&["approve", approval["id"].as_str().unwrap()]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(server.response(5)["result"]["isError"], false);
    let (code, _, err) = site.run(&["session", "budget", "mine", "--calls", "500"]);
    assert_eq!(code, 0, "{err}");
    drop(server);
    // Without a server, the command line writes as its user too.
    let (code, _, err) = site.run(&["session", "tag", "mine", "--add", "audited"]);
    assert_eq!(code, 0, "{err}");

    let (_, export, _) = site.run(&["log", "export", "mine"]);
    let events: Vec<Value> = export
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    fn by(event: &Value) -> &str {
        event["by"]
            .as_str()
            .unwrap_or_else(|| panic!("no `by`: {event}"))
    }
    for event in &events {
        let kind = event["kind"]["type"].as_str().unwrap();
        let who = by(event);
        let expected: &[&str] = match kind {
            "session_started" | "note" => &["local"],
            "cap_raised" | "tagged" | "resumed" => &[me.as_str()],
            // The hooks' verdicts and a call's run are the caller's; the
            // operator's approval and the call it let run are the operator's.
            "call_requested" | "call_decided" | "call_started" | "call_finished" => {
                &["local", me.as_str()]
            }
            // The pause for the approval is the host's; the one when the
            // connection went away is the agent's own.
            "paused" => &["host", "local"],
            _ => &["local", "host", me.as_str()],
        };
        assert!(
            expected.contains(&who),
            "{kind} by `{who}`, expected one of {expected:?}: {event}"
        );
    }
    let approved = events
        .iter()
        .find(|e| e["kind"]["type"] == "call_decided" && e["kind"]["hook"] == "operator")
        .unwrap_or_else(|| panic!("no operator decision: {export}"));
    assert_eq!(by(approved), me, "{approved}");
    let asked = events
        .iter()
        .find(|e| e["kind"]["type"] == "call_requested" && e["kind"]["tool"] == "files.write")
        .unwrap_or_else(|| panic!("no write: {export}"));
    assert_eq!(by(asked), "local", "the agent asked for the write: {asked}");
    let job_started = events
        .iter()
        .find(|e| e["kind"]["type"] == "call_requested" && e["kind"]["job_id"].is_string())
        .unwrap_or_else(|| panic!("no job call: {export}"));
    assert_eq!(by(job_started), "local", "{job_started}");
    let (code, out, err) = site.run(&["log", "verify", "mine"]);
    assert_eq!(code, 0, "{out}{err}");
    let (_, show, _) = site.run(&["log", "show", "mine"]);
    assert!(show.contains(&format!("  {me}")), "{show}");
}

/// An agent's built-in actions over MCP are judged by the hook chain as
/// the tools `glovebox.<name>` (actions `glovebox:session:start`, ...): a
/// role allow-list that lists only `glovebox.session_*` lets the agent start
/// a session and call its tools, and refuses it `job_spawn`, naming the hook
/// and the action; no job is made.
#[test]
fn builtin_actions_are_judged_by_the_hook_chain() {
    let site = Site::with_plugins(&[(
        "echo.toml",
        format!("name = \"echo\"\ncomponent = \"{}\"\n", plugins::TOOL_ECHO),
    )]);
    site.set_config(&format!(
        "[[hook]]\nname = \"roles\"\ncomponent = \"{}\"\n[hook.settings.roles]\nworkagent = [\"echo.*\", \"glovebox.session_*\"]\n",
        plugins::HOOK_ROLE_ALLOWLIST
    ));
    let mut server = mcp_server(&site);
    let started = server.call(
        1,
        "session_start",
        json!({"name": "w", "role": "workagent", "project": "demo"}),
    );
    assert_eq!(started["result"]["isError"], false, "{started}");
    let echoed = server.call(2, "echo.echo", json!({"message": "hi"}));
    assert_eq!(echoed["result"]["isError"], false, "{echoed}");
    let spawned = server.call(
        3,
        "job_spawn",
        json!({"tool": "echo.echo", "input": {"message": "later"}}),
    );
    assert_eq!(spawned["result"]["isError"], true, "{spawned}");
    let denied = &spawned["result"]["structuredContent"]["denied"];
    assert_eq!(denied["hook"], "roles", "{spawned}");
    assert!(
        denied["reason"]
            .as_str()
            .is_some_and(|r| r.contains("glovebox.job_spawn")),
        "{spawned}"
    );
    let text = spawned["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_default();
    assert!(text.contains("glovebox.job_spawn"), "{spawned}");
    // Nothing was queued: the operator sees no job.
    let (code, jobs, err) = site.run(&["job", "list"]);
    assert_eq!(code, 0, "{err}");
    assert!(!jobs.contains("job-"), "{jobs}");
    // The session's own built-ins stay allowed.
    let status = server.call(4, "session_status", json!({}));
    assert_eq!(status["result"]["isError"], false, "{status}");
    // The refusal is in the session's log, by the agent, naming the hook.
    let (code, export, err) = site.run(&["log", "export", "w"]);
    assert_eq!(code, 0, "{err}");
    let refused: Vec<Value> = export
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter(|e| e["kind"]["type"] == "action_refused")
        .collect();
    assert_eq!(refused.len(), 1, "{export}");
    let event = &refused[0];
    assert_eq!(event["kind"]["action"], "glovebox:job:spawn", "{event}");
    assert_eq!(event["kind"]["hook"], "roles", "{event}");
    assert!(
        event["kind"]["hook_digest"]
            .as_str()
            .is_some_and(|d| d.len() == 64),
        "{event}"
    );
    assert!(
        event["by"]
            .as_str()
            .is_some_and(|by| !by.starts_with("cli:")),
        "{event}"
    );
    assert_eq!(site.run(&["log", "verify", "w"]).0, 0);
}

/// A request that takes more than a second tells a client that gave a
/// progress token how long it has run and what it waits for, every second,
/// until its answer.
#[test]
fn a_long_request_sends_progress_to_a_client_that_asked() {
    let site = approval_site("");
    let mut server = mcp_server(&site);
    server.send(json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
        "params": {"name": "files.write", "_meta": {"progressToken": "w1"},
                   "arguments": {"path": "/data/slow.txt", "content": "x"}}}));
    let approval = pending_approval(&site);
    std::thread::sleep(Duration::from_millis(2500));
    let (code, _, err) = site.run(&["approve", approval["id"].as_str().unwrap()]);
    assert_eq!(code, 0, "{err}");
    let (answer, notifications) = server.response_and_notifications(1);
    assert_eq!(answer["result"]["isError"], false, "{answer}");
    let progress: Vec<&Value> = notifications
        .iter()
        .filter(|n| n["method"] == "notifications/progress")
        .collect();
    assert!(progress.len() >= 2, "{notifications:?}");
    let mut last = 0.0;
    for p in &progress {
        assert_eq!(p["params"]["progressToken"], "w1", "{p}");
        let at = p["params"]["progress"].as_f64().unwrap();
        assert!(at > last, "progress goes up: {progress:?}");
        last = at;
        assert!(
            p["params"]["message"]
                .as_str()
                .is_some_and(|m| m.contains(approval["id"].as_str().unwrap())),
            "{p}"
        );
    }
}

/// The `logging` capability: once a connection sets its level, it hears the
/// server's log lines about its own requests at or above it (a hook's
/// decision is `info`); at `error` it hears none of those.
#[test]
fn a_connection_hears_the_log_lines_of_its_requests_at_its_level() {
    let site = approval_site("");
    let mut server = mcp_server(&site);
    let set = server.request(1, "logging/setLevel", json!({"level": "info"}));
    assert!(set["result"].is_object(), "{set}");
    server.send(json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
        "params": {"name": "files.list", "arguments": {"path": "/data"}}}));
    let (listed, mut lines) = server.response_and_notifications(2);
    assert_eq!(listed["result"]["isError"], false, "{listed}");
    let decided = |line: &Value| {
        line["method"] == "notifications/message"
            && line["params"]["data"]
                .as_str()
                .is_some_and(|d| d.contains("permission hook decided"))
    };
    let start = Instant::now();
    let heard = loop {
        assert!(
            start.elapsed() < Duration::from_secs(30),
            "no log line about the hook's decision"
        );
        if lines.is_empty()
            && let Some(line) = server.next_line(Duration::from_secs(1))
        {
            lines.push(line);
        }
        if let Some(found) = lines.iter().find(|l| decided(l)) {
            break found.clone();
        }
        lines.clear();
    };
    assert_eq!(heard["params"]["level"], "info", "{heard}");
    assert!(
        heard["params"]["logger"]
            .as_str()
            .is_some_and(|l| l.starts_with("glovebox")),
        "{heard}"
    );
    assert!(
        heard["params"]["data"]
            .as_str()
            .is_some_and(|d| d.contains("hook=destructive")),
        "{heard}"
    );

    let set = server.request(3, "logging/setLevel", json!({"level": "error"}));
    assert!(set["result"].is_object(), "{set}");
    server.send(json!({"jsonrpc": "2.0", "id": 4, "method": "tools/call",
        "params": {"name": "files.list", "arguments": {"path": "/data"}}}));
    let (answer, notifications) = server.response_and_notifications(4);
    assert_eq!(answer["result"]["isError"], false, "{answer}");
    let mut later = notifications;
    while let Some(line) = server.next_line(Duration::from_secs(1)) {
        later.push(line);
    }
    assert!(
        !later
            .iter()
            .any(|l| decided(l) && l["params"]["level"] == "info"),
        "an info line after setLevel error: {later:?}"
    );
}

/// A note and a usage report are registry operations (`sessions.note`,
/// `sessions.usage`, MCP's `session_note` and `session_usage`): an
/// operator runs them on a named session at the command line, and they are
/// logged as the operator's; a session that is not named is refused, since
/// outside MCP there is no session the caller's calls go to.
#[test]
fn an_operator_notes_and_reports_usage_on_a_named_session_through_the_registry() {
    let site = Site::new(false);
    site.start_workagent("w");
    let note = site.json(&[
        "operation",
        "sessions.note",
        "--args",
        r#"{"session": "w", "text": "found the flaky test"}"#,
    ]);
    assert_eq!(note["kind"]["type"], "note", "{note}");
    assert_eq!(note["by"], operator(), "{note}");
    let usage = site.json(&[
        "operation",
        "sessions.usage",
        "--args",
        r#"{"session": "w", "tokens_in": 1200, "tokens_out": 300, "cost": 0.5}"#,
    ]);
    let events = usage["events"].as_array().unwrap();
    assert_eq!(events[0]["kind"]["type"], "usage_reported", "{usage}");
    assert_eq!(events[0]["kind"]["cost_micros"], 500_000, "{usage}");
    let log = site.json(&["operation", "sessions.log", "--args", r#"{"session": "w"}"#]);
    let text = log.to_string();
    assert!(text.contains("found the flaky test"), "{text}");
    assert!(text.contains("usage_reported"), "{text}");
    // With no session named there is none to act in.
    let (code, _, err) = site.run(&["operation", "sessions.note", "--args", r#"{"text": "x"}"#]);
    assert_ne!(code, 0);
    assert!(err.contains("`session_note` needs a session"), "{err}");
    let (code, _, err) = site.run(&[
        "operation",
        "sessions.note",
        "--args",
        r#"{"session": "w", "text": "  "}"#,
    ]);
    assert_ne!(code, 0);
    assert!(
        err.contains("invalid arguments for `session_note`: `text` is empty: say something"),
        "{err}"
    );
}
