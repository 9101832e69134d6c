//! Plugins through an OCI registry, against a real one: Debian's
//! `docker-registry` (the CNCF distribution registry) on 127.0.0.1, installed
//! when missing, and the real echo component, over the real binary.
//! `glovebox plugin push` puts it there; a manifest's `component =
//! "oci://…"` takes it by tag or by digest, pinned in `glovebox.lock` and
//! cached; with the registry down the pulled plugin still loads; a blob
//! tampered with in the registry's storage is refused and nothing is kept; a
//! tag that moves changes nothing until `plugin pull --update`; a signature
//! covers the pulled component as it covers a file (docs/threats.md, 67).

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use glovebox::manifest::{LOCK_FILE, OciLock};
use serde_json::Value;
use sha2::{Digest, Sha256};

use crate::util::{self, plugins};

/// A registry of its own: storage in a temporary directory, a free port.
struct Registry {
    child: Option<Child>,
    port: u16,
    root: tempfile::TempDir,
}

impl Registry {
    fn start() -> Registry {
        util::ensure_debian_tool("docker-registry", "docker-registry");
        let root = tempfile::tempdir().unwrap();
        let mut registry = Registry {
            child: None,
            port: util::free_port(),
            root,
        };
        registry.run();
        registry
    }

    /// Starts the server on its port and storage, and waits until it answers.
    fn run(&mut self) {
        let config = self.root.path().join("config.yml");
        std::fs::write(
            &config,
            format!(
                "version: 0.1\nlog:\n  level: error\nstorage:\n  filesystem:\n    rootdirectory: {}\n  delete:\n    enabled: true\nhttp:\n  addr: 127.0.0.1:{}\n  secret: glovebox-tests\n",
                self.root.path().join("data").display(),
                self.port
            ),
        )
        .unwrap();
        let log = std::fs::File::create(self.root.path().join("registry.log")).unwrap();
        self.child = Some(
            Command::new("docker-registry")
                .arg("serve")
                .arg(&config)
                .stdout(Stdio::null())
                .stderr(log)
                .spawn()
                .expect("docker-registry starts"),
        );
        let deadline = Instant::now() + Duration::from_secs(30);
        while !self.answers() {
            assert!(
                Instant::now() < deadline,
                "the registry did not answer on 127.0.0.1:{} in 30 s: {}",
                self.port,
                std::fs::read_to_string(self.root.path().join("registry.log")).unwrap_or_default()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Whether `GET /v2/` answers 200.
    fn answers(&self) -> bool {
        use std::io::{Read, Write};
        let Ok(mut stream) = std::net::TcpStream::connect(("127.0.0.1", self.port)) else {
            return false;
        };
        let _ = stream.set_read_timeout(Some(Duration::from_secs(2)));
        let request = "GET /v2/ HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n";
        if stream.write_all(request.as_bytes()).is_err() {
            return false;
        }
        let mut head = [0u8; 12];
        stream.read_exact(&mut head).is_ok() && head.ends_with(b"200")
    }

    fn stop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// `oci://127.0.0.1:PORT/PATH`.
    fn reference(&self, path: &str) -> String {
        format!("oci://127.0.0.1:{}/{path}", self.port)
    }

    /// The file the registry keeps the blob of `digest` in.
    fn blob(&self, digest: &str) -> PathBuf {
        let hex = digest.strip_prefix("sha256:").unwrap();
        self.root
            .path()
            .join("data/docker/registry/v2/blobs/sha256")
            .join(&hex[..2])
            .join(hex)
            .join("data")
    }
}

impl Drop for Registry {
    fn drop(&mut self) {
        self.stop();
    }
}

/// A config directory of its own (its own cache, so that what is cached is
/// this test's doing) listing `manifests`: (file, `component` value, plugin
/// name), with `extra` tables.
struct Site {
    dir: tempfile::TempDir,
}

impl Site {
    fn new(manifests: &[(&str, &str, &str)], extra: &str) -> Site {
        let dir = tempfile::tempdir().unwrap();
        let mut config = format!(
            "data_dir = \"data\"\nhooks = \"none\"\n[runtime]\ncache_dir = \"cache\"\n{extra}"
        );
        for (file, component, name) in manifests {
            std::fs::write(
                dir.path().join(file),
                format!("name = \"{name}\"\ncomponent = \"{component}\"\n"),
            )
            .unwrap();
            config += &format!("[[plugin]]\nmanifest = \"{file}\"\n");
        }
        std::fs::write(dir.path().join("glovebox.toml"), config).unwrap();
        Site { dir }
    }

    fn path(&self) -> &Path {
        self.dir.path()
    }

    /// `glovebox --config glovebox.toml ARGS`: exit code, stdout, stderr.
    fn run(&self, args: &[&str]) -> (i32, String, String) {
        util::run_with_config(self.path(), &self.path().join("glovebox.toml"), args)
    }

    /// Calls `TOOL` with a message: exit code and everything printed.
    fn call(&self, tool: &str) -> (i32, String) {
        let (code, out, err) = self.run(&["call", tool, "--input", r#"{"message":"hi"}"#]);
        (code, format!("{out}{err}"))
    }

    fn lock(&self) -> OciLock {
        OciLock::read(&self.path().join(LOCK_FILE)).unwrap()
    }

    /// The pulled components in the cache, by file name.
    fn cached(&self) -> Vec<String> {
        let dir = self.path().join("cache/oci/sha256");
        let mut names: Vec<String> = std::fs::read_dir(&dir)
            .map(|d| {
                d.map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
                    .collect()
            })
            .unwrap_or_default();
        names.sort();
        names
    }
}

fn sha256_of(path: &Path) -> String {
    format!(
        "sha256:{}",
        hex::encode(Sha256::digest(std::fs::read(path).unwrap()))
    )
}

/// `glovebox plugin push COMPONENT TARGET --json`, from `site`.
fn push(site: &Site, component: &Path, target: &str) -> Value {
    let (code, out, err) = site.run(&[
        "plugin",
        "push",
        component.to_str().unwrap(),
        target,
        "--json",
    ]);
    assert_eq!(code, 0, "push {target}: {err}");
    serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out}"))
}

/// The echo component with a custom section appended: still a valid
/// component, with another digest.
fn echo_variant(dir: &Path) -> PathBuf {
    let mut bytes = std::fs::read(plugins::TOOL_ECHO).unwrap();
    bytes.extend_from_slice(&[0, 8, 7, b'v', b'a', b'r', b'i', b'a', b'n', b't']);
    let path = dir.join("echo-variant.wasm");
    std::fs::write(&path, bytes).unwrap();
    path
}

#[test]
fn a_plugin_round_trips_through_the_registry_by_tag_and_by_digest() {
    let registry = Registry::start();
    let tag = registry.reference("glovebox/echo:1.0");
    // The author's side: a manifest naming the built component, pushed.
    let author = Site::new(&[("echo.toml", plugins::TOOL_ECHO, "echo")], "");
    let pushed = push(&author, &author.path().join("echo.toml"), &tag);
    assert_eq!(
        pushed["component"],
        sha256_of(Path::new(plugins::TOOL_ECHO))
    );
    let by_digest = pushed["by_digest"].as_str().unwrap().to_owned();
    assert!(by_digest.ends_with(pushed["manifest"].as_str().unwrap()));

    // The operator's side: the same component by tag and by digest.
    let site = Site::new(
        &[
            ("echo.toml", &tag, "echo"),
            ("pinned.toml", &by_digest, "pinned"),
        ],
        "",
    );
    let (code, out) = site.call("echo.echo");
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("hi"), "{out}");
    let (code, out) = site.call("pinned.echo");
    assert_eq!(code, 0, "{out}");

    // Both pinned in the lock beside the config, to the pushed digests.
    let lock = site.lock();
    for reference in [&tag, &by_digest] {
        let pin = lock
            .get(reference)
            .unwrap_or_else(|| panic!("{reference} pinned: {lock:?}"));
        assert_eq!(pin.manifest, pushed["manifest"]);
        assert_eq!(pin.component, pushed["component"]);
    }
    // Cached once, under its digest, the same bytes.
    let hex = pushed["component"]
        .as_str()
        .unwrap()
        .strip_prefix("sha256:")
        .unwrap();
    assert_eq!(site.cached(), vec![format!("{hex}.wasm")]);
    assert_eq!(
        sha256_of(&site.path().join(format!("cache/oci/sha256/{hex}.wasm"))),
        pushed["component"]
    );

    // `plugin check` names where it came from.
    let (code, out, err) = site.run(&["plugin", "check", "echo.toml"]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains(&format!("component: {tag} (sha256:")), "{out}");
}

#[test]
fn a_registry_that_is_down_leaves_pulled_plugins_loading() {
    let mut registry = Registry::start();
    let tag = registry.reference("glovebox/echo:down");
    let site = Site::new(&[("echo.toml", &tag, "echo")], "");
    push(&site, Path::new(plugins::TOOL_ECHO), &tag);
    let (code, out) = site.call("echo.echo");
    assert_eq!(code, 0, "{out}");
    let lock = std::fs::read(site.path().join(LOCK_FILE)).unwrap();

    registry.stop();
    let (code, out) = site.call("echo.echo");
    assert_eq!(code, 0, "with the registry down: {out}");
    assert!(out.contains("hi"), "{out}");
    let (code, out, err) = site.run(&["plugin", "pull"]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("(cached)"), "{out}");

    // What is not cached cannot come: the error names the registry, the
    // reference and what to do; the lock is left as it was.
    for name in site.cached() {
        std::fs::remove_file(site.path().join("cache/oci/sha256").join(name)).unwrap();
    }
    let (code, out) = site.call("echo.echo");
    assert_ne!(code, 0, "{out}");
    assert!(
        out.contains(&format!("registry `127.0.0.1:{}`", registry.port)),
        "{out}"
    );
    assert!(out.contains(&tag), "{out}");
    assert!(out.contains("reachable"), "{out}");
    assert_eq!(std::fs::read(site.path().join(LOCK_FILE)).unwrap(), lock);
}

#[test]
fn a_tampered_blob_is_refused_and_nothing_is_kept() {
    let registry = Registry::start();
    let tag = registry.reference("glovebox/echo:tampered");
    let site = Site::new(&[("echo.toml", &tag, "echo")], "");
    let pushed = push(&site, Path::new(plugins::TOOL_ECHO), &tag);
    // One byte changed in the registry's own copy, its size kept.
    let blob = registry.blob(pushed["component"].as_str().unwrap());
    let mut bytes = std::fs::read(&blob).unwrap();
    let middle = bytes.len() / 2;
    bytes[middle] ^= 0xff;
    std::fs::write(&blob, bytes).unwrap();

    let (code, out) = site.call("echo.echo");
    assert_ne!(code, 0, "{out}");
    assert!(out.contains("wrong digest"), "{out}");
    assert!(out.contains(&tag), "{out}");
    assert!(out.contains(pushed["component"].as_str().unwrap()), "{out}");
    assert!(site.cached().is_empty(), "{:?}", site.cached());
    assert_eq!(site.lock(), OciLock::default());
}

#[test]
fn a_tag_that_moves_changes_nothing_until_pull_update() {
    let registry = Registry::start();
    let tag = registry.reference("glovebox/echo:latest");
    let site = Site::new(&[("echo.toml", &tag, "echo")], "");
    let first = push(&site, Path::new(plugins::TOOL_ECHO), &tag);
    let (code, out) = site.call("echo.echo");
    assert_eq!(code, 0, "{out}");

    let second = push(&site, &echo_variant(site.path()), &tag);
    assert_ne!(first["component"], second["component"]);
    let (code, out) = site.call("echo.echo");
    assert_eq!(code, 0, "{out}");
    assert_eq!(
        site.lock().get(&tag).unwrap().component,
        first["component"],
        "a moved tag does not move the pin"
    );

    let (code, out, err) = site.run(&["plugin", "pull", "--update", "--json"]);
    assert_eq!(code, 0, "{err}");
    let rows: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(rows[0]["component"], second["component"], "{out}");
    assert_eq!(rows[0]["moved_from"], first["manifest"], "{out}");
    assert_eq!(rows[0]["fetched"], true, "{out}");
    assert_eq!(site.lock().get(&tag).unwrap().manifest, second["manifest"]);
    let (code, out) = site.call("echo.echo");
    assert_eq!(code, 0, "{out}");
}

#[test]
fn a_signature_covers_the_pulled_component_and_a_moved_pin_is_refused() {
    let registry = Registry::start();
    let tag = registry.reference("glovebox/echo:signed");
    let site = Site::new(
        &[("echo.toml", &tag, "echo")],
        "[trust]\nkeys = [\"alice.pub\"]\n",
    );
    push(&site, Path::new(plugins::TOOL_ECHO), &tag);
    let (code, _, err) = site.run(&["plugin", "keygen", "alice"]);
    assert_eq!(code, 0, "{err}");
    // Pulled (and pinned) before it is signed; unsigned, it is refused.
    let (code, _, err) = site.run(&["plugin", "pull"]);
    assert_eq!(code, 0, "{err}");
    let (code, out) = site.call("echo.echo");
    assert_ne!(code, 0, "unsigned: {out}");
    let (code, _, err) = site.run(&["plugin", "sign", "echo.toml", "--key", "alice.key"]);
    assert_eq!(code, 0, "{err}");
    let (code, out) = site.call("echo.echo");
    assert_eq!(code, 0, "signed and trusted: {out}");

    // The tag moves to other bytes and the pin follows: the signature, over
    // the component it was made for, no longer holds.
    push(&site, &echo_variant(site.path()), &tag);
    let (code, _, err) = site.run(&["plugin", "pull", "--update"]);
    assert_eq!(code, 0, "{err}");
    let (code, out) = site.call("echo.echo");
    assert_ne!(code, 0, "{out}");
    assert!(out.contains("echo"), "{out}");
    assert!(out.to_lowercase().contains("sign"), "{out}");
}

#[test]
fn push_refuses_what_is_not_a_component_and_a_target_without_a_tag() {
    let site = Site::new(&[], "");
    // Refused before any registry is asked: nothing listens on port 9.
    let (code, _, err) = site.run(&[
        "plugin",
        "push",
        plugins::HOSTILE_CORE_MODULE,
        "oci://127.0.0.1:9/glovebox/core:1",
    ]);
    assert_ne!(code, 0);
    assert!(err.contains("a core module"), "{err}");
    assert!(err.contains("wasm32-wasip2"), "{err}");
    let digest = format!("sha256:{}", "1".repeat(64));
    let (code, _, err) = site.run(&[
        "plugin",
        "push",
        plugins::TOOL_ECHO,
        &format!("oci://127.0.0.1:9/glovebox/echo@{digest}"),
    ]);
    assert_ne!(code, 0);
    assert!(err.contains("push to a tag"), "{err}");
    let (code, _, err) = site.run(&["plugin", "push", plugins::TOOL_ECHO, "oci://echo"]);
    assert_ne!(code, 0);
    assert!(err.contains("no repository"), "{err}");
}
