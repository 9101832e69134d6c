//! Tests of the session domain on the real storage (sled in a tempdir).

mod access;
mod cache;
mod checkpoints;
mod children;
mod clock;
mod closing;
mod completion;
pub(crate) mod counting;
mod fixtures;
mod handoffs;
mod index;
mod integrity;
mod keyed;
mod leases;
mod lifecycle;
mod names;
mod quotas;
mod recovery;
#[cfg(feature = "schemars")]
mod schemas;

use std::path::Path;
use std::sync::Arc;

use super::*;
use crate::manifest::{Principal, PrincipalKind};
use crate::storage::sled_raw;
use crate::storage::{Durability, SledStore, Storage};

/// A data dir with a store and the sessions service over it.
struct Env {
    dir: tempfile::TempDir,
    store: Arc<SledStore>,
    sessions: Sessions,
}

impl Env {
    fn new() -> Env {
        Env::with_config(SessionsConfig::default())
    }

    fn with_config(config: SessionsConfig) -> Env {
        Env::open_in(tempfile::tempdir().expect("tempdir"), config)
    }

    /// The store in `dir` and the service over it.
    fn open_in(dir: tempfile::TempDir, config: SessionsConfig) -> Env {
        let store = open(dir.path());
        let sessions = Sessions::with_config(store.clone(), config);
        Env {
            dir,
            store,
            sessions,
        }
    }

    /// Drops the service and the store (as a crash would, minus the crash) and
    /// opens both again: the new service has an empty cache.
    fn reopen(self, config: SessionsConfig) -> Env {
        self.offline(config, |_| {})
    }

    /// Closes everything and hands the data dir to `f` (which may edit the raw
    /// sled database), then opens it again.
    fn offline(self, config: SessionsConfig, f: impl FnOnce(&Path)) -> Env {
        let Env {
            dir,
            store,
            sessions,
        } = self;
        drop(sessions);
        drop(store);
        f(dir.path());
        Env::open_in(dir, config)
    }

    fn start(&self, name: &str, role: Role) -> SessionState {
        start_in(&self.sessions, name, role)
    }

    fn note(&self, session: &str, text: &str) -> Event {
        self.sessions
            .append(
                session,
                EventKind::Note {
                    text: text.to_string(),
                },
            )
            .expect("note")
    }

    /// A whole call: requested, started, finished.
    fn call(&self, session: &str, call_id: &str, outcome: &str) {
        self.request(session, call_id);
        self.begin(session, call_id, true, &format!("key-{call_id}"));
        let finished = EventKind::CallFinished {
            call_id: call_id.to_string(),
            outcome: outcome.to_string(),
            error: (outcome != "ok").then(|| "it failed".to_string()),
            output: Some("{}".to_string()),
            output_digest: digest(b"{}"),
            metering: CallMetering {
                wall_us: 5,
                fuel: Some(100),
                peak_memory_bytes: 65536,
                bytes_in: 2,
                bytes_out: 2,
                cost_micros: 0,
            },
        };
        self.sessions
            .append(session, finished)
            .expect("call_finished");
    }

    fn request(&self, session: &str, call_id: &str) {
        let kind = EventKind::CallRequested {
            call_id: call_id.to_string(),
            tool: "echo.echo".to_string(),
            input_digest: digest(b"{}"),
            input: inline_if_small("{}"),
            job_id: None,
            trace_id: None,
            parent_call: None,
        };
        self.sessions.append(session, kind).expect("call_requested");
    }

    fn begin(&self, session: &str, call_id: &str, idempotent: bool, key: &str) {
        let kind = EventKind::CallStarted {
            call_id: call_id.to_string(),
            tool: "echo.echo".to_string(),
            idempotency_key: key.to_string(),
            idempotent,
            tool_digest: digest(b"wasm"),
            cost_micros: 0,
        };
        self.sessions.append(session, kind).expect("call_started");
    }
}

/// An agent with `roles`, in `projects`, with no pinned tags.
fn agent(name: &str, roles: &[Role], projects: &[&str]) -> Principal {
    Principal {
        name: name.to_string(),
        kind: PrincipalKind::Agent,
        roles: roles.to_vec(),
        projects: projects.iter().map(|p| p.to_string()).collect(),
        tags: Vec::new(),
        approve_by: Default::default(),
        card: Default::default(),
        toolsets: Vec::new(),
        read_only: false,
    }
}

/// That `r` is the refusal of a session `key` not found.
#[track_caller]
fn assert_not_found<T: std::fmt::Debug>(r: Result<T, SessionError>, key: &str) {
    match r {
        Err(SessionError::NotFound(k)) => assert_eq!(k, key),
        other => panic!("expected not found for `{key}`, got {other:?}"),
    }
}

/// A workagent in every project.
fn workagent(name: &str) -> Principal {
    agent(name, &[Role::Workagent], &["*"])
}

/// What spawns the workagent child `kid` with `task`: untagged, no expected
/// duration, budget or completion condition of its own.
fn spawn_kid(task: Handoff) -> SpawnChild {
    SpawnChild {
        role: Role::Workagent,
        name: Some("kid".into()),
        tags: vec![],
        expected_duration: None,
        budget: Default::default(),
        task,
        completion: Default::default(),
    }
}

/// What starts the session `name` of `role` in project `demo`: untagged, no
/// expected duration, budget or completion condition of its own.
fn start_request(name: &str, role: Role) -> StartSession {
    StartSession {
        role,
        project: "demo".to_string(),
        name: Some(name.to_string()),
        tags: vec![],
        expected_duration: None,
        budget: Default::default(),
        completion: Default::default(),
    }
}

/// Starts the session `name` of `role` in project `demo` (see [`start_request`]).
fn start_in(sessions: &Sessions, name: &str, role: Role) -> SessionState {
    sessions
        .start(start_request(name, role))
        .expect("start session")
}

fn open(dir: &Path) -> Arc<SledStore> {
    Arc::new(SledStore::open(dir, Durability::Flush).expect("open store"))
}

/// Checkpoint seqs of a session, newest first.
fn checkpoint_seqs(store: &dyn Storage, id: &str) -> Vec<u64> {
    checkpoint::seqs(store, id).expect("list checkpoints")
}

/// Edits the streams of a closed data dir in the raw sled database, as damage
/// on disk would; see the layout in `storage::sled_store`. Each event of a
/// session is one append, so one record keyed by the event's sequence.
fn with_raw_streams(dir: &Path, f: impl FnOnce(&sled::Tree)) {
    // The store was just dropped; its sled threads may hold the file lock a
    // moment longer.
    let start = std::time::Instant::now();
    let db = loop {
        match sled::Config::new().path(dir.join("sled")).open() {
            Ok(db) => break db,
            Err(_) if start.elapsed() < std::time::Duration::from_secs(5) => {
                std::thread::sleep(std::time::Duration::from_millis(10));
            }
            Err(e) => panic!("open raw sled: {e}"),
        }
    };
    let streams = db.open_tree(sled_raw::STREAMS_TREE).unwrap();
    f(&streams);
    db.flush().unwrap();
}

/// Replaces the bytes of event `seq` of session `id` in its stored record
/// with `f` of them; the record itself stays well-formed.
fn edit_raw_event(streams: &sled::Tree, id: &str, seq: u64, f: impl FnOnce(Vec<u8>) -> Vec<u8>) {
    let key = sled_raw::record_key(id, seq);
    let record = streams.get(&key).unwrap().expect("the event's record");
    let entries = sled_raw::decode_record(&record).expect("a record that decodes");
    let [event] = <[Vec<u8>; 1]>::try_from(entries).expect("one event per record");
    streams
        .insert(key, sled_raw::encode_record(&[f(event)]))
        .unwrap();
}

/// Replaces text `from` with `to` in event `seq` of session `id`.
fn alter_raw_event(streams: &sled::Tree, id: &str, seq: u64, from: &str, to: &str) {
    edit_raw_event(streams, id, seq, |event| {
        let text = String::from_utf8(event).expect("a JSON event");
        assert!(text.contains(from), "{text}");
        text.replace(from, to).into_bytes()
    });
}
