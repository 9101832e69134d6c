//! Per-session scratch directories: where generated code keeps its files.
//!
//! A plugin whose manifest sets `scratch = "/scratch"` sees, at that guest path, a
//! read-write directory of the calling session: `<data_dir>/scratch/<session id>`.
//! Successive calls of one session see what earlier calls wrote (like a notebook);
//! the directory survives pauses, resumes and restarts, and is removed when the
//! session is archived. Sessions never see each other's directories. A call made
//! outside any session gets a throwaway directory, removed when the call ends.
//!
//! What a session's directory holds is also read from outside, by the
//! session's owner or an operator (`files.rs`): a listing and a file's bytes.
//! A result too large to answer whole is kept beside it (`outputs.rs`),
//! under the same quota.

use std::collections::HashMap;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};

mod files;
mod outputs;

pub use files::{CHUNK_MAX, Chunk, Entry, EntryKind, Listing, ReadError, SCAN_MAX};
pub use outputs::{OUTPUTS_DIR, StoreError};

/// A scratch directory with more entries than this counts as full: measuring
/// it would cost every call of the session a long walk.
pub const MAX_ENTRIES: usize = 100_000;

/// The root of all scratch directories of one data dir.
#[derive(Clone, Debug)]
pub struct ScratchDirs {
    root: PathBuf,
    quota: u64,
    /// Bytes reserved by the running calls of each session.
    running: Arc<Mutex<HashMap<String, u64>>>,
}

/// The scratch directory of one call: a session's own, or a throwaway one,
/// and how full it was when the call started.
pub struct CallScratch {
    place: Place,
    quota: u64,
    used: u64,
    _reserved: Option<Reservation>,
}

/// Bytes of a session's quota held by one running call, given back when it ends.
struct Reservation {
    running: Arc<Mutex<HashMap<String, u64>>>,
    session: String,
    bytes: u64,
}

impl Drop for Reservation {
    fn drop(&mut self) {
        let mut running = self.running.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(held) = running.get_mut(&self.session) {
            *held = held.saturating_sub(self.bytes);
            if *held == 0 {
                running.remove(&self.session);
            }
        }
    }
}

enum Place {
    Session(PathBuf),
    Throwaway(tempfile::TempDir),
}

impl CallScratch {
    pub fn path(&self) -> &Path {
        match &self.place {
            Place::Session(p) => p,
            Place::Throwaway(t) => t.path(),
        }
    }

    /// The session's quota and the bytes its directory held when the call
    /// started, with what other running calls of the session reserved.
    pub fn room(&self) -> (u64, u64) {
        (self.quota, self.used)
    }
}

impl ScratchDirs {
    /// The scratch directories under `root`, with the default quota.
    pub fn new(root: PathBuf) -> ScratchDirs {
        ScratchDirs {
            root,
            quota: crate::manifest::RuntimeConfig::default().scratch_quota,
            running: Arc::default(),
        }
    }

    /// The same directories with `runtime.scratch_quota` = `quota` bytes.
    pub fn with_quota(self, quota: u64) -> ScratchDirs {
        ScratchDirs { quota, ..self }
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Where the scratch directory of `session_id` is (it may not exist yet).
    pub fn path_of(&self, session_id: &str) -> io::Result<PathBuf> {
        if !valid_session_id(session_id) {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!(
                    "`{}` cannot name a scratch directory: session ids are letters, digits, `-`, `_` and `.`, not starting with `.`",
                    session_id.escape_debug()
                ),
            ));
        }
        Ok(self.root.join(session_id))
    }

    /// The directory for a call of `session` (see `CallContext::session`): the
    /// session's own (created on first use), or a throwaway one for a call outside
    /// any session (`None`), measured against the quota; a session's call
    /// reserves up to `write` bytes (its `limits.write`) of what is left
    /// until it ends.
    pub fn for_call(&self, session: Option<&str>, write: u64) -> io::Result<CallScratch> {
        create_private_dir(&self.root)?;
        let Some(session_id) = session else {
            let dir = tempfile::Builder::new()
                .prefix(".call-")
                .tempdir_in(&self.root)?;
            return Ok(CallScratch {
                place: Place::Throwaway(dir),
                quota: self.quota,
                used: 0,
                _reserved: None,
            });
        };
        let dir = self.path_of(session_id)?;
        create_private_dir(&dir)?;
        let on_disk = self.session_bytes(session_id)?;
        let mut running = self.running.lock().unwrap_or_else(PoisonError::into_inner);
        let held = running.entry(session_id.to_string()).or_default();
        let used = on_disk.saturating_add(*held);
        let bytes = write.min(self.quota.saturating_sub(used));
        *held += bytes;
        drop(running);
        Ok(CallScratch {
            place: Place::Session(dir),
            quota: self.quota,
            used,
            _reserved: Some(Reservation {
                running: self.running.clone(),
                session: session_id.to_string(),
                bytes,
            }),
        })
    }

    /// Removes the scratch directory of `session_id` and its stored
    /// outputs; `false` if it had neither.
    pub fn remove(&self, session_id: &str) -> io::Result<bool> {
        let mut removed = false;
        for dir in [self.path_of(session_id)?, self.outputs_of(session_id)?] {
            match std::fs::remove_dir_all(&dir) {
                Ok(()) => removed = true,
                Err(e) if e.kind() == io::ErrorKind::NotFound => {}
                Err(e) => return Err(e),
            }
        }
        Ok(removed)
    }

    /// Session ids that have a scratch directory or stored outputs (by
    /// name, each once), and throwaway directories a killed host left
    /// behind (names starting with `.call-`).
    pub fn list(&self) -> io::Result<(Vec<String>, Vec<PathBuf>)> {
        let mut sessions = std::collections::BTreeSet::new();
        let mut leftovers = Vec::new();
        for (dir, top) in [
            (self.root.clone(), true),
            (self.root.join(OUTPUTS_DIR), false),
        ] {
            let entries = match std::fs::read_dir(&dir) {
                Ok(e) => e,
                Err(e) if e.kind() == io::ErrorKind::NotFound => continue,
                Err(e) => return Err(e),
            };
            for entry in entries {
                let entry = entry?;
                let name = entry.file_name().to_string_lossy().into_owned();
                if top && name.starts_with(".call-") {
                    leftovers.push(entry.path());
                } else if valid_session_id(&name) {
                    sessions.insert(name);
                }
            }
        }
        Ok((sessions.into_iter().collect(), leftovers))
    }
}

fn valid_session_id(id: &str) -> bool {
    !id.is_empty()
        && id.len() <= 128
        && !id.starts_with('.')
        && id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'))
}

/// Creates `dir` if needed, readable by this user only.
fn create_private_dir(dir: &Path) -> io::Result<()> {
    let mut b = std::fs::DirBuilder::new();
    b.recursive(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::DirBuilderExt;
        b.mode(0o700);
    }
    b.create(dir)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sandbox::quota::ENTRY_BYTES;

    #[test]
    fn session_ids_cannot_escape_the_root() {
        let dirs = ScratchDirs::new(PathBuf::from("/tmp/x"));
        for bad in ["", "..", ".", "../a", "a/b", ".hidden", "a\0b", "a b"] {
            assert!(dirs.path_of(bad).is_err(), "{bad:?} was accepted");
        }
        assert_eq!(
            dirs.path_of("s-01HX.a_b").unwrap(),
            PathBuf::from("/tmp/x/s-01HX.a_b")
        );
    }

    #[test]
    fn calls_of_one_session_running_at_once_share_its_quota() {
        let tmp = tempfile::tempdir().unwrap();
        let dirs = ScratchDirs::new(tmp.path().join("scratch")).with_quota(10_000);
        std::fs::create_dir_all(tmp.path().join("scratch/s-1")).unwrap();
        std::fs::write(tmp.path().join("scratch/s-1/f"), [0u8; 10]).unwrap();
        // The file holds its 10 bytes and its entry's block.
        let used = 10 + ENTRY_BYTES;
        // The first may write 60 of what is left; the second sees it reserved.
        let first = dirs.for_call(Some("s-1"), 60).unwrap();
        assert_eq!(first.room(), (10_000, used));
        let second = dirs.for_call(Some("s-1"), 60).unwrap();
        assert_eq!(second.room(), (10_000, used + 60));
        // Another session's calls are not held to it.
        assert_eq!(dirs.for_call(Some("s-2"), 60).unwrap().room(), (10_000, 0));
        drop(first);
        drop(second);
        assert_eq!(
            dirs.for_call(Some("s-1"), 60).unwrap().room(),
            (10_000, used)
        );
    }

    #[test]
    fn throwaway_dirs_go_away_and_session_dirs_stay() {
        let tmp = tempfile::tempdir().unwrap();
        let dirs = ScratchDirs::new(tmp.path().join("scratch"));
        let throwaway = dirs.for_call(None, 1).unwrap();
        let path = throwaway.path().to_path_buf();
        assert!(path.is_dir());
        drop(throwaway);
        assert!(!path.exists());

        let dir = dirs.for_call(Some("s-1"), 1).unwrap();
        std::fs::write(dir.path().join("f"), "x").unwrap();
        drop(dir);
        let dirs = dirs.with_quota(10_000);
        assert_eq!(
            dirs.for_call(Some("s-1"), 5).unwrap().room(),
            (10_000, 1 + ENTRY_BYTES)
        );
        assert!(tmp.path().join("scratch/s-1/f").is_file());
        assert_eq!(dirs.list().unwrap().0, vec!["s-1".to_string()]);
        assert!(dirs.remove("s-1").unwrap());
        assert!(!dirs.remove("s-1").unwrap());
    }
}
