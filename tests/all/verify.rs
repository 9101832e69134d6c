//! Verification after each edit (issue 42): a `[[verify]]` check follows
//! each successful write through the files plugin, in the session, as the
//! agent's own call; its failure reaches the agent over MCP with the write's
//! result, and three in a row raise a blocker flag (rule `verify`).

use serde_json::{Value, json};

use crate::mcp::Server;
use crate::util::{Site, plugins};

/// The schema check `config-schema` after each `files.write`.
const SCHEMA_CHECK: &str = r#"[[verify]]
name = "config-schema"
tools = ["files.write"]
gate = { tool = "gate.json_schema", input = { path = "{input.path}", schema = { type = "object", required = ["port"], properties = { port = { type = "integer" } } } }, expect = { passed = true } }
"#;

/// The files plugin over `work/` and the gate plugin reading it, with the
/// `[[verify]]` table `verify`.
fn site(verify: &str) -> Site {
    let site = Site::with_config(
        verify,
        &[
            (
                "files.toml",
                format!(
                    "name = \"files\"\ncomponent = \"{}\"\n[[fs]]\nhost = \"work\"\nguest = \"/data\"\naccess = \"read-write\"\n",
                    plugins::TOOL_FILES
                ),
            ),
            (
                "gate.toml",
                format!(
                    "name = \"gate\"\ncomponent = \"{}\"\n[[fs]]\nhost = \"work\"\nguest = \"/data\"\n",
                    plugins::TOOL_GATE
                ),
            ),
        ],
    );
    std::fs::create_dir(site.path().join("work")).unwrap();
    site
}

/// The text blocks of a `tools/call` result after the first (the result's own).
fn checks(answer: &Value) -> Vec<String> {
    answer["result"]["content"]
        .as_array()
        .unwrap()
        .iter()
        .skip(1)
        .map(|c| c["text"].as_str().unwrap().to_string())
        .collect()
}

#[test]
fn a_verify_checks_failure_reaches_the_agent_with_the_calls_result() {
    let site = site(SCHEMA_CHECK);
    let mut server = Server::initialized(&site.config(), &[]);
    let started = server.ok(
        1,
        "session_start",
        json!({"role": "workagent", "project": "p", "name": "edit"}),
    );
    assert!(
        started["session"].is_object() || started["id"].is_string(),
        "{started}"
    );

    // A good write: the check passes, nothing more comes back.
    let good = server.call(
        2,
        "files.write",
        json!({"path": "/data/app.json", "content": "{\"port\": 8080}"}),
    );
    assert_eq!(good["result"]["isError"], false, "{good}");
    assert_eq!(checks(&good), Vec::<String>::new(), "{good}");

    // A write that breaks the schema still succeeds (the file is written),
    // and the check's failure comes with its result.
    for id in 3..=5 {
        let bad = server.call(
            id,
            "files.write",
            json!({"path": "/data/app.json", "content": "{\"port\": \"eighty\"}"}),
        );
        assert_eq!(bad["result"]["isError"], false, "{bad}");
        let failed = checks(&bad);
        assert_eq!(failed.len(), 1, "{bad}");
        assert!(
            failed[0].starts_with("check `config-schema` (gate.json_schema) failed after this call: `/passed` is false, expected true"),
            "{}",
            failed[0]
        );
        assert!(failed[0].contains("/port"), "{}", failed[0]);
    }
    assert_eq!(
        std::fs::read_to_string(site.path().join("work/app.json")).unwrap(),
        "{\"port\": \"eighty\"}"
    );
    drop(server);

    // The checks are calls of the session's (logged), and three failures in
    // a row raised a blocker flag.
    let (code, log, err) = site.run(&["log", "export", "edit"]);
    assert_eq!(code, 0, "{err}");
    assert!(log.matches("gate.json_schema").count() >= 4, "{log}");
    let (code, out, err) = site.run(&["session", "list", "--blocked", "--json"]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("\"verify\""), "{out}");
    assert!(
        out.contains("check `config-schema` (gate.json_schema) failed after 3 calls in a row"),
        "{out}"
    );
}

/// A config file written broken reaches the agent at once: `gate.valid`
/// after each write of a TOML or YAML file, the parse error's line in the
/// write's result.
#[test]
fn a_broken_yaml_write_is_reported_with_its_line() {
    let site = site(
        r#"[[verify]]
name = "config-parses"
tools = ["files.write"]
gate = { tool = "gate.valid", input = { path = "{input.path}" }, expect = { passed = true } }
"#,
    );
    let mut server = Server::initialized(&site.config(), &[]);
    server.ok(
        1,
        "session_start",
        json!({"role": "workagent", "project": "p", "name": "yaml"}),
    );
    let good = server.call(
        2,
        "files.write",
        json!({"path": "/data/deploy.yaml", "content": "replicas: 2\nimage: app\n"}),
    );
    assert_eq!(checks(&good), Vec::<String>::new(), "{good}");
    let bad = server.call(
        3,
        "files.write",
        json!({"path": "/data/deploy.yaml", "content": "replicas: 2\nimage: [app\n"}),
    );
    assert_eq!(bad["result"]["isError"], false, "{bad}");
    let failed = checks(&bad);
    assert_eq!(failed.len(), 1, "{bad}");
    assert!(
        failed[0].starts_with("check `config-parses` (gate.valid) failed after this call"),
        "{}",
        failed[0]
    );
    assert!(
        failed[0].contains("/data/deploy.yaml:2:8: unclosed bracket"),
        "{}",
        failed[0]
    );
}
