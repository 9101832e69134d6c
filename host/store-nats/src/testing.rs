//! A `nats-server` of a test's own (public with the `testing` feature, for
//! the integration tests that run glovebox on NATS): on a free loopback
//! port, its files in the test's temp dir, killed when dropped. Installs
//! Debian's `nats-server` package when the command is missing.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// The `nats-server` command, installed with `apt-get` if it is missing
/// (as the benchmark script installs bubblewrap); panics with what to
/// install when that is not possible.
pub fn nats_server_bin() -> PathBuf {
    fn find() -> Option<PathBuf> {
        let path = std::env::var_os("PATH").unwrap_or_default();
        std::env::split_paths(&path)
            .chain([
                "/usr/sbin".into(),
                "/usr/local/sbin".into(),
                "/usr/bin".into(),
            ])
            .map(|dir| dir.join("nats-server"))
            .find(|bin| bin.is_file())
    }
    static APT: Mutex<()> = Mutex::new(());
    let _one_at_a_time = APT
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    if let Some(bin) = find() {
        return bin;
    }
    let root = Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).trim() == "0");
    let sudo = if root { "" } else { "sudo " };
    let script = format!(
        "{sudo}apt-get install -y nats-server || ({sudo}apt-get update && {sudo}apt-get install -y nats-server)"
    );
    let installed = Command::new("sh")
        .args(["-c", &script])
        .stdout(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    match find() {
        Some(bin) if installed => bin,
        _ => panic!(
            "these tests need `nats-server`: install the Debian package `nats-server` (apt-get install nats-server)"
        ),
    }
}

pub struct NatsServer {
    dir: PathBuf,
    jetstream: bool,
    port: u16,
    child: Mutex<Option<Child>>,
}

impl NatsServer {
    /// Starts a server with its files under `dir`, on a free port.
    pub fn start(dir: &Path, jetstream: bool) -> NatsServer {
        let (child, port) = spawn(dir, &standalone_args(dir, jetstream), None);
        NatsServer {
            dir: dir.to_path_buf(),
            jetstream,
            port,
            child: Mutex::new(Some(child)),
        }
    }

    pub fn url(&self) -> String {
        format!("nats://127.0.0.1:{}", self.port)
    }

    /// Kills the server with SIGKILL, as a crash would.
    pub fn kill(&self) {
        if let Some(mut child) = self.child.lock().unwrap().take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// Starts the server again on the same port and files (after `kill`).
    pub fn restart(&self) {
        self.kill();
        let (child, _) = spawn(
            &self.dir,
            &standalone_args(&self.dir, self.jetstream),
            Some(self.port),
        );
        *self.child.lock().unwrap() = Some(child);
    }
}

impl Drop for NatsServer {
    fn drop(&mut self) {
        self.kill();
    }
}

/// The arguments of a server of its own: JetStream (when asked) with its
/// files in `dir/jetstream`.
fn standalone_args(dir: &Path, jetstream: bool) -> Vec<OsString> {
    if jetstream {
        vec!["-js".into(), "-sd".into(), dir.join("jetstream").into()]
    } else {
        Vec::new()
    }
}

/// Starts `nats-server` on 127.0.0.1 (`port`, or any free one) with `args`
/// added, its log in `dir`, and waits until it listens for clients: it
/// writes its ports file once it does.
fn spawn(dir: &Path, args: &[OsString], port: Option<u16>) -> (Child, u16) {
    let bin = nats_server_bin();
    let ports_dir = dir.join("ports");
    std::fs::create_dir_all(&ports_dir).unwrap();
    let port_arg = port.map_or("-1".to_string(), |p| p.to_string());
    let mut command = Command::new(&bin);
    command
        .args(["-a", "127.0.0.1", "-p", &port_arg, "--ports_file_dir"])
        .arg(&ports_dir)
        .arg("-l")
        .arg(dir.join("nats-server.log"))
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    let mut child = command
        .spawn()
        .unwrap_or_else(|e| panic!("cannot start {}: {e}", bin.display()));
    let ports_file = ports_dir.join(format!("nats-server_{}.ports", child.id()));
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        if let Ok(text) = std::fs::read_to_string(&ports_file)
            && let Some(port) = text
                .split("127.0.0.1:")
                .nth(1)
                .and_then(|rest| rest.split('"').next())
                .and_then(|p| p.parse().ok())
        {
            return (child, port);
        }
        if let Ok(Some(status)) = child.try_wait() {
            let log = std::fs::read_to_string(dir.join("nats-server.log")).unwrap_or_default();
            panic!("nats-server exited ({status}) before listening:\n{log}");
        }
        assert!(
            Instant::now() < deadline,
            "nats-server did not listen within 20 s"
        );
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// A JetStream cluster of three `nats-server`s of a test's own, all on
/// 127.0.0.1: each node with its client port, its route port, its files and
/// its log under `dir/n<i>`, one cluster name. `start` returns once the
/// cluster has a JetStream meta leader and can place a stream on all three
/// nodes, so a store with `replicas = 3` opens at once. Every node is killed
/// (SIGKILL) when the cluster is dropped.
pub struct NatsCluster {
    dir: PathBuf,
    /// Each node's client port, fixed at its first start.
    ports: Vec<u16>,
    /// Each node's route port (the other nodes dial it).
    route_ports: Vec<u16>,
    children: Mutex<Vec<Option<Child>>>,
}

impl NatsCluster {
    pub const NODES: usize = 3;
    pub const NAME: &str = "glovebox-test";

    /// Starts the three nodes under `dir` and waits until JetStream is up.
    pub fn start(dir: &Path) -> NatsCluster {
        // Route ports must be known before any node starts (each lists the
        // others): free ones, bound and released.
        let route_ports: Vec<u16> = (0..Self::NODES).map(|_| free_port()).collect();
        let mut cluster = NatsCluster {
            dir: dir.to_path_buf(),
            ports: Vec::new(),
            route_ports,
            children: Mutex::new(Vec::new()),
        };
        for i in 0..Self::NODES {
            let (child, port) = spawn(&cluster.node_dir(i), &cluster.node_args(i), None);
            cluster.ports.push(port);
            cluster.children.get_mut().unwrap().push(Some(child));
        }
        cluster.wait_until_ready(&cluster.urls(), true);
        cluster
    }

    /// Every node's URL, comma-separated, as `[storage] url` takes them.
    pub fn urls(&self) -> String {
        (0..Self::NODES)
            .map(|i| self.url(i))
            .collect::<Vec<_>>()
            .join(",")
    }

    /// Node `i`'s URL alone.
    pub fn url(&self, i: usize) -> String {
        format!("nats://127.0.0.1:{}", self.ports[i])
    }

    /// Node `i`'s server name (`n<i>`), as JetStream names a stream's leader.
    pub fn name(i: usize) -> String {
        format!("n{i}")
    }

    /// The node whose server name is `name`.
    pub fn index_of(name: &str) -> Option<usize> {
        (0..Self::NODES).find(|&i| Self::name(i) == name)
    }

    /// Kills node `i` with SIGKILL, as a crash would.
    pub fn kill(&self, i: usize) {
        if let Some(mut child) = self.children.lock().unwrap()[i].take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// Starts node `i` again on its ports and files (after `kill`), and
    /// waits until JetStream answers through it.
    pub fn restart(&self, i: usize) {
        self.kill(i);
        let (child, _) = spawn(&self.node_dir(i), &self.node_args(i), Some(self.ports[i]));
        self.children.lock().unwrap()[i] = Some(child);
        self.wait_until_ready(&self.url(i), false);
    }

    /// What JetStream says of stream `name` (`$JS.API.STREAM.INFO`): its
    /// leader's node and whether every replica has caught up with it; `None`
    /// while the stream has no leader or the answer is an error.
    pub fn stream_leader(&self, name: &str) -> Option<(usize, bool)> {
        let info = js_request(
            &self.urls(),
            &format!("$JS.API.STREAM.INFO.{name}"),
            Vec::new(),
        )
        .ok()?;
        let cluster = info.get("cluster")?;
        let leader = Self::index_of(cluster.get("leader")?.as_str()?)?;
        let replicas = cluster
            .get("replicas")
            .and_then(|r| r.as_array())
            .cloned()
            .unwrap_or_default();
        let current = replicas.len() == Self::NODES - 1
            && replicas.iter().all(|r| {
                r.get("current").and_then(|c| c.as_bool()) == Some(true)
                    && r.get("offline").and_then(|o| o.as_bool()) != Some(true)
            });
        Some((leader, current))
    }

    fn node_dir(&self, i: usize) -> PathBuf {
        self.dir.join(format!("n{i}"))
    }

    fn node_args(&self, i: usize) -> Vec<OsString> {
        let routes = self
            .route_ports
            .iter()
            .map(|p| format!("nats://127.0.0.1:{p}"))
            .collect::<Vec<_>>()
            .join(",");
        vec![
            "--server_name".into(),
            Self::name(i).into(),
            "--cluster_name".into(),
            Self::NAME.into(),
            "--cluster".into(),
            format!("nats://127.0.0.1:{}", self.route_ports[i]).into(),
            "--routes".into(),
            routes.into(),
            "-js".into(),
            "-sd".into(),
            self.node_dir(i).join("jetstream").into(),
        ]
    }

    /// Waits (up to 30 s) until JetStream answers through `urls` without an
    /// error; with `replicated`, also until a stream of three replicas can
    /// be made (then removed), which needs every node known to the leader.
    fn wait_until_ready(&self, urls: &str, replicated: bool) {
        const PROBE: &str = "glovebox_cluster_probe";
        let deadline = Instant::now() + Duration::from_secs(30);
        let mut last = String::new();
        while Instant::now() < deadline {
            let ready = js_request(urls, "$JS.API.INFO", Vec::new()).and_then(|_| {
                if !replicated {
                    return Ok(());
                }
                let config = serde_json::json!({
                    "name": PROBE,
                    "subjects": [PROBE],
                    "storage": "memory",
                    "num_replicas": Self::NODES,
                });
                js_request(
                    urls,
                    &format!("$JS.API.STREAM.CREATE.{PROBE}"),
                    config.to_string().into_bytes(),
                )?;
                js_request(urls, &format!("$JS.API.STREAM.DELETE.{PROBE}"), Vec::new()).map(|_| ())
            });
            match ready {
                Ok(()) => return,
                Err(e) => last = e.to_string(),
            }
            std::thread::sleep(Duration::from_millis(200));
        }
        let logs: String = (0..Self::NODES)
            .map(|i| {
                let log = std::fs::read_to_string(self.node_dir(i).join("nats-server.log"))
                    .unwrap_or_default();
                let tail: Vec<&str> = log.lines().rev().take(15).collect();
                format!(
                    "--- n{i}:\n{}\n",
                    tail.into_iter().rev().collect::<Vec<_>>().join("\n")
                )
            })
            .collect();
        panic!("the NATS cluster at {urls} has no working JetStream after 30 s ({last}):\n{logs}");
    }
}

impl Drop for NatsCluster {
    fn drop(&mut self) {
        for i in 0..Self::NODES {
            self.kill(i);
        }
    }
}

/// A loopback port nothing listens on (bound, then released).
fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("bind a loopback port")
        .port()
}

/// One JetStream API request through a fresh connection to `urls`: the
/// answer's JSON, or what went wrong (no answer, or the `error` it holds).
fn js_request(
    urls: &str,
    subject: &str,
    body: Vec<u8>,
) -> Result<serde_json::Value, JsRequestError> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(JsRequestError::Runtime)?;
    let on = |why: JsAnswer| JsRequestError::Answer {
        subject: subject.to_string(),
        why,
    };
    runtime.block_on(async {
        let client = async_nats::ConnectOptions::new()
            .connection_timeout(Duration::from_secs(2))
            .request_timeout(Some(Duration::from_secs(2)))
            .connect(urls.split(',').collect::<Vec<_>>())
            .await
            .map_err(JsRequestError::Connect)?;
        let answer = client
            .request(subject.to_string(), body.into())
            .await
            .map_err(|e| on(JsAnswer::None(e)))?;
        let value: serde_json::Value =
            serde_json::from_slice(&answer.payload).map_err(|e| on(JsAnswer::Undecodable(e)))?;
        match value.get("error") {
            Some(error) => Err(on(JsAnswer::Error(error.clone()))),
            None => Ok(value),
        }
    })
}

/// Why a JetStream API request of [`js_request`] did not get an answer
/// without an error.
#[derive(Debug, thiserror::Error)]
enum JsRequestError {
    /// The request's own runtime did not start.
    #[error("{0}")]
    Runtime(std::io::Error),
    #[error("connect: {0}")]
    Connect(async_nats::ConnectError),
    /// The request to `subject` got no usable answer, or an error.
    #[error("{subject}: {why}")]
    Answer { subject: String, why: JsAnswer },
}

/// What was wrong with the answer to a JetStream API request.
#[derive(Debug, thiserror::Error)]
enum JsAnswer {
    /// No answer came.
    #[error("{0}")]
    None(async_nats::RequestError),
    #[error("{0}")]
    Undecodable(serde_json::Error),
    /// The answer's `error`, as JSON.
    #[error("{0}")]
    Error(serde_json::Value),
}
