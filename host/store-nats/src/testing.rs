//! A `nats-server` of a test's own (public with the `testing` feature, for
//! the integration tests that run glovebox on NATS): on a free loopback
//! port, its files in the test's temp dir, killed when dropped. Installs
//! Debian's `nats-server` package when the command is missing.

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
        let (child, port) = spawn(dir, jetstream, None);
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
        let (child, _) = spawn(&self.dir, self.jetstream, Some(self.port));
        *self.child.lock().unwrap() = Some(child);
    }
}

impl Drop for NatsServer {
    fn drop(&mut self) {
        self.kill();
    }
}

/// Starts `nats-server` on 127.0.0.1 (`port`, or any free one) and waits
/// until it listens: it writes its ports file once it does.
fn spawn(dir: &Path, jetstream: bool, port: Option<u16>) -> (Child, u16) {
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
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    if jetstream {
        command.arg("-js").arg("-sd").arg(dir.join("jetstream"));
    }
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
