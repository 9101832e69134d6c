//! Helpers shared by the test modules: plugin paths, hosts, manifests.
//!
//! The crash harness's binary (`tests/crash/`) includes this file too (`#[path]`), for
//! `Site` and the real binary: name nothing of the `all` crate here (`crate::...`).

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use glovebox::manifest::{Access, FsGrant, HttpGrant, HttpScheme};
use glovebox::{CallContext, CallError, CallReport, Host, HostConfig, Limits, PluginManifest};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

pub mod plugins {
    include!(concat!(env!("OUT_DIR"), "/plugins.rs"));
}

/// The path of the plugin constant `name` (`HOSTILE_FS`), for the case folders of
/// `tests/cases/`, whose configs write it `{HOSTILE_FS}`: the plugins they use, and
/// so the mention `tests/build.rs` asks of every plugin for those the folders test.
pub fn plugin_named(name: &str) -> Option<&'static str> {
    Some(match name {
        "TOOL_ECHO" => plugins::TOOL_ECHO,
        "TOOL_FILES" => plugins::TOOL_FILES,
        "TOOL_HTTP_FETCH" => plugins::TOOL_HTTP_FETCH,
        "TOOL_GATE" => plugins::TOOL_GATE,
        "CODE_JS" => plugins::CODE_JS,
        "HOSTILE_FS" => plugins::HOSTILE_FS,
        "HOSTILE_NET" => plugins::HOSTILE_NET,
        "HOSTILE_ENV" => plugins::HOSTILE_ENV,
        "HOSTILE_RECURSION" => plugins::HOSTILE_RECURSION,
        "HOSTILE_PANIC" => plugins::HOSTILE_PANIC,
        "NOT_WASM" => plugins::NOT_WASM,
        "HOSTILE_CORE_MODULE" => plugins::HOSTILE_CORE_MODULE,
        "HOSTILE_WRONG_WORLD" => plugins::HOSTILE_WRONG_WORLD,
        "HOSTILE_MISSING_EXPORT" => plugins::HOSTILE_MISSING_EXPORT,
        "TRUNCATED_ECHO" => plugins::TRUNCATED_ECHO,
        "HOOK_DESTRUCTIVE" => plugins::HOOK_DESTRUCTIVE,
        "HOOK_ROLE_ALLOWLIST" => plugins::HOOK_ROLE_ALLOWLIST,
        "HOSTILE_HOOK_TRAP" => plugins::HOSTILE_HOOK_TRAP,
        "HOSTILE_HOOK_LOOP" => plugins::HOSTILE_HOOK_LOOP,
        "HOSTILE_HOOK_MALFORMED" => plugins::HOSTILE_HOOK_MALFORMED,
        "HOSTILE_HOOK_BAD_TRIGGERS" => plugins::HOSTILE_HOOK_BAD_TRIGGERS,
        "HOSTILE_HOOK_FS_IMPORT" => plugins::HOSTILE_HOOK_FS_IMPORT,
        _ => return None,
    })
}

/// A virtualenv under the target dir named `name` with `packages` (pip
/// requirement strings) installed from PyPI, made once per target dir and
/// set of packages; its Python.
pub fn venv(name: &str, packages: &[&str]) -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(name);
    let python = dir.join("bin/python");
    let stamp = dir.join(format!(
        "installed-{}",
        packages.join("+").replace(
            |c: char| !c.is_ascii_alphanumeric() && c != '+' && c != '.',
            "-"
        )
    ));
    if !stamp.exists() {
        let status = std::process::Command::new("python3")
            .args(["-m", "venv"])
            .arg(&dir)
            .status()
            .expect("python3 runs");
        assert!(
            status.success(),
            "cannot create a virtualenv in {}",
            dir.display()
        );
        let status = std::process::Command::new(&python)
            .args(["-m", "pip", "install", "--quiet"])
            .args(packages)
            .status()
            .expect("pip runs");
        assert!(status.success(), "cannot install {packages:?} from PyPI");
        std::fs::write(&stamp, "").unwrap();
    }
    python
}

/// A directory under the target dir named `name` with the npm `packages`
/// (`name@version`) installed from the npm registry with the machine's
/// Node.js (`nodejs` and `npm` from Debian when missing), made once per
/// target dir and set of packages; the directory, where a script copied
/// in resolves them.
pub fn npm_packages(name: &str, packages: &[&str]) -> PathBuf {
    ensure_debian_tool("node", "nodejs");
    ensure_debian_tool("npm", "npm");
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(name);
    let stamp = dir.join(format!(
        "installed-{}",
        packages.join("+").replace(
            |c: char| !c.is_ascii_alphanumeric() && c != '+' && c != '.',
            "-"
        )
    ));
    if !stamp.exists() {
        std::fs::create_dir_all(&dir).unwrap();
        // A package of its own, so npm installs here and not in a parent.
        std::fs::write(
            dir.join("package.json"),
            format!("{{\"name\": \"{name}\", \"private\": true, \"type\": \"module\"}}\n"),
        )
        .unwrap();
        let status = std::process::Command::new("npm")
            .args(["install", "--no-audit", "--no-fund", "--silent"])
            .args(packages)
            .current_dir(&dir)
            .status()
            .expect("npm runs");
        assert!(
            status.success(),
            "cannot install {packages:?} from the npm registry into {}",
            dir.display()
        );
        std::fs::write(&stamp, "").unwrap();
    }
    dir
}

/// A free loopback port (bound, then let go, for a server to take).
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// One compile cache for the whole test run: the cache is keyed by the
/// component's digest and the engine's settings, so sharing it is safe and
/// saves recompiling the same plugins in every test.
pub fn cache_dir() -> PathBuf {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("glovebox-compile-cache");
        std::fs::create_dir_all(&dir).expect("create the shared compile cache");
        dir
    })
    .clone()
}

/// Where the shared compile cache's digests are recorded: shared too, so every
/// test host trusts what another compiled (`runtime.digests_dir`).
pub fn digests_dir() -> PathBuf {
    cache_dir().with_file_name("glovebox-compile-cache-digests")
}

/// The `[runtime]` keys that point a config at the shared compile cache and its
/// digest records, for configs written as TOML.
pub fn cache_keys() -> String {
    format!(
        "cache_dir = \"{}\"\ndigests_dir = \"{}\"",
        cache_dir().display(),
        digests_dir().display()
    )
}

/// A tiny HTTP/1.1 server: `/hello` answers, `/redirect?to=URL` redirects,
/// `/slow` reads the request and never answers.
pub struct TestServer {
    pub port: u16,
    accepted: Arc<AtomicUsize>,
    open: Arc<AtomicUsize>,
}

impl TestServer {
    pub async fn start() -> TestServer {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let accepted = Arc::new(AtomicUsize::new(0));
        let open = Arc::new(AtomicUsize::new(0));
        let (acc, opn) = (accepted.clone(), open.clone());
        tokio::spawn(async move {
            loop {
                let Ok((mut sock, _)) = listener.accept().await else {
                    return;
                };
                acc.fetch_add(1, Ordering::SeqCst);
                opn.fetch_add(1, Ordering::SeqCst);
                let opn = opn.clone();
                tokio::spawn(async move {
                    let mut buf = vec![0u8; 16 * 1024];
                    let mut got = Vec::new();
                    // Read the request head.
                    while !got.windows(4).any(|w| w == b"\r\n\r\n") {
                        match sock.read(&mut buf).await {
                            Ok(0) | Err(_) => {
                                opn.fetch_sub(1, Ordering::SeqCst);
                                return;
                            }
                            Ok(n) => got.extend_from_slice(&buf[..n]),
                        }
                    }
                    let head = String::from_utf8_lossy(&got).to_string();
                    let target = head.split_whitespace().nth(1).unwrap_or("/").to_string();
                    let response = if target == "/hello" {
                        let body = "hello from the test server";
                        format!(
                            "HTTP/1.1 200 OK\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                            body.len()
                        )
                    } else if let Some(to) = target.strip_prefix("/redirect?to=") {
                        format!(
                            "HTTP/1.1 302 Found\r\nlocation: {to}\r\ncontent-length: 0\r\nconnection: close\r\n\r\n"
                        )
                    } else if target == "/slow" {
                        // Hold the connection open until the client goes away.
                        while let Ok(n) = sock.read(&mut buf).await {
                            if n == 0 {
                                break;
                            }
                        }
                        opn.fetch_sub(1, Ordering::SeqCst);
                        return;
                    } else {
                        "HTTP/1.1 404 Not Found\r\ncontent-length: 0\r\nconnection: close\r\n\r\n"
                            .to_string()
                    };
                    let _ = sock.write_all(response.as_bytes()).await;
                    let _ = sock.shutdown().await;
                    opn.fetch_sub(1, Ordering::SeqCst);
                });
            }
        });
        TestServer {
            port,
            accepted,
            open,
        }
    }

    pub fn accepted(&self) -> usize {
        self.accepted.load(Ordering::SeqCst)
    }

    pub fn open(&self) -> usize {
        self.open.load(Ordering::SeqCst)
    }
}

/// The store of `dir` as a host uses it, with the sled handle for fault injection.
pub fn durable(dir: &Path) -> (Arc<glovebox::storage::SledStore>, Arc<glovebox::Durable>) {
    let store = Arc::new(
        glovebox::storage::SledStore::open(dir, glovebox::storage::Durability::Flush).unwrap(),
    );
    let storage: Arc<dyn glovebox::storage::Storage> = store.clone();
    let durable = glovebox::Durable {
        sessions: Arc::new(glovebox::Sessions::new(storage.clone())),
        approvals: Arc::new(glovebox::approvals::Approvals::new(storage.clone())),
        outbox: Arc::new(glovebox::notify::Outbox::new(storage.clone(), Vec::new())),
        storage,
        recovery: Default::default(),
        repairs: Vec::new(),
    };
    (store, Arc::new(durable))
}

/// Starts a session of `role` named `name` in `project`, with no budget or tags: its id.
pub fn start_session(
    sessions: &glovebox::Sessions,
    role: glovebox::session::Role,
    project: &str,
    name: &str,
) -> String {
    sessions
        .start(glovebox::session::StartSession {
            role,
            project: project.into(),
            name: Some(name.into()),
            tags: vec![],
            expected_duration: None,
            budget: Default::default(),
            completion: Default::default(),
        })
        .unwrap_or_else(|e| panic!("starting the {} session `{name}`: {e}", role.as_str()))
        .header
        .id
}

/// A manifest for `component` named `name`, with test-friendly limits.
pub fn manifest(name: &str, component: &str) -> PluginManifest {
    let mut m = PluginManifest::for_component(PathBuf::from(component), &limits());
    m.name = name.to_string();
    m
}

pub fn limits() -> Limits {
    Limits {
        memory: 64 * 1024 * 1024,
        deadline: Duration::from_secs(5),
        ..Limits::default()
    }
}

pub fn fs_grant(host: &Path, guest: &str, access: Access) -> FsGrant {
    FsGrant {
        host: host.canonicalize().expect("granted dir exists"),
        guest: guest.to_string(),
        access,
    }
}

pub fn http_grant(scheme: HttpScheme, host: &str, port: u16) -> HttpGrant {
    HttpGrant {
        scheme,
        host: host.to_string(),
        port,
        rules: Default::default(),
        inject: None,
        only: Default::default(),
    }
}

/// A host over `plugins`, with its own data dir and the shared compile cache.
pub struct TestHost {
    pub host: Host,
    pub data: tempfile::TempDir,
}

impl std::ops::Deref for TestHost {
    type Target = Host;
    fn deref(&self) -> &Host {
        &self.host
    }
}

pub async fn host(plugins: Vec<PluginManifest>) -> TestHost {
    try_host(plugins)
        .await
        .unwrap_or_else(|e| panic!("host failed to load: {e:#}"))
}

pub async fn try_host(plugins: Vec<PluginManifest>) -> anyhow::Result<TestHost> {
    let config = config(plugins);
    let data = config.1;
    let host = Host::load(config.0).await?;
    Ok(TestHost { host, data })
}

pub fn config(plugins: Vec<PluginManifest>) -> (HostConfig, tempfile::TempDir) {
    let data = tempfile::tempdir().expect("tempdir");
    let mut config = HostConfig::from_plugins(data.path().to_path_buf(), plugins);
    config.runtime.cache_dir = Some(cache_dir());
    config.runtime.digests_dir = Some(digests_dir());
    config.runtime.max_memory_per_instance = 1024 * 1024 * 1024;
    (config, data)
}

/// Calls `tool` with `input` outside any session.
pub async fn call(host: &Host, tool: &str, input: &str) -> CallReport {
    host.call(tool, input, CallContext::standalone()).await
}

pub async fn call_ok(host: &Host, tool: &str, input: &str) -> serde_json::Value {
    let report = call(host, tool, input).await;
    match report.outcome {
        Ok(v) => v,
        Err(e) => panic!(
            "call to {tool} failed: {e} (stderr: {})",
            report.stderr.text
        ),
    }
}

pub async fn call_err(host: &Host, tool: &str, input: &str) -> CallError {
    let report = call(host, tool, input).await;
    match report.outcome {
        Ok(v) => panic!("call to {tool} should have failed, got {v}"),
        Err(e) => e,
    }
}

/// The host keeps serving: a trivial call on the echo plugin succeeds at once.
/// Every host built by `host_with_echo` has it.
pub async fn assert_serving(host: &Host) {
    let out = call_ok(host, "echo.echo", r#"{"message":"still here"}"#).await;
    assert_eq!(out["message"], "still here");
}

/// The real `glovebox` binary, with no config or log level from the environment.
pub fn glovebox() -> std::process::Command {
    let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_glovebox"));
    cmd.env_remove("GLOVEBOX_CONFIG").env_remove("RUST_LOG");
    cmd
}

/// A host with `plugin` plus the echo plugin, to check it keeps serving.
pub async fn host_with_echo(plugin: PluginManifest) -> TestHost {
    host(vec![plugin, manifest("echo", plugins::TOOL_ECHO)]).await
}

/// Runs `code` with a code runner's `run` tool (`tool`, e.g. `code-python.run`), with
/// the extra input fields of `more`, and returns the result object.
pub async fn run_code(
    host: &Host,
    tool: &str,
    code: &str,
    more: serde_json::Value,
) -> serde_json::Value {
    let mut input = serde_json::json!({ "code": code });
    if let (Some(input), Some(more)) = (input.as_object_mut(), more.as_object()) {
        input.extend(more.clone());
    }
    call_ok(host, tool, &input.to_string()).await
}

/// The `error` of a code runner's result, which must have one.
pub fn error_of(out: &serde_json::Value) -> &str {
    out["error"]
        .as_str()
        .unwrap_or_else(|| panic!("expected an error, got {out}"))
}

/// A data dir with a config for the real binary: by default the sleep and echo
/// plugins (also used by the jobs and scratch tests).
pub struct Site {
    dir: tempfile::TempDir,
    /// The manifest files the config lists.
    plugins: Vec<String>,
}

impl Site {
    pub fn new(sleep_idempotent: bool) -> Site {
        Site::with_plugins(&[
            (
                "sleep.toml",
                format!(
                    "name = \"sleep\"\ncomponent = \"{}\"\n[limits]\ndeadline = \"60s\"\n[tools.sleep]\nidempotent = {sleep_idempotent}\n",
                    plugins::HOSTILE_SLEEP
                ),
            ),
            (
                "echo.toml",
                format!("name = \"echo\"\ncomponent = \"{}\"\n", plugins::TOOL_ECHO),
            ),
        ])
    }

    /// A site whose config lists these plugin manifests: (file name, contents).
    pub fn with_plugins(manifests: &[(&str, String)]) -> Site {
        Site::with_config("", manifests)
    }

    /// The same, with `extra` TOML tables (`[budgets]`, `[detector]`, ...) in the config.
    pub fn with_config(extra: &str, manifests: &[(&str, String)]) -> Site {
        let dir = tempfile::tempdir().unwrap();
        for (file, text) in manifests {
            std::fs::write(dir.path().join(file), text).unwrap();
        }
        let site = Site {
            dir,
            plugins: manifests.iter().map(|(f, _)| f.to_string()).collect(),
        };
        site.set_config(extra);
        site
    }

    /// Rewrites the config with other `extra` tables (the plugins stay).
    /// Without a `[[hook]]` in `extra` the config says `hooks = "none"`.
    pub fn set_config(&self, extra: &str) {
        let hooks = if extra.contains("[[hook]]") {
            ""
        } else {
            "hooks = \"none\"\n"
        };
        let mut config = format!(
            "data_dir = \"data\"\n{hooks}[runtime]\ncache_dir = \"{}\"\ndigests_dir = \"{}\"\n[storage]\ncheckpoint_every = 64\n{extra}",
            cache_dir().display(),
            digests_dir().display()
        );
        for file in &self.plugins {
            config += &format!("[[plugin]]\nmanifest = \"{file}\"\n");
        }
        std::fs::write(self.config(), config).unwrap();
    }

    /// The site's directory (the data dir is `data/` inside).
    pub fn path(&self) -> &std::path::Path {
        self.dir.path()
    }

    pub fn config(&self) -> PathBuf {
        self.dir.path().join("glovebox.toml")
    }

    pub fn data(&self) -> PathBuf {
        self.dir.path().join("data").join("store")
    }

    pub fn run(&self, args: &[&str]) -> (i32, String, String) {
        self.run_in(&std::env::current_dir().unwrap(), args)
    }

    /// [`Site::run`] from the directory `dir` (where relative paths in
    /// `args` are read).
    pub fn run_in(&self, dir: &std::path::Path, args: &[&str]) -> (i32, String, String) {
        run_with_config(dir, &self.config(), args)
    }

    /// Waits for the control socket of the server serving this site.
    pub fn wait_for_control_socket(&self) {
        let socket = self.path().join("data/control.sock");
        let start = std::time::Instant::now();
        while !socket.exists() {
            assert!(
                start.elapsed() < std::time::Duration::from_secs(60),
                "no control socket at {}",
                socket.display()
            );
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
    }

    /// `session start` of a workagent session named `name` in project `p`.
    pub fn start_workagent(&self, name: &str) -> serde_json::Value {
        self.json(&[
            "session",
            "start",
            "--role",
            "workagent",
            "--project",
            "p",
            "--name",
            name,
        ])
    }

    /// The events of `session`'s log, as `log export` prints them.
    pub fn log(&self, session: &str) -> Vec<glovebox::session::Event> {
        let (code, out, err) = self.run(&["log", "export", session]);
        assert_eq!(code, 0, "log export: {err}");
        out.lines()
            .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
            .collect()
    }

    pub fn json(&self, args: &[&str]) -> serde_json::Value {
        let (code, out, err) = self.run(args);
        assert_eq!(code, 0, "glovebox {args:?}: {err}");
        serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out}"))
    }
}

/// `glovebox --config CONFIG ARGS` run from `dir`: exit code, stdout, stderr.
pub fn run_with_config(
    dir: &std::path::Path,
    config: &std::path::Path,
    args: &[&str],
) -> (i32, String, String) {
    outcome(
        glovebox()
            .current_dir(dir)
            .arg("--config")
            .arg(config)
            .args(args),
    )
}

/// Runs `command` to its end: exit code (-1 when a signal ended it),
/// stdout, stderr.
pub fn outcome(command: &mut std::process::Command) -> (i32, String, String) {
    let out = command.output().unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// Makes sure the command `bin` exists, installing the Debian package
/// `package` with `apt-get` when it does not (as the README's test command
/// promises); panics with what to install when that is not possible.
pub fn ensure_debian_tool(bin: &str, package: &str) {
    let found = |bin: &str| {
        std::process::Command::new("sh")
            .args(["-c", &format!("command -v {bin}")])
            .output()
            .is_ok_and(|o| o.status.success())
    };
    if found(bin) {
        return;
    }
    static APT: std::sync::Mutex<()> = std::sync::Mutex::new(());
    let _one_at_a_time = APT
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    if found(bin) {
        return;
    }
    let sudo = if std::process::Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).trim() == "0")
    {
        ""
    } else {
        "sudo "
    };
    let script = format!(
        "{sudo}apt-get install -y {package} || ({sudo}apt-get update && {sudo}apt-get install -y {package})"
    );
    let installed = std::process::Command::new("sh")
        .args(["-c", &script])
        .stdout(std::process::Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    assert!(
        installed && found(bin),
        "this test needs `{bin}`: install the Debian package `{package}` (apt-get install {package})"
    );
}

/// A store that refuses to read the buckets an agent can grow whole
/// (`Storage::scan` of them), and counts who tried: a listing, a search, a
/// sweep or a page that regresses to a whole-bucket read fails a test run
/// over it (threat 49). Everything else goes to the store it wraps.
pub struct NoWholeScan {
    inner: std::sync::Arc<dyn glovebox::storage::Storage>,
    guarded: &'static [&'static str],
    tried: std::sync::Mutex<Vec<String>>,
}

/// The buckets agents grow that only pages may read.
pub const GROWN_BUCKETS: &[&str] = &[
    "approvals",
    "approval_index",
    "approval_places",
    "memory",
    "memory_index",
    "memory_places",
    "rescues",
    "rescues_by_open",
    "rescues_open",
    "context",
    "context_keys",
    "checkpoints",
];

impl NoWholeScan {
    pub fn new(inner: std::sync::Arc<dyn glovebox::storage::Storage>) -> NoWholeScan {
        NoWholeScan {
            inner,
            guarded: GROWN_BUCKETS,
            tried: Default::default(),
        }
    }

    /// The guarded buckets something tried to read whole.
    pub fn tried(&self) -> Vec<String> {
        self.tried.lock().unwrap().clone()
    }
}

impl glovebox::storage::Storage for NoWholeScan {
    fn append(
        &self,
        stream: &str,
        expected: u64,
        entries: &[Vec<u8>],
    ) -> glovebox::storage::Result<u64> {
        self.inner.append(stream, expected, entries)
    }
    fn append_unsynced(
        &self,
        stream: &str,
        expected: u64,
        entries: &[Vec<u8>],
    ) -> glovebox::storage::Result<u64> {
        self.inner.append_unsynced(stream, expected, entries)
    }
    fn sync(&self) -> glovebox::storage::Result<()> {
        self.inner.sync()
    }
    fn observe_flushes(&self, observer: glovebox::storage::FlushObserver) {
        self.inner.observe_flushes(observer)
    }
    fn read(
        &self,
        stream: &str,
        from: u64,
        max: usize,
    ) -> glovebox::storage::Result<Vec<(u64, Vec<u8>)>> {
        self.inner.read(stream, from, max)
    }
    fn last_seq(&self, stream: &str) -> glovebox::storage::Result<u64> {
        self.inner.last_seq(stream)
    }
    fn streams(&self) -> glovebox::storage::Result<Vec<String>> {
        self.inner.streams()
    }
    fn put(&self, bucket: &str, key: &str, value: &[u8]) -> glovebox::storage::Result<()> {
        self.inner.put(bucket, key, value)
    }
    fn put_unsynced(&self, bucket: &str, key: &str, value: &[u8]) -> glovebox::storage::Result<()> {
        self.inner.put_unsynced(bucket, key, value)
    }
    fn put_if(
        &self,
        bucket: &str,
        key: &str,
        swap: glovebox::storage::Swap<'_>,
    ) -> glovebox::storage::Result<bool> {
        self.inner.put_if(bucket, key, swap)
    }
    fn get(&self, bucket: &str, key: &str) -> glovebox::storage::Result<Option<Vec<u8>>> {
        self.inner.get(bucket, key)
    }
    fn delete(&self, bucket: &str, key: &str) -> glovebox::storage::Result<()> {
        self.inner.delete(bucket, key)
    }
    fn scan(
        &self,
        bucket: &str,
        prefix: &str,
    ) -> glovebox::storage::Result<Vec<(String, Vec<u8>)>> {
        if self.guarded.contains(&bucket) {
            self.tried.lock().unwrap().push(bucket.to_string());
            return Err(glovebox::storage::StorageError::Io(format!(
                "the bucket `{bucket}` grows with what agents do: read it a page at a time (`scan_page`), not whole"
            )));
        }
        self.inner.scan(bucket, prefix)
    }
    fn scan_page(
        &self,
        bucket: &str,
        prefix: &str,
        after: Option<&str>,
        limit: usize,
    ) -> glovebox::storage::Result<Vec<(String, Vec<u8>)>> {
        self.inner.scan_page(bucket, prefix, after, limit)
    }
    fn buckets(&self) -> glovebox::storage::Result<Vec<String>> {
        self.inner.buckets()
    }
    fn failure(&self) -> Option<String> {
        self.inner.failure()
    }
    fn generation(&self) -> u64 {
        self.inner.generation()
    }
    fn work_queue(
        &self,
        name: &str,
        ack_wait: Duration,
    ) -> glovebox::storage::Result<Option<std::sync::Arc<dyn glovebox::storage::WorkQueue>>> {
        self.inner.work_queue(name, ack_wait)
    }
}

/// The config of the example in `examples/<example>/` written into `dir`, as a
/// test runs it: its data dir in `dir`, its relative plugin and component paths
/// made absolute (the plugins still work where the example's manifests grant),
/// and the tests' compile cache.
pub fn example_config(example: &str, dir: &Path) -> PathBuf {
    let example = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("examples")
        .join(example);
    let text = std::fs::read_to_string(example.join("glovebox.toml")).unwrap();
    let text =
        text.replace(
            "data_dir = \".glovebox-data\"",
            &format!("data_dir = \"{}\"", dir.join("data").display()),
        )
        .replace(
            "manifest = \"../plugins/",
            &format!("manifest = \"{}/../plugins/", example.display()),
        )
        .replace(
            "component = \"../../plugins/",
            &format!("component = \"{}/../../plugins/", example.display()),
        ) + &format!("\n[runtime]\n{}\n", cache_keys());
    let path = dir.join("glovebox.toml");
    std::fs::write(&path, text).unwrap();
    path
}
