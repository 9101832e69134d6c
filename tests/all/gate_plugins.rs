//! The completion-gate checks (`plugins/tool-gate`, as the example manifest
//! `examples/plugins/gate.toml` configures it) and the test ratchet hook
//! (`plugins/hooks/hook-ratchet`, with the example config's settings and with
//! others), through the real host and the real components.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use glovebox::manifest::{Access, HookConfig};
use glovebox::session::Role;
use glovebox::{CallContext, CallError, Durable, Gateway, Host, PluginManifest};
use serde_json::{Value, json};

use crate::util::durable;
use crate::util::{self, call_err, call_ok, fs_grant, manifest, plugins};

fn examples() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("examples")
}

/// The example gate manifest, its read-only grant pointed at `dir` instead of
/// `examples/workspace` (the tests write their reports there).
fn gate_manifest(dir: &Path) -> PluginManifest {
    let mut m = PluginManifest::load(&examples().join("plugins/gate.toml"), &util::limits())
        .expect("examples/plugins/gate.toml loads");
    assert_eq!(m.name, "gate");
    assert_eq!(
        m.component.canonicalize().unwrap(),
        Path::new(plugins::TOOL_GATE).canonicalize().unwrap(),
        "the example manifest names the built component"
    );
    assert_eq!(m.fs.len(), 1, "one grant");
    assert_eq!(m.fs[0].guest, "/data");
    assert_eq!(m.fs[0].access, Access::ReadOnly, "a gate only reads");
    m.fs[0] = fs_grant(dir, "/data", Access::ReadOnly);
    m
}

async fn gate_host(dir: &Path) -> util::TestHost {
    util::host(vec![gate_manifest(dir)]).await
}

fn write(dir: &Path, name: &str, text: &str) {
    std::fs::write(dir.join(name), text).unwrap();
}

fn message(err: &CallError) -> String {
    err.to_string()
}

#[tokio::test]
async fn a_report_with_failed_lines_does_not_pass_and_lists_them() {
    let dir = tempfile::tempdir().unwrap();
    write(
        dir.path(),
        "report.txt",
        "running 4 tests\n\
         test parse::empty ... ok\n\
         test parse::nested ... FAILED\n\
         test parse::unicode ... ok\n\
         test parse::huge ... FAILED\n\
         failures:\n    parse::nested\n    parse::huge\n\
         test result: FAILED. 2 passed; 2 failed; 0 ignored\n",
    );
    let h = gate_host(dir.path()).await;
    let out = call_ok(&h, "gate.report", r#"{"path": "/data/report.txt"}"#).await;
    assert_eq!(out["passed"], false, "{out}");
    assert_eq!(out["failed"], 3, "{out}");
    assert_eq!(out["passed_lines"], 2, "{out}");
    assert_eq!(
        out["failures"],
        json!([
            "test parse::nested ... FAILED",
            "test parse::huge ... FAILED",
            "test result: FAILED. 2 passed; 2 failed; 0 ignored"
        ])
    );
    // `max_failed` tolerates that many failing lines, no more.
    let out = call_ok(
        &h,
        "gate.report",
        r#"{"path": "/data/report.txt", "max_failed": 3}"#,
    )
    .await;
    assert_eq!(out["passed"], true, "{out}");
    let out = call_ok(
        &h,
        "gate.report",
        r#"{"path": "/data/report.txt", "max_failed": 2}"#,
    )
    .await;
    assert_eq!(out["passed"], false, "{out}");

    // Many failures: the first 20, each cut at 200 characters.
    let long = format!(
        "FAILED tests/test_x.py::test_{} - AssertionError",
        "y".repeat(400)
    );
    write(dir.path(), "many.txt", &vec![long.as_str(); 30].join("\n"));
    let out = call_ok(&h, "gate.report", r#"{"path": "/data/many.txt"}"#).await;
    assert_eq!(out["failed"], 30);
    let failures = out["failures"].as_array().unwrap();
    assert_eq!(failures.len(), 20);
    assert!(
        failures[0].as_str().unwrap().chars().count() <= 201,
        "{out}"
    );
}

#[tokio::test]
async fn a_clean_report_passes() {
    let dir = tempfile::tempdir().unwrap();
    write(
        dir.path(),
        "pytest.txt",
        "tests/test_a.py::test_one PASSED\n\
         tests/test_a.py::test_two PASSED\n\
         ==== 2 passed in 0.01s ====\n",
    );
    write(dir.path(), "empty.txt", "");
    let h = gate_host(dir.path()).await;
    let out = call_ok(&h, "gate.report", r#"{"path": "/data/pytest.txt"}"#).await;
    assert_eq!(
        out,
        json!({"passed": true, "failed": 0, "passed_lines": 2, "failures": []})
    );
    // An empty report passes unless the gate asks for passing lines.
    let out = call_ok(&h, "gate.report", r#"{"path": "/data/empty.txt"}"#).await;
    assert_eq!(out["passed"], true);
    let out = call_ok(
        &h,
        "gate.report",
        r#"{"path": "/data/empty.txt", "min_passed": 1}"#,
    )
    .await;
    assert_eq!(out["passed"], false, "{out}");
    let out = call_ok(
        &h,
        "gate.report",
        r#"{"path": "/data/pytest.txt", "min_passed": 2}"#,
    )
    .await;
    assert_eq!(out["passed"], true, "{out}");
}

#[tokio::test]
async fn a_missing_report_is_an_error_naming_it_not_a_failed_gate() {
    let dir = tempfile::tempdir().unwrap();
    let h = gate_host(dir.path()).await;
    let err = call_err(&h, "gate.report", r#"{"path": "/data/nowhere.txt"}"#).await;
    assert!(matches!(err, CallError::ToolFailed { .. }), "{err}");
    let msg = message(&err);
    assert!(
        msg.contains("/data/nowhere.txt")
            && msg.contains("no such file")
            && msg.contains("run the tests"),
        "{msg}"
    );
    let err = call_err(
        &h,
        "gate.json_schema",
        r#"{"path": "/data/out.json", "schema": {"type": "object"}}"#,
    )
    .await;
    assert!(message(&err).contains("/data/out.json"), "{err}");
    // A directory is not a report.
    std::fs::create_dir(dir.path().join("sub")).unwrap();
    let err = call_err(&h, "gate.report", r#"{"path": "/data/sub"}"#).await;
    assert!(message(&err).contains("it is a directory"), "{err}");
}

#[tokio::test]
async fn json_is_validated_against_a_schema_with_pointers() {
    let dir = tempfile::tempdir().unwrap();
    let schema = json!({
        "type": "object",
        "required": ["name", "items"],
        "properties": {
            "name": {"type": "string"},
            "items": {"type": "array", "items": {"type": "object",
                "properties": {"qty": {"type": "integer", "minimum": 1}}}}
        }
    });
    write(dir.path(), "schema.json", &schema.to_string());
    write(
        dir.path(),
        "good.json",
        r#"{"name": "order", "items": [{"qty": 2}]}"#,
    );
    write(
        dir.path(),
        "bad.json",
        r#"{"name": 7, "items": [{"qty": 1}, {"qty": 0}]}"#,
    );
    write(dir.path(), "broken.json", r#"{"name": "#);
    write(dir.path(), "not-a-schema.json", r#"{"type": 12}"#);
    let h = gate_host(dir.path()).await;

    let out = call_ok(
        &h,
        "gate.json_schema",
        r#"{"path": "/data/good.json", "schema": "/data/schema.json"}"#,
    )
    .await;
    assert_eq!(out, json!({"passed": true, "errors": [], "error_count": 0}));

    let out = call_ok(
        &h,
        "gate.json_schema",
        r#"{"path": "/data/bad.json", "schema": "/data/schema.json"}"#,
    )
    .await;
    assert_eq!(out["passed"], false, "{out}");
    assert_eq!(out["error_count"], 2, "{out}");
    let errors: Vec<&str> = out["errors"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e.as_str().unwrap())
        .collect();
    assert!(
        errors
            .iter()
            .any(|e| e.starts_with("/name: ") && e.contains("string")),
        "{errors:?}"
    );
    assert!(
        errors
            .iter()
            .any(|e| e.starts_with("/items/1/qty: ") && e.contains("minimum")),
        "{errors:?}"
    );

    // The same schema inline; a missing required key is reported at the root.
    let input = json!({"path": "/data/bad.json", "schema": {"required": ["id"]}});
    let out = call_ok(&h, "gate.json_schema", &input.to_string()).await;
    assert_eq!(out["passed"], false);
    let first = out["errors"][0].as_str().unwrap();
    assert!(
        first.starts_with("(root): ") && first.contains("id"),
        "{out}"
    );

    // A data file that is not JSON fails the gate (the agent's output to fix)...
    let out = call_ok(
        &h,
        "gate.json_schema",
        r#"{"path": "/data/broken.json", "schema": "/data/schema.json"}"#,
    )
    .await;
    assert_eq!(out["passed"], false);
    let first = out["errors"][0].as_str().unwrap();
    assert!(
        first.starts_with("(root): `/data/broken.json` is not valid JSON"),
        "{out}"
    );
    // ...a schema that is not one is an error (the operator's to fix).
    let err = call_err(
        &h,
        "gate.json_schema",
        r#"{"path": "/data/good.json", "schema": "/data/not-a-schema.json"}"#,
    )
    .await;
    let msg = message(&err);
    assert!(
        msg.contains("/data/not-a-schema.json") && msg.contains("not a valid JSON Schema"),
        "{msg}"
    );
    // No `$ref` is fetched from the network.
    let input = json!({"path": "/data/good.json",
        "schema": {"$ref": "http://127.0.0.1:9/schema.json"}});
    let err = call_err(&h, "gate.json_schema", &input.to_string()).await;
    assert!(message(&err).contains("not a valid JSON Schema"), "{err}");
}

// Paths outside the grant, and a gate without one, are `tests/cases/gate-*`.
#[tokio::test]
async fn bad_input_is_refused_by_name() {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), "report.txt", "ok\n");
    let h = gate_host(dir.path()).await;
    let err = call_err(
        &h,
        "gate.json_schema",
        r#"{"path": "/data/report.txt", "schema": "/data/../../schema.json"}"#,
    )
    .await;
    assert!(message(&err).contains("field `schema`"), "{err}");
    // Wrong types and unknown fields are refused before the plugin runs, by name.
    for input in [
        r#"{"path": "/data/report.txt", "max_failed": -1}"#,
        r#"{"path": "/data/report.txt", "max_failed": "none"}"#,
        r#"{"path": "/data/report.txt", "maxfailed": 1}"#,
        r#"{"path": 3}"#,
        "not json",
    ] {
        let err = call_err(&h, "gate.report", input).await;
        assert!(
            matches!(err, CallError::InvalidInput { .. }),
            "{input}: {err}"
        );
    }
    let err = call_err(
        &h,
        "gate.json_schema",
        r#"{"path": "/data/report.txt", "schema": 5}"#,
    )
    .await;
    assert!(matches!(err, CallError::InvalidInput { .. }), "{err}");
}

// --- The ratchet hook ---

/// A host with `files` (read-write on `workspace` at /data), the filesystem
/// probe plugin as `fs` (delete, rename) and echo, judged by `hooks`.
struct Judged {
    gw: Gateway,
    durable: Arc<Durable>,
    workspace: tempfile::TempDir,
    host: Arc<Host>,
    _data: tempfile::TempDir,
    _store: Arc<glovebox::storage::SledStore>,
}

async fn judged(hooks: Vec<HookConfig>) -> Judged {
    let workspace = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(workspace.path().join("tests")).unwrap();
    std::fs::create_dir_all(workspace.path().join("src")).unwrap();
    std::fs::write(workspace.path().join("tests/a.rs"), "original test").unwrap();
    std::fs::write(workspace.path().join("src/lib.rs"), "code").unwrap();
    let mut files = manifest("files", plugins::TOOL_FILES);
    files
        .fs
        .push(fs_grant(workspace.path(), "/data", Access::ReadWrite));
    let mut fs = manifest("fs", plugins::HOSTILE_FS);
    fs.fs
        .push(fs_grant(workspace.path(), "/data", Access::ReadWrite));
    let echo = manifest("echo", plugins::TOOL_ECHO);
    let (mut config, data) = util::config(vec![files, fs, echo]);
    config.hooks = hooks;
    let host = Arc::new(Host::load(config).await.unwrap());
    let (store, durable) = durable(&data.path().join("store"));
    Judged {
        gw: Gateway::new(host.clone(), durable.clone()),
        durable,
        workspace,
        host,
        _data: data,
        _store: store,
    }
}

impl Judged {
    fn session(&self, role: Role) -> String {
        util::start_session(&self.durable.sessions, role, "ratchet", "worker")
    }

    async fn call(&self, session: &str, tool: &str, input: Value) -> Result<Value, CallError> {
        self.gw
            .scope(&glovebox::cli_operator())
            .call_in_session(session, tool, &input.to_string())
            .await
            .expect("the session accepts the call")
            .outcome
    }

    fn read(&self, path: &str) -> Option<String> {
        std::fs::read_to_string(self.workspace.path().join(path)).ok()
    }
}

fn ratchet(settings: Value) -> HookConfig {
    HookConfig {
        name: "ratchet".into(),
        component: plugins::HOOK_RATCHET.into(),
        sha256: None,
        settings,
        deadline: Duration::from_millis(500),
        memory: 16 * 1024 * 1024,
        fuel: None,
        after: false,
        reuse: 1,
        signers: None,
    }
}

fn settings() -> Value {
    json!({
        "test_paths": ["tests/", "*_test.py"],
        "tools": {"files.write": ["path"], "fs.write": ["path"], "fs.delete": ["path"],
                  "fs.rename": ["from", "to"]}
    })
}

/// The reason of a ratchet denial.
fn denied(outcome: Result<Value, CallError>) -> String {
    match outcome {
        Err(CallError::Denied {
            hook,
            reason,
            alternatives,
            ..
        }) => {
            assert_eq!(hook, "ratchet");
            assert!(
                alternatives
                    .iter()
                    .any(|a| a.contains("fix the code under test")),
                "{alternatives:?}"
            );
            reason
        }
        other => panic!("expected the ratchet to deny, got {other:?}"),
    }
}

#[tokio::test]
async fn the_ratchet_denies_rewriting_deleting_or_moving_tests_however_spelt() {
    let j = judged(vec![ratchet(settings())]).await;
    let worker = j.session(Role::Workagent);
    for path in [
        "/data/tests/a.rs",
        "/data/./tests/../tests/a.rs",
        "/data/src/../tests/a.rs",
        "/data//tests///a.rs",
        "/data/Tests/a.rs",
        "/data/tests/new_test.rs",
        "/data/src/x_test.py",
    ] {
        let reason = denied(
            j.call(
                &worker,
                "files.write",
                json!({"path": path, "content": "assert!(true);"}),
            )
            .await,
        );
        assert!(
            reason.contains(&format!("`{path}` (field `path`)")) && reason.contains("test_paths"),
            "{path}: {reason}"
        );
    }
    assert_eq!(j.read("tests/a.rs").as_deref(), Some("original test"));
    assert_eq!(j.read("tests/new_test.rs"), None);
    assert_eq!(j.read("src/x_test.py"), None);

    let reason = denied(
        j.call(&worker, "fs.delete", json!({"path": "/data/tests/a.rs"}))
            .await,
    );
    assert!(reason.contains("`tests/`"), "{reason}");
    // Moving a test away deletes it; moving a file onto one rewrites it.
    let reason = denied(
        j.call(
            &worker,
            "fs.rename",
            json!({"from": "/data/tests/a.rs", "to": "/data/src/a.rs"}),
        )
        .await,
    );
    assert!(reason.contains("field `from`"), "{reason}");
    let reason = denied(
        j.call(
            &worker,
            "fs.rename",
            json!({"from": "/data/src/lib.rs", "to": "/data/tests/a.rs"}),
        )
        .await,
    );
    assert!(reason.contains("field `to`"), "{reason}");
    assert_eq!(j.read("tests/a.rs").as_deref(), Some("original test"));
    assert_eq!(j.read("src/lib.rs").as_deref(), Some("code"));
}

/// Test-first work (issue 42): `files.create` adds a new test under a test
/// path, which the ratchet allows once the operator names it create-only
/// (it never overwrites); on an existing test the tool itself refuses
/// (O_EXCL) and the test is as it was; `files.write` of the same new path
/// stays denied; and without `create_tools` the new test is denied as before.
#[tokio::test]
async fn the_ratchet_lets_a_new_test_be_created_but_no_test_be_overwritten() {
    let unnamed = judged(vec![ratchet(settings())]).await;
    let worker = unnamed.session(Role::Workagent);
    denied(
        unnamed
            .call(
                &worker,
                "files.create",
                json!({"path": "/data/tests/new_test.rs", "content": "x"}),
            )
            .await,
    );
    assert_eq!(unnamed.read("tests/new_test.rs"), None);
    let mut named = settings();
    named["create_tools"] = json!({"files.create": ["path"]});
    let j = judged(vec![ratchet(named)]).await;
    let worker = j.session(Role::Workagent);
    let made = j
        .call(
            &worker,
            "files.create",
            json!({"path": "/data/tests/new_test.rs", "content": "assert!(false);"}),
        )
        .await
        .expect("a new test is created");
    assert_eq!(made["written"], 15);
    assert_eq!(
        j.read("tests/new_test.rs").as_deref(),
        Some("assert!(false);")
    );
    for path in ["/data/tests/a.rs", "/data/tests/new_test.rs"] {
        match j
            .call(
                &worker,
                "files.create",
                json!({"path": path, "content": "assert!(true);"}),
            )
            .await
        {
            Err(CallError::ToolFailed { reason, .. }) => {
                assert!(reason.contains("already exists"), "{path}: {reason}")
            }
            other => panic!("{path}: expected the tool to refuse, got {other:?}"),
        }
    }
    assert_eq!(j.read("tests/a.rs").as_deref(), Some("original test"));
    assert_eq!(
        j.read("tests/new_test.rs").as_deref(),
        Some("assert!(false);")
    );
    let reason = denied(
        j.call(
            &worker,
            "files.write",
            json!({"path": "/data/tests/new_test.rs", "content": "assert!(true);"}),
        )
        .await,
    );
    assert!(reason.contains("test_paths"), "{reason}");
    assert_eq!(
        j.read("tests/new_test.rs").as_deref(),
        Some("assert!(false);")
    );
}

#[tokio::test]
async fn the_ratchet_allows_other_writes_and_reading_tests() {
    let j = judged(vec![ratchet(settings())]).await;
    let worker = j.session(Role::Workagent);
    let out = j
        .call(
            &worker,
            "files.write",
            json!({"path": "/data/src/lib.rs", "content": "fixed code"}),
        )
        .await
        .unwrap();
    assert_eq!(out["written"], 10);
    assert_eq!(j.read("src/lib.rs").as_deref(), Some("fixed code"));
    let out = j
        .call(&worker, "files.read", json!({"path": "/data/tests/a.rs"}))
        .await
        .unwrap();
    assert_eq!(out["content"], "original test");
    let out = j
        .call(
            &worker,
            "fs.rename",
            json!({"from": "/data/src/lib.rs", "to": "/data/src/main.rs"}),
        )
        .await
        .unwrap();
    assert_eq!(out["ok"], true, "{out}");
    // A directory named like a test dir but not one, and a file like a test but not one.
    j.call(
        &worker,
        "files.write",
        json!({"path": "/data/testsuite.txt", "content": "x"}),
    )
    .await
    .unwrap();
    j.call(
        &worker,
        "files.write",
        json!({"path": "/data/src/test.py", "content": "x"}),
    )
    .await
    .unwrap();
    j.call(&worker, "echo.echo", json!({"message": "hi"}))
        .await
        .unwrap();
}

#[tokio::test]
async fn the_ratchet_with_malformed_settings_denies_everything() {
    for (settings, expected) in [
        (json!({}), "`test_paths` is missing"),
        (
            json!({"test_paths": "tests/"}),
            "`test_paths` must be an array",
        ),
        (json!({"test_paths": ["/abs/"]}), "`test_paths[0]`"),
        (
            json!({"test_paths": ["tests/"], "tools": {"files.write": "path"}}),
            "`tools.files.write`",
        ),
        (
            json!({"test_paths": ["tests/"], "paths": []}),
            "unknown settings key `paths`",
        ),
    ] {
        let j = judged(vec![ratchet(settings.clone())]).await;
        let worker = j.session(Role::Workagent);
        for (tool, input) in [
            ("echo.echo", json!({"message": "hi"})),
            ("files.read", json!({"path": "/data/src/lib.rs"})),
            (
                "files.write",
                json!({"path": "/data/src/lib.rs", "content": "x"}),
            ),
        ] {
            match j.call(&worker, tool, input).await {
                Err(CallError::Denied { hook, reason, .. }) => {
                    assert_eq!(hook, "ratchet");
                    assert!(
                        reason.starts_with("invalid hook settings") && reason.contains(expected),
                        "{settings}: {reason}"
                    );
                }
                other => panic!("{settings}: {tool} should be denied, got {other:?}"),
            }
        }
        assert_eq!(j.read("src/lib.rs").as_deref(), Some("code"));
    }
}

/// The ratchet as `examples/glovebox.toml` configures it: the example config
/// loads, and its settings protect tests without blocking other work.
#[tokio::test]
async fn the_example_config_ratchet_protects_tests() {
    let config = glovebox::HostConfig::load(&examples().join("glovebox.toml"))
        .expect("examples/glovebox.toml loads");
    let hook = config
        .hooks
        .iter()
        .find(|h| h.name == "ratchet")
        .expect("the example config lists the ratchet hook")
        .clone();
    assert_eq!(
        hook.component.canonicalize().unwrap(),
        Path::new(plugins::HOOK_RATCHET).canonicalize().unwrap()
    );
    let j = judged(vec![ratchet(hook.settings)]).await;
    let worker = j.session(Role::Workagent);
    for path in [
        "/data/tests/a.rs",
        "/data/src/parse_test.go",
        "/data/web/app.spec.ts",
    ] {
        denied(
            j.call(
                &worker,
                "files.write",
                json!({"path": path, "content": "x"}),
            )
            .await,
        );
    }
    j.call(
        &worker,
        "files.write",
        json!({"path": "/data/summary.txt", "content": "x"}),
    )
    .await
    .unwrap();
    // A new test, with the create-only tool the example names.
    j.call(
        &worker,
        "files.create",
        json!({"path": "/data/tests/b_test.rs", "content": "x"}),
    )
    .await
    .unwrap();
    // A destructive tool the settings do not list is judged by its path fields.
    denied(
        j.call(&worker, "fs.delete", json!({"path": "/data/tests/a.rs"}))
            .await,
    );
    let reason = denied(j.call(&worker, "fs.rmdir", json!({"path": "/"})).await);
    assert!(reason.contains("it is the root"), "{reason}");
    let out = j
        .call(&worker, "fs.delete", json!({"path": "/data/summary.txt"}))
        .await
        .unwrap();
    assert_eq!(out["ok"], true, "{out}");
    assert_eq!(j.read("tests/a.rs").as_deref(), Some("original test"));
    // The operator (an exempt role: a call outside any session) may fix a test.
    let input = json!({"path": "/data/tests/a.rs", "content": "corrected test"});
    let report = j
        .host
        .call("files.write", &input.to_string(), CallContext::standalone())
        .await;
    assert_eq!(report.outcome.unwrap()["written"], 14);
    assert_eq!(j.read("tests/a.rs").as_deref(), Some("corrected test"));
}

#[tokio::test]
async fn toml_and_yaml_files_are_checked_for_validity_and_against_a_schema() {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), "good.toml", "port = 8080\n[db]\nhost = \"x\"\n");
    write(dir.path(), "broken.toml", "port = 8080\nhost = \n");
    write(dir.path(), "good.yml", "port: 8080\nhosts:\n  - a\n");
    write(dir.path(), "broken.yaml", "port: [8080\nhost: a\n");
    write(dir.path(), "good.json", r#"{"port": 8080}"#);
    write(dir.path(), "notes.txt", "port = 1\n");
    let h = gate_host(dir.path()).await;

    for (file, format) in [
        ("good.toml", "toml"),
        ("good.yml", "yaml"),
        ("good.json", "json"),
    ] {
        let out = call_ok(
            &h,
            "gate.valid",
            &json!({"path": format!("/data/{file}")}).to_string(),
        )
        .await;
        assert_eq!(
            out,
            json!({"passed": true, "format": format, "errors": []}),
            "{file}"
        );
    }
    let out = call_ok(&h, "gate.valid", r#"{"path": "/data/broken.toml"}"#).await;
    assert_eq!(out["passed"], false, "{out}");
    let error = out["errors"][0].as_str().unwrap();
    assert!(error.starts_with("/data/broken.toml:2:"), "{out}");
    let out = call_ok(&h, "gate.valid", r#"{"path": "/data/broken.yaml"}"#).await;
    assert_eq!(out["passed"], false, "{out}");
    assert_eq!(out["format"], "yaml", "{out}");
    let error = out["errors"][0].as_str().unwrap();
    let mut parts = error.splitn(4, ':');
    assert_eq!(parts.next(), Some("/data/broken.yaml"), "{out}");
    assert!(
        parts.next().unwrap().parse::<u32>().is_ok()
            && parts.next().unwrap().parse::<u32>().is_ok(),
        "line and column: {out}"
    );
    assert!(!error.contains('\n'), "one line: {out}");
    // No extension that says the format: the error says to name it.
    let err = call_err(&h, "gate.valid", r#"{"path": "/data/notes.txt"}"#).await;
    assert!(
        message(&err).contains("set field `format`"),
        "{}",
        message(&err)
    );
    let out = call_ok(
        &h,
        "gate.valid",
        r#"{"path": "/data/notes.txt", "format": "toml"}"#,
    )
    .await;
    assert_eq!(out["passed"], true, "{out}");

    // A TOML or YAML file is checked against a schema as JSON is.
    let schema =
        json!({"type": "object", "required": ["port"], "properties": {"port": {"type": "string"}}});
    for file in ["good.toml", "good.yml"] {
        let out = call_ok(
            &h,
            "gate.json_schema",
            &json!({"path": format!("/data/{file}"), "schema": schema}).to_string(),
        )
        .await;
        assert_eq!(out["passed"], false, "{file}: {out}");
        assert!(
            out["errors"][0].as_str().unwrap().starts_with("/port:"),
            "{file}: {out}"
        );
    }
    let out = call_ok(
        &h,
        "gate.json_schema",
        &json!({"path": "/data/broken.toml", "schema": schema}).to_string(),
    )
    .await;
    assert_eq!(out["passed"], false, "{out}");
    assert!(
        out["errors"][0]
            .as_str()
            .unwrap()
            .contains("is not valid TOML"),
        "{out}"
    );
}

/// `glovebox plugin check` on the example manifest: the operator's first look.
#[test]
fn plugin_check_lists_the_gate_tools_and_their_grant() {
    let out = util::glovebox()
        .args(["plugin", "check"])
        .arg(examples().join("plugins/gate.toml"))
        .output()
        .unwrap();
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    assert!(out.status.success(), "{stderr}");
    assert!(stdout.contains("is a valid tool plugin"), "{stdout}");
    for tool in ["gate.report", "gate.json_schema", "gate.valid"] {
        assert!(stdout.contains(tool), "{tool} missing from:\n{stdout}");
    }
}
