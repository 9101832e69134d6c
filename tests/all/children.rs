//! Child sessions (issue 16): spawn, wait, list, end and the family's reach,
//! through the real binary (the CLI, and MCP over stdio as a declared
//! principal) and through the gateway for a wait woken by a child's handoff.

use std::sync::Arc;
use std::time::{Duration, Instant};

use glovebox::session::{Handoff, HandoffKind, Role, SpawnChild, StartSession};
use glovebox::{Gateway, cli_operator};
use serde_json::{Value, json};

use crate::mcp::Server;
use crate::util::{self, Site, manifest, plugins};

fn ids(list: &Value) -> Vec<String> {
    list.as_array()
        .unwrap()
        .iter()
        .map(|c| c["id"].as_str().unwrap().to_string())
        .collect()
}

#[test]
fn the_cli_spawns_lists_waits_for_and_ends_children_and_refuses_what_breaks_a_rule() {
    let site = Site::new(false);
    let parent = site.json(&[
        "session",
        "start",
        "--role",
        "supervisor",
        "--project",
        "p",
        "--name",
        "lead",
        "--budget-cost",
        "1.0",
        "--budget-calls",
        "20",
    ]);
    let parent_id = parent["id"].as_str().unwrap().to_string();
    let spawn = |name: &str, role: &str, cost: &str| {
        site.run(&[
            "session",
            "spawn",
            "lead",
            "--role",
            role,
            "--name",
            name,
            "--objective",
            &format!("work on {name}"),
            "--success",
            "tests pass",
            "--done",
            "read the spec",
            "--phase",
            "design",
            "--blocker",
            "no test data",
            "--budget-cost",
            cost,
            "--budget-calls",
            "5",
        ])
    };
    let (code, out, err) = spawn("w1", "workagent", "0.6");
    assert_eq!(code, 0, "{err}");
    let spawned: Value = serde_json::from_str(&out).unwrap();
    let w1 = spawned["child"]["id"].as_str().unwrap().to_string();
    assert_eq!(spawned["child"]["parent"], json!(parent_id));
    assert_eq!(spawned["event"]["kind"]["type"], "child_spawned");
    assert_eq!(spawned["event"]["kind"]["task"]["kind"], "task");
    // The task takes every note a handoff does, as over MCP.
    let task = &spawned["event"]["kind"]["task"];
    assert_eq!(task["success_criteria"], json!(["tests pass"]));
    assert_eq!(task["work_completed"], json!(["read the spec"]));
    assert_eq!(task["current_phase"], "design");
    assert_eq!(task["blockers"], json!(["no test data"]));

    // Refusals name the rule and the fix, and write nothing.
    let before = site.json(&["session", "list", "--json"]);
    for (args, words) in [
        (
            spawn("w2", "workagent", "0.5"),
            "beyond its parent's budget",
        ),
        (
            spawn("o1", "orchestrator", "0.1"),
            "at or below its parent's",
        ),
    ] {
        let (code, _, err) = args;
        assert_eq!(code, 8, "{err}");
        assert!(err.contains(words), "{err}");
    }
    let (code, _, err) = site.run(&[
        "session",
        "spawn",
        "nobody",
        "--role",
        "workagent",
        "--objective",
        "x",
    ]);
    assert_eq!(code, 8, "{err}");
    assert!(
        err.contains("no session with the id or name `nobody`"),
        "{err}"
    );
    assert_eq!(site.json(&["session", "list", "--json"]), before);
    let (code, _, err) = site.run(&["session", "wait", "w1"]);
    assert_eq!(code, 8, "{err}");
    assert!(err.contains("has no children to wait for"), "{err}");

    let children = site.json(&["session", "list", "--children", "lead", "--json"]);
    assert_eq!(ids(&children), std::slice::from_ref(&w1));
    assert_eq!(children[0]["settled"], false);

    // No server holds the data dir: the wait reports at once, exit 6 while
    // a child is pending.
    let (code, out, err) = site.run(&["session", "wait", "lead", "--timeout", "5s"]);
    assert_eq!(code, 6, "{err}");
    assert!(err.contains("reported at once"), "{err}");
    let waited: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(waited["pending"], json!([w1]));

    // The child reports to its parent: settled, with its handoff.
    site.json(&[
        "session",
        "handoff",
        "w1",
        "--kind",
        "workagent_completion",
        "--to",
        "lead",
        "--objective",
        "work on w1",
        "--done",
        "all of it",
    ]);
    let waited = site.json(&["session", "wait", "lead"]);
    assert_eq!(waited["timed_out"], false, "{waited}");
    assert_eq!(
        waited["children"][0]["handoff"]["handoff"]["work_completed"],
        json!(["all of it"])
    );

    // Ending the parent with a live child: refused, naming it and the fix.
    let (code, _, err) = site.run(&["session", "end", "lead"]);
    assert_eq!(code, 8, "{err}");
    assert!(err.contains("has live children"), "{err}");
    assert!(err.contains(&w1), "{err}");
    assert!(err.contains("--cancel-children"), "{err}");
    let (code, out, err) = site.run(&["session", "end", "lead", "--cancel-children"]);
    assert_eq!(code, 0, "{err}");
    assert!(err.contains(&w1), "{err}");
    assert_eq!(
        serde_json::from_str::<Value>(&out).unwrap()["status"],
        "completed"
    );
    let child = site.json(&["session", "show", "w1"]);
    assert_eq!(child["outcome"], "interrupted");

    // Billing rolls the child up under its parent, by role.
    let bill = site.json(&["billing", "--by", "family", "--json"]);
    let group = bill["groups"]
        .as_array()
        .unwrap()
        .iter()
        .find(|g| g["key"] == json!(parent_id))
        .unwrap_or_else(|| panic!("{bill}"));
    assert_eq!(group["roles"]["workagent"]["sessions"], 1, "{bill}");
    assert_eq!(group["roles"]["supervisor"]["sessions"], 1, "{bill}");
    assert_eq!(bill["groups"].as_array().unwrap().len(), 1, "{bill}");
}

/// A config with the echo plugin and the agent `boss` (supervisor and
/// workagent); returns the site.
fn boss_site() -> Site {
    let site = Site::with_plugins(&[(
        "echo.toml",
        format!("name = \"echo\"\ncomponent = \"{}\"\n", plugins::TOOL_ECHO),
    )]);
    crate::principals::add(
        &site,
        &[
            "boss",
            "--kind",
            "agent",
            "--roles",
            "supervisor,workagent",
            "--projects",
            "*",
        ],
    );
    site
}

fn ok(server: &mut Server, id: u64, tool: &str, args: Value) -> Value {
    let answer = server.call(id, tool, args);
    assert_eq!(answer["result"]["isError"], false, "{tool}: {answer}");
    answer["result"]["structuredContent"].clone()
}

fn refused(server: &mut Server, id: u64, tool: &str, args: Value) -> (String, String) {
    let answer = server.call(id, tool, args);
    assert_eq!(answer["result"]["isError"], true, "{tool}: {answer}");
    let error = &answer["result"]["structuredContent"]["error"];
    (
        error["kind"].as_str().unwrap().to_string(),
        error["message"].as_str().unwrap().to_string(),
    )
}

#[test]
fn over_mcp_a_parent_spawns_waits_for_and_ends_its_children_and_a_child_stays_in_its_family() {
    let site = boss_site();
    let mut server = Server::initialized(&site.config(), &["--as", "boss"]);
    let other = ok(
        &mut server,
        1,
        "session_start",
        json!({"role": "supervisor", "project": "p", "name": "elsewhere"}),
    );
    let lead = ok(
        &mut server,
        2,
        "session_start",
        json!({"role": "supervisor", "project": "p", "name": "lead", "budget": {"calls": 10}}),
    );
    let (kind, message) = refused(&mut server, 3, "session_wait", json!({}));
    assert_eq!(kind, "session_invalid_input");
    assert!(message.contains("no children to wait for"), "{message}");
    let (kind, message) = refused(
        &mut server,
        4,
        "session_spawn",
        json!({"role": "workagent", "objective": "x", "budget": {"calls": 11}}),
    );
    assert_eq!(kind, "not_allowed");
    assert!(message.contains("`calls` cap"), "{message}");
    let spawned = ok(
        &mut server,
        5,
        "session_spawn",
        json!({"role": "workagent", "name": "kid", "objective": "count words",
               "success_criteria": ["a number"], "files": ["ch1.md"], "budget": {"calls": 4}}),
    );
    let kid = spawned["child"]["id"].as_str().unwrap().to_string();
    // Still bound to the parent: the wait times out with the child pending.
    let waited = ok(&mut server, 6, "session_wait", json!({"timeout_ms": 50}));
    assert_eq!(waited["timed_out"], true, "{waited}");
    assert_eq!(waited["pending"], json!([kid]));
    // A wait past the schema's maximum is refused before it runs, as every
    // built-in's invalid arguments are: a JSON-RPC error naming the limit.
    let answer = server.call(7, "session_wait", json!({"timeout_ms": 600_001}));
    assert_eq!(answer["error"]["data"]["kind"], "invalid_input", "{answer}");
    let message = answer["error"]["message"].as_str().unwrap_or_default();
    assert!(
        message.contains("`timeout_ms` is 600001") && message.contains("maximum"),
        "{message}"
    );
    let (kind, message) = refused(&mut server, 8, "session_end", json!({}));
    assert_eq!(kind, "not_allowed");
    assert!(
        message.contains(&kid) && message.contains("cancel_children"),
        "{message}"
    );
    let listed = ok(&mut server, 9, "session_list", json!({"children": true}));
    assert_eq!(ids(&listed["children"]), std::slice::from_ref(&kid));

    // The child's agent: its task comes with the resume; it reaches its
    // parent, not the principal's other session.
    let resumed = ok(&mut server, 10, "session_resume", json!({"session": "kid"}));
    assert_eq!(
        resumed["latest_handoff"]["handoff"]["kind"], "task",
        "{resumed}"
    );
    assert_eq!(
        resumed["latest_handoff"]["handoff"]["success_criteria"],
        json!(["a number"])
    );
    let (kind, message) = refused(
        &mut server,
        11,
        "session_status",
        json!({"session": "elsewhere"}),
    );
    assert_eq!(kind, "not_allowed");
    assert!(message.contains("outside the family"), "{message}");
    let (kind, message) = refused(
        &mut server,
        12,
        "session_handoff",
        json!({"kind": "workagent_completion", "objective": "count words", "to": "elsewhere"}),
    );
    assert_eq!(kind, "bad_handoff");
    assert!(message.contains("outside the family"), "{message}");
    ok(
        &mut server,
        13,
        "session_status",
        json!({"session": lead["id"]}),
    );
    ok(
        &mut server,
        14,
        "session_handoff",
        json!({"kind": "workagent_completion", "objective": "count words",
               "work_completed": ["42 words"], "to": "lead"}),
    );

    // Back at the parent: the wait returns the report at once.
    ok(
        &mut server,
        15,
        "session_resume",
        json!({"session": "lead"}),
    );
    let waited = ok(
        &mut server,
        16,
        "session_wait",
        json!({"timeout_ms": 10_000}),
    );
    assert_eq!(waited["timed_out"], false, "{waited}");
    assert_eq!(
        waited["children"][0]["handoff"]["handoff"]["work_completed"],
        json!(["42 words"])
    );
    let ended = ok(
        &mut server,
        17,
        "session_end",
        json!({"cancel_children": true}),
    );
    assert_eq!(ended["status"], "completed", "{ended}");
    assert_eq!(ended["cancelled_children"], json!([kid]));
    drop(server);
    // The other session was never written to by the child.
    let log = site.json(&["session", "show", other["id"].as_str().unwrap()]);
    assert_eq!(log["last_seq"], other["last_seq"], "{log}");
}

#[tokio::test]
async fn a_wait_is_woken_by_a_childs_handoff_not_by_its_timeout() {
    let h = util::host(vec![manifest("echo", plugins::TOOL_ECHO)]).await;
    let dir = tempfile::tempdir().unwrap();
    let (_store, durable) = crate::util::durable(dir.path());
    let gateway = Gateway::new(Arc::new(h.host), durable.clone());
    let op = cli_operator();
    durable
        .sessions
        .start(StartSession {
            role: Role::Supervisor,
            project: "p".into(),
            name: Some("lead".into()),
            tags: vec![],
            expected_duration: None,
            budget: Default::default(),
            completion: Default::default(),
        })
        .unwrap();
    let spawn = SpawnChild {
        role: Role::Workagent,
        name: Some("kid".into()),
        tags: vec![],
        expected_duration: None,
        budget: Default::default(),
        task: Handoff::new(HandoffKind::Task, Role::Workagent, "count"),
        completion: Default::default(),
    };
    gateway
        .scope(&op)
        .spawn_session("lead", spawn)
        .await
        .unwrap();
    let waiter = {
        let (gateway, op) = (gateway.clone(), op.clone());
        tokio::spawn(async move {
            let started = Instant::now();
            let waited = gateway
                .scope(&op)
                .wait_children("lead", Some(Duration::from_secs(60)))
                .await
                .unwrap();
            (waited, started.elapsed())
        })
    };
    tokio::time::sleep(Duration::from_millis(300)).await;
    let mut done = Handoff::new(HandoffKind::WorkagentCompletion, Role::Workagent, "count");
    done.target_session = Some("lead".into());
    gateway.scope(&op).handoff("kid", done).await.unwrap();
    let (waited, took) = tokio::time::timeout(Duration::from_secs(20), waiter)
        .await
        .expect("the wait ends when the child reports")
        .unwrap();
    assert!(!waited.timed_out, "{waited:?}");
    assert!(waited.pending.is_empty());
    assert!(took < Duration::from_secs(20), "{took:?}");
}

/// Why (threat 49): a parent's children were listed whole; the listing now
/// pages at every surface (the CLI's `--limit`/`--cursor`, MCP's
/// `limit`/`cursor` -> `next_cursor`), oldest first, neither skipping nor
/// repeating, and a cursor from elsewhere is refused.
#[test]
fn threat_49_the_children_listing_pages_at_the_cli_and_over_mcp() {
    let site = boss_site();
    // The CLI: three children of `lead`, two a page.
    site.json(&[
        "session",
        "start",
        "--role",
        "supervisor",
        "--project",
        "p",
        "--name",
        "lead",
    ]);
    let mut spawned = Vec::new();
    for name in ["c1", "c2", "c3"] {
        let child = site.json(&[
            "session",
            "spawn",
            "lead",
            "--role",
            "workagent",
            "--name",
            name,
            "--objective",
            "x",
        ]);
        spawned.push(child["child"]["id"].as_str().unwrap().to_string());
    }
    let (code, out, err) = site.run(&[
        "session",
        "list",
        "--children",
        "lead",
        "--limit",
        "2",
        "--json",
    ]);
    assert_eq!(code, 0, "{err}");
    let first: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(ids(&first), spawned[..2]);
    let cursor = err
        .split("`--cursor ")
        .nth(1)
        .and_then(|rest| rest.split('`').next())
        .unwrap_or_else(|| panic!("no next cursor: {err}"))
        .to_string();
    let (code, out, err) = site.run(&[
        "session",
        "list",
        "--children",
        "lead",
        "--limit",
        "2",
        "--cursor",
        &cursor,
        "--json",
    ]);
    assert_eq!(code, 0, "{err}");
    let second: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(ids(&second), spawned[2..]);
    assert!(!err.contains("--cursor"), "{err}");

    // MCP: the same over the boss's own parent.
    let mut server = Server::initialized(&site.config(), &["--as", "boss"]);
    ok(
        &mut server,
        1,
        "session_start",
        json!({"role": "supervisor", "project": "p", "name": "lead"}),
    );
    let mut kids = Vec::new();
    for (i, name) in ["k1", "k2", "k3"].iter().enumerate() {
        let spawned = ok(
            &mut server,
            2 + i as u64,
            "session_spawn",
            json!({"role": "workagent", "name": name, "objective": "x"}),
        );
        kids.push(spawned["child"]["id"].as_str().unwrap().to_string());
    }
    let page = ok(
        &mut server,
        10,
        "session_list",
        json!({"children": true, "limit": 2}),
    );
    assert_eq!(ids(&page["children"]), kids[..2]);
    let next = page["next_cursor"]
        .as_str()
        .expect("a next cursor")
        .to_string();
    let page = ok(
        &mut server,
        11,
        "session_list",
        json!({"children": true, "limit": 2, "cursor": next}),
    );
    assert_eq!(ids(&page["children"]), kids[2..]);
    assert_eq!(page["next_cursor"], Value::Null, "{page}");
    // A cursor of another parent's children is not this one's.
    let (kind, message) = refused(
        &mut server,
        12,
        "session_list",
        json!({"children": true, "cursor": cursor}),
    );
    assert_eq!(kind, "session_invalid_input");
    assert!(
        message.contains("is not one of this session's children"),
        "{message}"
    );
}
