//! Blockers that reach someone, over the real binary with a webhook
//! receiver: an agent's own blocker flag (`session_flag`, and `glovebox
//! session flag`), a handoff that names blockers, and the notifications of
//! a child spawned and of a handoff, so a dispatcher needs no polling.

use serde_json::{Value, json};

use crate::notify::{Delivery, Receiver, call, glovebox, ok_json, serve, site};

/// The deliveries to `/ops` of kind `event` whose details' `key` is `value`.
fn delivered<'a>(got: &'a [Delivery], event: &str, key: &str, value: &str) -> Vec<&'a Delivery> {
    got.iter()
        .filter(|d| d.path == "/ops" && d.answered == 200 && d.event() == event)
        .filter(|d| d.json()["details"][key] == value)
        .collect()
}

#[test]
fn an_agents_blocker_reaches_a_webhook_and_the_blocked_list() {
    let receiver = Receiver::start();
    let dir = tempfile::tempdir().unwrap();
    let config = site(
        dir.path(),
        &format!(
            "[[notify]]\nname = \"ops\"\nurl = \"{}\"\nretry_initial = \"50ms\"\n\
             events = [\"flag:warning\", \"child_spawned\", \"handoff\"]\n",
            receiver.url("/ops"),
        ),
    );
    let mut server = serve(&config);
    let mut id = 0;
    let started = call(
        &mut server,
        &mut id,
        "session_start",
        json!({"role": "workagent", "project": "p", "name": "blocked-one"}),
    );
    assert_eq!(started["name"], "blocked-one", "{started}");

    // The agent says what blocks it: a warning flag, the session runs on.
    let raised = call(
        &mut server,
        &mut id,
        "session_flag",
        json!({"reason": "the staging database credentials expired", "needs": "new credentials in the vault"}),
    );
    assert_eq!(raised["flag"]["rule"], "agent", "{raised}");
    assert_eq!(raised["flag"]["severity"], "warning", "{raised}");
    assert_eq!(raised["paused"], false, "{raised}");
    let got = receiver.wait_until("the agent's flag", |got| {
        !delivered(got, "flag", "rule", "agent").is_empty()
    });
    let body = delivered(&got, "flag", "rule", "agent")[0].json();
    assert_eq!(body["severity"], "warning", "{body}");
    assert_eq!(body["session_name"], "blocked-one", "{body}");
    assert!(
        body["summary"]
            .as_str()
            .unwrap()
            .contains("staging database credentials expired"),
        "{body}"
    );
    assert_eq!(
        body["details"]["suggested_action"], "new credentials in the vault",
        "{body}"
    );
    let blocked = ok_json(&config, &["session", "list", "--blocked", "--json"]);
    let row = blocked
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["name"] == "blocked-one")
        .unwrap_or_else(|| panic!("not in --blocked: {blocked}"));
    assert_eq!(row["flags"]["agent"]["severity"], "warning", "{row}");

    // A child spawned and a handoff are notifications of their own; a
    // handoff that names blockers raises a `handoff` flag, and clears the
    // agent's earlier one (the handoff states the blockers anew).
    call(
        &mut server,
        &mut id,
        "session_spawn",
        json!({"role": "workagent", "objective": "migrate the schema", "name": "migrator"}),
    );
    receiver.wait_until("the child spawned", |got| {
        !delivered(got, "child_spawned", "name", "migrator").is_empty()
    });
    let handed = call(
        &mut server,
        &mut id,
        "session_handoff",
        json!({"kind": "continuation", "objective": "finish the migration",
               "blockers": ["waiting for the schema review"]}),
    );
    assert!(handed.is_object(), "{handed}");
    let got = receiver.wait_until("the handoff and its flag", |got| {
        !delivered(got, "handoff", "objective", "finish the migration").is_empty()
            && !delivered(got, "flag", "rule", "handoff").is_empty()
    });
    let handoff = delivered(&got, "handoff", "objective", "finish the migration")[0].json();
    assert_eq!(
        handoff["details"]["blockers"],
        json!(["waiting for the schema review"]),
        "{handoff}"
    );
    let status = call(&mut server, &mut id, "session_status", json!({}));
    let flags = &status["watch"]["flags"];
    assert!(flags.get("agent").is_none(), "{flags}");
    assert!(
        flags["handoff"]["reason"]
            .as_str()
            .unwrap()
            .contains("waiting for the schema review"),
        "{flags}"
    );

    // An operator's command line raises a critical one: it pauses the
    // session, which only an operator resumes.
    let (code, out, err) = glovebox(
        &config,
        &[
            "session",
            "flag",
            "blocked-one",
            "--reason",
            "legal hold on the customer table",
            "--severity",
            "critical",
        ],
    );
    assert_eq!(code, 0, "{out}{err}");
    let flagged: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(flagged["paused"], true, "{flagged}");
    assert_eq!(flagged["escalation"], "blocker", "{flagged}");
    let shown = ok_json(&config, &["session", "show", "blocked-one"]);
    assert_eq!(shown["status"], "paused", "{shown}");
    let refused = call(&mut server, &mut id, "echo.echo", json!({"message": "hi"}));
    assert!(refused.to_string().contains("paused"), "{refused}");
    // An operator's resume clears what was said: the session is off the
    // blocked list.
    ok_json(&config, &["session", "resume", "blocked-one"]);
    let blocked = ok_json(&config, &["session", "list", "--blocked", "--json"]);
    assert!(
        blocked
            .as_array()
            .unwrap()
            .iter()
            .all(|r| r["name"] != "blocked-one"),
        "{blocked}"
    );
    // An agent that pauses itself is heard too.
    call(
        &mut server,
        &mut id,
        "session_pause",
        json!({"reason": "waiting for the vendor's answer"}),
    );
    receiver.wait_until("the agent's pause", |got| {
        !delivered(got, "flag", "rule", "paused").is_empty()
    });
    // A flag needs a reason.
    let (code, _, err) = glovebox(
        &config,
        &["session", "flag", "blocked-one", "--reason", " "],
    );
    assert_ne!(code, 0);
    assert!(err.contains("needs a reason"), "{err}");
}

/// A denied call reaches whoever listens for `call_denied` (issue 42's
/// `on_denied`): the tool, and the reason the hook gave; a call that ran
/// and failed reaches `call_failed`, with its outcome and error, and is no
/// denial.
#[test]
fn a_denied_call_and_a_failed_one_reach_a_webhook() {
    let receiver = Receiver::start();
    let dir = tempfile::tempdir().unwrap();
    let config = site(
        dir.path(),
        &format!(
            "[[hook]]\nname = \"roles\"\ncomponent = \"{}\"\n[hook.settings.roles]\nworkagent = [\"files.read\"]\n\
             [[notify]]\nname = \"ops\"\nurl = \"{}\"\nretry_initial = \"50ms\"\nevents = [\"call_denied\", \"call_failed\"]\n",
            crate::util::plugins::HOOK_ROLE_ALLOWLIST,
            receiver.url("/ops"),
        ),
    );
    let mut server = serve(&config);
    let mut id = 0;
    // The call runs in the connection's default session (a workagent's).
    id += 1;
    let answer = server.call(id, "echo.echo", json!({"message": "hi"}));
    assert_eq!(answer["result"]["isError"], true, "{answer}");
    assert_eq!(
        answer["result"]["structuredContent"]["denied"]["hook"], "roles",
        "{answer}"
    );
    let got = receiver.wait_until("the denial", |got| {
        !delivered(got, "call_denied", "tool", "echo.echo").is_empty()
    });
    let body = delivered(&got, "call_denied", "tool", "echo.echo")[0].json();
    assert_eq!(body["role"], "workagent", "{body}");
    let reason = body["details"]["reason"].as_str().unwrap();
    assert!(reason.contains("workagent"), "{reason}");
    assert!(
        body["summary"]
            .as_str()
            .unwrap()
            .contains(": call to `echo.echo` denied by hook `roles`"),
        "{body}"
    );
    // A call the hook lets run, and that fails in the tool, is no denial.
    id += 1;
    let failed = server.call(id, "files.read", json!({"path": "/data/none.txt"}));
    assert_eq!(failed["result"]["isError"], true, "{failed}");
    assert!(
        failed["result"]["structuredContent"]["denied"].is_null(),
        "{failed}"
    );
    let got = receiver.wait_until("the failure", |got| {
        !delivered(got, "call_failed", "tool", "files.read").is_empty()
    });
    let body = delivered(&got, "call_failed", "tool", "files.read")[0].json();
    assert_eq!(body["details"]["outcome"], "tool_failed", "{body}");
    assert!(
        body["summary"]
            .as_str()
            .unwrap()
            .contains(": call to `files.read` failed (tool_failed)"),
        "{body}"
    );
    let denials = got.iter().filter(|d| d.event() == "call_denied").count();
    assert_eq!(denials, 1);
    // The denied call was no failure.
    assert!(delivered(&got, "call_failed", "tool", "echo.echo").is_empty());
}
