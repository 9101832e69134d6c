//! MCP resources over the real server (stdio): a session's log and a job,
//! listed and read as their principal may see them, a page at a time; what
//! another principal's URI names is not found, and a URI that names
//! nothing is refused naming how to write one.

use serde_json::{Value, json};

use crate::dashboard::site_with;
use crate::mcp::Server;
use crate::principals::add_agent;

/// The one text content of a `resources/read` answer, as JSON.
fn read(server: &mut Server, id: u64, uri: &str) -> Value {
    let answer = server.request(id, "resources/read", json!({"uri": uri}));
    let contents = &answer["result"]["contents"];
    assert_eq!(contents.as_array().map(Vec::len), Some(1), "{answer}");
    assert_eq!(contents[0]["uri"], uri, "{answer}");
    assert_eq!(contents[0]["mimeType"], "application/json", "{answer}");
    serde_json::from_str(contents[0]["text"].as_str().unwrap()).unwrap()
}

#[test]
fn a_session_s_log_and_a_job_are_resources_of_their_principal_only() {
    let (site, _operator, _agent) = site_with("");
    add_agent(&site, "bob", "demo");
    let mut alice = Server::initialized(&site.config(), &["--as", "alice"]);
    let state = alice.ok(
        2,
        "session_start",
        json!({"role": "workagent", "project": "demo", "name": "alice-work"}),
    );
    let session = state["id"].as_str().unwrap().to_string();
    for n in 0..3 {
        alice.ok(3 + n, "session_note", json!({"text": format!("step {n}")}));
    }
    let spawned = alice.ok(
        10,
        "job_spawn",
        json!({"tool": "echo.echo", "input": {"message": "in the background"}}),
    );
    let job = spawned["id"].as_str().unwrap().to_string();
    alice.ok(11, "job_wait", json!({"ids": [job]}));

    // The templates say how to write a URI.
    let templates = alice.request(12, "resources/templates/list", json!({}));
    let written: Vec<&str> = templates["result"]["resourceTemplates"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|t| t["uriTemplate"].as_str())
        .collect();
    assert_eq!(
        written,
        [
            "glovebox://sessions/{session}/log{?from_seq,limit}",
            "glovebox://jobs/{id}"
        ],
        "{templates}"
    );

    // Alice's sessions' logs are listed, hers only.
    let listed = alice.request(13, "resources/list", json!({}));
    let uris: Vec<&str> = listed["result"]["resources"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|r| r["uri"].as_str())
        .collect();
    let log = format!("glovebox://sessions/{session}/log");
    assert!(uris.contains(&log.as_str()), "{listed}");

    // The log, whole, then a page at a time; by id or by name.
    let whole = read(&mut alice, 14, &log);
    let events = whole["events"].as_array().unwrap();
    assert!(events.len() >= 4, "{whole}");
    assert!(whole.to_string().contains("step 2"), "{whole}");
    assert_eq!(whole["next_seq"], Value::Null, "{whole}");
    let page = read(&mut alice, 15, &format!("{log}?from_seq=2&limit=2"));
    assert_eq!(page["events"].as_array().unwrap().len(), 2, "{page}");
    assert_eq!(page["events"][0]["seq"], 2, "{page}");
    assert_eq!(page["next_seq"], 4, "{page}");
    let by_name = read(&mut alice, 16, "glovebox://sessions/alice-work/log?limit=1");
    assert_eq!(by_name["events"][0]["seq"], 1, "{by_name}");

    // The job, with its result.
    let shown = read(&mut alice, 17, &format!("glovebox://jobs/{job}"));
    assert_eq!(shown["id"], job.as_str(), "{shown}");
    assert_eq!(shown["status"], "completed", "{shown}");

    // A URI that names nothing: refused, saying how to write one.
    let refused = alice.request(
        18,
        "resources/read",
        json!({"uri": "glovebox://sessions/x"}),
    );
    assert_eq!(refused["error"]["code"], -32602, "{refused}");
    assert!(
        refused["error"]["message"]
            .as_str()
            .unwrap()
            .contains("glovebox://sessions/{session}/log"),
        "{refused}"
    );
    let refused = alice.request(19, "resources/read", json!({"uri": "file:///etc/passwd"}));
    assert_eq!(refused["error"]["code"], -32602, "{refused}");
    drop(alice);

    // Bob sees none of it: not listed, and not found when named.
    let mut bob = Server::initialized(&site.config(), &["--as", "bob"]);
    let listed = bob.request(1, "resources/list", json!({}));
    assert!(!listed.to_string().contains(&session), "{listed}");
    for (id, uri) in [(2, log.clone()), (3, format!("glovebox://jobs/{job}"))] {
        let answer = bob.request(id, "resources/read", json!({"uri": uri}));
        assert_eq!(answer["error"]["code"], -32002, "{uri}: {answer}");
        assert!(answer.get("result").is_none(), "{answer}");
    }
}
