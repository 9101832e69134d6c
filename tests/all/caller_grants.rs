//! Grants that know who is calling, over the real binary (issue 42): an
//! `[[fs]]` host path naming `{project}`, `{principal}` or `{session}` gives
//! each caller a directory of its own, made on its first call; `only` keeps a
//! directory or an origin from everyone it does not name. The values come
//! from the host (the principal's credentials, the session's project), never
//! from the guest, and a link put where a caller's directory goes is refused.

use std::io::{Read, Write};
use std::net::TcpListener;

use serde_json::{Value, json};

use crate::mcp::Server;
use crate::principals::add_agent;
use crate::util::{Site, plugins};

/// A server on loopback answering every request `200 hello`; its port.
fn hello_server() -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { return };
            let mut head = Vec::new();
            let mut buf = [0u8; 1024];
            while !head.windows(4).any(|w| w == b"\r\n\r\n") {
                match stream.read(&mut buf) {
                    Ok(0) | Err(_) => break,
                    Ok(n) => head.extend_from_slice(&buf[..n]),
                }
            }
            let _ = stream.write_all(
                b"HTTP/1.1 200 OK\r\ncontent-length: 5\r\nconnection: close\r\n\r\nhello",
            );
        }
    });
    port
}

/// Serves `files` with a directory per project (`/data`), one per
/// principal and session (`/home`) and scoring's models for scoring only
/// (`/models`); and `fetch`, whose origin on `port` only `scorer` may use.
fn site(port: u16) -> Site {
    let site = Site::with_config(
        "",
        &[
            (
                "files.toml",
                format!(
                    "name = \"files\"\ncomponent = \"{}\"\n\
                     [[fs]]\nhost = \"work/{{project}}\"\nguest = \"/data\"\naccess = \"read-write\"\n\
                     [[fs]]\nhost = \"work/homes/{{principal}}-{{session}}\"\nguest = \"/home\"\naccess = \"read-write\"\n\
                     [[fs]]\nhost = \"models\"\nguest = \"/models\"\nonly = {{ projects = [\"scoring\"] }}\n",
                    plugins::TOOL_FILES
                ),
            ),
            (
                "fetch.toml",
                format!(
                    "name = \"fetch\"\ncomponent = \"{}\"\n\
                     [[http]]\nurl = \"http://127.0.0.1:{port}\"\nonly = {{ principals = [\"scorer\"] }}\n",
                    plugins::TOOL_HTTP_FETCH
                ),
            ),
        ],
    );
    std::fs::create_dir_all(site.path().join("work/homes")).unwrap();
    std::fs::create_dir_all(site.path().join("models")).unwrap();
    std::fs::write(site.path().join("models/weights.txt"), "w=0.7\n").unwrap();
    site
}

/// An agent's connection with a session started in `project`, and the
/// session's id.
fn agent(site: &Site, name: &str, project: &str) -> (Server, String) {
    let mut server = Server::initialized(&site.config(), &["--as", name]);
    let started = server.ok(
        1,
        "session_start",
        json!({"role": "workagent", "project": project, "name": format!("{name}-work")}),
    );
    let id = started["id"]
        .as_str()
        .or(started["header"]["id"].as_str())
        .or(started["session_id"].as_str())
        .unwrap_or_else(|| panic!("no session id in {started}"))
        .to_string();
    (server, id)
}

/// A call's answer that failed (a tool error, or refused as a request
/// when the call could not have its grants): its text.
fn failed(answer: &Value) -> String {
    assert!(
        answer["result"]["isError"] == true || answer["error"]["message"].is_string(),
        "{answer}"
    );
    answer.to_string()
}

#[test]
fn each_project_principal_and_session_gets_its_own_directory_and_only_keeps_the_rest_out() {
    let port = hello_server();
    let site = site(port);
    add_agent(&site, "scorer", "scoring");
    add_agent(&site, "reacher", "outreach");
    let work = site.path().join("work");

    // One server per agent in turn: a data dir is one process's.
    let scorer_session = {
        let (mut scorer, id) = agent(&site, "scorer", "scoring");
        scorer.ok(
            2,
            "files.write",
            json!({"path": "/data/q3.csv", "content": "acme,0.93\n"}),
        );
        scorer.ok(
            3,
            "files.write",
            json!({"path": "/home/notes.md", "content": "mine\n"}),
        );
        let read = scorer.ok(4, "files.read", json!({"path": "/models/weights.txt"}));
        assert!(read.to_string().contains("w=0.7"), "{read}");
        let fetched = scorer.ok(
            5,
            "fetch.fetch",
            json!({"url": format!("http://127.0.0.1:{port}/x")}),
        );
        assert!(fetched.to_string().contains("hello"), "{fetched}");
        id
    };
    assert_eq!(
        std::fs::read_to_string(work.join("scoring/q3.csv")).unwrap(),
        "acme,0.93\n"
    );
    let home = work.join(format!("homes/scorer-{scorer_session}"));
    assert_eq!(
        std::fs::read_to_string(home.join("notes.md")).unwrap(),
        "mine\n"
    );
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        for made in [work.join("scoring"), home] {
            let mode = std::fs::metadata(&made).unwrap().permissions().mode();
            assert_eq!(mode & 0o777, 0o700, "{}", made.display());
        }
    }

    {
        let (mut reacher, id) = agent(&site, "reacher", "outreach");
        // The same guest path is outreach's own directory: scoring's file
        // is not in it.
        let missing = failed(&reacher.call(2, "files.read", json!({"path": "/data/q3.csv"})));
        assert!(!missing.contains("acme"), "{missing}");
        reacher.ok(
            3,
            "files.write",
            json!({"path": "/data/leads.csv", "content": "acme\n"}),
        );
        // Scoring's models are not mounted for another project at all.
        let refused =
            failed(&reacher.call(4, "files.read", json!({"path": "/models/weights.txt"})));
        assert!(!refused.contains("w=0.7"), "{refused}");
        let listed = failed(&reacher.call(5, "files.list", json!({"path": "/models"})));
        assert!(!listed.contains("weights.txt"), "{listed}");
        // The origin is scorer's only; the refusal says whom it is for.
        let denied = failed(&reacher.call(
            6,
            "fetch.fetch",
            json!({"url": format!("http://127.0.0.1:{port}/x")}),
        ));
        assert!(
            denied.contains(&format!(
                "the plugin's `[[http]]` grant for http://127.0.0.1:{port} is only for principals `scorer`, and this call is by principal `reacher` (role `workagent`) in project `outreach`"
            )),
            "{denied}"
        );
        assert!(!denied.contains("hello"), "{denied}");
        reacher.ok(
            7,
            "files.write",
            json!({"path": "/home/notes.md", "content": "theirs\n"}),
        );
        assert!(work.join(format!("homes/reacher-{id}/notes.md")).exists());
    }
    assert_eq!(
        std::fs::read_to_string(work.join("outreach/leads.csv")).unwrap(),
        "acme\n"
    );
    assert!(!work.join("outreach/q3.csv").exists());

    // A call in no session has no project: refused, saying so, and no
    // directory is made for it.
    let (code, out, err) = site.run(&[
        "call",
        "files.read",
        "--input",
        r#"{"path": "/data/q3.csv"}"#,
    ]);
    assert_ne!(code, 0, "{out}{err}");
    assert!(
        err.contains("the plugin's directory grant `fs[0].host` (`work/{project}`) names the caller, and `{project}` has no value"),
        "{err}"
    );
    let mut made: Vec<String> = std::fs::read_dir(&work)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    made.sort();
    assert_eq!(made, ["homes", "outreach", "scoring"]);
}

#[test]
fn a_link_where_a_callers_directory_goes_is_refused_not_followed() {
    let site = site(hello_server());
    add_agent(&site, "reacher", "outreach");
    // Someone with a grant over `work/` put a link where outreach's
    // directory goes, to scoring's.
    let work = site.path().join("work");
    std::fs::create_dir_all(work.join("scoring")).unwrap();
    std::fs::write(work.join("scoring/q3.csv"), "acme,0.93\n").unwrap();
    std::os::unix::fs::symlink(work.join("scoring"), work.join("outreach")).unwrap();

    let (mut reacher, _) = agent(&site, "reacher", "outreach");
    let refused = failed(&reacher.call(2, "files.read", json!({"path": "/data/q3.csv"})));
    assert!(
        refused.contains("a symbolic link is in its way; remove it"),
        "{refused}"
    );
    assert!(!refused.contains("acme"), "{refused}");
}
