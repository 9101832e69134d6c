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
use std::io::ErrorKind;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, PoisonError};

pub(super) struct StrictSync {
    db_log: File,
    blobs_dir: PathBuf,
    /// Blob files already synced. Blobs are written once and never changed.
    synced_blobs: Mutex<HashSet<OsString>>,
}

fn sync_path(path: &Path) -> Result<(), String> {
    File::open(path)
        .and_then(|f| f.sync_all())
        .map_err(|e| format!("cannot fsync `{}`: {e}", path.display()))
}

impl StrictSync {
    /// Opens the files to sync and makes everything sled created so far durable,
    /// entries in `data_dir` and `sled_dir` included.
    pub(super) fn open(data_dir: &Path, sled_dir: &Path) -> Result<StrictSync, String> {
        let db_path = sled_dir.join("db");
        let db_log = File::open(&db_path)
            .map_err(|e| format!("cannot open `{}`: {e}", db_path.display()))?;
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
    pub(super) fn sync(&self) -> Result<(), String> {
        self.db_log
            .sync_data()
            .map_err(|e| format!("cannot fdatasync sled's log: {e}"))?;
        self.sync_blobs()
    }

    fn sync_blobs(&self) -> Result<(), String> {
        let entries = std::fs::read_dir(&self.blobs_dir)
            .map_err(|e| format!("cannot list `{}`: {e}", self.blobs_dir.display()))?;
        let mut synced = self
            .synced_blobs
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        let mut present = HashSet::new();
        let mut new_files = false;
        for entry in entries {
            let entry =
                entry.map_err(|e| format!("cannot list `{}`: {e}", self.blobs_dir.display()))?;
            let name = entry.file_name();
            if !synced.contains(&name) {
                match File::open(entry.path()).and_then(|f| f.sync_data()) {
                    Ok(()) => new_files = true,
                    // Garbage-collected by sled between listing and opening.
                    Err(e) if e.kind() == ErrorKind::NotFound => continue,
                    Err(e) => {
                        return Err(format!(
                            "cannot fdatasync `{}`: {e}",
                            entry.path().display()
                        ));
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
