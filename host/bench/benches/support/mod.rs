//! Helpers shared by the benches. Each bench is a crate of its own that
//! includes this module (`mod support;`) and uses part of it.
#![allow(dead_code)]

pub mod append;
pub mod calls;
pub mod cpu;
pub mod mcp;
pub mod resume;
pub mod serve;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use glovebox::Sessions;
use glovebox::session::{Role, StartSession};
use glovebox::storage::{Backend, Durability, SledStore, SqliteStore, Storage};

/// A built plugin or hook component, by crate name with underscores.
pub fn artifact(name: &str) -> PathBuf {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../plugins/target/wasm32-wasip2/release")
        .join(format!("{name}.wasm"));
    assert!(
        path.exists(),
        "{} is missing: run `cargo test --no-run` first to build the plugins",
        path.display()
    );
    path
}

/// Every backend, in the order the benches print them (sled first: the
/// issue's goals are stated against it).
pub const BACKENDS: [Backend; 2] = [Backend::Sled, Backend::Sqlite];

/// A store of either backend, kept by its concrete type: the group-commit
/// counter is not part of the `Storage` trait.
#[derive(Clone)]
pub enum Store {
    Sled(Arc<SledStore>),
    Sqlite(Arc<SqliteStore>),
}

impl Store {
    pub fn open(dir: &Path, backend: Backend, durability: Durability) -> Store {
        match backend {
            Backend::Sled => Store::Sled(Arc::new(
                SledStore::open(dir, durability).expect("open sled store"),
            )),
            Backend::Sqlite => Store::Sqlite(Arc::new(
                SqliteStore::open(dir, durability).expect("open sqlite store"),
            )),
        }
    }

    pub fn storage(&self) -> Arc<dyn Storage> {
        match self {
            Store::Sled(s) => s.clone(),
            Store::Sqlite(s) => s.clone(),
        }
    }

    /// Commits that made writes durable so far.
    pub fn flush_count(&self) -> u64 {
        match self {
            Store::Sled(s) => s.flush_count(),
            Store::Sqlite(s) => s.flush_count(),
        }
    }
}

/// The number in the environment variable `key`, or `default` where it is
/// unset or not a number of that type.
pub fn env_number<T: std::str::FromStr>(key: &str, default: T) -> T {
    std::env::var(key)
        .ok()
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or(default)
}

/// Starts a session of its own for a bench; returns its id.
pub fn start_session(sessions: &Sessions) -> String {
    sessions
        .start(StartSession {
            role: Role::Workagent,
            project: "bench".into(),
            name: None,
            tags: Vec::new(),
            expected_duration: None,
            budget: Default::default(),
            completion: Default::default(),
        })
        .expect("start session")
        .header
        .id
}
