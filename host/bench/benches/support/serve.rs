//! The real `glovebox serve` process on the example config, and a plain
//! MCP client of it over streamable HTTP (used by `job_flood` and
//! `session_churn`): the figures of issue 36 are about the host process an
//! operator runs, its RSS and its answers, not an in-process server.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use serde_json::{Value, json};

/// The bearer token of the agent principal the site declares.
pub const AGENT_TOKEN: &str =
    "gbx_flood_agent_0123456789abcdef0123456789abcdef0123456789abcdef01234567";
/// The bearer token of the operator principal the site declares.
pub const OPERATOR_TOKEN: &str =
    "gbx_flood_operator_0123456789abcdef0123456789abcdef0123456789abcdef0123";

/// The repository's root.
pub fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The `glovebox` binary of the profile this bench was built in.
pub fn glovebox_binary() -> PathBuf {
    let exe = std::env::current_exe().expect("the bench's own path");
    // target/<profile>/deps/<bench>-<hash>
    let binary = exe
        .parent()
        .and_then(Path::parent)
        .map(|dir| dir.join("glovebox"))
        .expect("the bench lives in target/<profile>/deps");
    assert!(
        binary.exists(),
        "{} is missing: build it in the bench's profile first (`cargo build --release --bin glovebox`, or `cargo build --bin glovebox` for `--profile dev`)",
        binary.display()
    );
    binary
}

/// The profile the bench (and so the server) was built in, from its path.
pub fn profile() -> String {
    let exe = std::env::current_exe().expect("the bench's own path");
    exe.parent()
        .and_then(Path::parent)
        .and_then(Path::file_name)
        .map(|p| p.to_string_lossy().into_owned())
        .unwrap_or_default()
}

/// The example config, its plugin manifests and hooks, in a directory of
/// its own (the data dir inside), with an agent (`flood-agent`, role
/// `workagent`, every project) and an operator (`flood-operator`) principal,
/// and `extra` appended (tables the bench sets, say so where it reports).
pub struct Site {
    pub dir: tempfile::TempDir,
}

impl Site {
    pub fn new(extra: &str) -> Site {
        let root = root();
        let dir = tempfile::tempdir().expect("tempdir");
        let examples = root.join("examples");
        // The example's relative paths (`../plugins/target/...` from the
        // config, `../../plugins/target/...` from a manifest) resolve here
        // as they do in the repository.
        let ex = dir.path().join("ex");
        std::os::unix::fs::symlink(root.join("plugins"), dir.path().join("plugins"))
            .expect("link the plugins");
        // The manifests, and the workspace the files and gate plugins are
        // granted (a copy: the benches write nothing there, but it is not
        // the repository's to grant).
        for (from, to) in [("plugins", "plugins"), ("workspace", "workspace")] {
            std::fs::create_dir_all(ex.join(to)).unwrap();
            for entry in std::fs::read_dir(examples.join(from)).unwrap() {
                let path = entry.unwrap().path();
                if path.is_file() {
                    std::fs::copy(&path, ex.join(to).join(path.file_name().unwrap())).unwrap();
                }
            }
        }
        // The compile cache outlives the run: only the first run compiles
        // the Python runner.
        let cache = root.join("target/glovebox-bench-cache");
        let mut config = std::fs::read_to_string(examples.join("glovebox.toml")).unwrap();
        assert!(
            config.contains("\n[runtime]\n"),
            "the example has a [runtime] table"
        );
        config = config.replacen(
            "\n[runtime]\n",
            &format!(
                "\n[runtime]\ncache_dir = \"{}\"\ndigests_dir = \"{}\"\n",
                cache.join("compiled").display(),
                cache.join("digests").display()
            ),
            1,
        );
        for (name, kind, token, roles) in [
            (
                "flood-agent",
                "agent",
                AGENT_TOKEN,
                "roles = [\"workagent\"]\nprojects = [\"*\"]\n",
            ),
            ("flood-operator", "operator", OPERATOR_TOKEN, ""),
        ] {
            config += &format!(
                "\n[[principal]]\nname = \"{name}\"\nkind = \"{kind}\"\ncredential = \"{}\"\n{roles}",
                glovebox::manifest::credential_of(token)
            );
        }
        config += extra;
        std::fs::write(ex.join("glovebox.toml"), config).unwrap();
        Site { dir }
    }

    pub fn config(&self) -> PathBuf {
        self.dir.path().join("ex/glovebox.toml")
    }

    /// The data dir (the example's `.glovebox-data`).
    pub fn data(&self) -> PathBuf {
        self.dir.path().join("ex/.glovebox-data")
    }
}

/// A running `glovebox serve --http --admin`; its stderr goes to
/// `serve.log` in the site's directory.
pub struct Server {
    child: Child,
    pub mcp: String,
    pub admin: String,
}

impl Server {
    pub fn start(binary: &Path, site: &Site) -> Server {
        let log = site.dir.path().join("serve.log");
        let mut child = Command::new(binary)
            .env_remove("RUST_LOG")
            .arg("--config")
            .arg(site.config())
            .args(["serve", "--http", "127.0.0.1:0", "--admin", "127.0.0.1:0"])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start glovebox serve");
        let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
        let (mut mcp, mut admin) = (None, None);
        let mut seen = String::new();
        while mcp.is_none() || admin.is_none() {
            let Some(Ok(line)) = lines.next() else {
                panic!("the server stopped before serving:\n{seen}");
            };
            seen += &line;
            seen.push('\n');
            let addr = |rest: &str| rest.split('/').next().map(str::to_string);
            if let Some(rest) = line.strip_prefix("glovebox: serving MCP at http://") {
                mcp = addr(rest);
            }
            if let Some(rest) = line.strip_prefix("glovebox: serving the dashboard at http://") {
                admin = addr(rest);
            }
        }
        std::thread::spawn(move || {
            let mut out = std::fs::File::options()
                .create(true)
                .append(true)
                .open(log)
                .ok();
            for line in lines.map_while(Result::ok) {
                if let Some(out) = out.as_mut() {
                    let _ = writeln!(out, "{line}");
                }
            }
        });
        Server {
            child,
            mcp: mcp.unwrap(),
            admin: admin.unwrap(),
        }
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// SIGTERM, and the process's exit.
    pub fn stop(&mut self) {
        let _ = Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .status();
        let _ = self.child.wait();
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// One HTTP/1.1 request on a connection of its own (`Connection: close`):
/// status, head and body (chunks put together).
fn exchange(addr: &str, request: &[u8]) -> (u16, String, String) {
    let mut stream = TcpStream::connect(addr).expect("connect");
    stream
        .set_read_timeout(Some(Duration::from_secs(300)))
        .unwrap();
    stream.write_all(request).expect("send");
    let mut raw = Vec::new();
    stream.read_to_end(&mut raw).expect("read");
    let text = String::from_utf8_lossy(&raw).into_owned();
    let (head, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
    let status = head.get(9..12).and_then(|s| s.parse().ok()).unwrap_or(0);
    let body = if head
        .to_ascii_lowercase()
        .contains("transfer-encoding: chunked")
    {
        unchunk(body)
    } else {
        body.to_string()
    };
    (status, head.to_string(), body)
}

/// A request to `path` (POST with a body, else GET): status and body.
pub fn http(addr: &str, path: &str, headers: &[(&str, &str)], body: Option<&str>) -> (u16, String) {
    let method = if body.is_some() { "POST" } else { "GET" };
    let mut request = format!("{method} {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n");
    for (k, v) in headers {
        request += &format!("{k}: {v}\r\n");
    }
    if let Some(body) = body {
        request += &format!("Content-Length: {}\r\n", body.len());
    }
    request += "\r\n";
    request += body.unwrap_or_default();
    let (status, _, body) = exchange(addr, request.as_bytes());
    (status, body)
}

/// A chunked body, put together.
fn unchunk(mut body: &str) -> String {
    let mut out = String::new();
    while let Some((size, rest)) = body.split_once("\r\n") {
        let Ok(n) = usize::from_str_radix(size.trim(), 16) else {
            break;
        };
        if n == 0 || rest.len() < n {
            out += rest.get(..n.min(rest.len())).unwrap_or_default();
            break;
        }
        out += &rest[..n];
        body = rest[n..].strip_prefix("\r\n").unwrap_or(&rest[n..]);
    }
    out
}

/// An MCP client over streamable HTTP with a bearer token, as an agent's
/// client is: one MCP session, a request per tool call.
pub struct McpClient {
    addr: String,
    token: String,
    session: Option<String>,
    next_id: u64,
}

impl McpClient {
    pub fn connect(addr: &str, token: &str) -> McpClient {
        let mut client = McpClient {
            addr: addr.to_string(),
            token: token.to_string(),
            session: None,
            next_id: 1,
        };
        let init = client.request(
            "initialize",
            json!({
                "protocolVersion": "2025-06-18",
                "capabilities": {},
                "clientInfo": {"name": "glovebox-bench", "version": "0"},
            }),
        );
        assert!(init["result"].is_object(), "initialize: {init}");
        client.post(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
        client
    }

    /// Status, body and the `Mcp-Session-Id` the server named.
    fn post(&mut self, message: &Value) -> (u16, String, Option<String>) {
        let body = message.to_string();
        let mut request = format!(
            "POST /mcp HTTP/1.1\r\nHost: {}\r\nConnection: close\r\nContent-Length: {}\r\n\
             Authorization: Bearer {}\r\nContent-Type: application/json\r\n\
             Accept: application/json, text/event-stream\r\nMcp-Protocol-Version: 2025-06-18\r\n",
            self.addr,
            body.len(),
            self.token
        );
        if let Some(s) = &self.session {
            request += &format!("Mcp-Session-Id: {s}\r\n");
        }
        request += "\r\n";
        request += &body;
        let (status, head, body) = exchange(&self.addr, request.as_bytes());
        let id = head.lines().find_map(|l| {
            let (k, v) = l.split_once(':')?;
            k.eq_ignore_ascii_case("mcp-session-id")
                .then(|| v.trim().to_string())
        });
        (status, body, id)
    }

    pub fn request(&mut self, method: &str, params: Value) -> Value {
        let id = self.next_id;
        self.next_id += 1;
        let (status, body, session) =
            self.post(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        if session.is_some() {
            self.session = session;
        }
        for line in body.lines() {
            let data = line.strip_prefix("data:").unwrap_or(line).trim();
            if let Ok(v) = serde_json::from_str::<Value>(data)
                && v.get("id") == Some(&json!(id))
            {
                return v;
            }
        }
        panic!("no answer to {method} ({status}): {}", cut(&body, 2000));
    }

    /// A tool call's result (`isError`, `structuredContent`).
    pub fn call(&mut self, tool: &str, arguments: Value) -> Value {
        let answer = self.request("tools/call", json!({"name": tool, "arguments": arguments}));
        answer["result"].clone()
    }
}

/// At most `max` bytes of `text`, cut at a character boundary.
pub fn cut(text: &str, max: usize) -> &str {
    let mut end = text.len().min(max);
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    &text[..end]
}

fn status_field_kib(pid: u32, field: &str) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with(field))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|n| n.parse().ok())
        })
        .unwrap_or(0)
}

/// The process's resident memory now, in KiB.
pub fn rss_kib(pid: u32) -> u64 {
    status_field_kib(pid, "VmRSS:")
}

/// The process's peak resident memory, in KiB.
pub fn hwm_kib(pid: u32) -> u64 {
    status_field_kib(pid, "VmHWM:")
}

/// Bytes of the files under `dir`.
pub fn du(dir: &Path) -> u64 {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return 0;
    };
    entries
        .filter_map(Result::ok)
        .map(|e| match e.file_type() {
            Ok(t) if t.is_dir() => du(&e.path()),
            Ok(_) => e.metadata().map(|m| m.len()).unwrap_or(0),
            Err(_) => 0,
        })
        .sum()
}

pub fn humanize(d: Duration) -> String {
    let s = d.as_secs();
    if s >= 60 {
        format!("{}m{:02}s", s / 60, s % 60)
    } else {
        format!("{:.1}s", d.as_secs_f64())
    }
}
