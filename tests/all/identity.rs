//! Who may connect, looked up at every request, over the real binary and
//! real HTTP clients (raw HTTP/1.1 over TCP, and curl as another user).
//! Threat 52: a reload reaches open connections (a demoted principal's next
//! request runs with its new roles; a removed one gets 401, its MCP
//! sessions end, and its stdio server stops). Threat 54: without principals
//! only the server's own user is served, by the MCP and admin listeners
//! alike. Threat 58: per-principal caps on MCP sessions and requests in
//! flight leave other principals served. Threat 43 (the lows): a dribbled
//! body is cut off; the admin listener's lock-out never refuses a right
//! credential.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Child, ChildStdin, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::principals::add;
use crate::util::Site;

/// `glovebox serve --http 127.0.0.1:0 [--admin 127.0.0.1:0]`: the process,
/// the MCP address and the admin address (when asked for).
pub(crate) fn serve(site: &Site, admin: bool) -> (Child, String, Option<String>) {
    let mut command = crate::util::glovebox();
    command
        .arg("--config")
        .arg(site.config())
        .args(["serve", "--http", "127.0.0.1:0"]);
    if admin {
        command.args(["--admin", "127.0.0.1:0"]);
    }
    let mut child = command
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
    let mut admin_addr = None;
    let addr = loop {
        let line = lines.next().expect("serve printed its address").unwrap();
        if let Some(rest) = line.strip_prefix("glovebox: serving the dashboard at http://") {
            admin_addr = Some(rest.split('/').next().unwrap().to_string());
        }
        if let Some(rest) = line.strip_prefix("glovebox: serving MCP at http://") {
            break rest.trim_end_matches("/mcp").to_string();
        }
    };
    std::thread::spawn(move || for _ in lines {});
    (child, addr, admin_addr)
}

/// An HTTP answer: status, headers (lowercase names), body.
pub(crate) struct Answer {
    pub(crate) status: u16,
    pub(crate) headers: Vec<(String, String)>,
    pub(crate) body: String,
}

impl Answer {
    pub(crate) fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }
}

/// Reads an answer's status line and headers from `reader`.
fn head(reader: &mut impl BufRead) -> (u16, Vec<(String, String)>) {
    let mut line = String::new();
    reader.read_line(&mut line).unwrap();
    let status = line
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("not an HTTP answer: {line:?}"));
    let mut headers = Vec::new();
    loop {
        let mut line = String::new();
        reader.read_line(&mut line).unwrap();
        let line = line.trim_end();
        if line.is_empty() {
            break;
        }
        if let Some((n, v)) = line.split_once(':') {
            headers.push((n.trim().to_ascii_lowercase(), v.trim().to_string()));
        }
    }
    (status, headers)
}

/// The request text: `method path` with a token, an MCP session and a body.
fn request_text(
    method: &str,
    path: &str,
    token: Option<&str>,
    session: Option<&str>,
    body: &str,
    close: bool,
) -> String {
    let mut text = format!(
        "{method} {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: application/json, text/event-stream\r\nContent-Type: application/json\r\nContent-Length: {}\r\n",
        body.len()
    );
    if let Some(token) = token {
        text += &format!("Authorization: Bearer {token}\r\n");
    }
    if let Some(session) = session {
        text += &format!("Mcp-Session-Id: {session}\r\nMcp-Protocol-Version: 2025-06-18\r\n");
    }
    if close {
        text += "Connection: close\r\n";
    }
    text + "\r\n" + body
}

/// One request on a connection of its own, read to its end.
pub(crate) fn http(
    addr: &str,
    method: &str,
    path: &str,
    token: Option<&str>,
    session: Option<&str>,
    body: &str,
) -> Answer {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(60))).unwrap();
    s.write_all(request_text(method, path, token, session, body, true).as_bytes())
        .unwrap();
    let mut reader = BufReader::new(s);
    let (status, headers) = head(&mut reader);
    let mut body = String::new();
    let _ = reader.read_to_string(&mut body);
    Answer {
        status,
        headers,
        body,
    }
}

const INIT: &str = r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"0"}}}"#;

/// Opens an MCP session for `token`: its id.
pub(crate) fn open_session(addr: &str, token: Option<&str>) -> String {
    let answer = http(addr, "POST", "/mcp", token, None, INIT);
    assert_eq!(answer.status, 200, "initialize: {}", answer.body);
    let id = answer.header("mcp-session-id").unwrap().to_string();
    let initialized = r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#;
    let answer = http(addr, "POST", "/mcp", token, Some(&id), initialized);
    assert_eq!(answer.status, 202, "initialized: {}", answer.body);
    id
}

/// A `tools/call` of `tool` on MCP session `session`: the JSON-RPC answer
/// (taken from the SSE stream), or the HTTP status when it is not 200.
pub(crate) fn call(
    addr: &str,
    token: Option<&str>,
    session: &str,
    tool: &str,
    args: Value,
) -> Result<Value, u16> {
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": tool, "arguments": args}}).to_string();
    let answer = http(addr, "POST", "/mcp", token, Some(session), &body);
    if answer.status != 200 {
        return Err(answer.status);
    }
    let data = answer
        .body
        .lines()
        .filter_map(|l| l.strip_prefix("data:"))
        .map(str::trim)
        .find(|d| d.contains("\"id\":1"))
        .unwrap_or_else(|| panic!("no answer in {}", answer.body));
    Ok(serde_json::from_str(data).unwrap())
}

/// A standalone SSE stream (GET) of MCP session `session`, held open: the
/// connection, once its answer's head came.
fn open_stream(addr: &str, token: &str, session: &str) -> (u16, BufReader<TcpStream>) {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    s.write_all(request_text("GET", "/mcp", Some(token), Some(session), "", true).as_bytes())
        .unwrap();
    let mut reader = BufReader::new(s);
    let (status, _) = head(&mut reader);
    (status, reader)
}

/// Edits the config's `[[principal]]` tables: `edit` gets each one.
fn edit_principals(site: &Site, edit: impl Fn(&mut toml_edit::ArrayOfTables)) {
    let text = std::fs::read_to_string(site.config()).unwrap();
    let mut doc: toml_edit::DocumentMut = text.parse().unwrap();
    edit(doc["principal"].as_array_of_tables_mut().unwrap());
    std::fs::write(site.config(), doc.to_string()).unwrap();
}

/// Leaves `name` with the roles `roles` only.
fn demote(site: &Site, name: &str, roles: &[&str]) {
    edit_principals(site, |principals| {
        for p in principals.iter_mut() {
            if p["name"].as_str() == Some(name) {
                let mut list = toml_edit::Array::new();
                roles.iter().for_each(|r| list.push(*r));
                p["roles"] = toml_edit::value(list);
            }
        }
    });
}

fn remove(site: &Site, name: &str) {
    edit_principals(site, |principals| {
        principals.retain(|p| p["name"].as_str() != Some(name));
    });
}

fn reload(site: &Site) {
    let (code, out, err) = site.run(&["reload"]);
    assert_eq!(code, 0, "reload: {out}{err}");
}

fn agent(site: &Site, name: &str, roles: &str) -> String {
    add(
        site,
        &[name, "--kind", "agent", "--roles", roles, "--projects", "*"],
    )
}

fn is_error(answer: &Value) -> bool {
    answer["result"]["isError"] == json!(true)
}

// Threat 52: a reload did not reach open HTTP connections (the old roles
// held, and a removed principal's MCP sessions stayed open).
#[test]
fn threat_52_a_reload_reaches_an_open_mcp_session_over_http() {
    let site = Site::new(false);
    let alice = agent(&site, "alice", "supervisor,workagent");
    let bob = agent(&site, "bob", "workagent");
    let (mut child, addr, _) = serve(&site, false);
    let session = open_session(&addr, Some(&alice));
    let start = |role: &str| {
        call(
            &addr,
            Some(&alice),
            &session,
            "session_start",
            json!({"role": role, "project": "p"}),
        )
    };
    let answer = start("supervisor").unwrap();
    assert!(!is_error(&answer), "{answer}");

    // Demoted: the same open MCP session's next request has the new roles.
    demote(&site, "alice", &["workagent"]);
    reload(&site);
    let answer = start("supervisor").unwrap();
    assert!(
        is_error(&answer),
        "a demoted principal kept its old role: {answer}"
    );
    assert!(answer.to_string().contains("supervisor"), "{answer}");
    assert!(!is_error(&start("workagent").unwrap()));

    // Removed: its open stream ends at the reload, its next request is 401.
    let (status, mut stream) = open_stream(&addr, &alice, &session);
    assert_eq!(status, 200);
    remove(&site, "alice");
    reload(&site);
    let ended = Instant::now();
    let mut rest = String::new();
    let _ = stream.read_to_string(&mut rest);
    assert!(
        ended.elapsed() < Duration::from_secs(20),
        "a removed principal's stream stayed open"
    );
    assert_eq!(start("workagent"), Err(401));
    // Bob, still declared, is served.
    let other = open_session(&addr, Some(&bob));
    let answer = call(&addr, Some(&bob), &other, "session_list", json!({})).unwrap();
    assert!(!is_error(&answer), "{answer}");
    let _ = child.kill();
    let _ = child.wait();
}

/// `glovebox serve --as NAME` over stdio, its stderr kept in a file.
struct StdioServer {
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<std::process::ChildStdout>,
    stderr: std::path::PathBuf,
}

impl StdioServer {
    fn start(site: &Site, name: &str) -> StdioServer {
        let stderr = site.path().join(format!("stdio-{name}.log"));
        let mut child = crate::util::glovebox()
            .arg("--config")
            .arg(site.config())
            .args(["serve", "--as", name])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(std::fs::File::create(&stderr).unwrap())
            .spawn()
            .unwrap();
        let mut this = StdioServer {
            stdin: child.stdin.take().unwrap(),
            stdout: BufReader::new(child.stdout.take().unwrap()),
            child,
            stderr,
        };
        let init = this.request(
            0,
            "initialize",
            serde_json::from_str::<Value>(INIT).unwrap()["params"].clone(),
        );
        assert!(init.is_some_and(|i| i["result"].is_object()));
        this.send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
        this
    }

    fn send(&mut self, message: Value) {
        let _ = writeln!(self.stdin, "{message}");
        let _ = self.stdin.flush();
    }

    /// The answer to a request, or `None` when stdout closed first.
    fn request(&mut self, id: u64, method: &str, params: Value) -> Option<Value> {
        self.send(json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        loop {
            let mut line = String::new();
            if self.stdout.read_line(&mut line).ok()? == 0 {
                return None;
            }
            let v: Value = serde_json::from_str(&line).unwrap();
            if v["id"] == json!(id) {
                return Some(v);
            }
        }
    }
}

impl Drop for StdioServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

// Threat 52: over stdio the principal was fixed at start: a reload neither
// demoted it nor stopped serving it once removed.
#[test]
fn threat_52_a_reload_reaches_a_stdio_connection_and_a_removed_principal_is_no_longer_served() {
    let site = Site::new(false);
    agent(&site, "alice", "supervisor,workagent");
    agent(&site, "bob", "workagent");
    let mut stdio = StdioServer::start(&site, "alice");
    let start = |stdio: &mut StdioServer, id: u64, role: &str| {
        stdio.request(
            id,
            "tools/call",
            json!({"name": "session_start", "arguments": {"role": role, "project": "p"}}),
        )
    };
    let answer = start(&mut stdio, 1, "supervisor").unwrap();
    assert!(!is_error(&answer), "{answer}");
    demote(&site, "alice", &["workagent"]);
    reload(&site);
    let answer = start(&mut stdio, 2, "supervisor").unwrap();
    assert!(
        is_error(&answer),
        "a demoted principal kept its old role: {answer}"
    );

    // Removed: the server stops serving it at the reload; the client sees
    // its stdout close, and the process exits non-zero saying why.
    remove(&site, "alice");
    reload(&site);
    let deadline = Instant::now() + Duration::from_secs(20);
    let status = loop {
        if let Some(status) = stdio.child.try_wait().unwrap() {
            break status;
        }
        assert!(
            Instant::now() < deadline,
            "the stdio server kept serving a removed principal"
        );
        std::thread::sleep(Duration::from_millis(100));
    };
    assert!(!status.success(), "{status}");
    assert_eq!(start(&mut stdio, 3, "workagent"), None, "it still answered");
    let log = std::fs::read_to_string(&stdio.stderr).unwrap();
    assert!(
        log.contains("principal `alice` is no longer declared in the config"),
        "{log}"
    );
}

/// Runs `curl ARGS` as uid 65534 (nobody): (HTTP status, body).
fn curl_as_nobody(args: &[&str]) -> (u16, String) {
    crate::util::ensure_debian_tool("curl", "curl");
    crate::util::ensure_debian_tool("setpriv", "util-linux");
    let out = std::process::Command::new("setpriv")
        .args(["--reuid=65534", "--regid=65534", "--clear-groups", "curl"])
        .args(["-s", "-m", "30", "-w", "\n%{http_code}"])
        .args(args)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let (body, status) = text.rsplit_once('\n').unwrap_or(("", &text));
    (
        status
            .trim()
            .parse()
            .unwrap_or_else(|_| panic!("curl: {text} {out:?}")),
        body.to_string(),
    )
}

// Threat 54: without principals, anyone on the machine who reached the
// loopback listeners was `local` over MCP and the operator on the dashboard.
#[test]
fn threat_54_without_principals_only_the_servers_own_user_is_served() {
    assert_eq!(
        own_uid(),
        0,
        "these tests run as root, and drop to uid 65534 for the other user"
    );
    let site = Site::new(false);
    let (mut child, addr, admin) = serve(&site, true);
    let admin = admin.unwrap();
    // The server's own user is served, on both listeners.
    let session = open_session(&addr, None);
    let answer = call(&addr, None, &session, "session_list", json!({})).unwrap();
    assert!(!is_error(&answer), "{answer}");
    assert_eq!(http(&admin, "GET", "/ui", None, None, "").status, 200);
    assert_eq!(http(&addr, "GET", "/metrics", None, None, "").status, 200);

    // Another user is refused, saying why, on both.
    let mcp = format!("http://{addr}/mcp");
    let (status, body) = curl_as_nobody(&[
        "-X",
        "POST",
        "-H",
        "Content-Type: application/json",
        "-H",
        "Accept: application/json, text/event-stream",
        "-d",
        INIT,
        &mcp,
    ]);
    assert_eq!(status, 403, "{body}");
    assert!(
        body.contains("declares no principals") && body.contains("uid 65534"),
        "{body}"
    );
    for url in [
        format!("http://{admin}/ui"),
        format!("http://{addr}/metrics"),
    ] {
        let (status, body) = curl_as_nobody(&[&url]);
        assert_eq!(status, 403, "{url}: {body}");
        assert!(body.contains("uid 65534"), "{body}");
    }
    // Nor may another user use a session of the server's own user.
    let (status, _) = curl_as_nobody(&[
        "-X",
        "POST",
        "-H",
        &format!("Mcp-Session-Id: {session}"),
        "-H",
        "Content-Type: application/json",
        "-d",
        r#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#,
        &mcp,
    ]);
    assert_eq!(status, 403);
    let _ = child.kill();
    let _ = child.wait();
}

fn own_uid() -> u32 {
    rustix::process::geteuid().as_raw()
}

// Threat 58: one principal could hold every MCP session and connection
// slot with open streams, and the others got nothing.
#[test]
fn threat_58_one_principal_holding_its_sessions_and_streams_leaves_another_served() {
    let site = Site::with_plugins(&[]);
    site.set_config("[quotas]\nconnections_per_principal = 2\nmcp_sessions_per_principal = 2\n");
    let alice = agent(&site, "alice", "workagent");
    let bob = agent(&site, "bob", "workagent");
    let (mut child, addr, _) = serve(&site, false);

    let sessions: Vec<String> = (0..2).map(|_| open_session(&addr, Some(&alice))).collect();
    let third = http(&addr, "POST", "/mcp", Some(&alice), None, INIT);
    assert_eq!(third.status, 429, "{}", third.body);
    assert!(
        third
            .body
            .contains("`quotas.mcp_sessions_per_principal` = 2"),
        "{}",
        third.body
    );

    // Alice holds both her request slots with open streams...
    let streams: Vec<_> = sessions
        .iter()
        .map(|s| {
            let (status, stream) = open_stream(&addr, &alice, s);
            assert_eq!(status, 200);
            stream
        })
        .collect();
    let refused = call(&addr, Some(&alice), &sessions[0], "session_list", json!({}));
    assert_eq!(refused, Err(429));
    let answer = http(
        &addr,
        "POST",
        "/mcp",
        Some(&alice),
        Some(&sessions[0]),
        "{}",
    );
    assert!(
        answer
            .body
            .contains("`quotas.connections_per_principal` = 2"),
        "{}",
        answer.body
    );
    // ...and Bob is served all the same: a session, a call, a stream.
    let other = open_session(&addr, Some(&bob));
    let answer = call(&addr, Some(&bob), &other, "session_list", json!({})).unwrap();
    assert!(!is_error(&answer), "{answer}");
    assert_eq!(open_stream(&addr, &bob, &other).0, 200);

    // Her streams closed, her slots are free again.
    drop(streams);
    let deadline = Instant::now() + Duration::from_secs(40);
    while call(&addr, Some(&alice), &sessions[0], "session_list", json!({})).is_err() {
        assert!(Instant::now() < deadline, "closed streams kept their slots");
        std::thread::sleep(Duration::from_millis(100));
    }
    // An MCP session she ends frees its slot (its pin is pruned).
    let ended = http(
        &addr,
        "DELETE",
        "/mcp",
        Some(&alice),
        Some(&sessions[1]),
        "",
    );
    assert!(ended.status < 300, "{}", ended.status);
    open_session(&addr, Some(&alice));
    let _ = child.kill();
    let _ = child.wait();
}

/// Sends a request head announcing a 100,000-byte body, then a byte every
/// 200 ms: how long until the server closes the connection (`None`: not
/// within `within`), and what it answered.
fn dribble(addr: &str, path: &str, headers: &str, within: Duration) -> (Option<Duration>, String) {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_millis(200)))
        .unwrap();
    write!(
        s,
        "POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\n{headers}Content-Length: 100000\r\n\r\n{{"
    )
    .unwrap();
    let start = Instant::now();
    let mut answer = Vec::new();
    let mut buf = [0u8; 1024];
    while start.elapsed() < within {
        match s.read(&mut buf) {
            Ok(0) => {
                return (
                    Some(start.elapsed()),
                    String::from_utf8_lossy(&answer).into(),
                );
            }
            Ok(n) => answer.extend_from_slice(&buf[..n]),
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ) =>
            {
                if s.write_all(b" ").is_err() {
                    return (
                        Some(start.elapsed()),
                        String::from_utf8_lossy(&answer).into(),
                    );
                }
            }
            Err(_) => {
                return (
                    Some(start.elapsed()),
                    String::from_utf8_lossy(&answer).into(),
                );
            }
        }
    }
    (None, String::from_utf8_lossy(&answer).into())
}

// Threat 43 (a low): a client that sent its headers and then dribbled its
// body held a connection for as long as it liked, on both listeners.
#[test]
fn threat_43_a_dribbled_request_body_is_cut_off_on_the_mcp_and_admin_listeners() {
    let site = Site::new(false);
    let (mut child, addr, admin) = serve(&site, true);
    let admin = admin.unwrap();
    let mcp = std::thread::spawn(move || {
        let json =
            "Content-Type: application/json\r\nAccept: application/json, text/event-stream\r\n";
        dribble(&addr, "/mcp", json, Duration::from_secs(60))
    });
    // A login form (from the dashboard's own origin), which is read whole.
    let form =
        format!("Content-Type: application/x-www-form-urlencoded\r\nOrigin: http://{admin}\r\n");
    let ui = dribble(&admin, "/ui/login", &form, Duration::from_secs(60));
    for (took, answer) in [mcp.join().unwrap(), ui] {
        let took = took.unwrap_or_else(|| panic!("a dribbled body was never cut off: {answer}"));
        // The body timeout is 30 s (`glovebox_listener::BODY_TIMEOUT`).
        assert!(
            took >= Duration::from_secs(25),
            "cut off too soon: {took:?}: {answer}"
        );
    }
    let _ = child.kill();
    let _ = child.wait();
}

// Threat 43 (a low): the failed-login lock-out was keyed by address only, so
// behind a proxy one guesser locked every operator out, right tokens too.
#[test]
fn threat_43_a_guesser_is_held_back_but_a_right_credential_never_is() {
    let site = Site::new(false);
    let operator = add(&site, &["ops", "--kind", "operator"]);
    let (mut child, _addr, admin) = serve(&site, true);
    let admin = admin.unwrap();
    let wrong = format!("gbx_{}", "0".repeat(64));
    // Ten wrong tokens are 401; the guesser's next ones are 429.
    for _ in 0..10 {
        assert_eq!(
            http(&admin, "GET", "/metrics", Some(&wrong), None, "").status,
            401
        );
    }
    let locked = http(&admin, "GET", "/metrics", Some(&wrong), None, "");
    assert_eq!(locked.status, 429, "{}", locked.body);
    assert!(locked.header("retry-after").is_some());
    // The right token from the same address (everyone behind a proxy) is served...
    assert_eq!(
        http(&admin, "GET", "/metrics", Some(&operator), None, "").status,
        200
    );
    assert_eq!(
        http(&admin, "GET", "/ui", Some(&operator), None, "").status,
        200
    );
    // ...and so is a login with it, while a wrong login is held back.
    let login = |token: &str| {
        let body = format!("token={token}");
        let mut s = TcpStream::connect(&admin).unwrap();
        write!(
            s,
            "POST /ui/login HTTP/1.1\r\nHost: 127.0.0.1\r\nOrigin: http://{admin}\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
            body.len()
        )
        .unwrap();
        head(&mut BufReader::new(s)).0
    };
    assert_eq!(login(&operator), 303);
    assert_eq!(login(&wrong), 429);
    let _ = child.kill();
    let _ = child.wait();
}

/// A stdio tool call: `name` with `arguments`.
fn tool(stdio: &mut StdioServer, id: u64, name: &str, arguments: Value) -> Value {
    stdio
        .request(
            id,
            "tools/call",
            json!({"name": name, "arguments": arguments}),
        )
        .expect("the server answered")
}

// Threat 52: the role ceiling was checked at session_start only: a session
// started as supervisor before a reload demoted its principal went on
// acting as a supervisor (its bound connection's calls, notes, handoffs,
// usage, spawns and jobs, a resume).
#[test]
fn threat_52_a_demoted_principal_no_longer_resumes_or_calls_in_its_higher_role_session() {
    let site = Site::with_plugins(&[(
        "echo.toml",
        format!(
            "name = \"echo\"\ncomponent = \"{}\"\n",
            crate::util::plugins::TOOL_ECHO
        ),
    )]);
    agent(&site, "alice", "supervisor,workagent");
    let mut stdio = StdioServer::start(&site, "alice");
    let start = |stdio: &mut StdioServer, id: u64, role: &str, name: &str| {
        let answer = tool(
            stdio,
            id,
            "session_start",
            json!({"role": role, "project": "p", "name": name}),
        );
        assert!(!is_error(&answer), "{answer}");
        answer["result"]["structuredContent"]["id"]
            .as_str()
            .unwrap()
            .to_string()
    };
    let echo = json!({"message": "hi"});
    start(&mut stdio, 1, "workagent", "low");
    let high = start(&mut stdio, 2, "supervisor", "high");
    // Bound to `high`: it acts as a supervisor while it may.
    let answer = tool(&mut stdio, 3, "echo.echo", echo.clone());
    assert!(!is_error(&answer), "{answer}");

    demote(&site, "alice", &["workagent"]);
    reload(&site);
    let before = site.json(&["session", "show", "high"])["last_seq"].clone();
    let refused = |answer: &Value| {
        assert!(is_error(answer), "acted above its roles: {answer}");
        let text = answer.to_string();
        for words in [
            "may not act in session `high`",
            &high,
            "it is a supervisor session",
            "roles are now workagent",
            "adds `supervisor` to the principal's `roles`",
        ] {
            assert!(text.contains(words), "`{words}` missing: {answer}");
        }
    };
    // The bound connection's next call, a note, a resume: refused.
    refused(&tool(&mut stdio, 4, "echo.echo", echo.clone()));
    refused(&tool(
        &mut stdio,
        5,
        "session_note",
        json!({"text": "still here"}),
    ));
    refused(&tool(
        &mut stdio,
        6,
        "session_resume",
        json!({"session": "high"}),
    ));
    // Nor does it write from it, spawn from it or queue a job in it.
    refused(&tool(
        &mut stdio,
        11,
        "session_handoff",
        json!({"kind": "continuation", "objective": "carry on"}),
    ));
    refused(&tool(
        &mut stdio,
        12,
        "session_usage",
        json!({"tokens_in": 10}),
    ));
    refused(&tool(
        &mut stdio,
        13,
        "session_spawn",
        json!({"role": "workagent", "objective": "help"}),
    ));
    refused(&tool(
        &mut stdio,
        14,
        "job_spawn",
        json!({"tool": "echo.echo", "input": echo.clone()}),
    ));
    let log = site.json(&["session", "show", "high"]);
    assert_eq!(log["counters"]["calls_run"], 1, "{log}");
    assert_eq!(log["last_seq"], before, "nothing was written: {log}");
    let jobs = site.json(&["job", "list", "--session", "high"]);
    assert_eq!(jobs.as_array().map(Vec::len), Some(0), "{jobs}");
    // It still sees it, and ends it (the connection is still bound to it).
    let status = tool(&mut stdio, 7, "session_status", json!({"session": "high"}));
    assert!(!is_error(&status), "{status}");
    let ended = tool(&mut stdio, 8, "session_end", json!({"outcome": "exit"}));
    assert!(!is_error(&ended), "{ended}");
    assert_eq!(ended["result"]["structuredContent"]["status"], "completed");
    // Its workagent session still works.
    let resumed = tool(&mut stdio, 9, "session_resume", json!({"session": "low"}));
    assert!(!is_error(&resumed), "{resumed}");
    let answer = tool(&mut stdio, 10, "echo.echo", echo);
    assert!(!is_error(&answer), "{answer}");
}

// Threat 52: a job an agent queued ran when its turn came as the session's
// role had it at the spawn: a reload that demoted (or removed) the agent
// while the job waited in the queue did not reach it.
#[test]
fn threat_52_a_job_queued_before_a_demotion_does_not_run_in_the_old_role() {
    let site = Site::new(false);
    // One job runs at a time, so the second waits in the queue.
    let text = std::fs::read_to_string(site.config()).unwrap();
    let mut doc: toml_edit::DocumentMut = text.parse().unwrap();
    doc["runtime"]["max_concurrent_calls"] = toml_edit::value(1);
    std::fs::write(site.config(), doc.to_string()).unwrap();
    agent(&site, "alice", "supervisor,workagent");
    let mut stdio = StdioServer::start(&site, "alice");
    let answer = tool(
        &mut stdio,
        1,
        "session_start",
        json!({"role": "supervisor", "project": "p", "name": "high"}),
    );
    assert!(!is_error(&answer), "{answer}");
    let spawn = |stdio: &mut StdioServer, id: u64, tool_name: &str, input: Value| {
        let answer = tool(
            stdio,
            id,
            "job_spawn",
            json!({"tool": tool_name, "input": input}),
        );
        assert!(!is_error(&answer), "{answer}");
        answer["result"]["structuredContent"]["id"]
            .as_str()
            .unwrap_or_else(|| panic!("{answer}"))
            .to_string()
    };
    let sleeper = spawn(&mut stdio, 2, "sleep.sleep", json!({"seconds": 3600}));
    let queued = spawn(&mut stdio, 3, "echo.echo", json!({"message": "hi"}));
    let status = site.json(&["job", "status", &queued]);
    assert_eq!(status["status"], "queued", "{status}");

    demote(&site, "alice", &["workagent"]);
    reload(&site);
    // The slot frees; the queued job's turn comes after the demotion.
    let (code, _, err) = site.run(&["job", "cancel", &sleeper]);
    assert_eq!(code, 0, "{err}");
    let (_, out, err) = site.run(&["job", "wait", &queued, "--timeout", "60s"]);
    let waited: Value = serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out}{err}"));
    let job = &waited["done"][0];
    assert_eq!(job["status"], "failed", "ran in the old role: {waited}");
    let text = job.to_string();
    for words in [
        "may not act in session `high`",
        "it is a supervisor session",
        "roles are now workagent",
    ] {
        assert!(text.contains(words), "`{words}` missing: {job}");
    }
    // The echo never ran in the session.
    let (_, log, _) = site.run(&["log", "export", "high"]);
    assert!(
        !log.lines()
            .any(|l| l.contains("call_started") && l.contains("echo.echo")),
        "{log}"
    );
}
