//! Threat 55: an approval shows what runs. An input crafted to mislead (a
//! 200 KB `content` sent before the `path`, a right-to-left override in the
//! file name, a zero-width space in the path) is approved through the CLI
//! (the real binary) and through MCP elicitation (a client over stdio that
//! declares elicitation and answers it); the operator must see the true
//! path first and whole, every invisible character marked with a legend,
//! and the input's SHA-256 with a way to get it whole. The dashboard's
//! browser test is in `dashboard.rs`.

use serde_json::{Value, json};

use crate::mcp::Server;
use crate::util::{Site, plugins};

/// The file name the operator must see: a zero-width space after `a`, a
/// right-to-left override before `txt.exe` (which then reads `exe.txt`).
pub(crate) const TRUE_NAME: &str = "a\u{200b}b-invoice\u{202e}txt.exe";
/// The path as every surface must show it.
pub(crate) const SHOWN_PATH: &str = "\"/data/a<U+200B>b-invoice<U+202E>txt.exe\"";

/// The crafted input: 200 KB of `content` first, then the path.
pub(crate) fn crafted_input() -> String {
    format!(
        "{{\"content\":\"{}\",\"path\":\"/data/{TRUE_NAME}\"}}",
        "x".repeat(200_000)
    )
}

/// Checks a surface's text of the crafted approval: the path comes before
/// the content, whole and marked; the content is cut with its size; no raw
/// invisible character; the legend names both marks; the SHA-256 is there.
pub(crate) fn assert_shows_the_true_path(text: &str, sha256: &str) {
    let path = text
        .find(&format!("\"path\": {SHOWN_PATH}"))
        .unwrap_or_else(|| panic!("no true path in:\n{}", head(text)));
    let content = text
        .find("\"content\": \"xxxx")
        .unwrap_or_else(|| panic!("no content in:\n{}", head(text)));
    assert!(path < content, "the path is not first:\n{}", head(text));
    assert!(text.contains("cut: 200002 bytes in all"), "{}", head(text));
    assert!(
        text.len() < 20_000,
        "the preview is {} bytes, not a preview",
        text.len()
    );
    for c in ['\u{202e}', '\u{200b}'] {
        assert!(!text.contains(c), "a raw U+{:04X} is shown", c as u32);
    }
    assert!(text.contains("<U+202E> RIGHT-TO-LEFT OVERRIDE"), "{text}");
    assert!(text.contains("<U+200B> ZERO WIDTH SPACE"), "{text}");
    assert!(text.contains(sha256), "no sha256 {sha256} in {text}");
}

fn head(text: &str) -> &str {
    &text[..text.len().min(4000)]
}

/// Agent `carol`, who settles her own approvals (`approve_by = "client"`),
/// as a `[[principal]]` entry.
pub(crate) fn client_approver() -> String {
    let token_hash = glovebox::manifest::credential_of("carol's token, unused over stdio");
    format!(
        "[[principal]]\nname = \"carol\"\nkind = \"agent\"\ncredential = \"{token_hash}\"\nroles = [\"workagent\"]\nprojects = [\"p\"]\napprove_by = \"client\"\n"
    )
}

/// A site serving `files` (read-write over `work/`) whose writes the
/// destructive hook asks a human about; callers answered at once.
pub(crate) fn site(extra: &str) -> Site {
    let site = Site::with_config(
        &format!(
            "[approvals]\nwait = 0\n{extra}[[hook]]\nname = \"destructive\"\ncomponent = \"{}\"\n[hook.settings]\nmode = \"ask\"\n",
            plugins::HOOK_DESTRUCTIVE
        ),
        &[(
            "files.toml",
            format!(
                "name = \"files\"\ncomponent = \"{}\"\n[[fs]]\nhost = \"work\"\nguest = \"/data\"\naccess = \"read-write\"\n",
                plugins::TOOL_FILES
            ),
        )],
    );
    std::fs::create_dir(site.path().join("work")).unwrap();
    site
}

#[test]
fn threat_55_the_cli_shows_the_true_path_of_a_misleading_input_and_approves_it() {
    let site = site("");
    site.start_workagent("w");
    let input = site.path().join("input.json");
    std::fs::write(&input, crafted_input()).unwrap();
    let (_, out, err) = site.run(&[
        "call",
        "--session",
        "w",
        "files.write",
        "--input-file",
        input.to_str().unwrap(),
    ]);
    assert!(
        format!("{out}{err}").contains("awaits approval"),
        "{out}{err}"
    );
    let pending = site.json(&["approvals", "--json"]);
    let approval = &pending.as_array().unwrap()[0];
    let id = approval["id"].as_str().unwrap();
    let sha256 = approval["input_hash"].as_str().unwrap();

    // The listing: the true path first, the content cut, a way to the whole.
    let (code, listing, err) = site.run(&["approvals"]);
    assert_eq!(code, 0, "{err}");
    assert_shows_the_true_path(&listing, sha256);
    assert!(
        listing.contains(&format!("glovebox approvals --input {id}")),
        "{listing}"
    );
    // The whole input, exactly: its SHA-256 is the one shown.
    let whole = crate::util::glovebox()
        .arg("--config")
        .arg(site.config())
        .args(["approvals", "--input", id])
        .output()
        .unwrap();
    assert!(whole.status.success(), "{whole:?}");
    assert_eq!(whole.stdout, std::fs::read(&input).unwrap());
    assert_eq!(glovebox::session::digest(&whole.stdout), sha256);

    // Approving says again what ran, and the file has the true name.
    let (code, _, said) = site.run(&["approve", id]);
    assert_eq!(code, 0, "{said}");
    assert_shows_the_true_path(&said, sha256);
    let written = std::fs::metadata(site.path().join("work").join(TRUE_NAME)).unwrap();
    assert_eq!(written.len(), 200_000);
}

#[test]
fn threat_55_mcp_elicitation_shows_the_true_path_of_a_misleading_input_and_approves_it() {
    let site = site(&client_approver());
    let mut server = Server::start_with(&site.config(), &["--as", "carol"]);
    let init = server.request(
        0,
        "initialize",
        json!({
            "protocolVersion": "2025-06-18",
            "capabilities": {"elicitation": {}},
            "clientInfo": {"name": "glovebox-tests", "version": "0"},
        }),
    );
    assert!(init["result"].is_object(), "{init}");
    server.send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
    let started = server.call(
        1,
        "session_start",
        json!({"role": "workagent", "project": "p", "name": "w"}),
    );
    assert_eq!(started["result"]["isError"], false, "{started}");

    let arguments: Value = serde_json::from_str(&crafted_input()).unwrap();
    server.send(json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
        "params": {"name": "files.write", "arguments": arguments}}));
    // The server asks the client's user before it answers the call.
    let ask = loop {
        let line = server
            .next_line(std::time::Duration::from_secs(120))
            .expect("an elicitation request");
        if line["method"] == "elicitation/create" {
            break line;
        }
        assert_ne!(line["id"], json!(2), "answered without asking: {line}");
    };
    let message = ask["params"]["message"].as_str().unwrap();
    let pending = site.json(&["approvals", "--json"]);
    let approval = &pending.as_array().unwrap()[0];
    let id = approval["id"].as_str().unwrap();
    let sha256 = approval["input_hash"].as_str().unwrap();
    assert_shows_the_true_path(message, sha256);
    assert!(message.contains("`approval_status`"), "{message}");
    server.send(json!({"jsonrpc": "2.0", "id": ask["id"],
        "result": {"action": "accept", "content": {"approve": true}}}));
    let answer = server.response(2);
    assert_eq!(answer["result"]["isError"], false, "{answer}");
    let written = std::fs::metadata(site.path().join("work").join(TRUE_NAME)).unwrap();
    assert_eq!(written.len(), 200_000);
    // Where the message said the whole input is: it is, with that hash.
    let status = server.call(3, "approval_status", json!({"id": id}));
    let whole = status["result"]["structuredContent"]["input"]
        .as_str()
        .unwrap_or_else(|| panic!("{status}"));
    assert_eq!(glovebox::session::digest(whole.as_bytes()), sha256);
}

/// Under MCP 2026-07-28 the same crafted ask reaches the client as
/// `input_required` (no server-to-client request exists there): the form
/// shows the true path and the SHA-256, and `requestState` is a handle to
/// the stored approval, never trusted. A retry with other input, or a
/// state that names no approval of the caller's, is refused (-32602) and
/// runs nothing; the very call with an accepting answer runs, once.
#[test]
fn threat_55_under_2026_07_28_an_ask_is_input_required_and_request_state_is_only_a_handle() {
    let site = site(&client_approver());
    let mut server = Server::start_with(&site.config(), &["--as", "carol"]);
    let meta = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {"elicitation": {"form": {}}},
        "io.modelcontextprotocol/clientInfo": {"name": "glovebox-tests", "version": "0"},
    });
    let arguments: Value = serde_json::from_str(&crafted_input()).unwrap();
    let asked = server.request(
        1,
        "tools/call",
        json!({"name": "files.write", "arguments": arguments, "_meta": meta}),
    );
    let result = &asked["result"];
    assert_eq!(result["resultType"], "input_required", "{asked}");
    let state = result["requestState"].as_str().unwrap();
    let form = &result["inputRequests"]["approve"];
    assert_eq!(form["method"], "elicitation/create", "{form}");
    let message = form["params"]["message"].as_str().unwrap();
    let pending = site.json(&["approvals", "--json"]);
    let approval = &pending.as_array().unwrap()[0];
    assert_eq!(approval["id"], state);
    let sha256 = approval["input_hash"].as_str().unwrap();
    assert_shows_the_true_path(message, sha256);

    let yes = json!({"approve": {"action": "accept", "content": {"approve": true}}});
    let work = site.path().join("work");
    // Another input under the approval's handle: refused, nothing written.
    let other = json!({"path": "/data/other.txt", "content": "not what was approved"});
    let tampered = server.request(
        2,
        "tools/call",
        json!({"name": "files.write", "arguments": other, "_meta": meta,
               "inputResponses": yes, "requestState": state}),
    );
    assert_eq!(tampered["error"]["code"], -32602, "{tampered}");
    assert!(
        tampered["error"]["message"]
            .as_str()
            .unwrap()
            .contains("another call"),
        "{tampered}"
    );
    // A state that names no approval: refused the same way.
    let forged = server.request(
        3,
        "tools/call",
        json!({"name": "files.write", "arguments": arguments, "_meta": meta,
               "inputResponses": yes, "requestState": "apr-forged"}),
    );
    assert_eq!(forged["error"]["code"], -32602, "{forged}");
    assert_eq!(std::fs::read_dir(&work).unwrap().count(), 0);
    assert_eq!(
        site.json(&["approvals", "--json"])
            .as_array()
            .unwrap()
            .len(),
        1
    );

    // The very call, answered yes: it runs.
    let ran = server.request(
        4,
        "tools/call",
        json!({"name": "files.write", "arguments": arguments, "_meta": meta,
               "inputResponses": yes, "requestState": state}),
    );
    assert_eq!(ran["result"]["isError"], false, "{ran}");
    let written = std::fs::metadata(work.join(TRUE_NAME)).unwrap();
    assert_eq!(written.len(), 200_000);
    // Sent again, it does not run twice: the approval is settled.
    let again = server.request(
        5,
        "tools/call",
        json!({"name": "files.write", "arguments": arguments, "_meta": meta,
               "inputResponses": yes, "requestState": state}),
    );
    assert!(again["result"].is_object(), "{again}");
    assert_ran_ok(&site, 1);
}

/// Carol's default session ran exactly `n` calls that ended well.
pub(crate) fn assert_ran_ok(site: &Site, n: usize) {
    let (code, log, err) = site.run(&["log", "export", "carol/mcp-default"]);
    assert_eq!(code, 0, "{err}");
    let ran_ok = log
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter(|e| e["kind"]["type"] == "call_finished" && e["kind"]["outcome"] == "ok")
        .count();
    assert_eq!(ran_ok, n, "{log}");
}
