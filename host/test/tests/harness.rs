//! The harness over the real example components: a grant (a file tool reads
//! in its granted directory and nowhere else), a denial (a hook keyed on the
//! session's role), limits (a deadline, a write quota, fuel), and a hook
//! component asked for decisions directly.

mod support;

use std::time::{Duration, Instant};

use glovebox_test::{Access, CallLimits, Decision, Expect, Harness, HookCall, Role, assert_denied};
use serde_json::json;
use support::{artifact, cache_dir};

fn files() -> Harness {
    Harness::new(artifact("tool_files")).cache_dir(cache_dir())
}

#[test]
fn a_file_tool_reads_in_its_granted_dir_and_nowhere_else() {
    let granted = tempfile::tempdir().unwrap();
    std::fs::write(granted.path().join("a.txt"), "hello\n").unwrap();
    let outside = tempfile::tempdir().unwrap();
    let secret = outside.path().join("secret.txt");
    std::fs::write(&secret, "not yours\n").unwrap();

    let harness = files().grant_dir(granted.path(), "/data", Access::ReadOnly);
    let out = harness
        .call("tool-files.read", json!({"path": "/data/a.txt"}))
        .expect_ok();
    assert_eq!(out, json!({"content": "hello\n"}));
    // The tool's name alone resolves too, as at the command line.
    assert_eq!(
        harness
            .call("read", json!({"path": "/data/a.txt"}))
            .expect_ok(),
        out
    );

    // A file outside the grant, by its host path: the guest cannot see it.
    let refused = harness
        .call("read", json!({"path": secret.to_str().unwrap()}))
        .expect_kind("tool_failed");
    assert!(!refused.to_string().contains("not yours"), "{refused}");
    // Read-only: a write fails and leaves nothing behind.
    harness
        .call("write", json!({"path": "/data/b.txt", "content": "x"}))
        .expect_kind("tool_failed");
    assert!(!granted.path().join("b.txt").exists());
}

#[test]
fn a_read_write_grant_lets_the_tool_write_within_its_quota() {
    let granted = tempfile::tempdir().unwrap();
    let harness = files()
        .grant_dir(granted.path(), "/data", Access::ReadWrite)
        .limits(CallLimits::new().write(16 * 1024));
    harness
        .call("write", json!({"path": "/data/b.txt", "content": "small"}))
        .expect_ok();
    assert_eq!(
        std::fs::read_to_string(granted.path().join("b.txt")).unwrap(),
        "small"
    );
    let reason = harness
        .call(
            "write",
            json!({"path": "/data/c.txt", "content": "x".repeat(64 * 1024)}),
        )
        .expect_quota();
    assert!(reason.contains("`limits.write`"), "{reason}");
}

#[test]
fn a_grant_an_operator_could_not_write_is_refused() {
    let missing = tempfile::tempdir().unwrap().path().join("gone");
    let harness = files().grant_dir(&missing, "/data", Access::ReadOnly);
    let e = harness
        .report("read", &json!({"path": "/data/a.txt"}))
        .unwrap_err();
    assert!(format!("{e:#}").contains("fs[0].host"), "{e:#}");

    let dir = tempfile::tempdir().unwrap();
    let harness = files().grant_dir(dir.path(), "/", Access::ReadOnly);
    let e = harness.report("list", &json!({"path": "/"})).unwrap_err();
    assert!(format!("{e:#}").contains("is the root"), "{e:#}");
}

#[test]
fn a_hook_denies_by_the_sessions_role_with_its_reason_and_alternatives() {
    let dir = tempfile::tempdir().unwrap();
    let policy = json!({"roles": {
        "workagent": ["tool-files.read", "tool-files.list"],
        "supervisor": ["tool-files.*"],
    }});
    let as_role = |role| {
        files()
            .grant_dir(dir.path(), "/data", Access::ReadWrite)
            .hook_with(artifact("hook_role_allowlist"), policy.clone())
            .session(role)
    };
    let worker = as_role(Role::Workagent);
    let write = json!({"path": "/data/b.txt", "content": "x"});
    let result = worker.call("write", write.clone());
    assert_denied(&result);
    let denial = result.expect_denied();
    assert_eq!(denial.hook, "hook-role-allowlist");
    assert_eq!(denial.reason, "role workagent may not use tool-files.write");
    assert!(
        denial.alternatives.iter().any(
            |a| a.contains("hand the task to a role that may use tool-files.write: supervisor")
        ),
        "{:?}",
        denial.alternatives
    );
    assert!(!dir.path().join("b.txt").exists());
    worker.call("list", json!({"path": "/data"})).expect_ok();

    // The same call in a supervisor's session runs.
    as_role(Role::Supervisor).call("write", write).expect_ok();
    assert!(dir.path().join("b.txt").exists());
}

#[test]
fn a_slow_call_is_stopped_at_the_harness_deadline() {
    let harness = Harness::new(artifact("hostile_sleep"))
        .cache_dir(cache_dir())
        .limits(CallLimits::new().deadline(Duration::from_millis(300)));
    assert_eq!(
        harness.call("sleep", json!({"seconds": 0})).expect_ok(),
        json!({"slept_seconds": 0})
    );
    let started = Instant::now();
    let deadline = harness.call("sleep", json!({})).expect_deadline();
    assert_eq!(deadline, Duration::from_millis(300));
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "stopped after {:?}",
        started.elapsed()
    );
}

#[test]
fn a_loop_runs_out_of_fuel() {
    let harness = Harness::new(artifact("hostile_infinite_loop"))
        .cache_dir(cache_dir())
        .limits(CallLimits::new().fuel(1_000_000));
    harness
        .call("spin", json!({}))
        .expect_kind("fuel_exhausted");
}

#[test]
fn a_hook_component_is_asked_for_decisions() {
    let hook = || Harness::new(artifact("hook_destructive")).cache_dir(cache_dir());
    let destructive = || {
        HookCall::new("write:files")
            .tool("files.write")
            .destructive(true)
    };
    let question = hook().hook_request(destructive()).expect_ask();
    assert!(!question.is_empty());
    let (reason, alternatives) = hook()
        .settings(json!({"mode": "deny"}))
        .hook_request(destructive())
        .expect_deny();
    assert!(
        !reason.is_empty() && !alternatives.is_empty(),
        "{reason} {alternatives:?}"
    );
    assert_eq!(
        hook().hook_request(HookCall::new("read:files")),
        Decision::Allow
    );
    // A hook has no tools to call.
    let e = hook().report("x", &json!({})).unwrap_err();
    assert!(e.to_string().contains("hook_request"), "{e}");
}
