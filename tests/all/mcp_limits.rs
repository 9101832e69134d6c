//! Threat 43: the limits the built-ins' schemas declare are enforced for
//! every built-in before it runs, over a real `glovebox serve` (stdio):
//! oversized strings, lists and numbers are refused naming the argument,
//! its size and the limit, and nothing is written.

use serde_json::{Value, json};

use crate::mcp::Server;
use crate::util::plugins;

/// A config serving echo, with no hooks.
fn config(dir: &std::path::Path) -> std::path::PathBuf {
    let path = dir.join("glovebox.toml");
    std::fs::write(
        &path,
        format!(
            "data_dir = \"data\"\nhooks = \"none\"\n[runtime]\n{}\n[[plugin]]\nmanifest = \"echo.toml\"\n",
            crate::util::cache_keys()
        ),
    )
    .unwrap();
    std::fs::write(
        dir.join("echo.toml"),
        format!("name = \"echo\"\ncomponent = \"{}\"\n", plugins::TOOL_ECHO),
    )
    .unwrap();
    path
}

/// The refusal of a call: a JSON-RPC `invalid_params` error's message.
fn refused(server: &mut Server, id: u64, tool: &str, arguments: Value) -> String {
    let answer = server.call(id, tool, arguments);
    assert_eq!(answer["error"]["code"], -32602, "{tool}: {answer}");
    let message = answer["error"]["message"].as_str().unwrap().to_string();
    assert!(
        message.len() < 1024,
        "the refusal quotes the value: {} bytes",
        message.len()
    );
    message
}

// Threat 43: serde takes a string of any length, so a built-in's declared
// `maxLength` (and `maxItems`, `maximum`) held only if its handler checked
// it; a 4 MiB `context_search` query reached the index.
#[test]
fn threat_43_oversized_arguments_of_the_built_ins_are_refused_naming_the_argument_and_limit() {
    let dir = tempfile::tempdir().unwrap();
    let mut server = Server::initialized(&config(dir.path()), &[]);
    let started = server.call(
        1,
        "session_start",
        json!({"role": "workagent", "project": "p", "name": "limits"}),
    );
    assert_eq!(started["result"]["isError"], false, "{started}");

    let huge = "word ".repeat((4 << 20) / 5);
    let cases = [
        (
            "context_search",
            json!({"query": huge}),
            format!(
                "`query` is {} characters long, more than the limit of 1024",
                huge.len()
            ),
        ),
        (
            "memory_search",
            json!({"query": "q".repeat(1025)}),
            "`query` is 1025 characters long, more than the limit of 1024".to_string(),
        ),
        (
            "session_note",
            json!({"text": "n".repeat(16 * 1024 + 1)}),
            "`text` is 16385 characters long, more than the limit of 16384".to_string(),
        ),
        (
            "session_start",
            json!({"role": "workagent", "project": "p", "name": "n".repeat(129)}),
            "`name` is 129 characters long, more than the limit of 128".to_string(),
        ),
        (
            "session_start",
            json!({"role": "workagent", "project": "p", "tags": vec!["t"; 1025]}),
            "`tags` has 1025 items, more than the limit of 1024".to_string(),
        ),
        (
            "session_start",
            json!({"role": "workagent", "project": "p", "tags": ["x".repeat(65)]}),
            "`tags[0]` is 65 characters long, more than the limit of 64".to_string(),
        ),
        (
            "job_wait",
            json!({"ids": vec!["j"; 257]}),
            "`ids` has 257 items, more than the limit of 256".to_string(),
        ),
        (
            "job_wait",
            json!({"ids": ["j"], "timeout_ms": 3_600_001u64}),
            "`timeout_ms` is 3600001, more than the maximum of 3600000".to_string(),
        ),
        (
            "session_log",
            json!({"limit": 501}),
            "`limit` is 501, more than the maximum of 500".to_string(),
        ),
        (
            "approval_status",
            json!({"id": "a".repeat(257)}),
            "`id` is 257 characters long, more than the limit of 256".to_string(),
        ),
        (
            "session_handoff",
            json!({"kind": "continuation", "objective": "o".repeat(16 * 1024 + 1)}),
            "`objective` is 16385 characters long, more than the limit of 16384".to_string(),
        ),
    ];
    for (i, (tool, arguments, says)) in cases.into_iter().enumerate() {
        let message = refused(&mut server, 10 + i as u64, tool, arguments);
        assert!(
            message.starts_with(&format!("invalid arguments for `{tool}`: {says}")),
            "{tool}: {message}"
        );
    }
    // Nothing of it was written: the session's log holds its start alone.
    let log = server.call(40, "session_log", json!({}));
    let kinds: Vec<&str> = log["result"]["structuredContent"]["events"]
        .as_array()
        .unwrap_or_else(|| panic!("{log}"))
        .iter()
        .map(|e| e["kind"]["type"].as_str().unwrap())
        .collect();
    assert!(
        !kinds.contains(&"note") && !kinds.contains(&"handoff"),
        "{kinds:?}"
    );
    // Within the limits, the same built-ins run.
    let found = server.call(41, "context_search", json!({"query": "word"}));
    assert_eq!(found["result"]["isError"], false, "{found}");
    let noted = server.call(42, "session_note", json!({"text": "n".repeat(16 * 1024)}));
    assert_eq!(noted["result"]["isError"], false, "{noted}");
}
