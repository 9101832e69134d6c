//! Outputs kept whole: a tool's result that passes its `limits.output` in a
//! session (up to its `limits.stored_output`) is stored here, and the call
//! answers with its head and where the whole is, instead of failing.
//!
//! Where: `<scratch root>/.outputs/<session id>/<call id>.json`, beside the
//! sessions' scratch directories and outside each of them, so no guest
//! reaches a stored output (a tool granted the scratch directory cannot
//! rewrite another call's result). What is stored counts against the
//! session's scratch quota, as its files do, and goes with them when the
//! session is archived. Written to a temporary file, synced and renamed:
//! a stored output is whole or absent.

use std::io::{self, Read, Seek, SeekFrom, Write};
use std::path::PathBuf;
use std::sync::PoisonError;

use super::files::{CHUNK_MAX, Chunk, ReadError};
use super::{Reservation, ScratchDirs, create_private_dir, valid_session_id};
use crate::sandbox::quota::{ENTRY_BYTES, dir_bytes};

/// The folder of the stored outputs, under the scratch root. Its name
/// starts with `.`, which no session id does.
pub const OUTPUTS_DIR: &str = ".outputs";

/// Why an output could not be stored.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error(
        "the session's scratch quota (`runtime.scratch_quota`, {quota} bytes) has {left} bytes left and the output is {size} bytes: archive sessions or remove files from this one's scratch directory"
    )]
    NoRoom { quota: u64, left: u64, size: u64 },
    #[error("cannot store the output under `{dir}`: {source}")]
    Io {
        dir: PathBuf,
        #[source]
        source: io::Error,
    },
}

impl ScratchDirs {
    /// Where the outputs of `session_id` are stored.
    pub(super) fn outputs_of(&self, session_id: &str) -> io::Result<PathBuf> {
        self.path_of(session_id)?;
        Ok(self.root.join(OUTPUTS_DIR).join(session_id))
    }

    /// Stores `bytes`, the whole output of call `call_id` of `session_id`,
    /// within the session's quota (what its directory and stored outputs
    /// hold, and what its running calls reserved).
    pub fn store_output(
        &self,
        session_id: &str,
        call_id: &str,
        bytes: &[u8],
    ) -> Result<(), StoreError> {
        let dir = self
            .outputs_of(session_id)
            .and_then(|dir| {
                if valid_session_id(call_id) {
                    Ok(dir)
                } else {
                    Err(io::Error::new(
                        io::ErrorKind::InvalidInput,
                        format!("`{}` cannot name a stored output", call_id.escape_debug()),
                    ))
                }
            })
            .map_err(|source| StoreError::Io {
                dir: self.root.join(OUTPUTS_DIR),
                source,
            })?;
        let io = |source| StoreError::Io {
            dir: dir.clone(),
            source,
        };
        create_private_dir(&dir).map_err(io)?;
        let size = bytes.len() as u64 + ENTRY_BYTES;
        let used = self.session_bytes(session_id).map_err(io)?;
        let mut running = self.running.lock().unwrap_or_else(PoisonError::into_inner);
        let held = running.entry(session_id.to_string()).or_default();
        let taken = used.saturating_add(*held);
        if taken.saturating_add(size) > self.quota {
            let left = self.quota.saturating_sub(taken);
            if *held == 0 {
                running.remove(session_id);
            }
            return Err(StoreError::NoRoom {
                quota: self.quota,
                left,
                size,
            });
        }
        *held += size;
        drop(running);
        let _reserved = Reservation {
            running: self.running.clone(),
            session: session_id.to_string(),
            bytes: size,
        };
        let mut file = tempfile::Builder::new()
            .prefix(".part-")
            .tempfile_in(&dir)
            .map_err(io)?;
        file.write_all(bytes)
            .and_then(|()| file.as_file().sync_all())
            .map_err(io)?;
        file.persist(dir.join(format!("{call_id}.json")))
            .map_err(|e| io(e.error))?;
        std::fs::File::open(&dir)
            .and_then(|d| d.sync_all())
            .map_err(io)?;
        Ok(())
    }

    /// At most `length` bytes ([`CHUNK_MAX`] at the most) of the stored
    /// output of call `call_id` of `session_id`, from `offset`.
    pub fn read_output(
        &self,
        session_id: &str,
        call_id: &str,
        offset: u64,
        length: u64,
    ) -> Result<Chunk, ReadError> {
        let named = call_id.to_string();
        let not_found = || ReadError::NotFound {
            path: named.clone(),
        };
        if !valid_session_id(call_id) {
            return Err(not_found());
        }
        let dir = self.outputs_of(session_id).map_err(|_| not_found())?;
        let mut file = match std::fs::File::open(dir.join(format!("{call_id}.json"))) {
            Ok(file) => file,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Err(not_found()),
            Err(source) => {
                return Err(ReadError::Io {
                    path: named,
                    source,
                });
            }
        };
        let failed = |source| ReadError::Io {
            path: call_id.to_string(),
            source,
        };
        let size = file.metadata().map_err(failed)?.len();
        let offset = offset.min(size);
        let mut bytes = Vec::new();
        file.seek(SeekFrom::Start(offset))
            .and_then(|_| {
                (&mut file)
                    .take(length.min(CHUNK_MAX))
                    .read_to_end(&mut bytes)
            })
            .map_err(failed)?;
        Ok(Chunk {
            size,
            offset,
            bytes,
        })
    }

    /// What `session_id` holds on disk: its scratch directory and its
    /// stored outputs (a directory with too many entries counts as full).
    pub(super) fn session_bytes(&self, session_id: &str) -> io::Result<u64> {
        let mut total: u64 = 0;
        for dir in [self.path_of(session_id)?, self.outputs_of(session_id)?] {
            match dir_bytes(&dir, super::MAX_ENTRIES) {
                Ok(Some(bytes)) => total = total.saturating_add(bytes),
                Ok(None) => return Ok(self.quota),
                Err(e) if e.kind() == io::ErrorKind::NotFound => {}
                Err(e) => return Err(e),
            }
        }
        Ok(total)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_output_is_stored_whole_within_the_session_s_quota_and_read_back() {
        let tmp = tempfile::tempdir().unwrap();
        let dirs = ScratchDirs::new(tmp.path().join("scratch")).with_quota(12_000);
        let output = vec![b'x'; 3_000];
        dirs.store_output("s-1", "call-1", &output).unwrap();
        let stored = tmp.path().join("scratch/.outputs/s-1/call-1.json");
        assert_eq!(std::fs::read(&stored).unwrap(), output);
        let chunk = dirs.read_output("s-1", "call-1", 2_990, 100).unwrap();
        assert_eq!(
            (chunk.size, chunk.offset, chunk.bytes.len()),
            (3_000, 2_990, 10)
        );

        // It counts against the session's quota, for its calls too.
        let room = dirs.for_call(Some("s-1"), 0).unwrap().room();
        assert_eq!(room, (12_000, 3_000 + ENTRY_BYTES));
        let e = dirs
            .store_output("s-1", "call-2", &vec![b'y'; 7_000])
            .unwrap_err();
        assert!(matches!(e, StoreError::NoRoom { .. }), "{e:?}");
        assert!(e.to_string().contains("scratch quota"), "{e}");
        assert!(!tmp.path().join("scratch/.outputs/s-1/call-2.json").exists());
        // Another session's room is its own.
        dirs.store_output("s-2", "call-2", &vec![b'y'; 7_000])
            .unwrap();

        // Not there, or not a name: not found.
        for (session, call) in [
            ("s-1", "call-9"),
            ("s-1", "../s-2/call-2"),
            ("..", "call-1"),
        ] {
            assert!(
                matches!(
                    dirs.read_output(session, call, 0, 10),
                    Err(ReadError::NotFound { .. })
                ),
                "{session} {call}"
            );
        }

        // The outputs are listed and go with the session.
        let (sessions, _) = dirs.list().unwrap();
        assert_eq!(sessions, ["s-1", "s-2"]);
        assert!(dirs.remove("s-1").unwrap());
        assert!(!stored.exists());
        assert!(dirs.read_output("s-1", "call-1", 0, 10).is_err());
    }
}
