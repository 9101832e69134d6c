//! `fdatasync` of what sled 0.34 writes, for [`Durability::Strict`].
//!
//! sled's `flush()` ends in `sync_file_range` on its log: the data reaches the
//! kernel's writeback, which survives a killed process but not a power cut
//! (no disk cache flush, no file size in the inode). What sled 0.34.7 writes
//! under its dir (read from its source):
//!
//! - `db`: the log, the only file every write goes to. Synced after every flush.
//! - `conf`: written once when the db is created, never synced by sled. Synced
//!   once at open.
//! - `blobs/<lsn>`: one file per value too large for a log segment (over ~128
//!   KiB with the default 512 KiB segments), written with plain `write` and
//!   never synced by sled, not even by `flush()`. New ones are synced with the
//!   flush that makes them durable, and then their dir.
//! - `snap.<lsn>`: snapshots, which sled itself `fsync`s; recovery can always
//!   rebuild them from the log, so they need nothing from us.
//!
//! Dir entries of files created at open are made durable at open.
//!
//! [`Durability::Strict`]: super::Durability::Strict

use std::collections::HashSet;
use std::ffi::OsString;
use std::fs::File;
use std::io::{self, ErrorKind};
use std::path::{Path, PathBuf};
use std::sync::{Mutex, PoisonError};

pub(super) struct StrictSync {
    db_log: File,
    blobs_dir: PathBuf,
    /// Blob files already synced. Blobs are written once and never changed.
    synced_blobs: Mutex<HashSet<OsString>>,
}

/// What could not be made durable, and the file or dir it is. It becomes the
/// reason of a failed open or flush, which says what to do.
#[derive(thiserror::Error, Debug)]
pub(super) enum SyncError {
    /// sled's log could not be opened for syncing.
    #[error("cannot open `{}`: {error}", .path.display())]
    Open { path: PathBuf, error: io::Error },
    /// A file or dir could not be `fsync`ed.
    #[error("cannot fsync `{}`: {error}", .path.display())]
    Fsync { path: PathBuf, error: io::Error },
    /// sled's log could not be `fdatasync`ed.
    #[error("cannot fdatasync sled's log: {0}")]
    Log(io::Error),
    /// The blobs dir could not be listed.
    #[error("cannot list `{}`: {error}", .path.display())]
    List { path: PathBuf, error: io::Error },
    /// A blob file could not be `fdatasync`ed.
    #[error("cannot fdatasync `{}`: {error}", .path.display())]
    Blob { path: PathBuf, error: io::Error },
}

fn sync_path(path: &Path) -> Result<(), SyncError> {
    File::open(path)
        .and_then(|f| f.sync_all())
        .map_err(|error| SyncError::Fsync {
            path: path.to_path_buf(),
            error,
        })
}

impl StrictSync {
    /// Opens the files to sync and makes everything sled created so far durable,
    /// entries in `data_dir` and `sled_dir` included.
    pub(super) fn open(data_dir: &Path, sled_dir: &Path) -> Result<StrictSync, SyncError> {
        let db_path = sled_dir.join("db");
        let db_log = File::open(&db_path).map_err(|error| SyncError::Open {
            path: db_path.clone(),
            error,
        })?;
        let strict = StrictSync {
            db_log,
            blobs_dir: sled_dir.join("blobs"),
            synced_blobs: Mutex::new(HashSet::new()),
        };
        sync_path(&sled_dir.join("conf"))?;
        strict.sync()?;
        sync_path(sled_dir)?;
        sync_path(data_dir)?;
        Ok(strict)
    }

    /// Syncs the log and every blob not yet synced. Called right after
    /// `db.flush()`, by one flush leader at a time.
    pub(super) fn sync(&self) -> Result<(), SyncError> {
        self.db_log.sync_data().map_err(SyncError::Log)?;
        self.sync_blobs()
    }

    fn sync_blobs(&self) -> Result<(), SyncError> {
        let list_failed = |error| SyncError::List {
            path: self.blobs_dir.clone(),
            error,
        };
        let entries = std::fs::read_dir(&self.blobs_dir).map_err(list_failed)?;
        let mut synced = self
            .synced_blobs
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        let mut present = HashSet::new();
        let mut new_files = false;
        for entry in entries {
            let entry = entry.map_err(list_failed)?;
            let name = entry.file_name();
            if !synced.contains(&name) {
                match File::open(entry.path()).and_then(|f| f.sync_data()) {
                    Ok(()) => new_files = true,
                    // Garbage-collected by sled between listing and opening.
                    Err(e) if e.kind() == ErrorKind::NotFound => continue,
                    Err(error) => {
                        return Err(SyncError::Blob {
                            path: entry.path(),
                            error,
                        });
                    }
                }
            }
            present.insert(name);
        }
        *synced = present;
        if new_files {
            sync_path(&self.blobs_dir)?;
        }
        Ok(())
    }
}
