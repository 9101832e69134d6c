//! The operator's admin listener (`serve --admin ADDR`): the dashboard at
//! `/ui` and `/metrics`, over the real binary. Plain HTTP: who may open it
//! (an operator's token or login, not an agent's, not nobody), the
//! same-origin check of POSTs, the `Host` check, escaping of what a tool
//! returned, and the refusal to bind a non-loopback address without
//! principals and `--allow-remote`. Then one headless Chromium session
//! (Debian's `chromium` and `chromium-driver`, installed when missing) logs
//! in, approves a pending call by clicking, sees the inbox update, visits
//! every page with a screenshot of each (`target/dashboard-screenshots/`)
//! and fails on any console error.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::os::unix::process::CommandExt as _;
use std::path::PathBuf;
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::principals::{add, add_agent};
use crate::util::{self, Site, free_port, plugins};

/// A running `glovebox serve --http ... --admin ...`, killed when dropped.
pub(crate) struct Served {
    child: Child,
    pub(crate) admin: String,
}

impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

pub(crate) fn serve(site: &Site) -> Served {
    let mut child = util::glovebox()
        .arg("--config")
        .arg(site.config())
        .args(["serve", "--http", "127.0.0.1:0", "--admin", "127.0.0.1:0"])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
    let (mut admin, mut mcp) = (None, None);
    while admin.is_none() || mcp.is_none() {
        let line = lines.next().expect("serve printed its addresses").unwrap();
        if let Some(rest) = line.strip_prefix("glovebox: serving the dashboard at http://") {
            admin = rest.split('/').next().map(str::to_string);
        }
        if line.starts_with("glovebox: serving MCP at http://") {
            mcp = Some(());
        }
    }
    std::thread::spawn(move || for _ in lines {});
    // The control socket, for the commands the test runs against the server.
    let socket = site.path().join("data/control.sock");
    let start = Instant::now();
    while !socket.exists() {
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "no control socket"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    Served {
        child,
        admin: admin.unwrap(),
    }
}

/// An answer: status, head (lowercased header lines) and body.
pub(crate) struct Answer {
    pub(crate) status: u16,
    head: String,
    pub(crate) body: String,
}

impl Answer {
    pub(crate) fn header(&self, name: &str) -> Option<String> {
        let name = format!("{}:", name.to_ascii_lowercase());
        self.head
            .lines()
            .find(|l| l.to_ascii_lowercase().starts_with(&name))
            .map(|l| l[name.len()..].trim().to_string())
    }
}

/// One HTTP/1.1 request over a fresh connection.
pub(crate) fn http(
    addr: &str,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &str,
) -> Answer {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(120))).unwrap();
    let mut request = format!("{method} {path} HTTP/1.1\r\nConnection: close\r\n");
    if !headers.iter().any(|(k, _)| k.eq_ignore_ascii_case("host")) {
        request += &format!("Host: {addr}\r\n");
    }
    for (k, v) in headers {
        request += &format!("{k}: {v}\r\n");
    }
    if method == "POST" {
        request += &format!("Content-Length: {}\r\n", body.len());
    }
    request += "\r\n";
    request += body;
    s.write_all(request.as_bytes()).unwrap();
    // Up to the end of the body its Content-Length gives (chromedriver
    // keeps the connection open), or to the end of the stream.
    let mut raw = Vec::new();
    let mut buf = [0u8; 16 << 10];
    loop {
        let n = s.read(&mut buf).unwrap();
        if n == 0 {
            break;
        }
        raw.extend_from_slice(&buf[..n]);
        let text = String::from_utf8_lossy(&raw);
        if let Some((head, body)) = text.split_once("\r\n\r\n") {
            let length = head.lines().find_map(|l| {
                let (k, v) = l.split_once(':')?;
                k.eq_ignore_ascii_case("content-length")
                    .then(|| v.trim().parse::<usize>().ok())?
            });
            if length.is_some_and(|n| body.len() >= n) {
                break;
            }
        }
    }
    let text = String::from_utf8_lossy(&raw).into_owned();
    let (head, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
    Answer {
        status: head[9..12].parse().unwrap(),
        head: head.to_string(),
        body: body.to_string(),
    }
}

pub(crate) fn bearer(token: &str) -> String {
    format!("Bearer {token}")
}

/// A site with the files plugin (its `write` waits for a human: the
/// destructive hook asks, and `[approvals] wait = 0` answers the caller at
/// once), the echo plugin, an operator and an agent principal. Returns the
/// site and the two tokens.
pub(crate) fn site() -> (Site, String, String) {
    site_with("")
}

/// [`site`], with `extra` added to its config.
pub(crate) fn site_with(extra: &str) -> (Site, String, String) {
    let site = Site::with_plugins(&[
        (
            "files.toml",
            format!(
                "name = \"files\"\ncomponent = \"{}\"\n[[fs]]\nhost = \"work\"\nguest = \"/data\"\naccess = \"read-write\"\n",
                plugins::TOOL_FILES
            ),
        ),
        (
            "echo.toml",
            format!("name = \"echo\"\ncomponent = \"{}\"\n", plugins::TOOL_ECHO),
        ),
    ]);
    // A config that declares a workspace finds its repository there.
    if extra.contains("[[workspace]]") {
        crate::workspaces::repository(site.path());
    }
    site.set_config(&format!(
        "[approvals]\nwait = 0\n[[hook]]\nname = \"destructive\"\ncomponent = \"{}\"\n[hook.settings]\nmode = \"ask\"\n{extra}",
        plugins::HOOK_DESTRUCTIVE
    ));
    std::fs::create_dir(site.path().join("work")).unwrap();
    let operator = add(&site, &["ops", "--kind", "operator"]);
    let agent = add_agent(&site, "alice", "demo");
    (site, operator, agent)
}

pub(crate) fn run_ok(site: &Site, args: &[&str]) -> String {
    let (code, out, err) = site.run(args);
    assert_eq!(code, 0, "glovebox {args:?}: {err}");
    out
}

/// Starts session `name` and asks for a write in it: a pending approval,
/// whose id is returned.
pub(crate) fn pending_write(site: &Site, session: &str, path: &str, content: &str) -> String {
    let before: Vec<String> = pending_ids(site);
    let input = json!({"path": path, "content": content}).to_string();
    // Answers at once, awaiting approval (`[approvals] wait = 0`).
    let _ = site.run(&[
        "call",
        "--session",
        session,
        "files.write",
        "--input",
        &input,
    ]);
    let start = Instant::now();
    loop {
        if let Some(id) = pending_ids(site)
            .into_iter()
            .find(|id| !before.contains(id))
        {
            return id;
        }
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "no pending approval for {path}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn pending_ids(site: &Site) -> Vec<String> {
    let list = site.json(&["approvals", "--json"]);
    list.as_array()
        .unwrap()
        .iter()
        .map(|a| a["id"].as_str().unwrap().to_string())
        .collect()
}

pub(crate) fn start_session(site: &Site, name: &str) {
    run_ok(
        site,
        &[
            "session",
            "start",
            "--role",
            "workagent",
            "--project",
            "demo",
            "--name",
            name,
        ],
    );
}

#[test]
fn the_admin_listener_is_an_operators_checks_origin_and_host_and_escapes_tool_output() {
    let (site, operator, agent) = site();
    let served = serve(&site);
    let admin = served.admin.as_str();
    start_session(&site, "s1");
    // A tool output that is markup: shown as text.
    let hostile = "<script>window.__pwned=1</script><img src=x>";
    run_ok(
        &site,
        &[
            "call",
            "--session",
            "s1",
            "echo.echo",
            "--input",
            &json!({ "message": hostile }).to_string(),
        ],
    );

    // Nobody: the pages send to the login, the rest is 401.
    let a = http(admin, "GET", "/ui", &[], "");
    assert_eq!(a.status, 303, "{}", a.head);
    assert_eq!(a.header("location").as_deref(), Some("/ui/login"));
    assert_eq!(http(admin, "GET", "/metrics", &[], "").status, 401);
    assert_eq!(http(admin, "GET", "/ui/events", &[], "").status, 401);
    let a = http(
        admin,
        "GET",
        "/ui",
        &[("Authorization", "Bearer not-a-token")],
        "",
    );
    assert_eq!(a.status, 303);
    // An agent: 403, whatever it asks for.
    for path in ["/ui", "/ui/approvals", "/metrics"] {
        let a = http(
            admin,
            "GET",
            path,
            &[("Authorization", &bearer(&agent))],
            "",
        );
        assert_eq!(a.status, 403, "{path}: {}", a.body);
    }
    // The operator's token opens everything.
    let op = bearer(&operator);
    for path in [
        "/ui",
        "/ui/sessions",
        "/ui/sessions?blocked=1",
        "/ui/sessions?role=workagent&project=demo&owner=local",
        "/ui/sessions/s1",
        "/ui/approvals",
        "/ui/jobs",
        "/ui/billing",
        "/ui/rescues",
        "/ui/notify",
        "/ui/memory",
        "/ui/workspaces",
        "/ui/doctor",
        "/ui/principals",
        "/ui/static/style.css",
        "/ui/static/app.js",
    ] {
        let a = http(admin, "GET", path, &[("Authorization", &op)], "");
        assert_eq!(a.status, 200, "{path}: {}", a.body);
        assert!(
            a.header("content-security-policy")
                .is_some_and(|c| c.contains("script-src 'self'")),
            "{path}: {}",
            a.head
        );
    }
    let a = http(admin, "GET", "/metrics", &[("Authorization", &op)], "");
    assert_eq!(a.status, 200);
    assert!(
        a.header("content-type")
            .is_some_and(|c| c.starts_with("application/openmetrics-text")),
        "{}",
        a.head
    );
    for family in [
        "glovebox_calls",
        "glovebox_sessions",
        "glovebox_approvals_pending",
    ] {
        assert!(a.body.contains(family), "no {family} in {}", a.body);
    }
    let csv = http(
        admin,
        "GET",
        "/ui/billing.csv?by=tool",
        &[("Authorization", &op)],
        "",
    );
    assert_eq!(csv.status, 200);
    let (head, rows) = csv.body.split_once('\n').unwrap();
    assert_eq!(
        head,
        "by,key,label,calls,failures,wall_ms,fuel,bytes_in,bytes_out,tool_cost,model_cost,cost,foreground_calls,foreground_cost,background_calls,background_cost"
    );
    assert!(rows.contains("echo.echo"), "{}", csv.body);
    for row in rows.lines() {
        assert_eq!(row.split(',').count(), 16, "{row}");
    }
    // The page's table has the CSV's figures but for the wall time, fuel and bytes.
    let page = http(admin, "GET", "/ui/billing", &[("Authorization", &op)], "");
    assert!(
        page.body.contains("<tr><th>key</th><th>calls</th><th>failures</th><th>tool cost</th><th>model cost</th><th>cost</th><th>fg calls</th><th>fg cost</th><th>bg calls</th><th>bg cost</th></tr>"),
        "{}",
        page.body
    );

    // What the tool returned is on the session's page, escaped.
    let page = http(
        admin,
        "GET",
        "/ui/sessions/s1",
        &[("Authorization", &op)],
        "",
    );
    assert!(
        page.body
            .contains("&lt;script&gt;window.__pwned=1&lt;/script&gt;&lt;img src=x&gt;"),
        "the output is not shown escaped: {}",
        page.body
    );
    assert!(
        !page.body.contains("<script>window"),
        "markup from a tool got through"
    );
    assert!(
        !page.body.contains("<img src=x"),
        "markup from a tool got through"
    );
    assert!(page.body.contains("log verify: ok"), "{}", page.body);

    // A Host the listener does not serve (DNS rebinding).
    let a = http(
        admin,
        "GET",
        "/ui",
        &[("Host", "evil.example"), ("Authorization", &op)],
        "",
    );
    assert_eq!(a.status, 403);

    // The login: a wrong token, an agent's, then the operator's.
    let form = |t: &str| format!("token={t}");
    let own_origin = format!("http://{admin}");
    let post = |path: &str, headers: &[(&str, &str)], body: &str| {
        let mut h = vec![("Content-Type", "application/x-www-form-urlencoded")];
        h.extend_from_slice(headers);
        http(admin, "POST", path, &h, body)
    };
    let a = post("/ui/login", &[("Origin", &own_origin)], &form("nope"));
    assert_eq!(a.status, 401);
    let a = post("/ui/login", &[("Origin", &own_origin)], &form(&agent));
    assert_eq!(a.status, 403);
    let a = post("/ui/login", &[("Origin", &own_origin)], &form(&operator));
    assert_eq!(a.status, 303, "{}", a.body);
    let cookie = a.header("set-cookie").expect("a login cookie");
    assert!(cookie.contains("HttpOnly"), "{cookie}");
    assert!(cookie.contains("SameSite=Strict"), "{cookie}");
    assert!(cookie.contains("Path=/"), "{cookie}");
    assert!(!cookie.contains(&operator), "the cookie holds the token");
    let session_cookie = cookie.split(';').next().unwrap().to_string();
    let a = http(
        admin,
        "GET",
        "/ui/approvals",
        &[("Cookie", &session_cookie)],
        "",
    );
    assert_eq!(a.status, 200);
    // A login from another origin is refused too.
    let a = post(
        "/ui/login",
        &[("Origin", "http://evil.example")],
        &form(&operator),
    );
    assert_eq!(a.status, 403);

    // POSTs: only from this listener's own pages.
    let id = pending_write(&site, "s1", "/data/a.txt", "a");
    let deny = format!("/ui/approvals/{id}/deny");
    for headers in [
        vec![("Cookie", session_cookie.as_str())],
        vec![
            ("Cookie", session_cookie.as_str()),
            ("Origin", "http://evil.example"),
        ],
        vec![
            ("Cookie", session_cookie.as_str()),
            ("Sec-Fetch-Site", "cross-site"),
        ],
        vec![("Cookie", session_cookie.as_str()), ("Origin", "null")],
    ] {
        let a = post(&deny, &headers, "reason=csrf");
        assert_eq!(a.status, 403, "{headers:?}: {}", a.body);
    }
    assert!(
        pending_ids(&site).contains(&id),
        "a refused POST settled it"
    );
    // From its own origin the denial goes through, recorded as the operator.
    let a = post(
        &deny,
        &[("Cookie", &session_cookie), ("Origin", &own_origin)],
        "reason=not+from+here",
    );
    assert_eq!(a.status, 303, "{}", a.body);
    let all = site.json(&["approvals", "--all", "--json"]);
    let settled = all
        .as_array()
        .unwrap()
        .iter()
        .find(|a| a["id"] == id.as_str())
        .unwrap();
    assert_eq!(settled["status"]["state"], "denied", "{settled}");
    assert_eq!(settled["status"]["by"], "ops", "{settled}");
    // Logging out ends the login.
    let a = post(
        "/ui/logout",
        &[("Cookie", &session_cookie), ("Origin", &own_origin)],
        "",
    );
    assert_eq!(a.status, 303);
    let a = http(
        admin,
        "GET",
        "/ui/approvals",
        &[("Cookie", &session_cookie)],
        "",
    );
    assert_eq!(a.status, 303);

    // Guessing: ten failed logins or tokens a minute from one address (two
    // failed above), then its wrong ones get 429; a right credential from
    // the same address (behind a proxy, everyone's) is never held back, and
    // a login cookie made before still works (threat 43).
    let a = post("/ui/login", &[("Origin", &own_origin)], &form(&operator));
    let kept = a
        .header("set-cookie")
        .unwrap()
        .split(';')
        .next()
        .unwrap()
        .to_string();
    for i in 0..8 {
        let a = if i % 2 == 0 {
            post("/ui/login", &[("Origin", &own_origin)], &form("guess"))
        } else {
            http(
                admin,
                "GET",
                "/metrics",
                &[("Authorization", "Bearer guess")],
                "",
            )
        };
        assert_eq!(a.status, 401, "failure {i}: {}", a.body);
    }
    let a = post("/ui/login", &[("Origin", &own_origin)], &form("guess"));
    assert_eq!(a.status, 429, "{}", a.body);
    assert!(a.header("retry-after").is_some(), "{}", a.head);
    assert!(a.body.contains("too many failed logins"), "{}", a.body);
    let a = http(
        admin,
        "GET",
        "/metrics",
        &[("Authorization", "Bearer guess")],
        "",
    );
    assert_eq!(a.status, 429, "a wrong bearer token is held back too");
    let a = post("/ui/login", &[("Origin", &own_origin)], &form(&operator));
    assert_eq!(a.status, 303, "the operator's own login is not: {}", a.body);
    let a = http(admin, "GET", "/ui/jobs", &[("Authorization", &op)], "");
    assert_eq!(a.status, 200, "nor the operator's own bearer token");
    let a = http(admin, "GET", "/ui/jobs", &[("Cookie", &kept)], "");
    assert_eq!(a.status, 200, "an existing login is not a guess");
}

#[test]
fn the_admin_listener_refuses_a_non_loopback_address_without_principals_and_allow_remote() {
    let site = Site::new(false);
    let (code, _, err) = site.run(&["serve", "--admin", "0.0.0.0:0"]);
    assert_ne!(code, 0);
    assert!(
        err.contains("not a loopback address") && err.contains("declares no principals"),
        "{err}"
    );
    // On loopback, without principals, the server's own user is the
    // operator at the command line (another user is refused: threat 54).
    {
        let served = serve(&site);
        let a = http(&served.admin, "GET", "/ui/approvals", &[], "");
        assert_eq!(a.status, 200, "{}", a.body);
        assert!(a.body.contains("operator <b>cli:"), "{}", a.body);
        let a = http(&served.admin, "GET", "/metrics", &[], "");
        assert_eq!(a.status, 200);
        // Still no POST from another origin.
        let a = http(
            &served.admin,
            "POST",
            "/ui/approvals/ap-x/deny",
            &[("Origin", "http://evil.example")],
            "reason=x",
        );
        assert_eq!(a.status, 403);
    }
    add(&site, &["ops", "--kind", "operator"]);
    let (code, _, err) = site.run(&["serve", "--admin", "0.0.0.0:0"]);
    assert_ne!(code, 0);
    assert!(
        err.contains("not a loopback address") && err.contains("--allow-remote"),
        "{err}"
    );
}

// ------------------------------------------------------------ the browser

/// chromedriver in a process group of its own, killed with everything in
/// it (the browser it started) when dropped, also when the test fails
/// before the WebDriver session is closed.
struct Killed(Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = std::process::Command::new("kill")
            .args(["-KILL", "--", &format!("-{}", self.0.id())])
            .status();
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// The browser's processes, found by the profile directory only this test
/// uses, killed when dropped (a browser that left chromedriver's group).
struct Profile(tempfile::TempDir);

impl Drop for Profile {
    fn drop(&mut self) {
        let _ = std::process::Command::new("pkill")
            .args([
                "-KILL",
                "-f",
                &format!("user-data-dir={}", self.0.path().display()),
            ])
            .status();
    }
}

/// Where the screenshots go: `target/dashboard-screenshots/`.
fn screenshots() -> PathBuf {
    let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR"))
        .parent()
        .unwrap()
        .join("dashboard-screenshots");
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Records errors in the page from now on (the browser's own log catches
/// those before, see `console_errors`).
const ERROR_HOOK: &str = r#"
if (!window.__gbErrors) {
  window.__gbErrors = [];
  window.addEventListener('error', function (e) { window.__gbErrors.push('error: ' + (e.message || e)); });
  window.addEventListener('unhandledrejection', function (e) { window.__gbErrors.push('rejection: ' + e.reason); });
  document.addEventListener('securitypolicyviolation', function (e) { window.__gbErrors.push('csp: ' + e.violatedDirective + ' ' + e.blockedURI); });
  var ce = console.error;
  console.error = function () { window.__gbErrors.push('console.error: ' + Array.prototype.join.call(arguments, ' ')); return ce.apply(console, arguments); };
}
return true;
"#;

pub(crate) struct Browser {
    pub(crate) client: fantoccini::Client,
    driver: String,
    // Dropped in this order: the driver's group, then what is left.
    _chromedriver: Killed,
    _profile: Profile,
    pub(crate) admin: String,
    shots: PathBuf,
}

impl Browser {
    pub(crate) async fn start(admin: &str) -> Browser {
        util::ensure_debian_tool("chromium", "chromium");
        util::ensure_debian_tool("chromedriver", "chromium-driver");
        let port = free_port();
        let chromedriver = Killed(
            std::process::Command::new("chromedriver")
                .arg(format!("--port={port}"))
                .process_group(0)
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .expect("start chromedriver"),
        );
        let driver = format!("127.0.0.1:{port}");
        let start = Instant::now();
        while TcpStream::connect(&driver).is_err() {
            assert!(
                start.elapsed() < Duration::from_secs(60),
                "chromedriver did not listen"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        let profile = tempfile::tempdir().unwrap();
        let chromium = ["/usr/bin/chromium", "/usr/lib/chromium/chromium"]
            .into_iter()
            .find(|p| std::path::Path::new(p).exists())
            .unwrap_or("/usr/bin/chromium");
        let mut caps = serde_json::Map::new();
        caps.insert("browserName".into(), json!("chrome"));
        caps.insert(
            "goog:chromeOptions".into(),
            json!({
                "binary": chromium,
                "args": [
                    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
                    "--no-first-run", "--disable-background-networking",
                    "--disable-component-update", "--disable-sync",
                    "--disable-dev-shm-usage", "--window-size=1280,1000",
                    format!("--user-data-dir={}", profile.path().display()),
                ],
            }),
        );
        caps.insert("goog:loggingPrefs".into(), json!({"browser": "ALL"}));
        let connector = hyper_util::client::legacy::connect::HttpConnector::new();
        let client = tokio::time::timeout(
            Duration::from_secs(120),
            fantoccini::ClientBuilder::new(connector)
                .capabilities(caps)
                .connect(&format!("http://{driver}")),
        )
        .await
        .expect("chromium started within 2 minutes")
        .expect("a WebDriver session");
        Browser {
            client,
            driver,
            _chromedriver: chromedriver,
            _profile: Profile(profile),
            admin: admin.to_string(),
            shots: screenshots(),
        }
    }

    fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.admin)
    }

    pub(crate) async fn goto(&self, path: &str) {
        self.client.goto(&self.url(path)).await.unwrap();
        self.hook().await;
    }

    pub(crate) async fn hook(&self) {
        self.client.execute(ERROR_HOOK, vec![]).await.unwrap();
    }

    pub(crate) async fn find(&self, css: &str) -> fantoccini::elements::Element {
        let found = self
            .client
            .wait()
            .at_most(Duration::from_secs(60))
            .for_element(fantoccini::Locator::Css(css))
            .await;
        match found {
            Ok(el) => el,
            Err(e) => {
                let url = self.client.current_url().await.map(|u| u.to_string());
                let source = self.client.source().await.unwrap_or_default();
                panic!("no `{css}` on the page {url:?}: {e}\n{source}")
            }
        }
    }

    pub(crate) async fn text(&self) -> String {
        let body = self.find("body").await;
        body.text().await.unwrap()
    }

    pub(crate) async fn shoot(&self, name: &str) {
        let png = self.client.screenshot().await.unwrap();
        std::fs::write(self.shots.join(format!("{name}.png")), png).unwrap();
    }

    /// Errors the page recorded since its hook, and what the browser logged.
    pub(crate) async fn console_errors(&self) -> Vec<String> {
        let mut errors: Vec<String> = match self
            .client
            .execute("return window.__gbErrors || [];", vec![])
            .await
            .unwrap()
        {
            Value::Array(list) => list.iter().map(|v| v.to_string()).collect(),
            _ => Vec::new(),
        };
        // chromedriver's log of the browser (console errors, failed loads,
        // CSP violations), drained at each read.
        if let Some(id) = self.client.session_id().await.unwrap() {
            let a = http(
                &self.driver,
                "POST",
                &format!("/session/{id}/se/log"),
                &[("Content-Type", "application/json")],
                r#"{"type":"browser"}"#,
            );
            if a.status == 200 {
                let log: Value = serde_json::from_str(&a.body).unwrap_or(Value::Null);
                for entry in log["value"].as_array().into_iter().flatten() {
                    if entry["level"] == "SEVERE" {
                        errors.push(entry["message"].to_string());
                    }
                }
            } else {
                eprintln!(
                    "note: chromedriver's log is not readable ({}): only the page's hook counts",
                    a.status
                );
            }
        }
        errors
    }

    pub(crate) async fn assert_no_errors(&self, page: &str) {
        let errors = self.console_errors().await;
        assert!(errors.is_empty(), "console errors on {page}: {errors:#?}");
    }
}

/// Polls `done` (a blocking check) until it holds.
fn wait_until(what: &str, done: impl Fn() -> bool) {
    let start = Instant::now();
    while !done() {
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "timed out: {what}"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_operator_logs_in_approves_a_call_by_clicking_and_visits_every_page_in_chromium() {
    let (site, operator, _agent) = site();
    let served = serve(&site);
    start_session(&site, "w1");
    run_ok(
        &site,
        &[
            "call",
            "--session",
            "w1",
            "echo.echo",
            "--input",
            r#"{"message":"<b>bold?</b>"}"#,
        ],
    );
    let job = site.json(&[
        "job",
        "spawn",
        "--session",
        "w1",
        "echo.echo",
        "--input",
        r#"{"message":"in the background"}"#,
    ]);
    let job = job["id"].as_str().unwrap().to_string();
    run_ok(&site, &["job", "wait", &job, "--timeout", "60s"]);
    run_ok(
        &site,
        &[
            "context",
            "add",
            "--project",
            "demo",
            "read the README first",
        ],
    );
    // A rescue opened and resolved today: one bar of the mean time to unblock by day.
    start_session(&site, "stuck");
    let rescue = site.json(&["rescue", "open", "stuck"]);
    let rid = rescue["id"].as_str().unwrap().to_string();
    run_ok(
        &site,
        &[
            "rescue",
            "diagnose",
            &rid,
            "--category",
            "tool_defect",
            "--root-cause",
            "a broken tool",
        ],
    );
    let resolved = site.json(&["rescue", "resolve", &rid, "--outcome", "resolved"]);
    let resolved_day = glovebox::billing::format_day(
        (resolved["resolved_at_ms"].as_u64().expect("resolved_at_ms") / 86_400_000) as i64,
    );
    let mttu_bar = format!("{resolved_day} (1)");
    let first = pending_write(&site, "w1", "/data/approved.txt", "approved by a click");

    let browser = Browser::start(&served.admin).await;
    let b = &browser;

    // Not logged in: the login page.
    b.goto("/ui").await;
    let url = b.client.current_url().await.unwrap();
    assert_eq!(url.path(), "/ui/login", "{url}");
    b.shoot("login").await;
    b.assert_no_errors("the login page").await;
    b.find("#token").await.send_keys(&operator).await.unwrap();
    b.find("#login-submit").await.click().await.unwrap();
    b.find("table#sessions").await;
    b.hook().await;
    assert!(b.text().await.contains("w1"));

    // The inbox: the pending call with its exact input; approve it.
    b.goto("/ui/approvals").await;
    b.find(&format!("#approval-{first}")).await;
    let text = b.text().await;
    assert!(text.contains("approved by a click"), "{text}");
    assert!(text.contains("files.write"), "{text}");
    b.shoot("approvals").await;
    b.assert_no_errors("the approvals inbox").await;
    b.find(&format!("#approve-{first}"))
        .await
        .click()
        .await
        .unwrap();
    // The page comes back without the pending call, saying who approved it.
    b.find("#no-pending").await;
    b.hook().await;
    let flash = b.find("#flash").await.text().await.unwrap();
    assert!(flash.contains("approved by ops"), "{flash}");
    assert!(
        b.client
            .find_all(fantoccini::Locator::Css(&format!("#approval-{first}")))
            .await
            .unwrap()
            .is_empty(),
        "the approved call is still listed"
    );
    // The call ran: the file is written and the log has its finished call.
    assert_eq!(
        std::fs::read_to_string(site.path().join("work/approved.txt")).unwrap(),
        "approved by a click"
    );
    let all = site.json(&["approvals", "--all", "--json"]);
    let approved = all
        .as_array()
        .unwrap()
        .iter()
        .find(|a| a["id"] == first.as_str())
        .unwrap()
        .clone();
    assert_eq!(approved["status"]["state"], "approved", "{approved}");
    assert_eq!(approved["status"]["by"], "ops", "{approved}");
    // The approved call runs as a new call the operator's decision admits.
    let (_, log, _) = site.run(&["log", "export", "w1"]);
    let events: Vec<Value> = log
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let admitted = events
        .iter()
        .find(|e| {
            e["kind"]["type"] == "call_decided"
                && e["kind"]["decision"] == "allow"
                && e["kind"]["reason"].as_str().is_some_and(|r| {
                    r.contains(&format!("approval {first}")) && r.contains("approved by ops")
                })
        })
        .unwrap_or_else(|| panic!("no decision of the operator's in the log: {log}"));
    // Written by the operator who clicked, not by the host.
    assert_eq!(admitted["by"], "ops", "{admitted}");
    let call_id = &admitted["kind"]["call_id"];
    assert!(
        events.iter().any(|e| e["kind"]["type"] == "call_finished"
            && &e["kind"]["call_id"] == call_id
            && e["kind"]["outcome"] == "ok"),
        "no finished call {call_id} in the log: {log}"
    );

    // A new pending call shows up on the open inbox without a reload (SSE),
    // and a denial with a reason goes through the form.
    b.execute_marker().await;
    let second = pending_write(&site, "w1", "/data/denied.txt", "no");
    b.find(&format!("#approval-{second}")).await;
    assert!(
        b.marker_kept().await,
        "the page was reloaded, not updated live"
    );
    b.hook().await;
    b.find(&format!("#reason-{second}"))
        .await
        .send_keys("not this one")
        .await
        .unwrap();
    b.find(&format!("#deny-{second}"))
        .await
        .click()
        .await
        .unwrap();
    b.find("#no-pending").await;
    b.hook().await;
    let flash = b.find("#flash").await.text().await.unwrap();
    assert!(flash.contains("denied by ops: not this one"), "{flash}");
    assert!(!site.path().join("work/denied.txt").exists());
    b.shoot("approvals-settled").await;
    b.assert_no_errors("the approvals inbox after settling")
        .await;

    // Every page, with a screenshot.
    let session_id = site.json(&["session", "show", "w1"])["id"]
        .as_str()
        .unwrap()
        .to_string();
    for (name, path, expect) in [
        ("sessions", "/ui/sessions".to_string(), "w1"),
        (
            "sessions-blocked",
            "/ui/sessions?blocked=1".to_string(),
            "no sessions match",
        ),
        (
            "session",
            format!("/ui/sessions/{session_id}"),
            "log verify: ok",
        ),
        ("jobs", "/ui/jobs".to_string(), "completed"),
        ("billing", "/ui/billing".to_string(), "By tool"),
        (
            "rescues",
            "/ui/rescues".to_string(),
            "read the README first",
        ),
        ("rescues-mttu", "/ui/rescues".to_string(), mttu_bar.as_str()),
        (
            "rescues-no-lesson",
            "/ui/rescues".to_string(),
            "1 (100%) closed without a lesson",
        ),
        ("notify", "/ui/notify".to_string(), "no [[notify]] targets"),
        ("memory", "/ui/memory".to_string(), "no proposed entries"),
        (
            "doctor",
            "/ui/doctor".to_string(),
            "what glovebox doctor finds",
        ),
        ("principals", "/ui/principals".to_string(), "alice"),
    ] {
        b.goto(&path).await;
        b.find("main").await;
        let text = b.text().await;
        assert!(text.contains(expect), "{path}: no `{expect}` in {text}");
        b.shoot(name).await;
        b.assert_no_errors(&path).await;
    }
    // The session's timeline shows what the tool returned as text.
    b.goto(&format!("/ui/sessions/{session_id}")).await;
    let bold = b
        .client
        .find_all(fantoccini::Locator::Css("main b"))
        .await
        .unwrap();
    for el in bold {
        assert_ne!(
            el.text().await.unwrap(),
            "bold?",
            "markup from a tool rendered"
        );
    }
    b.assert_no_errors("the session page").await;
    wait_until("the browser test leaves the server serving", || {
        http(&served.admin, "GET", "/ui/static/style.css", &[], "").status == 200
    });
    browser.client.clone().close().await.unwrap();
}

impl Browser {
    /// Marks the document, to tell a live update (the mark stays) from a reload.
    async fn execute_marker(&self) {
        self.client
            .execute("window.__gbMark = 42; return true;", vec![])
            .await
            .unwrap();
    }

    async fn marker_kept(&self) -> bool {
        self.client
            .execute("return window.__gbMark === 42;", vec![])
            .await
            .unwrap()
            == json!(true)
    }
}

// Threat 55: an input crafted to mislead (a 200 KB `content` before the
// `path`, a right-to-left override and a zero-width space in the file name)
// is shown in the browser with the true path first and whole, every
// invisible character marked with a legend, the content cut, and the whole
// input a download away with the SHA-256 the approval records.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn threat_55_the_dashboard_shows_the_true_path_of_a_misleading_input_in_chromium() {
    use crate::approval_display::{
        SHOWN_PATH, TRUE_NAME, assert_shows_the_true_path, crafted_input,
    };
    let (site, operator, _agent) = site();
    let served = serve(&site);
    start_session(&site, "w1");
    let input = site.path().join("input.json");
    std::fs::write(&input, crafted_input()).unwrap();
    let _ = site.run(&[
        "call",
        "--session",
        "w1",
        "files.write",
        "--input-file",
        input.to_str().unwrap(),
    ]);
    let pending = site.json(&["approvals", "--json"]);
    let approval = pending.as_array().unwrap()[0].clone();
    let id = approval["id"].as_str().unwrap().to_string();
    let sha256 = approval["input_hash"].as_str().unwrap().to_string();

    let browser = Browser::start(&served.admin).await;
    let b = &browser;
    b.goto("/ui/login").await;
    b.find("#token").await.send_keys(&operator).await.unwrap();
    b.find("#login-submit").await.click().await.unwrap();
    b.find("table#sessions").await;
    b.goto("/ui/approvals").await;
    let card = b.find(&format!("#approval-{id}")).await;
    let text = card.text().await.unwrap();
    // The rendered text reads as the plain-text surfaces do: `"path": ...`
    // lines come from a table, so check the first row apart.
    let first = b
        .find(&format!("#input-{id} tr:first-child"))
        .await
        .text()
        .await
        .unwrap();
    assert!(
        first.starts_with("\"path\"") && first.contains(SHOWN_PATH),
        "the first row is not the true path: {first}"
    );
    let flat = text
        .replace("\"path\"\n", "\"path\": ")
        .replace("\"path\"\t", "\"path\": ");
    let flat = flat
        .replace("\"content\"\n", "\"content\": ")
        .replace("\"content\"\t", "\"content\": ");
    assert_shows_the_true_path(&flat, &sha256);
    // Each mark is highlighted.
    let marks = b
        .client
        .find_all(fantoccini::Locator::Css(&format!(
            "#input-{id} mark.invisible"
        )))
        .await
        .unwrap();
    assert_eq!(marks.len(), 2, "{text}");
    b.shoot("approval-misleading").await;
    b.assert_no_errors("the approvals inbox with a misleading input")
        .await;
    // The download is the exact input, with the SHA-256 shown.
    let link = b.find(&format!("#download-{id}")).await;
    let href = link.attr("href").await.unwrap().unwrap();
    let download = http(
        &served.admin,
        "GET",
        &href,
        &[("Authorization", &bearer(&operator))],
        "",
    );
    assert_eq!(download.status, 200, "{}", download.body);
    assert_eq!(download.body, std::fs::read_to_string(&input).unwrap());
    assert_eq!(
        download.header("x-content-sha256").as_deref(),
        Some(sha256.as_str())
    );
    assert!(
        download
            .header("content-disposition")
            .is_some_and(|d| d.starts_with("attachment")),
        "{}",
        download.head
    );
    // Approve it: the file has the true name.
    b.find(&format!("#approve-{id}"))
        .await
        .click()
        .await
        .unwrap();
    b.find("#no-pending").await;
    let written = std::fs::metadata(site.path().join("work").join(TRUE_NAME)).unwrap();
    assert_eq!(written.len(), 200_000);
    browser.client.clone().close().await.unwrap();
}
