//! MCP resources over the real server (stdio): a session's log, a job and
//! the files its calls left in its scratch directory, listed and read as
//! their principal may see them, a page (or a chunk) at a time; what
//! another principal's URI names is not found, a path out of the scratch
//! directory is refused, and a URI that names nothing is refused naming how
//! to write one.

use serde_json::{Value, json};

use crate::dashboard::site_with;
use crate::mcp::Server;
use crate::principals::add_agent;
use crate::sessions::Site;
use crate::util::plugins;

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
            "glovebox://sessions/{session}/files/{+path}{?offset,cursor}",
            "glovebox://sessions/{session}/outputs/{call}{?offset}",
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

/// The one content of a `resources/read` answer.
fn content(server: &mut Server, id: u64, uri: &str) -> Value {
    let answer = server.request(id, "resources/read", json!({"uri": uri}));
    let contents = &answer["result"]["contents"];
    assert_eq!(contents.as_array().map(Vec::len), Some(1), "{answer}");
    assert_eq!(contents[0]["uri"], uri, "{answer}");
    contents[0].clone()
}

#[test]
fn a_session_s_scratch_files_are_resources_of_its_principal_only() {
    let site = Site::with_plugins(&[(
        "files.toml",
        format!(
            "name = \"files\"\ncomponent = \"{}\"\nscratch = \"/scratch\"\n",
            plugins::TOOL_FILES
        ),
    )]);
    add_agent(&site, "alice", "demo");
    add_agent(&site, "bob", "demo");
    let mut alice = Server::initialized(&site.config(), &["--as", "alice"]);
    let state = alice.ok(
        1,
        "session_start",
        json!({"role": "workagent", "project": "demo", "name": "alice-notes"}),
    );
    let session = state["id"].as_str().unwrap().to_string();
    alice.ok(
        2,
        "files.write",
        json!({"path": "/scratch/top.txt", "content": "top"}),
    );
    // The tool makes no directories: one is made for it.
    let dir = site.path().join("data/scratch").join(&session);
    std::fs::create_dir(dir.join("notes")).unwrap();
    alice.ok(
        3,
        "files.write",
        json!({"path": "/scratch/notes/a.txt", "content": "h\u{e9}llo"}),
    );
    let files = format!("glovebox://sessions/{session}/files");

    // The top, then a directory (with or without its slash), by id or name.
    let top = read(&mut alice, 4, &format!("{files}/"));
    assert_eq!(top["session"], session.as_str(), "{top}");
    let names: Vec<(&str, &str)> = top["entries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| (e["name"].as_str().unwrap(), e["kind"].as_str().unwrap()))
        .collect();
    assert_eq!(names, [("notes", "dir"), ("top.txt", "file")], "{top}");
    assert_eq!(top["next_cursor"], Value::Null, "{top}");
    let notes = read(&mut alice, 5, "glovebox://sessions/alice-notes/files/notes");
    assert_eq!(notes["entries"][0]["name"], "a.txt", "{notes}");
    assert_eq!(notes["entries"][0]["size"], 6, "{notes}");
    let page = read(&mut alice, 6, &format!("{files}/?cursor=notes"));
    assert_eq!(page["entries"][0]["name"], "top.txt", "{page}");

    // A file is its text, and from an offset its tail.
    let file = content(&mut alice, 7, &format!("{files}/notes/a.txt"));
    assert_eq!(file["text"], "h\u{e9}llo", "{file}");
    assert_eq!(file["mimeType"], "text/plain; charset=utf-8", "{file}");
    assert_eq!(file["_meta"]["io.glovebox/size"], 6, "{file}");
    assert!(file["_meta"].get("io.glovebox/next").is_none(), "{file}");
    let tail = content(&mut alice, 8, &format!("{files}/notes/a.txt?offset=3"));
    assert_eq!(tail["text"], "llo", "{tail}");

    // What is not there is not found; a path out of the directory, or a
    // link out of it, is refused and nothing is read.
    let missing = alice.request(
        9,
        "resources/read",
        json!({"uri": format!("{files}/notes/b.txt")}),
    );
    assert_eq!(missing["error"]["code"], -32002, "{missing}");
    // (Dot segments, even percent-encoded, are resolved in the URI itself:
    // this one names no session's files at all.)
    let climbing = alice.request(
        10,
        "resources/read",
        json!({"uri": format!("{files}/notes/%2E%2E/%2E%2E/%2E%2E/x")}),
    );
    assert_eq!(climbing["error"]["code"], -32602, "{climbing}");
    let climbing = alice.request(
        10,
        "resources/read",
        json!({"uri": format!("{files}/notes%2F..%2F..%2Fx")}),
    );
    assert_eq!(climbing["error"]["code"], -32602, "{climbing}");
    assert!(
        climbing["error"]["message"]
            .as_str()
            .unwrap()
            .contains("is not a path inside the scratch directory"),
        "{climbing}"
    );
    std::os::unix::fs::symlink(site.config(), dir.join("config-link")).unwrap();
    let linked = alice.request(
        11,
        "resources/read",
        json!({"uri": format!("{files}/config-link")}),
    );
    assert!(linked.get("result").is_none(), "{linked}");
    assert_eq!(linked["error"]["code"], -32602, "{linked}");
    assert_eq!(
        linked["error"]["data"]["kind"], "outside_scratch",
        "{linked}"
    );
    assert!(
        linked["error"]["message"]
            .as_str()
            .unwrap()
            .contains("leads outside the session's scratch directory"),
        "{linked}"
    );
    drop(alice);

    // Bob reads none of it.
    let mut bob = Server::initialized(&site.config(), &["--as", "bob"]);
    for (id, uri) in [
        (1, format!("{files}/")),
        (2, format!("{files}/notes/a.txt")),
        (
            3,
            "glovebox://sessions/alice-notes/files/top.txt".to_string(),
        ),
    ] {
        let answer = bob.request(id, "resources/read", json!({"uri": uri}));
        assert_eq!(answer["error"]["code"], -32002, "{uri}: {answer}");
        assert!(!answer.to_string().contains("llo"), "{answer}");
    }
}

#[test]
fn a_result_past_the_output_limit_is_kept_whole_and_read_as_a_resource() {
    use sha2::{Digest, Sha256};
    let site = Site::with_plugins(&[(
        "huge.toml",
        format!(
            "name = \"huge\"\ncomponent = \"{}\"\n[limits]\noutput = \"64 KiB\"\nstored_output = \"2 MiB\"\ndeadline = \"60s\"\n",
            plugins::HOSTILE_HUGE_OUTPUT
        ),
    )]);
    add_agent(&site, "alice", "demo");
    add_agent(&site, "bob", "demo");
    let mut alice = Server::initialized(&site.config(), &["--as", "alice"]);
    let state = alice.ok(
        1,
        "session_start",
        json!({"role": "workagent", "project": "demo"}),
    );
    let session = state["id"].as_str().unwrap().to_string();

    // 1 MiB of result, over the 64 KiB limit: its head, and a link to the whole.
    let answer = alice.call(2, "huge.huge", json!({"mib": 1}));
    assert_eq!(answer["result"]["isError"], false, "{answer}");
    let kept = answer["result"]["structuredContent"]["stored_output"].clone();
    let whole_size = (1 << 20) + 11;
    assert_eq!(kept["size"], whole_size, "{kept}");
    let head = kept["head"].as_str().unwrap();
    assert_eq!(head.len(), 16 * 1024);
    assert!(head.starts_with("{\"data\":\"aaaa"), "{head:.40}");
    let uri = kept["uri"].as_str().unwrap().to_string();
    assert!(
        uri.starts_with(&format!("glovebox://sessions/{session}/outputs/")),
        "{uri}"
    );
    let link = answer["result"]["content"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["type"] == "resource_link")
        .unwrap_or_else(|| panic!("no resource link: {answer:.400}"));
    assert_eq!(link["uri"], uri.as_str());
    assert_eq!(link["size"], whole_size);

    // The whole, a chunk at a time, is what the tool returned.
    let first = content(&mut alice, 3, &uri);
    let next = first["_meta"]["io.glovebox/next"]
        .as_str()
        .unwrap()
        .to_string();
    assert_eq!(next, format!("{uri}?offset=1048576"));
    let rest = content(&mut alice, 4, &next);
    assert!(rest["_meta"].get("io.glovebox/next").is_none(), "{rest}");
    let whole = format!(
        "{}{}",
        first["text"].as_str().unwrap(),
        rest["text"].as_str().unwrap()
    );
    assert_eq!(whole.len(), whole_size);
    assert!(
        whole.ends_with("aaa\"}"),
        "{:?}",
        &whole[whole.len() - 10..]
    );
    assert_eq!(
        kept["sha256"],
        Sha256::digest(whole.as_bytes())
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect::<String>(),
        "the digest is the whole's"
    );

    // The log records what the caller got: the description, digest included.
    let log = alice.ok(5, "session_log", json!({}));
    assert!(
        log.to_string().contains(kept["sha256"].as_str().unwrap()),
        "{log:.2000}"
    );

    // Past `stored_output` it is refused as before, nothing kept.
    let (kind, message) = alice.refused(6, "huge.huge", json!({"mib": 3}));
    assert_eq!(kind, "output_too_large", "{message}");
    drop(alice);

    // Bob reads none of it.
    let mut bob = Server::initialized(&site.config(), &["--as", "bob"]);
    let answer = bob.request(1, "resources/read", json!({"uri": uri}));
    assert_eq!(answer["error"]["code"], -32002, "{answer:.300}");
}
