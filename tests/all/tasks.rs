//! Jobs as Tasks (the MCP extension `io.modelcontextprotocol/tasks`): a
//! long call from a client that declared the extension answers with a task
//! whose id is its job's; `tasks/get` polls it to its result, from another
//! connection after the first is gone; `tasks/cancel` cancels it; a quick
//! call answers at once; a task of another principal is not there; a task
//! whose call a hook asks about is `input_required` and `tasks/update`
//! settles it; a client with a lifecycle is notified of its task's changes.

use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::identity::http;
use crate::mcp::Server;
use crate::principals::add_agent;
use crate::util::{Site, plugins};

/// A site serving echo and sleep (a 60 s deadline).
fn site() -> Site {
    Site::with_config(
        "",
        &[
            (
                "echo.toml",
                format!("name = \"echo\"\ncomponent = \"{}\"\n", plugins::TOOL_ECHO),
            ),
            (
                "sleep.toml",
                format!(
                    "name = \"sleep\"\ncomponent = \"{}\"\n[limits]\ndeadline = \"60s\"\n",
                    plugins::HOSTILE_SLEEP
                ),
            ),
        ],
    )
}

/// 2026-07-28 `_meta` of a client that declared the tasks extension.
fn with_tasks() -> Value {
    json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {
            "extensions": {"io.modelcontextprotocol/tasks": {}}
        },
        "io.modelcontextprotocol/clientInfo": {"name": "glovebox-tests", "version": "0"},
    })
}

/// Polls `tasks/get` until the task leaves `working` (30 s at most).
fn poll(get: &mut dyn FnMut() -> Value) -> Value {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let task = get();
        if task["result"]["status"] != "working" {
            return task;
        }
        assert!(Instant::now() < deadline, "still working: {task}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

#[test]
fn a_long_call_is_a_task_polled_to_its_result_and_a_quick_one_answers_at_once() {
    let site = site();
    let mut server = Server::start(&site.config());
    let meta = with_tasks();
    let discovered = server.request(1, "server/discover", json!({"_meta": meta}));
    assert!(
        discovered["result"]["capabilities"]["extensions"]
            .get("io.modelcontextprotocol/tasks")
            .is_some(),
        "{discovered}"
    );

    let quick = server.request(
        2,
        "tools/call",
        json!({"name": "echo.echo", "arguments": {"message": "at once"}, "_meta": meta}),
    );
    assert_ne!(quick["result"]["resultType"], "task", "{quick}");
    assert_eq!(quick["result"]["structuredContent"]["message"], "at once");

    let long = server.request(
        3,
        "tools/call",
        json!({"name": "sleep.sleep", "arguments": {"seconds": 2}, "_meta": meta}),
    );
    assert_eq!(long["result"]["resultType"], "task", "{long}");
    assert_eq!(long["result"]["status"], "working", "{long}");
    assert_eq!(long["result"]["pollIntervalMs"], 500, "{long}");
    let id = long["result"]["taskId"].as_str().unwrap().to_string();
    assert!(id.starts_with("job-"), "{long}");
    // The task is the job: the jobs' own tools see it.
    let job = server.request(
        4,
        "tools/call",
        json!({"name": "job_status", "arguments": {"id": id}, "_meta": meta}),
    );
    assert_eq!(job["result"]["structuredContent"]["id"], id, "{job}");

    let mut n = 10;
    let done = poll(&mut || {
        n += 1;
        server.request(n, "tasks/get", json!({"taskId": id, "_meta": meta}))
    });
    assert_eq!(done["result"]["status"], "completed", "{done}");
    assert_eq!(
        done["result"]["result"]["structuredContent"]["slept_seconds"], 2,
        "{done}"
    );
    assert_eq!(done["result"]["result"]["isError"], false, "{done}");

    // Cancelled while it runs.
    let doomed = server.request(
        100,
        "tools/call",
        json!({"name": "sleep.sleep", "arguments": {"seconds": 30}, "_meta": meta}),
    );
    let doomed = doomed["result"]["taskId"].as_str().unwrap().to_string();
    let acked = server.request(
        101,
        "tasks/cancel",
        json!({"taskId": doomed, "_meta": meta}),
    );
    assert!(acked["result"].is_object(), "{acked}");
    let cancelled = server.request(102, "tasks/get", json!({"taskId": doomed, "_meta": meta}));
    assert_eq!(cancelled["result"]["status"], "cancelled", "{cancelled}");

    // No input is asked inside a task; an unknown task is not found.
    let update = server.request(
        103,
        "tasks/update",
        json!({"taskId": id, "inputResponses": {}, "_meta": meta}),
    );
    assert_eq!(update["error"]["code"], -32602, "{update}");
    assert!(
        update["error"]["message"]
            .as_str()
            .unwrap()
            .contains("asks for no input"),
        "{update}"
    );
    let unknown = server.request(
        104,
        "tasks/get",
        json!({"taskId": "job-000000000000", "_meta": meta}),
    );
    assert_eq!(unknown["error"]["code"], -32602, "{unknown}");

    // A client that did not declare the extension waits for its result.
    let mut plain = meta.clone();
    plain["io.modelcontextprotocol/clientCapabilities"] = json!({});
    let direct = server.request(
        105,
        "tools/call",
        json!({"name": "sleep.sleep", "arguments": {"seconds": 2}, "_meta": plain}),
    );
    assert_eq!(
        direct["result"]["structuredContent"]["slept_seconds"], 2,
        "{direct}"
    );
}

/// One JSON-RPC request on an MCP session over HTTP: its answer.
pub(crate) fn rpc(addr: &str, token: &str, session: &str, method: &str, params: Value) -> Value {
    let body = json!({"jsonrpc": "2.0", "id": 7, "method": method, "params": params}).to_string();
    let answer = http(addr, "POST", "/mcp", Some(token), Some(session), &body);
    assert_eq!(answer.status, 200, "{method}: {}", answer.body);
    let data = answer
        .body
        .lines()
        .filter_map(|l| l.strip_prefix("data:"))
        .map(str::trim)
        .find(|d| d.contains("\"id\":7"))
        .unwrap_or_else(|| panic!("no answer in {}", answer.body));
    serde_json::from_str(data).unwrap()
}

/// An MCP session (2025-11-25 lifecycle) of a client that declared tasks.
fn open(addr: &str, token: &str) -> String {
    let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25",
        "capabilities": {"extensions": {"io.modelcontextprotocol/tasks": {}}},
        "clientInfo": {"name": "glovebox-tests", "version": "0"}}})
    .to_string();
    let answer = http(addr, "POST", "/mcp", Some(token), None, &init);
    assert_eq!(answer.status, 200, "initialize: {}", answer.body);
    let id = answer.header("mcp-session-id").unwrap().to_string();
    let initialized = r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#;
    let answer = http(addr, "POST", "/mcp", Some(token), Some(&id), initialized);
    assert_eq!(answer.status, 202, "initialized: {}", answer.body);
    id
}

#[test]
fn a_task_is_polled_to_completion_from_a_second_connection_after_the_first_is_gone() {
    let site = site();
    let alice = add_agent(&site, "alice", "mcp");
    let bob = add_agent(&site, "bob", "mcp");
    let (mut child, addr, _log) = crate::http_limits::serve_logged(&site, &[]);

    let first = open(&addr, &alice);
    let long = rpc(
        &addr,
        &alice,
        &first,
        "tools/call",
        json!({"name": "sleep.sleep", "arguments": {"seconds": 3}}),
    );
    assert_eq!(long["result"]["resultType"], "task", "{long}");
    let id = long["result"]["taskId"].as_str().unwrap().to_string();
    // The first MCP session goes away.
    let gone = http(&addr, "DELETE", "/mcp", Some(&alice), Some(&first), "");
    assert!(gone.status < 300, "DELETE: {} {}", gone.status, gone.body);

    // Bob's session does not see it.
    let his = open(&addr, &bob);
    let refused = rpc(&addr, &bob, &his, "tasks/get", json!({"taskId": id}));
    assert_eq!(refused["error"]["code"], -32602, "{refused}");

    let second = open(&addr, &alice);
    let done = poll(&mut || rpc(&addr, &alice, &second, "tasks/get", json!({"taskId": id})));
    assert_eq!(done["result"]["status"], "completed", "{done}");
    assert_eq!(
        done["result"]["result"]["structuredContent"]["slept_seconds"], 3,
        "{done}"
    );
    let _ = child.kill();
    let _ = child.wait();
}

/// Polls `tasks/get` until the task's status is not `from` (30 s at most).
fn poll_from(from: &str, get: &mut dyn FnMut() -> Value) -> Value {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let task = get();
        if task["result"]["status"] != from {
            return task;
        }
        assert!(Instant::now() < deadline, "still {from}: {task}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// A job's call that a hook sends to a human waits as its task's
/// `input_required` (the approval's question in `inputRequests`, the job
/// `awaiting_approval` and holding no slot); `tasks/update` with the
/// answer settles it: accepted, the call runs once and the task completes
/// with its result; declined, it completes with the denial and nothing is
/// written. A cancelled task's approval is denied, so its call never runs,
/// and an operator's approval (the CLI, another surface) reaches the task
/// the same way.
#[test]
fn a_task_whose_call_a_hook_asks_about_waits_as_input_required_and_runs_once_approved() {
    let site = crate::approval_display::site(&crate::approval_display::client_approver());
    let mut server = Server::start_with(&site.config(), &["--as", "carol"]);
    let mut meta = with_tasks();
    meta["io.modelcontextprotocol/clientCapabilities"]["elicitation"] = json!({"form": {}});
    let work = site.path().join("work");
    let mut n = 0;
    let mut request = |server: &mut Server, method: &str, params: Value| {
        n += 1;
        let mut params = params;
        params["_meta"] = meta.clone();
        server.request(n, method, params)
    };
    let write = |name: &str| json!({"name": "files.write", "arguments": {"path": format!("/data/{name}"), "content": "hello"}});
    let pending = || {
        site.json(&["approvals", "--json"])
            .as_array()
            .unwrap()
            .clone()
    };

    // Approved through tasks/update.
    let asked = request(&mut server, "tools/call", write("one.txt"));
    assert_eq!(asked["result"]["resultType"], "task", "{asked}");
    let id = asked["result"]["taskId"].as_str().unwrap().to_string();
    let waiting = poll_from("working", &mut || {
        request(&mut server, "tasks/get", json!({"taskId": id}))
    });
    assert_eq!(waiting["result"]["status"], "input_required", "{waiting}");
    let form = &waiting["result"]["inputRequests"]["approve"];
    assert_eq!(form["method"], "elicitation/create", "{form}");
    let approvals = pending();
    assert_eq!(approvals.len(), 1, "{approvals:?}");
    let approval = approvals[0]["id"].as_str().unwrap().to_string();
    assert_eq!(approvals[0]["job"], id.as_str(), "{approvals:?}");
    assert!(
        form["params"]["message"]
            .as_str()
            .unwrap()
            .contains(&approval),
        "{form}"
    );
    let job = request(
        &mut server,
        "tools/call",
        json!({"name": "job_status", "arguments": {"id": id}}),
    );
    let job = &job["result"]["structuredContent"];
    assert_eq!(job["status"], "awaiting_approval", "{job}");
    assert_eq!(job["approval"], approval.as_str(), "{job}");
    assert!(!work.join("one.txt").exists());

    let wrong = request(
        &mut server,
        "tasks/update",
        json!({"taskId": id, "inputResponses": {}}),
    );
    assert_eq!(wrong["error"]["code"], -32602, "{wrong}");
    assert!(
        wrong["error"]["message"]
            .as_str()
            .unwrap()
            .contains("`approve`"),
        "{wrong}"
    );
    let yes = json!({"approve": {"action": "accept", "content": {"approve": true}}});
    let updated = request(
        &mut server,
        "tasks/update",
        json!({"taskId": id, "inputResponses": yes}),
    );
    assert!(updated["result"].is_object(), "{updated}");
    let done = request(&mut server, "tasks/get", json!({"taskId": id}));
    assert_eq!(done["result"]["status"], "completed", "{done}");
    assert_eq!(done["result"]["result"]["isError"], false, "{done}");
    assert_eq!(
        std::fs::read_to_string(work.join("one.txt")).unwrap(),
        "hello"
    );
    let again = request(
        &mut server,
        "tasks/update",
        json!({"taskId": id, "inputResponses": yes}),
    );
    assert_eq!(again["error"]["code"], -32602, "{again}");
    assert!(
        again["error"]["message"]
            .as_str()
            .unwrap()
            .contains("asks for no input (it is completed)"),
        "{again}"
    );

    // Declined through tasks/update: denied, nothing written.
    let asked = request(&mut server, "tools/call", write("two.txt"));
    let id = asked["result"]["taskId"].as_str().unwrap().to_string();
    poll_from("working", &mut || {
        request(&mut server, "tasks/get", json!({"taskId": id}))
    });
    let no = json!({"approve": {"action": "decline"}});
    request(
        &mut server,
        "tasks/update",
        json!({"taskId": id, "inputResponses": no}),
    );
    let denied = request(&mut server, "tasks/get", json!({"taskId": id}));
    assert_eq!(denied["result"]["status"], "completed", "{denied}");
    assert_eq!(denied["result"]["result"]["isError"], true, "{denied}");
    let text = denied["result"]["result"].to_string();
    assert!(text.contains("declined by the client's user"), "{text}");
    assert!(!work.join("two.txt").exists());

    // Cancelled while it waits: its approval is denied, it never runs.
    let asked = request(&mut server, "tools/call", write("three.txt"));
    let id = asked["result"]["taskId"].as_str().unwrap().to_string();
    poll_from("working", &mut || {
        request(&mut server, "tasks/get", json!({"taskId": id}))
    });
    assert_eq!(pending().len(), 1);
    request(&mut server, "tasks/cancel", json!({"taskId": id}));
    let cancelled = request(&mut server, "tasks/get", json!({"taskId": id}));
    assert_eq!(cancelled["result"]["status"], "cancelled", "{cancelled}");
    assert_eq!(
        pending().len(),
        0,
        "the cancelled job's approval is still pending"
    );
    assert!(!work.join("three.txt").exists());

    // Approved by an operator on the command line: the task takes it.
    let asked = request(&mut server, "tools/call", write("four.txt"));
    let id = asked["result"]["taskId"].as_str().unwrap().to_string();
    poll_from("working", &mut || {
        request(&mut server, "tasks/get", json!({"taskId": id}))
    });
    let approval = pending()[0]["id"].as_str().unwrap().to_string();
    let (code, out, err) = site.run(&["approve", &approval]);
    assert_eq!(code, 0, "{out}{err}");
    let done = poll_from("input_required", &mut || {
        request(&mut server, "tasks/get", json!({"taskId": id}))
    });
    assert_eq!(done["result"]["status"], "completed", "{done}");
    assert_eq!(done["result"]["result"]["isError"], false, "{done}");
    assert_eq!(
        std::fs::read_to_string(work.join("four.txt")).unwrap(),
        "hello"
    );

    // Each approved call ran once.
    crate::approval_display::assert_ran_ok(&site, 2);
}

/// A client with a lifecycle (2025-11-25) that declared the extension at
/// `initialize` hears each change of its task's status as a
/// `notifications/tasks` carrying what `tasks/get` would answer: the last
/// one `completed` with the call's result, without polling.
#[test]
fn a_client_with_a_lifecycle_is_notified_when_its_task_completes() {
    let site = site();
    let mut server = Server::start(&site.config());
    let init = server.request(
        0,
        "initialize",
        json!({
            "protocolVersion": "2025-11-25",
            "capabilities": {"extensions": {"io.modelcontextprotocol/tasks": {}}},
            "clientInfo": {"name": "glovebox-tests", "version": "0"},
        }),
    );
    assert!(init["result"].is_object(), "{init}");
    server.send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
    let long = server.call(1, "sleep.sleep", json!({"seconds": 2}));
    assert_eq!(long["result"]["resultType"], "task", "{long}");
    let id = long["result"]["taskId"].as_str().unwrap().to_string();
    let deadline = Instant::now() + Duration::from_secs(60);
    let done = loop {
        let left = deadline.saturating_duration_since(Instant::now());
        let line = server
            .next_line(left)
            .unwrap_or_else(|| panic!("no notifications/tasks of {id} within 60 s"));
        if line["method"] == "notifications/tasks" {
            assert_eq!(line["params"]["taskId"], id.as_str(), "{line}");
            if line["params"]["status"] == "completed" {
                break line;
            }
        }
    };
    assert_eq!(
        done["params"]["result"]["structuredContent"]["slept_seconds"], 2,
        "{done}"
    );
    assert_eq!(done["params"]["result"]["isError"], false, "{done}");
}
