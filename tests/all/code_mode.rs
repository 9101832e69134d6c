//! Code mode (issue 40): generated Python (and JavaScript) calls the
//! session's tools by name from inside one run of `code-python.run`, through the real binary and a
//! real MCP client over stdio. Each nested call is a call of the session:
//! logged with the run that made it (`parent_call`), judged by the hooks as
//! the session's role (a denial and an ask reach the script as exceptions it
//! catches), budgeted (a budget that runs out stops the script), counted
//! against `limits.nested_calls`, and judged again by `policy replay`.

use glovebox::session::{Event, EventKind};
use serde_json::{Value, json};

use crate::mcp::Server;
use crate::util::{Site, plugins};

/// The Python runner (allowed `nested_calls` calls a run), a second one
/// allowed none, a third with a 2 s deadline, the JavaScript runner
/// (allowed `nested_calls`), files over `work/`, text, echo and sleep;
/// `extra` config tables.
fn site(extra: &str, nested_calls: u32) -> Site {
    warm();
    unwarmed(extra, nested_calls)
}

/// Compiles the runners (and pre-initializes the JavaScript one) into the
/// tests' shared compile cache once, before any server of these tests starts:
/// servers started at once on a cold cache would each compile them, past
/// the client's wait for `initialize` on a loaded machine.
fn warm() {
    static WARM: std::sync::Once = std::sync::Once::new();
    WARM.call_once(|| {
        let site = unwarmed("", 1);
        let (code, _, err) = site.run(&["tools"]);
        assert_eq!(code, 0, "glovebox tools: {err}");
    });
}

fn unwarmed(extra: &str, nested_calls: u32) -> Site {
    let files = format!(
        "name = \"files\"\ncomponent = \"{}\"\n[[fs]]\nhost = \"work\"\nguest = \"/data\"\naccess = \"read-write\"\n",
        plugins::TOOL_FILES
    );
    let site = Site::with_config(
        extra,
        &[
            (
                "code-python.toml",
                format!(
                    "name = \"code-python\"\ncomponent = \"{}\"\n[limits]\nmemory = \"256 MiB\"\ndeadline = \"60s\"\nnested_calls = {nested_calls}\n",
                    plugins::CODE_PYTHON
                ),
            ),
            (
                "plain-python.toml",
                format!(
                    "name = \"plain-python\"\ncomponent = \"{}\"\n[limits]\nmemory = \"256 MiB\"\ndeadline = \"60s\"\n",
                    plugins::CODE_PYTHON
                ),
            ),
            (
                "short-python.toml",
                format!(
                    "name = \"short-python\"\ncomponent = \"{}\"\n[limits]\nmemory = \"256 MiB\"\ndeadline = \"2s\"\nnested_calls = 2\n",
                    plugins::CODE_PYTHON
                ),
            ),
            (
                "sleep.toml",
                format!(
                    "name = \"sleep\"\ncomponent = \"{}\"\n[limits]\ndeadline = \"60s\"\n",
                    plugins::HOSTILE_SLEEP
                ),
            ),
            (
                "code-js.toml",
                format!(
                    "name = \"code-js\"\ncomponent = \"{}\"\n[limits]\nmemory = \"256 MiB\"\ndeadline = \"60s\"\nnested_calls = {nested_calls}\n",
                    plugins::CODE_JS
                ),
            ),
            ("files.toml", files),
            (
                "text.toml",
                format!("name = \"text\"\ncomponent = \"{}\"\n", plugins::TOOL_TEXT),
            ),
            (
                "echo.toml",
                format!("name = \"echo\"\ncomponent = \"{}\"\n", plugins::TOOL_ECHO),
            ),
        ],
    );
    std::fs::create_dir(site.path().join("work")).unwrap();
    site
}

/// Starts the session `name` on a served connection, which then acts in it.
fn serve_in(site: &Site, name: &str) -> Server {
    let mut server = Server::initialized(&site.config(), &[]);
    server.ok(
        1,
        "session_start",
        json!({"role": "workagent", "project": "p", "name": name}),
    );
    server
}

/// Runs `code` in one call of `runner`.run: its result (`stdout`, `value`, `error`).
fn run(server: &mut Server, id: u64, runner: &str, code: &str) -> Value {
    server.ok(id, &format!("{runner}.run"), json!({ "code": code }))
}

/// The calls requested in a log: (call id, tool, parent call).
fn requested(events: &[Event]) -> Vec<(String, String, Option<String>)> {
    events
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::CallRequested {
                call_id,
                tool,
                parent_call,
                ..
            } => Some((call_id.clone(), tool.clone(), parent_call.clone())),
            _ => None,
        })
        .collect()
}

/// How each call ended, by call id: its outcome (`ok`, `denied`, ...).
fn outcome(events: &[Event], call: &str) -> Option<String> {
    events.iter().find_map(|e| match &e.kind {
        EventKind::CallFinished {
            call_id, outcome, ..
        } if call_id == call => Some(outcome.clone()),
        _ => None,
    })
}

#[test]
fn a_script_reads_transforms_and_writes_through_three_tools_in_one_run() {
    let site = site("", 8);
    std::fs::write(site.path().join("work/in.txt"), "hello from a file").unwrap();
    let mut server = serve_in(&site, "script");
    let result = run(
        &mut server,
        2,
        "code-python",
        r#"
text = tools.call("files.read", {"path": "/data/in.txt"})["content"]
upper = tools.call("text.upper", {"text": text})["text"]
written = tools.call("files.write", {"path": "/data/out.txt", "content": upper})
names = [t["name"] for t in tools.list()]
(upper, written["written"], "text.upper" in names, "code-python.run" in names)
"#,
    );
    assert_eq!(
        result["value"],
        json!(["HELLO FROM A FILE", 17, true, false]),
        "{result}"
    );
    assert_eq!(
        std::fs::read_to_string(site.path().join("work/out.txt")).unwrap(),
        "HELLO FROM A FILE"
    );
    drop(server);

    // Four calls in the log: the run, and its three calls, each naming it.
    let events = site.log("script");
    let calls = requested(&events);
    let tools: Vec<&str> = calls.iter().map(|(_, t, _)| t.as_str()).collect();
    assert_eq!(
        tools,
        ["code-python.run", "files.read", "text.upper", "files.write"],
        "{calls:?}"
    );
    let run_id = &calls[0].0;
    assert_eq!(calls[0].2, None, "the run was made from outside");
    for (id, tool, parent) in &calls[1..] {
        assert_eq!(parent.as_deref(), Some(run_id.as_str()), "{tool}");
        assert_eq!(outcome(&events, id).as_deref(), Some("ok"), "{tool}");
    }
    assert_eq!(outcome(&events, run_id).as_deref(), Some("ok"));
}

#[test]
fn a_run_calls_no_more_tools_than_its_limit_and_no_runner() {
    let site = site("", 2);
    let mut server = serve_in(&site, "capped");
    let result = run(
        &mut server,
        2,
        "code-python",
        r#"
from glovebox import ToolLimitExceeded
got = []
for i in range(3):
    try:
        got.append(tools.call("echo.echo", {"message": str(i)})["message"])
    except ToolLimitExceeded as e:
        got.append(e.kind + ": " + e.message)
got
"#,
    );
    let got = result["value"].as_array().expect("a list").clone();
    assert_eq!(got[..2], [json!("0"), json!("1")], "{result}");
    let refused = got[2].as_str().unwrap();
    assert!(
        refused.starts_with("nested_limit: this run already made its 2 tool calls (`limits.nested_calls` of plugin `code-python`)"),
        "{refused}"
    );

    // A runner may not call a runner; a plugin allowed no calls makes none.
    let result = run(
        &mut server,
        3,
        "code-python",
        r#"
from glovebox import ToolError
try:
    tools.call("code-python.run", {"code": "1"})
except ToolError as e:
    out = (e.kind, e.message)
out
"#,
    );
    assert_eq!(result["value"][0], "nested_limit", "{result}");
    assert!(
        result["value"][1]
            .as_str()
            .unwrap()
            .contains("`code-python.run` may call tools itself"),
        "{result}"
    );
    let result = run(
        &mut server,
        4,
        "plain-python",
        r#"
from glovebox import ToolError
try:
    tools.call("echo.echo", {"message": "x"})
except ToolError as e:
    out = (e.kind, e.message)
(out, tools.list())
"#,
    );
    assert_eq!(result["value"][0][0], "nested_limit", "{result}");
    assert!(
        result["value"][0][1]
            .as_str()
            .unwrap()
            .contains("plugin `plain-python` may not call tools here: the operator allows it by setting `limits.nested_calls` in its manifest"),
        "{result}"
    );
    assert_eq!(result["value"][1], json!([]), "{result}");
}

#[test]
fn hooks_judge_each_nested_call_as_the_sessions_role_and_replay_judges_them_again() {
    let hooks = |text: &str| {
        format!(
            "[[hook]]\nname = \"roles\"\ncomponent = \"{}\"\n[hook.settings.roles]\nworkagent = [\"glovebox.*\", \"code-python.run\", \"files.*\", \"{text}\"]\n\
             [[hook]]\nname = \"destructive\"\ncomponent = \"{}\"\n[hook.settings]\nmode = \"ask\"\n",
            plugins::HOOK_ROLE_ALLOWLIST,
            plugins::HOOK_DESTRUCTIVE,
        )
    };
    let site = site(&hooks("text.upper"), 8);
    let mut server = serve_in(&site, "judged");
    let result = run(
        &mut server,
        2,
        "code-python",
        r#"
from glovebox import ToolDenied, ApprovalRequired
out = {"upper": tools.call("text.upper", {"text": "ok"})["text"]}
try:
    tools.call("echo.echo", {"message": "not for a workagent"})
except ToolDenied as e:
    out["denied"] = e.reason
try:
    tools.call("files.write", {"path": "/data/x.txt", "content": "x"})
except ApprovalRequired as e:
    out["approval"] = e.approval_id
out
"#,
    );
    let value = &result["value"];
    assert_eq!(value["upper"], "OK", "{result}");
    assert!(
        value["denied"].as_str().unwrap().contains("roles"),
        "the denial names the hook: {result}"
    );
    let approval = value["approval"].as_str().expect("an approval id");
    assert!(
        !site.path().join("work/x.txt").exists(),
        "a call awaiting approval ran"
    );
    drop(server);

    // The ask is a pending approval of the session, like any call's.
    let pending = site.json(&["approvals", "--json"]);
    assert_eq!(pending[0]["id"], approval, "{pending}");
    assert_eq!(pending[0]["tool"], "files.write", "{pending}");

    // The hooks' decisions on the nested calls are in the log.
    let events = site.log("judged");
    let denied: Vec<&str> = events
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::CallDecided { hook, decision, .. } if decision != "allow" => {
                Some(hook.as_str())
            }
            _ => None,
        })
        .collect();
    assert_eq!(denied, ["roles", "destructive"], "{denied:?}");

    // Under a chain that no longer lets a workagent upper-case, replay
    // finds the nested call it allowed.
    site.set_config(&hooks("text.lower"));
    let replay = site.json(&["policy", "replay", "--session", "judged", "--json"]);
    let changes = replay["changes"].as_array().unwrap();
    assert!(
        changes.iter().any(|c| c.to_string().contains("text.upper")),
        "{replay}"
    );
}

/// The first pending approval of the site, waiting up to a minute for one
/// that is not `after`.
fn next_pending(site: &Site, after: Option<&str>) -> String {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    loop {
        let pending = site.json(&["approvals", "--json"]);
        if let Some(id) = pending
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|a| a["id"].as_str())
            .find(|id| Some(*id) != after)
        {
            return id.to_owned();
        }
        assert!(
            std::time::Instant::now() < deadline,
            "no pending approval came: {pending}"
        );
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
}

#[test]
fn with_nested_wait_the_run_waits_for_the_human_and_gets_the_result_or_the_denial() {
    let site = site(
        &format!(
            "[[hook]]\nname = \"destructive\"\ncomponent = \"{}\"\n[hook.settings]\nmode = \"ask\"\n\
             [approvals]\nnested = \"wait\"\nwait = \"50s\"\n",
            plugins::HOOK_DESTRUCTIVE,
        ),
        8,
    );
    let mut server = serve_in(&site, "waits");
    server.send(json!({
        "jsonrpc": "2.0",
        "id": 2,
        "method": "tools/call",
        "params": {"name": "code-python.run", "arguments": {"code": r#"
from glovebox import ToolDenied
out = {"first": tools.call("files.write", {"path": "/data/x.txt", "content": "approved"})}
try:
    tools.call("files.write", {"path": "/data/y.txt", "content": "no"})
except ToolDenied as e:
    out["denied"] = e.reason
out
"#}},
    }));
    // The run waits while the first write asks; an operator approves it.
    let first = next_pending(&site, None);
    assert!(
        !site.path().join("work/x.txt").exists(),
        "the write ran before it was approved"
    );
    let (code, _, err) = site.run(&["approve", &first]);
    assert_eq!(code, 0, "{err}");
    // The script goes on to the second write, which is denied.
    let second = next_pending(&site, Some(&first));
    let (code, _, err) = site.run(&["deny", &second, "--reason", "not that file"]);
    assert_eq!(code, 0, "{err}");

    let answer = server.response(2);
    assert_eq!(answer["result"]["isError"], false, "{answer}");
    let value = &answer["result"]["structuredContent"]["value"];
    assert!(
        value["first"].is_object(),
        "the approved write's result reached the script: {answer}"
    );
    assert!(
        value["denied"].as_str().unwrap().contains("not that file"),
        "the denial's reason reached the script: {answer}"
    );
    assert_eq!(
        std::fs::read_to_string(site.path().join("work/x.txt")).unwrap(),
        "approved"
    );
    assert!(!site.path().join("work/y.txt").exists());
}

#[test]
fn a_budget_that_runs_out_mid_script_stops_it() {
    let site = site("[budgets.role.workagent]\ncalls = 3\n", 8);
    let mut server = serve_in(&site, "budget");
    let result = run(
        &mut server,
        2,
        "code-python",
        r#"
from glovebox import BudgetExceeded
done = 0
try:
    for i in range(5):
        tools.call("echo.echo", {"message": str(i)})
        done += 1
except BudgetExceeded as e:
    stopped = e.reason
(done, stopped)
"#,
    );
    // The run is the session's first call; two more fit in its budget.
    assert_eq!(result["value"][0], 2, "{result}");
    assert!(
        result["value"][1].as_str().unwrap().contains("calls"),
        "{result}"
    );
    drop(server);
    let events = site.log("budget");
    assert!(
        events
            .iter()
            .any(|e| matches!(e.kind, EventKind::BudgetExceeded { .. })),
        "no budget_exceeded in the log"
    );
}

#[test]
fn a_run_stopped_at_its_deadline_cancels_the_call_it_waits_for() {
    let site = site("", 8);
    let mut server = serve_in(&site, "deadline");
    let answer = server.call(
        2,
        "short-python.run",
        json!({"code": "tools.call('sleep.sleep', {'seconds': 30})"}),
    );
    assert_eq!(answer["result"]["isError"], true, "{answer}");
    assert!(answer.to_string().contains("timed out"), "{answer}");

    // The nested call does not stay in flight: it is cancelled, and logged
    // so, soon after the run that made it stopped. Read from the running
    // server: why, the server was killed as soon as the run answered, before
    // the cancelled call's outcome was written, and it stayed in flight.
    let start = std::time::Instant::now();
    loop {
        let events = site.log("deadline");
        let calls = requested(&events);
        let sleep = calls
            .iter()
            .find(|(_, tool, _)| tool == "sleep.sleep")
            .expect("the nested call is logged");
        if let Some(outcome) = outcome(&events, &sleep.0) {
            assert_eq!(outcome, "cancelled");
            break;
        }
        assert!(
            start.elapsed() < std::time::Duration::from_secs(20),
            "the nested call is still in flight: {calls:?}"
        );
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    let state = site.json(&["session", "show", "deadline"]);
    assert_eq!(state["in_flight"], json!({}), "{state}");
    drop(server);
}

#[test]
fn javascript_awaits_the_sessions_tools_and_catches_a_denial() {
    let site = site(
        &format!(
            "[[hook]]\nname = \"roles\"\ncomponent = \"{}\"\n[hook.settings.roles]\nworkagent = [\"glovebox.*\", \"code-js.run\", \"text.*\"]\n",
            plugins::HOOK_ROLE_ALLOWLIST,
        ),
        8,
    );
    let mut server = serve_in(&site, "js");
    let result = server.ok(
        2,
        "code-js.run",
        json!({"code": r#"
const upper = (await tools.call('text.upper', { text: 'from js' })).text;
let denied;
try {
    await tools.call('echo.echo', { message: 'no' });
} catch (e) {
    denied = [e instanceof ToolDenied, e.kind, e.reason.includes('roles'), e.alternatives.length > 0];
}
const names = tools.list().map((t) => t.name);
return { upper, denied, listed: names.includes('text.upper'), schema: typeof tools.list()[0].inputSchema };
"#}),
    );
    assert_eq!(result["error"], Value::Null, "{result}");
    assert_eq!(
        result["value"],
        json!({"upper": "FROM JS", "denied": [true, "denied", true, true], "listed": true, "schema": "object"}),
        "{result}"
    );
    drop(server);
    let events = site.log("js");
    let calls = requested(&events);
    let tools: Vec<&str> = calls.iter().map(|(_, t, _)| t.as_str()).collect();
    assert_eq!(
        tools,
        ["code-js.run", "text.upper", "echo.echo"],
        "{calls:?}"
    );
    assert!(
        calls[1..]
            .iter()
            .all(|(_, _, p)| p.as_deref() == Some(calls[0].0.as_str()))
    );
}

/// `examples/code_mode/`, as its `flow.sh` runs it: the example's own script
/// with the official Python MCP SDK over stdio, against the example's config
/// (its paths made absolute, a data dir of the test's own).
#[test]
fn the_code_mode_example_runs_three_tools_in_one_call() {
    warm();
    let python = crate::util::venv("mcp-venv", &["mcp==2.3.0", "pytest"]);
    let dir = tempfile::tempdir().unwrap();
    let example = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/code_mode");
    let config = crate::util::example_config("code_mode", dir.path());
    let output = std::process::Command::new(python)
        .arg(example.join("flow.py"))
        .arg(env!("CARGO_BIN_EXE_glovebox"))
        .arg(&config)
        .output()
        .expect("the flow runs");
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&output.stderr);
    let session = stdout
        .lines()
        .find_map(|l| l.strip_prefix("session: "))
        .map(str::to_string);
    // The file the flow wrote into examples/workspace/ goes, whatever happened.
    if let Some(session) = &session {
        let written = example.join(format!("../workspace/{session}.txt"));
        let _ = std::fs::remove_file(written);
    }
    assert!(
        output.status.success(),
        "the flow failed:\n{stdout}\n{stderr}"
    );
    let line = stdout
        .lines()
        .find_map(|l| l.strip_prefix("one run, three tools: "))
        .unwrap_or_else(|| panic!("{stdout}"));
    let value: Value = serde_json::from_str(line).unwrap();
    assert!(value["written"].as_u64().unwrap() > 0, "{value}");
    assert!(
        value["echo"]
            .as_str()
            .unwrap()
            .starts_with("denied: call to `echo.echo` denied by hook `roles` (pattern `*`): role workagent may not use echo.echo"),
        "{value}"
    );
    assert_eq!(
        value["first_line"],
        "THIS DIRECTORY IS MOUNTED AT /DATA FOR THE FILES PLUGIN (SEE EXAMPLES/PLUGINS/FILES.TOML).",
        "{value}"
    );

    // The session's log: the run, then the script's four calls, each naming it.
    let session = session.expect("the flow names its session");
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_glovebox"))
        .arg("--config")
        .arg(&config)
        .args(["log", "export", &session])
        .output()
        .unwrap();
    assert!(out.status.success());
    let events: Vec<Event> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let calls = requested(&events);
    let tools: Vec<&str> = calls.iter().map(|(_, t, _)| t.as_str()).collect();
    assert_eq!(
        tools,
        [
            "code-python.run",
            "files.read",
            "text.upper",
            "files.write",
            "echo.echo"
        ],
        "{calls:?}"
    );
    assert!(
        calls[1..]
            .iter()
            .all(|(_, _, p)| p.as_deref() == Some(calls[0].0.as_str()))
    );
}
