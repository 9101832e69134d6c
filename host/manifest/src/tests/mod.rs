//! Loading of `glovebox.toml` and plugin manifests where a case file cannot say it: what
//! a valid config parses to and how the API reads it, cases that need a directory made
//! or a file's mode changed, and the Rust API. A config or manifest in and a message out
//! is a case file of `tests/ui/` instead (`tests/ui.rs`, docs/contributing.md).

use std::fs;
use std::path::{Path, PathBuf};

use tempfile::TempDir;

use super::{ConfigError, HostConfig, Limits, PluginManifest};

mod budgets;
mod builds;
mod hooks;
mod host_config;
mod oauth;
mod owned;
mod plugin;
mod principals;
mod schedules;
#[cfg(feature = "schemars")]
mod schema_defaults;
mod storage;
mod workspaces;

/// A temporary directory with a component file `tool.wasm` in it.
struct Fixture {
    dir: TempDir,
}

pub(super) const BASE: &str = "name = \"files\"\ncomponent = \"tool.wasm\"\n";

impl Fixture {
    fn new() -> Fixture {
        let dir = tempfile::tempdir().unwrap();
        fs::write(dir.path().join("tool.wasm"), b"\0asm").unwrap();
        Fixture { dir }
    }

    fn path(&self, rel: &str) -> PathBuf {
        self.dir.path().join(rel)
    }

    fn write(&self, rel: &str, text: &str) -> PathBuf {
        let path = self.path(rel);
        fs::create_dir_all(path.parent().unwrap()).unwrap();
        fs::write(&path, text).unwrap();
        path
    }

    fn mkdir(&self, rel: &str) -> PathBuf {
        let path = self.path(rel);
        fs::create_dir_all(&path).unwrap();
        path
    }

    fn manifest(&self, text: &str) -> Result<PluginManifest, ConfigError> {
        let path = self.write("plugin.toml", text);
        PluginManifest::load(&path, &Limits::default())
    }

    fn host(&self, text: &str) -> Result<HostConfig, ConfigError> {
        let path = self.write("glovebox.toml", text);
        HostConfig::load(&path)
    }

    fn host_error(&self, text: &str) -> ConfigError {
        match self.host(text) {
            Ok(c) => panic!("expected an error for {text:?}, got {c:?}"),
            Err(e) => e,
        }
    }
}

/// Checks that `error` is about `file` and `key`, and that its message has `parts`.
#[track_caller]
fn assert_error(error: &ConfigError, file: &Path, key: &str, parts: &[&str]) {
    let message = error.to_string();
    assert!(
        message.starts_with(&format!("in `{}`: ", file.display())),
        "no file in: {message}"
    );
    assert_eq!(error.key(), Some(key), "{message}");
    assert!(
        message.contains(&format!("`{key}`")),
        "no key in: {message}"
    );
    for part in parts {
        assert!(message.contains(part), "no {part:?} in: {message}");
    }
    // After the key comes what to do, after a colon.
    let after_key = &message[message.find(&format!("`{key}`")).unwrap()..];
    let hint = after_key.split_once(": ").map_or("", |(_, hint)| hint);
    assert!(!hint.trim().is_empty(), "no hint in: {message}");
    assert_eq!(
        message.chars().next().unwrap(),
        'i',
        "messages are lowercase: {message}"
    );
}
