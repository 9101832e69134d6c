//! Completion gates and judges (issue 16) through the real binary: a gated
//! session's `completed` is refused, with the failing gate's output, until
//! the gate passes, and the gate runs again at every end; a judge of the
//! worker's own principal is refused; a gate that could never run is refused
//! at start and at load. (A judge of another principal passing workers over
//! MCP is the supervisor example's test, in `mcp_sdk.rs`.)

use serde_json::{Value, json};

use crate::util::{Site, plugins};

/// A site with the files plugin, its `/work` grant on `work/` in the site.
fn site(extra: &str) -> Site {
    let site = Site::with_config(
        extra,
        &[(
            "files.toml",
            format!(
                "name = \"files\"\ncomponent = \"{}\"\n[[fs]]\nhost = \"work\"\nguest = \"/work\"\naccess = \"read-write\"\n",
                plugins::TOOL_FILES
            ),
        )],
    );
    std::fs::create_dir_all(site.path().join("work")).unwrap();
    site
}

/// The gate: `report.txt` must say exactly "all passed".
fn gate() -> String {
    json!({"gates": [{
        "tool": "files.read",
        "input": {"path": "/work/report.txt"},
        "expect": {"content": "all passed"},
    }]})
    .to_string()
}

fn events(site: &Site, session: &str) -> Vec<Value> {
    let (code, out, err) = site.run(&["log", "export", session]);
    assert_eq!(code, 0, "{err}");
    out.lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

fn kinds(events: &[Value]) -> Vec<String> {
    events
        .iter()
        .map(|e| e["kind"]["type"].as_str().unwrap_or("?").to_string())
        .collect()
}

#[test]
fn completed_is_refused_with_the_failing_gates_output_until_the_gate_passes_and_reruns_each_time() {
    let site = site("");
    let gate = gate();
    site.json(&[
        "session",
        "start",
        "--role",
        "workagent",
        "--project",
        "p",
        "--name",
        "w",
        "--completion",
        &gate,
    ]);
    std::fs::write(site.path().join("work/report.txt"), "2 FAILED").unwrap();
    let (code, _, err) = site.run(&["session", "end", "w"]);
    assert_eq!(code, 8, "{err}");
    assert!(
        err.contains("cannot end as completed: its completion gate `files.read` failed"),
        "{err}"
    );
    assert!(
        err.contains("2 FAILED"),
        "the gate's output is shown: {err}"
    );

    // Fixed: the gate runs again (a second call) and passes.
    std::fs::write(site.path().join("work/report.txt"), "all passed").unwrap();
    let ended = site.json(&["session", "end", "w"]);
    assert_eq!(ended["status"], "completed", "{ended}");
    let log = events(&site, "w");
    let kinds = kinds(&log);
    let gates: Vec<&Value> = log
        .iter()
        .filter(|e| e["kind"]["type"] == "gates_checked")
        .collect();
    assert_eq!(gates.len(), 2, "{kinds:?}");
    assert_eq!(gates[0]["kind"]["passed"], false);
    assert_eq!(gates[1]["kind"]["passed"], true);
    // Each gate ran as a call of the session, before its record.
    assert_eq!(
        kinds.iter().filter(|k| *k == "call_finished").count(),
        2,
        "{kinds:?}"
    );
    assert_eq!(kinds.last().map(String::as_str), Some("ended"));
    let (code, out, err) = site.run(&["log", "verify", "w"]);
    assert_eq!(code, 0, "{out}{err}");
}

#[test]
fn a_judge_of_the_workers_own_principal_is_refused_and_the_end_waits_for_another() {
    let site = site("");
    site.json(&[
        "session",
        "start",
        "--role",
        "workagent",
        "--project",
        "p",
        "--name",
        "w",
        "--completion",
        r#"{"judge": true}"#,
    ]);
    site.json(&[
        "session",
        "handoff",
        "w",
        "--kind",
        "workagent_completion",
        "--objective",
        "count",
        "--done",
        "42 words",
    ]);
    site.json(&[
        "session",
        "start",
        "--role",
        "judge",
        "--project",
        "p",
        "--name",
        "bench",
    ]);
    let (code, _, err) = site.run(&["session", "verdict", "w", "--judge", "bench", "--pass"]);
    assert_eq!(code, 8, "{err}");
    assert!(err.contains("the judge's own principal"), "{err}");
    let (code, _, err) = site.run(&["session", "end", "w"]);
    assert_eq!(code, 8, "{err}");
    assert!(
        err.contains("no judge has passed its latest handoff"),
        "{err}"
    );
    // Another outcome is not held to the condition.
    let ended = site.json(&["session", "end", "w", "--outcome", "exit"]);
    assert_eq!(ended["outcome"], "exit");
}

#[test]
fn a_gate_that_could_never_run_is_refused_at_start_and_at_load() {
    let site = site("");
    let bad = json!({"gates": [{"tool": "files.nope"}]}).to_string();
    let (code, _, err) = site.run(&[
        "session",
        "start",
        "--role",
        "workagent",
        "--project",
        "p",
        "--completion",
        &bad,
    ]);
    assert_ne!(code, 0);
    assert!(
        err.contains("gates[0]: `files.nope` is not a tool of this host"),
        "{err}"
    );
    let typo = r#"{"gate": []}"#;
    let (code, _, err) = site.run(&[
        "session",
        "start",
        "--role",
        "workagent",
        "--project",
        "p",
        "--completion",
        typo,
    ]);
    assert_ne!(code, 0);
    assert!(err.contains("unknown field `gate`"), "{err}");
    let listed = site.json(&["session", "list", "--json"]);
    assert_eq!(listed, json!([]), "nothing was started");

    // The operator's `[[completion]]`: a plugin that is not listed fails the
    // config; a tool the plugin does not have fails the load.
    site.set_config("[[completion]]\nrole = \"workagent\"\ngates = [{ tool = \"lint.run\" }]\n");
    let (code, _, err) = site.run(&["session", "list"]);
    assert_ne!(code, 0);
    assert!(err.contains("completion[0].gates"), "{err}");
    site.set_config("[[completion]]\nrole = \"workagent\"\ngates = [{ tool = \"files.nope\" }]\n");
    let (code, _, err) = site.run(&["session", "end", "x"]);
    assert_ne!(code, 0);
    assert!(
        err.contains("completion[0].gates[0]: `files.nope`"),
        "{err}"
    );
    site.set_config("[[completion]]\nrole = \"judge\"\n");
    let (code, _, err) = site.run(&["session", "list"]);
    assert_ne!(code, 0);
    assert!(err.contains("requires nothing"), "{err}");
}

#[test]
fn the_operators_condition_holds_for_every_session_of_its_role() {
    let site = site(
        "[[completion]]\nrole = \"workagent\"\ngates = [{ tool = \"files.read\", input = { path = \"/work/report.txt\" }, expect = { content = \"all passed\" } }]\n",
    );
    std::fs::write(site.path().join("work/report.txt"), "nope").unwrap();
    let started = site.json(&[
        "session",
        "start",
        "--role",
        "workagent",
        "--project",
        "p",
        "--name",
        "w",
    ]);
    assert_eq!(
        started["completion"]["condition"]["gates"][0]["tool"], "files.read",
        "{started}"
    );
    let (code, _, err) = site.run(&["session", "end", "w"]);
    assert_eq!(code, 8, "{err}");
    assert!(err.contains("`/content` is \"nope\""), "{err}");
    // A supervisor is not held to the workagents' condition.
    site.json(&[
        "session",
        "start",
        "--role",
        "supervisor",
        "--project",
        "p",
        "--name",
        "s",
    ]);
    let ended = site.json(&["session", "end", "s"]);
    assert_eq!(ended["status"], "completed");
}
