//! Sessions that survive: the call pipeline's log, lifecycle through the CLI,
//! and docs/threats.md "Durability" against the real binary and real faults.

use std::path::Path;
use std::process::Stdio;
use std::sync::Arc;
use std::time::{Duration, Instant};

use glovebox::approvals::Approvals;
use glovebox::session::{EventKind, Role};
use glovebox::storage::{Durability, Reopening, SledStore, Storage};
use glovebox::{CallError, Durable, Gateway, SessionError, Sessions};
use serde_json::Value;

use crate::util::{self, durable, manifest, plugins};

fn start(sessions: &Sessions, name: &str) -> String {
    util::start_session(sessions, Role::Workagent, "tests", name)
}

fn store_sessions(dir: &Path) -> (Arc<SledStore>, Arc<Sessions>) {
    let (store, durable) = durable(dir);
    (store, durable.sessions.clone())
}

fn kinds(sessions: &Sessions, id: &str) -> Vec<String> {
    sessions
        .events(id, 1, usize::MAX)
        .unwrap()
        .iter()
        .map(|e| e.kind.name().to_string())
        .collect()
}

#[tokio::test]
async fn a_call_in_a_session_is_logged_requested_started_finished() {
    let h = util::host(vec![
        manifest("echo", plugins::TOOL_ECHO),
        manifest("panicky", plugins::HOSTILE_PANIC),
    ])
    .await;
    let dir = tempfile::tempdir().unwrap();
    let (_store, d) = durable(dir.path());
    let g = Gateway::new(Arc::new(h.host), d.clone());
    let sessions = d.sessions.clone();
    let id = start(&sessions, "worker");
    let report = g
        .scope(&glovebox::cli_operator())
        .call_in_session("worker", "echo.echo", r#"{"message":"logged"}"#)
        .await
        .unwrap();
    assert_eq!(report.outcome.unwrap()["message"], "logged");
    let failed = g
        .scope(&glovebox::cli_operator())
        .call_in_session(&id, "panicky.panic", "{}")
        .await
        .unwrap();
    assert!(matches!(failed.outcome, Err(CallError::Trap { .. })));
    assert_eq!(
        kinds(&sessions, &id),
        [
            "session_started",
            "call_requested",
            "call_started",
            "call_finished",
            "call_requested",
            "call_started",
            "call_finished",
            // The stuck-agent detector: a failed call puts the session on
            // the escalation ladder's first step (retry).
            "escalation"
        ]
    );
    let events = sessions.events(&id, 1, usize::MAX).unwrap();
    let EventKind::CallStarted {
        idempotency_key,
        tool_digest,
        ..
    } = &events[2].kind
    else {
        panic!()
    };
    assert!(idempotency_key.starts_with(&id), "{idempotency_key}");
    assert_eq!(tool_digest.len(), 64);
    let EventKind::CallFinished {
        outcome,
        output,
        metering,
        ..
    } = &events[3].kind
    else {
        panic!()
    };
    assert_eq!(outcome, "ok");
    assert_eq!(output.as_deref(), Some(r#"{"message":"logged"}"#));
    assert!(metering.wall_us > 0 && metering.peak_memory_bytes > 0);
    let EventKind::CallFinished { outcome, error, .. } = &events[6].kind else {
        panic!()
    };
    assert_eq!(outcome, "trap");
    assert!(error.as_deref().unwrap().contains("panicked on purpose"));
    let state = sessions.show(&id).unwrap();
    assert_eq!(
        (state.counters.totals.calls, state.counters.totals.failures),
        (2, 1)
    );
}

#[tokio::test]
async fn a_paused_session_refuses_calls_and_logs_nothing_executed() {
    let h = util::host(vec![manifest("echo", plugins::TOOL_ECHO)]).await;
    let dir = tempfile::tempdir().unwrap();
    let (_store, d) = durable(dir.path());
    let g = Gateway::new(Arc::new(h.host), d.clone());
    let sessions = d.sessions.clone();
    let id = start(&sessions, "pausable");
    sessions.resume(&id).unwrap();
    sessions.pause(&id, "waiting for review").unwrap();
    let before = kinds(&sessions, &id);
    let err = g
        .scope(&glovebox::cli_operator())
        .call_in_session(&id, "echo.echo", "{}")
        .await
        .unwrap_err();
    assert!(
        matches!(err, SessionError::IllegalTransition { .. }),
        "{err}"
    );
    assert!(
        err.to_string().contains("resume"),
        "says what is allowed: {err}"
    );
    assert_eq!(kinds(&sessions, &id), before);
    // An unknown tool is a bad request: nothing is logged either.
    sessions.resume(&id).unwrap();
    let before = kinds(&sessions, &id);
    let report = g
        .scope(&glovebox::cli_operator())
        .call_in_session(&id, "nope", "{}")
        .await
        .unwrap();
    assert!(matches!(report.outcome, Err(CallError::UnknownTool { .. })));
    assert_eq!(kinds(&sessions, &id), before);
}

// Threat 28: an I/O error on append: the call is not acknowledged, no false success.
#[tokio::test]
async fn an_io_error_on_append_is_never_acknowledged() {
    let h = util::host(vec![manifest("echo", plugins::TOOL_ECHO)]).await;
    let dir = tempfile::tempdir().unwrap();
    let id = {
        let (store, d) = durable(dir.path());
        let g = Gateway::new(Arc::new(h.host), d.clone());
        let id = start(&d.sessions, "disk");
        store.fail_next_flushes(1);
        let err = g
            .scope(&glovebox::cli_operator())
            .call_in_session(&id, "echo.echo", "{}")
            .await
            .unwrap_err();
        assert!(matches!(err, SessionError::Storage(_)), "{err}");
        assert!(
            err.to_string().contains("reopens the data dir by itself"),
            "{err}"
        );
        // The failed store refuses everything after, rather than risk a false success.
        let err = g
            .scope(&glovebox::cli_operator())
            .call_in_session(&id, "echo.echo", "{}")
            .await
            .unwrap_err();
        assert!(matches!(err, SessionError::Storage(_)), "{err}");
        id
    };
    // After a restart the session is intact and nothing unacknowledged ran
    // to a logged success.
    let (_store, sessions) = store_sessions(dir.path());
    let report = sessions.verify(&id).unwrap();
    assert!(report.ok, "{report:?}");
    let finished = sessions
        .events(&id, 1, usize::MAX)
        .unwrap()
        .into_iter()
        .filter(|e| matches!(e.kind, EventKind::CallFinished { .. }))
        .count();
    assert_eq!(finished, 0);
}

// Threat 28: a failed flush stops only the work that wrote through it; once
// the store can be reopened, it is, in place: no restart, nothing
// acknowledged lost, and the call that gave up is marked interrupted.
#[tokio::test]
async fn a_failed_flush_is_recovered_without_a_restart() {
    let h = util::host(vec![manifest("echo", plugins::TOOL_ECHO)]).await;
    let dir = tempfile::tempdir().unwrap();
    let first = Arc::new(SledStore::open(dir.path(), Durability::Flush).unwrap());
    let path = dir.path().to_path_buf();
    let storage: Arc<dyn Storage> = Arc::new(Reopening::new(
        first.clone(),
        Box::new(move || {
            Ok(Arc::new(SledStore::open(&path, Durability::Flush)?) as Arc<dyn Storage>)
        }),
        Box::new(|| Ok(())),
    ));
    let d = Arc::new(Durable {
        sessions: Arc::new(Sessions::new(storage.clone())),
        approvals: Arc::new(Approvals::new(storage.clone())),
        outbox: Arc::new(glovebox::notify::Outbox::new(storage.clone(), Vec::new())),
        storage: storage.clone(),
        recovery: Default::default(),
        repairs: Vec::new(),
    });
    let g = Gateway::new(Arc::new(h.host), d.clone());
    let sessions = d.sessions.clone();
    let id = start(&sessions, "disk");
    let bystander = start(&sessions, "bystander");
    let acked = g
        .scope(&glovebox::cli_operator())
        .call_in_session(&id, "echo.echo", r#"{"message":"before"}"#)
        .await
        .unwrap();
    assert!(acked.outcome.is_ok());

    first.fail_next_flushes(1);
    drop(first);
    let err = g
        .scope(&glovebox::cli_operator())
        .call_in_session(&id, "echo.echo", r#"{"message":"lost"}"#)
        .await
        .unwrap_err();
    assert!(matches!(err, SessionError::Storage(_)), "{err}");
    assert!(
        err.to_string().contains("reopens the data dir by itself"),
        "{err}"
    );
    // Right after, the store refuses (it cannot tell what reached the disk).
    assert!(
        g.scope(&glovebox::cli_operator())
            .call_in_session(&bystander, "echo.echo", "{}")
            .await
            .is_err()
    );

    // Once a reopen is due, the next request reopens it: no restart.
    tokio::time::sleep(glovebox::storage::RETRY).await;
    let after = g
        .scope(&glovebox::cli_operator())
        .call_in_session(&id, "echo.echo", r#"{"message":"after"}"#)
        .await
        .unwrap();
    assert!(after.outcome.is_ok(), "{:?}", after.outcome);
    assert_eq!(storage.generation(), 1);
    let other = g
        .scope(&glovebox::cli_operator())
        .call_in_session(&bystander, "echo.echo", "{}")
        .await
        .unwrap();
    assert!(other.outcome.is_ok());

    // The log verifies; the acknowledged call and the one after are there;
    // the call that failed is never left in flight: its record may have
    // reached the disk whole (the failed flush's writes may, as after a
    // crash), or in part, and then it is interrupted.
    let report = sessions.verify(&id).unwrap();
    assert!(report.ok, "{report:?}");
    let events = sessions.events(&id, 1, usize::MAX).unwrap();
    let requested: Vec<&str> = events
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::CallRequested { call_id, .. } => Some(call_id.as_str()),
            _ => None,
        })
        .collect();
    let finished = events
        .iter()
        .filter(|e| matches!(e.kind, EventKind::CallFinished { .. }))
        .count();
    let interrupted = events
        .iter()
        .filter(|e| matches!(e.kind, EventKind::CallInterrupted { .. }))
        .count();
    assert!(finished >= 2, "{:?}", kinds(&sessions, &id));
    assert_eq!(requested.len(), 3, "{:?}", kinds(&sessions, &id));
    assert_eq!(finished + interrupted, 3, "{:?}", kinds(&sessions, &id));
    let state = sessions.show(&id).unwrap();
    assert!(state.in_flight.is_empty(), "{:?}", state.in_flight);
}

// ---- the real binary -------------------------------------------------------

use crate::util::glovebox;

pub use crate::util::Site;

// Threat 29: a call in flight when the host died is interrupted on resume and
// re-run only if idempotent, with the same idempotency key.
#[test]
fn a_call_in_flight_when_the_host_is_killed_is_interrupted_and_rerun_if_idempotent() {
    for idempotent in [true, false] {
        let site = Site::new(idempotent);
        site.start_workagent("sleeper");
        let mut child = glovebox()
            .arg("--config")
            .arg(site.config())
            .args([
                "call",
                "--session",
                "sleeper",
                "sleep.sleep",
                "--input",
                r#"{"seconds":3}"#,
            ])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        std::thread::sleep(Duration::from_millis(1500));
        child.kill().unwrap(); // SIGKILL
        child.wait().unwrap();

        let resumed = site.json(&["session", "resume", "sleeper"]);
        let interrupted = resumed["interrupted_calls"].as_array().unwrap();
        assert_eq!(interrupted.len(), 1, "{resumed}");
        let call = &interrupted[0];
        assert_eq!(call["tool"], "sleep.sleep");
        assert_eq!(call["idempotent"], idempotent);
        let call_id = call["call_id"].as_str().unwrap().to_string();
        let key = call["idempotency_key"].as_str().unwrap().to_string();

        let (code, _, err) = site.run(&["session", "rerun", "sleeper", &call_id]);
        if idempotent {
            assert_eq!(code, 0, "{err}");
            // The re-run was logged with the original idempotency key.
            let (_, export, _) = site.run(&["log", "export", "sleeper"]);
            let keys: Vec<String> = export
                .lines()
                .map(|l| serde_json::from_str::<Value>(l).unwrap())
                .filter(|e| e["kind"]["type"] == "call_started")
                .map(|e| e["kind"]["idempotency_key"].as_str().unwrap().to_string())
                .collect();
            assert_eq!(keys, [key.clone(), key], "re-run with the same key");
        } else {
            assert_eq!(code, 8, "{err}");
            assert!(err.contains("not idempotent"), "{err}");
        }
    }
}

// Threat 27 (a second host process on the same data dir) is tested in the crash
// harness's binary (`tests/crash/sessions.rs`): the process holding the data dir is
// its `append` workload.

// The walk-through of docs/operators/sessions.md: start, use, kill mid-flight,
// resume by name with the handoff.
#[test]
fn a_session_resumes_by_name_with_its_handoff_after_a_kill() {
    let site = Site::new(true);
    site.json(&[
        "session",
        "start",
        "--role",
        "supervisor",
        "--project",
        "docs",
        "--name",
        "review",
    ]);
    site.json(&[
        "session",
        "handoff",
        "review",
        "--kind",
        "continuation",
        "--objective",
        "review chapter 3",
        "--done",
        "read chapter 3",
        "--phase",
        "reviewing",
        "--next",
        "write the summary",
    ]);
    let (code, _, err) = site.run(&[
        "call",
        "--session",
        "review",
        "echo.echo",
        "--input",
        r#"{"message":"note"}"#,
    ]);
    assert_eq!(code, 0, "{err}");
    let mut child = glovebox()
        .arg("--config")
        .arg(site.config())
        .args([
            "call",
            "--session",
            "review",
            "sleep.sleep",
            "--input",
            r#"{"seconds":30}"#,
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let started = Instant::now();
    std::thread::sleep(Duration::from_millis(1500));
    child.kill().unwrap();
    child.wait().unwrap();
    assert!(started.elapsed() < Duration::from_secs(10));
    let resumed = site.json(&["session", "resume", "review"]);
    assert_eq!(resumed["state"]["name"], "review");
    assert_eq!(resumed["state"]["status"], "active");
    let handoff = &resumed["latest_handoff"]["handoff"];
    assert_eq!(handoff["objective"], "review chapter 3");
    assert_eq!(handoff["next_steps"][0], "write the summary");
    assert_eq!(resumed["interrupted_calls"][0]["tool"], "sleep.sleep");
    let (code, out, _) = site.run(&["log", "verify", "review"]);
    assert_eq!(code, 0);
    assert!(out.starts_with("ok"), "{out}");
}

#[test]
fn threat_40_a_tool_error_of_100_kb_is_cut_in_the_log_with_its_length() {
    let site = Site::with_plugins(&[(
        "files.toml",
        format!(
            "name = \"files\"\ncomponent = \"{}\"\n[[fs]]\nhost = \"work\"\nguest = \"/data\"\n",
            plugins::TOOL_FILES
        ),
    )]);
    std::fs::create_dir(site.path().join("work")).unwrap();
    site.start_workagent("w");
    // The tool words its error with the path the caller chose: 100 KB of it.
    let path = format!("/data/{}", "é".repeat(50_000));
    let input = serde_json::json!({ "path": path }).to_string();
    let (code, _, err) = site.run(&["call", "--session", "w", "files.read", "--input", &input]);
    assert_ne!(code, 0);
    assert!(err.len() > 100_000, "the caller gets the whole error");

    let (_, export, _) = site.run(&["log", "export", "w"]);
    let finished: Value = export
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .find(|e| e["kind"]["type"] == "call_finished")
        .expect("the call finished in the log");
    let logged = finished["kind"]["error"].as_str().unwrap();
    assert!(
        logged.starts_with("tool `files.read` failed"),
        "{logged:.200}"
    );
    assert!(
        logged.len() <= glovebox::session::MAX_ERROR_BYTES + 64,
        "the log keeps {} bytes of the error",
        logged.len()
    );
    let full = err.trim_end().trim_start_matches("error: ").len();
    assert!(
        logged.ends_with(" bytes in all)") && logged.contains('…'),
        "the cut is marked with the full length: {}",
        &logged[logged.len() - 40..]
    );
    assert!(full > 100_000, "{full}");
    let (code, out, err) = site.run(&["log", "verify", "w"]);
    assert_eq!(code, 0, "{out}{err}");
}

#[test]
fn threat_48_a_data_dir_others_may_write_or_own_is_refused_by_every_command() {
    use std::os::unix::fs::{MetadataExt, PermissionsExt};
    let site = Site::new(true);
    site.start_workagent("w");
    let data = site.path().join("data");
    let mode = |p: &Path| std::fs::metadata(p).unwrap().mode() & 0o777;
    assert_eq!(mode(&data), 0o700, "the data dir is created private");
    assert_eq!(mode(&data.join("store")), 0o700, "the store dir too");
    // And every file the store wrote is its user's alone (the binary's umask).
    let mut files = 0;
    let mut dirs = vec![data.join("store")];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            assert_eq!(
                mode(&path) & 0o077,
                0,
                "{} is open to others",
                path.display()
            );
            if path.is_dir() {
                dirs.push(path);
            } else {
                files += 1;
            }
        }
    }
    assert!(files >= 2, "the store wrote its files");

    // Group- or world-writable: every command refuses, naming the fix.
    std::fs::set_permissions(&data, std::fs::Permissions::from_mode(0o777)).unwrap();
    for args in [
        &["session", "list"][..],
        &["tools"][..],
        &["log", "verify", "w"][..],
    ] {
        let (code, _, err) = site.run(args);
        assert_ne!(code, 0, "{args:?} ran on a world-writable data dir");
        assert!(
            err.contains("writable by its group or by others") && err.contains("chmod 700"),
            "{args:?}: {err}"
        );
    }
    std::fs::set_permissions(&data, std::fs::Permissions::from_mode(0o700)).unwrap();
    let (code, out, err) = site.run(&["session", "list"]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains(" w "), "{out}");

    // Owned by another user (only root can hand it over: skipped otherwise).
    let me = std::process::Command::new("id").arg("-u").output().unwrap();
    if String::from_utf8_lossy(&me.stdout).trim() == "0" {
        let chown = std::process::Command::new("chown")
            .args(["65534", data.to_str().unwrap()])
            .status()
            .unwrap();
        assert!(chown.success());
        let (code, _, err) = site.run(&["session", "list"]);
        assert_ne!(code, 0);
        assert!(err.contains("owned by uid 65534"), "{err}");
        std::process::Command::new("chown")
            .args(["0", data.to_str().unwrap()])
            .status()
            .unwrap();
    } else {
        eprintln!("not root: the other-owner half of threat 48 is not checked here");
    }
}

#[test]
fn threat_45_an_export_is_checked_offline_against_the_head_printed_with_it() {
    let site = Site::new(true);
    site.start_workagent("w");
    for i in 0..3 {
        let (code, _, err) = site.run(&["session", "tag", "w", "--add", &format!("t{i}")]);
        assert_eq!(code, 0, "{err}");
    }
    let (code, export, err) = site.run(&["log", "export", "w"]);
    assert_eq!(code, 0, "{err}");
    let head = err
        .lines()
        .find_map(|l| l.strip_prefix("head: "))
        .expect("the export prints its head")
        .to_string();
    assert!(head.starts_with("4:"), "{head}");
    let dir = tempfile::tempdir().unwrap();
    let whole = dir.path().join("whole.jsonl");
    std::fs::write(&whole, &export).unwrap();
    let cut = dir.path().join("cut.jsonl");
    let lines: Vec<&str> = export.lines().collect();
    std::fs::write(&cut, lines[..3].join("\n")).unwrap();

    // Offline: a config that does not exist, no data dir.
    let verify = |file: &Path, head: Option<&str>| {
        let mut cmd = util::glovebox();
        cmd.args([
            "--config",
            "/nonexistent/glovebox.toml",
            "log",
            "verify",
            "--file",
        ])
        .arg(file);
        if let Some(head) = head {
            cmd.args(["--head", head]);
        }
        let out = cmd.output().unwrap();
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stdout).into_owned()
                + &String::from_utf8_lossy(&out.stderr),
        )
    };
    let (code, out) = verify(&whole, Some(&head));
    assert_eq!(code, Some(0), "{out}");
    assert!(
        out.contains("4 events") && out.contains("ends at its head (event 4)"),
        "{out}"
    );
    // The cut export still links, but does not reach the head.
    let (code, out) = verify(&cut, None);
    assert_eq!(code, Some(0), "{out}");
    assert!(out.contains("no --head given"), "{out}");
    let (code, out) = verify(&cut, Some(&head));
    assert_eq!(code, Some(8), "{out}");
    assert!(out.contains("cut off the tail"), "{out}");
    // A bad --head is named.
    let (code, out) = verify(&whole, Some("4:nothex"));
    assert_eq!(code, Some(2), "{out}");
    assert!(out.contains("SEQ:HASH"), "{out}");
}

/// Threat 26 with the real binary, on the SQLite backend (the ledger's tests
/// run on sled: the chain is computed above the storage): a keyed session
/// verifies and says so; without its key it refuses, naming the key file;
/// its export verifies offline with `--key`; an event altered and re-sealed
/// with SHA-256 by someone who can write the store, but not read the key,
/// fails.
#[test]
fn threat_26_a_keyed_log_verifies_with_its_key_and_not_after_a_reseal_without_it() {
    use glovebox::session::{Chain, Event, digest};
    use std::os::unix::fs::PermissionsExt;

    let site = Site::new(true);
    let keys = tempfile::tempdir().unwrap();
    let key = keys.path().join("chain.key");
    std::fs::write(&key, [42u8; 32]).unwrap();
    let keyed = format!(
        "backend = \"sqlite\"\nchain_key_file = \"{}\"\n",
        key.display()
    );

    // A key others can read is refused, with the fix.
    std::fs::set_permissions(&key, std::fs::Permissions::from_mode(0o644)).unwrap();
    site.set_config(&keyed);
    let (code, _, err) = site.run(&["session", "list"]);
    assert_ne!(code, 0);
    assert!(
        err.contains(&format!("chmod 600 {}", key.display())),
        "{err}"
    );
    std::fs::set_permissions(&key, std::fs::Permissions::from_mode(0o600)).unwrap();

    let id = site.start_workagent("w")["id"]
        .as_str()
        .unwrap()
        .to_string();
    for i in 0..2 {
        let input = format!(r#"{{"message":"call {i}"}}"#);
        let (code, _, err) = site.run(&["call", "--session", "w", "echo.echo", "--input", &input]);
        assert_eq!(code, 0, "{err}");
    }
    // The key id: the first 8 bytes of the key's SHA-256.
    let key_id = digest(&[42u8; 32])[..16].to_string();
    let (code, out, err) = site.run(&["log", "verify", "w"]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(
        out.contains(&format!("keyed (key id {key_id}) chain intact")),
        "{out}"
    );
    let (code, out, err) = site.run(&["store", "check"]);
    assert_eq!(
        code, 0,
        "the store check verifies keyed logs with the key: {out}{err}"
    );

    // Exported, and checked offline with the key.
    let (code, export, err) = site.run(&["log", "export", "w"]);
    assert_eq!(code, 0, "{err}");
    let head = err
        .lines()
        .find_map(|l| l.strip_prefix("head: "))
        .expect("the export prints its head")
        .to_string();
    let file = keys.path().join("export.jsonl");
    std::fs::write(&file, &export).unwrap();
    let offline = |key_arg: Option<&Path>| {
        let mut cmd = util::glovebox();
        cmd.args([
            "--config",
            "/nonexistent/glovebox.toml",
            "log",
            "verify",
            "--file",
        ])
        .arg(&file)
        .args(["--head", &head]);
        if let Some(k) = key_arg {
            cmd.arg("--key").arg(k);
        }
        let out = cmd.output().unwrap();
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stdout).into_owned()
                + &String::from_utf8_lossy(&out.stderr),
        )
    };
    let (code, out) = offline(Some(&key));
    assert_eq!(code, Some(0), "{out}");
    assert!(
        out.contains(&format!(
            "keyed (key id {key_id}) chain intact, ends at its head"
        )),
        "{out}"
    );
    let (code, out) = offline(None);
    assert_eq!(code, Some(2), "{out}");
    assert!(out.contains("--key FILE") && out.contains(&key_id), "{out}");

    // The key taken out of the config: the keyed session is refused, not read as plain.
    site.set_config("backend = \"sqlite\"\n");
    for args in [&["log", "verify", "w"][..], &["session", "resume", "w"]] {
        let (code, out, err) = site.run(args);
        assert_ne!(code, 0, "{args:?}: {out}");
        assert!(
            err.contains("no `[storage] chain_key_file` is configured")
                && err.contains(&key.display().to_string()),
            "{args:?}: {err}"
        );
    }
    site.set_config(&keyed);

    // Someone who can write the store but not read the key alters the first
    // call's output and re-seals the chain from there with SHA-256.
    let events: Vec<Event> = export
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let at = events
        .iter()
        .position(|e| e.kind.name() == "call_finished")
        .expect("a finished call");
    let mut prev = events[at - 1].hash.clone();
    for event in &events[at..] {
        let mut event = event.clone();
        if let EventKind::CallFinished { output, .. } = &mut event.kind {
            *output = Some("\"forged\"".to_string());
        }
        event.prev_hash = prev;
        event.hash = event.compute_hash(&Chain::Plain);
        prev = event.hash.clone();
        glovebox_store::sqlite_raw::overwrite_entry(
            &site.data(),
            &id,
            event.seq,
            &event.to_bytes(),
        );
    }
    let (code, out, err) = site.run(&["log", "verify", "w"]);
    assert_eq!(code, 8, "{out}{err}");
    assert!(
        out.contains(&format!(
            "BAD  w (keyed (key id {key_id}) chain): first bad event {}",
            at + 1
        )) && out.contains("re-sealed without the key"),
        "{out}"
    );
}

/// A data dir recorded before issue 36 (the ledger's test fixture; see
/// `host/ledger/src/session/tests/fixtures/mod.rs`): a global `names`
/// bucket, no session indexes, a parent checkpointed with its whole child
/// list. Written into `store` as it was.
pub(crate) fn restore_before_issue_36(store: &dyn Storage) {
    let dump: Value = serde_json::from_str(include_str!(
        "../../host/ledger/src/session/tests/fixtures/before_issue_36.json"
    ))
    .unwrap();
    for (stream, entries) in dump["streams"].as_object().unwrap() {
        let entries: Vec<Vec<u8>> = entries
            .as_array()
            .unwrap()
            .iter()
            .map(|e| e.as_str().unwrap().as_bytes().to_vec())
            .collect();
        store.append(stream, 0, &entries).unwrap();
    }
    for (bucket, keys) in dump["buckets"].as_object().unwrap() {
        for (key, value) in keys.as_object().unwrap() {
            store
                .put(bucket, key, value.as_str().unwrap().as_bytes())
                .unwrap();
        }
    }
}

/// Why: names were one global space (threat 53) and listings decoded every
/// session (threat 49); a data dir of the old shape must keep working with
/// the real binary, its names each in its owner's space, its sessions
/// listed a page at a time.
#[test]
fn threat_53_a_data_dir_with_global_names_keeps_working_and_lists_a_page_at_a_time() {
    let site = util::Site::new(false);
    // The binary makes the data dir (private, as it wants it), then the
    // old store is written into it.
    assert_eq!(site.run(&["session", "list"]).0, 0);
    std::fs::remove_dir_all(site.data()).unwrap();
    {
        let store = SledStore::open(&site.data(), Durability::Flush).unwrap();
        restore_before_issue_36(&store);
    }
    let build = site.json(&["session", "show", "build"]);
    assert_eq!(build["status"], "created");
    // `deploy` is alice's (ended) and bob's (live): an operator says which.
    let (code, _, err) = site.run(&["session", "show", "deploy"]);
    assert_ne!(code, 0);
    assert!(
        err.contains("several principals have sessions named `deploy` (`alice/deploy`, `bob/deploy`, ...): name the one you mean as `OWNER/NAME`"),
        "{err}"
    );
    let bobs = site.json(&["session", "show", "bob/deploy"]);
    assert_eq!(
        (&bobs["owner"], &bobs["status"]),
        (&"bob".into(), &"created".into())
    );
    assert_eq!(
        site.json(&["session", "show", "alice/deploy"])["status"],
        "completed"
    );

    // Seven sessions, newest first, three at a time.
    let mut seen = Vec::new();
    let mut cursor: Option<String> = None;
    loop {
        let mut args = vec!["session", "list", "--limit", "3", "--json"];
        if let Some(c) = &cursor {
            args.extend(["--cursor", c.as_str()]);
        }
        let (code, out, err) = site.run(&args);
        assert_eq!(code, 0, "{err}");
        let page: Vec<Value> = serde_json::from_str(&out).unwrap();
        assert!(page.len() <= 3);
        seen.extend(page.iter().map(|s| s["id"].as_str().unwrap().to_string()));
        match err.split("--cursor ").nth(1) {
            Some(rest) => cursor = rest.split('`').next().map(str::to_string),
            None => break,
        }
    }
    assert_eq!(seen.len(), 7, "{seen:?}");
    let all = site.json(&["session", "list", "--json"]);
    let ids: Vec<&str> = all
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, seen);
    let owners = site.json(&["session", "list", "--owner", "alice", "--json"]);
    assert_eq!(owners.as_array().unwrap().len(), 5, "{owners}");
    // The store is whole.
    let (code, out, err) = site.run(&["store", "check"]);
    assert_eq!(code, 0, "{out}{err}");
}
