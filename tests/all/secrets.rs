//! Secrets at the egress (issue 40, threat 60), over the real binary: a fake
//! API server on 127.0.0.1 sees the header the host injects; the plugin that
//! made the request, its result, the session's log and the CLI never show the
//! value; a plugin that sends the value itself (in a header, the URL or the
//! body) is refused before it leaves.

use std::io::{Read, Write};
use std::net::TcpListener;
use std::sync::{Arc, Mutex};

use serde_json::{Value, json};

use crate::util::{Site, plugins};

/// The secret's value, as the operator's file holds it.
const VALUE: &str = "sk-live-0123456789abcdefXYZ";

/// A server that records every request it gets (head and body, as far as
/// they came) and answers with the request's head in its body, as an API
/// that reflects its caller would.
struct Recorder {
    port: u16,
    seen: Arc<Mutex<Vec<String>>>,
}

impl Recorder {
    fn start() -> Recorder {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let seen: Arc<Mutex<Vec<String>>> = Arc::default();
        let record = seen.clone();
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(mut stream) = stream else { return };
                let mut got = Vec::new();
                let mut buf = [0u8; 4096];
                // The head, then as much body as its length says (or until
                // the client gives up).
                let head_end = loop {
                    match stream.read(&mut buf) {
                        Ok(0) | Err(_) => break None,
                        Ok(n) => got.extend_from_slice(&buf[..n]),
                    }
                    if let Some(at) = got.windows(4).position(|w| w == b"\r\n\r\n") {
                        break Some(at + 4);
                    }
                };
                if let Some(end) = head_end {
                    let head = String::from_utf8_lossy(&got[..end]).to_lowercase();
                    let length: usize = head
                        .lines()
                        .find_map(|l| l.strip_prefix("content-length:"))
                        .and_then(|v| v.trim().parse().ok())
                        .unwrap_or(0);
                    while got.len() < end + length {
                        match stream.read(&mut buf) {
                            Ok(0) | Err(_) => break,
                            Ok(n) => got.extend_from_slice(&buf[..n]),
                        }
                    }
                    let head = String::from_utf8_lossy(&got[..end]).into_owned();
                    let answer = format!(
                        "HTTP/1.1 200 OK\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{head}",
                        head.len()
                    );
                    let _ = stream.write_all(answer.as_bytes());
                }
                record
                    .lock()
                    .unwrap()
                    .push(String::from_utf8_lossy(&got).into_owned());
            }
        });
        Recorder { port, seen }
    }

    fn seen(&self) -> Vec<String> {
        self.seen.lock().unwrap().clone()
    }
}

/// A site whose fetch plugin may reach the recorder, with `inject` naming
/// the secret `api` read from an owner-only file beside the config.
fn site(recorder: &Recorder) -> Site {
    let manifest = format!(
        "name = \"fetch\"\ncomponent = \"{}\"\n[[http]]\nurl = \"http://127.0.0.1:{}\"\ninject = {{ header = \"Authorization\", value = \"Bearer ${{secret:api}}\" }}\n",
        plugins::TOOL_HTTP_FETCH,
        recorder.port
    );
    let site = Site::with_config(
        "[[secret]]\nname = \"api\"\nfile = \"api.token\"\n",
        &[("fetch.toml", manifest)],
    );
    let token = site.path().join("api.token");
    std::fs::write(&token, format!("{VALUE}\n")).unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&token, std::fs::Permissions::from_mode(0o600)).unwrap();
    site.start_workagent("w");
    site
}

/// `glovebox call fetch.fetch --json` in session `w`: the report, and
/// everything the command printed.
fn fetch(site: &Site, input: Value) -> (Value, String) {
    let (_, out, err) = site.run(&[
        "call",
        "fetch.fetch",
        "--json",
        "-s",
        "w",
        "--input",
        &input.to_string(),
    ]);
    let report = serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out} {err}"));
    (report, format!("{out}{err}"))
}

#[test]
fn threat_60_an_injected_secret_reaches_the_api_and_nothing_else() {
    let recorder = Recorder::start();
    let site = site(&recorder);
    let url = format!("http://127.0.0.1:{}/user", recorder.port);

    // The guest's own Authorization is replaced by the grant's.
    let (report, printed) = fetch(
        &site,
        json!({ "url": url, "headers": { "authorization": "Bearer guest-made" } }),
    );
    assert_eq!(report["ok"], true, "{report}");
    let seen = recorder.seen();
    assert_eq!(seen.len(), 1, "{seen:?}");
    let head = seen[0].to_lowercase();
    assert!(
        head.contains(&format!("authorization: bearer {}", VALUE.to_lowercase())),
        "{head}"
    );
    assert!(!head.contains("guest-made"), "{head}");
    // The API reflected the header in its answer: the tool's result (what
    // the agent gets) shows the secret masked, never its value.
    let body = report["output"]["body"].as_str().unwrap();
    assert!(body.contains("Bearer [secret:api]"), "{body}");
    assert!(!printed.contains(VALUE), "{printed}");

    // Nor does the session's log, where the result was recorded.
    let (code, log, err) = site.run(&["log", "export", "w"]);
    assert_eq!(code, 0, "{err}");
    assert!(log.contains("[secret:api]"), "{log}");
    assert!(!log.contains(VALUE), "{log}");
}

#[test]
fn threat_60_a_guest_that_sends_the_value_itself_is_refused_before_it_leaves() {
    let recorder = Recorder::start();
    let site = site(&recorder);
    let base = format!("http://127.0.0.1:{}", recorder.port);
    let attempts = [
        (
            json!({ "url": format!("{base}/a"), "headers": { "x-stolen": VALUE } }),
            "its header `x-stolen` carries the value of secret `api`",
        ),
        (
            json!({ "url": format!("{base}/b?key={VALUE}") }),
            "its URL carries the value of secret `api`",
        ),
        (
            json!({ "url": format!("{base}/c?key={}", VALUE.replace('0', "%30")) }),
            "its URL carries the value of secret `api`",
        ),
        (
            json!({ "url": format!("{base}/d"), "method": "POST", "body": format!("{{\"token\":\"{VALUE}\"}}") }),
            "its body carries the value of secret `api`",
        ),
    ];
    for (input, refusal) in attempts {
        let (report, printed) = fetch(&site, input.clone());
        assert_eq!(report["ok"], false, "{input}: {report}");
        let denials = report["http_denials"].to_string();
        assert!(denials.contains(refusal), "{input}: {denials}");
        assert!(!printed.contains(VALUE), "{input}: {printed}");
    }
    // The guest's copies never reached the server; the only one it got is
    // the header the host injected into the POST the grant allowed (whose
    // body was then cut before any of the value).
    let seen = recorder.seen();
    assert_eq!(seen.len(), 1, "{seen:?}");
    for request in seen {
        let others: Vec<&str> = request
            .lines()
            .filter(|l| !l.to_lowercase().starts_with("authorization:"))
            .collect();
        assert!(!others.join("\n").contains("sk-live"), "{request}");
    }
}

/// A secret's value an agent put in a call's input (it learned it some
/// other way) is not kept: the session's log records the input masked, and
/// an approval shows it masked wherever it is shown (the list, the whole
/// input, which then says its SHA-256 differs), and so does a background
/// job. The call itself, once approved, gets the input as it was sent.
#[test]
fn threat_60_a_secret_in_a_calls_input_is_masked_in_the_log_and_in_the_approval() {
    // The files plugin, whose writes the destructive hook asks about.
    let site = crate::approvals::site("[[secret]]\nname = \"api\"\nfile = \"api.token\"\n");
    let token = site.path().join("api.token");
    std::fs::write(&token, format!("{VALUE}\n")).unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&token, std::fs::Permissions::from_mode(0o600)).unwrap();
    site.start_workagent("w");

    let input = json!({"path": "/data/key.txt", "content": format!("key={VALUE}")});
    let (_, out, err) = site.run(&[
        "call",
        "files.write",
        "-s",
        "w",
        "--input",
        &input.to_string(),
    ]);
    assert!(!format!("{out}{err}").contains(VALUE), "{out}{err}");
    let pending = site.json(&["approvals", "--json"]);
    let listed = pending.to_string();
    assert!(listed.contains("[secret:api]"), "{listed}");
    assert!(!listed.contains(VALUE), "{listed}");
    let id = pending[0]["id"].as_str().unwrap().to_string();
    // As a person reads it before settling it (`Host::show_approval`).
    let (code, shown, listed) = site.run(&["approvals"]);
    assert_eq!(code, 0, "{listed}");
    let shown = format!("{shown}{listed}");
    assert!(
        shown.contains("[secret:api]") && !shown.contains(VALUE),
        "{shown}"
    );

    let (code, whole, note) = site.run(&["approvals", "--input", &id]);
    assert_eq!(code, 0, "{note}");
    assert_eq!(
        whole,
        r#"{"content":"key=[secret:api]","path":"/data/key.txt"}"#
    );
    assert!(note.contains("shown masked"), "{note}");

    let (code, log, err) = site.run(&["log", "export", "w"]);
    assert_eq!(code, 0, "{err}");
    assert!(log.contains("key=[secret:api]"), "{log}");
    assert!(!log.contains(VALUE), "{log}");

    // A background job's input is shown masked too, as it is queued and
    // when it is looked at.
    let read = json!({"path": format!("/data/{VALUE}.txt")}).to_string();
    let (code, spawned, err) =
        site.run(&["job", "spawn", "-s", "w", "files.read", "--input", &read]);
    assert_eq!(code, 0, "{err}");
    assert!(
        spawned.contains("[secret:api].txt") && !spawned.contains(VALUE),
        "{spawned}"
    );
    let job: Value = serde_json::from_str(&spawned).unwrap();
    let job_id = job["id"].as_str().unwrap();
    let (code, status, err) = site.run(&["job", "status", job_id]);
    assert_eq!(code, 0, "{err}");
    assert!(
        status.contains("[secret:api].txt") && !status.contains(VALUE),
        "{status}"
    );

    // Approved, the call runs with the input it was sent.
    let (code, out, err) = site.run(&["approve", &id]);
    assert_eq!(code, 0, "{out}{err}");
    let written = std::fs::read_to_string(site.path().join("work/key.txt")).unwrap();
    assert_eq!(written, format!("key={VALUE}"));
}

/// An interrupted call whose input carried a secret's value is not re-run:
/// the log keeps that input masked, which is not the input the call had
/// (its digest says so). The secret here is a number the call's input holds.
#[test]
fn threat_60_an_interrupted_call_whose_logged_input_was_masked_is_not_rerun() {
    let site = Site::new(true);
    site.set_config("[[secret]]\nname = \"n\"\nfile = \"n.secret\"\n");
    let secret = site.path().join("n.secret");
    std::fs::write(&secret, "300000000\n").unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&secret, std::fs::Permissions::from_mode(0o600)).unwrap();
    site.start_workagent("sleeper");
    let mut child = crate::util::glovebox()
        .arg("--config")
        .arg(site.config())
        .args(["call", "--session", "sleeper", "sleep.sleep"])
        .args(["--input", r#"{"seconds":300000000}"#])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    std::thread::sleep(std::time::Duration::from_millis(1500));
    child.kill().unwrap();
    child.wait().unwrap();

    let resumed = site.json(&["session", "resume", "sleeper"]);
    let call = &resumed["interrupted_calls"][0];
    assert_eq!(call["idempotent"], true, "{resumed}");
    let call_id = call["call_id"].as_str().unwrap();
    let (_, log, _) = site.run(&["log", "export", "sleeper"]);
    assert!(
        log.contains("[secret:n]") && !log.contains("300000000"),
        "{log}"
    );
    let (code, _, err) = site.run(&["session", "rerun", "sleeper", call_id]);
    assert_ne!(code, 0, "{err}");
    assert!(
        err.contains("carried a secret's value, which the log keeps masked: call the tool again"),
        "{err}"
    );
}
