//! A backup of the SQLite store: a consistent copy made with `VACUUM INTO`
//! from a reader's connection, so writers go on, written under a temporary
//! name beside the target, synced, then linked into place.

use std::fs::File;
use std::path::{Path, PathBuf};

use super::{SqliteStore, sqlite_error};
use crate::StorageError;

impl SqliteStore {
    /// Writes a consistent copy of the store, as of the moment it starts,
    /// into a new database file at `path`, which must not exist. Works on a
    /// read-only store, and while writers go on (they do not wait for it).
    /// The copy is written under a temporary name beside `path`, synced, and
    /// then linked into place, so `path` never holds a partial copy. Open the
    /// copy by putting it at `sqlite/store.db` in an empty data dir.
    pub fn backup_to(&self, path: &Path) -> Result<(), StorageError> {
        self.commit.check()?;
        let exists = |path: &Path| {
            StorageError::Io(format!(
                "cannot back up `{}` into `{}`: the file exists: pick a new name, or remove it first",
                self.db_path.display(),
                path.display()
            ))
        };
        if path.symlink_metadata().is_ok() {
            return Err(exists(path));
        }
        let name = path.file_name().ok_or_else(|| {
            StorageError::Io(format!(
                "cannot back up into `{}`: it names no file",
                path.display()
            ))
        })?;
        let parent = match path.parent() {
            Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
            _ => PathBuf::from("."),
        };
        let mut tmp_name = std::ffi::OsString::from(".");
        tmp_name.push(name);
        tmp_name.push(format!(".partial-{}", std::process::id()));
        let tmp = parent.join(tmp_name);
        let tmp_str = tmp.to_str().ok_or_else(|| {
            StorageError::Io(format!(
                "cannot back up into `{}`: SQLite needs a UTF-8 path",
                path.display()
            ))
        })?;
        let io = |what: &str, p: &Path, e: std::io::Error| {
            StorageError::Io(format!("cannot {what} `{}`: {e}", p.display()))
        };
        // A partial copy left by an earlier backup that died.
        match std::fs::remove_file(&tmp) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                return Err(io("remove", &tmp, e));
            }
            _ => {}
        }
        let copied = self
            .readers
            .get()
            .and_then(|conn| {
                // VACUUM INTO is a consistent snapshot of its own, and refuses
                // to run inside a transaction: a read-only store's snapshot
                // (see `Pool::snapshot`) is ended for it, and taken again after.
                let pinned = !conn.is_autocommit();
                let run = || -> rusqlite::Result<()> {
                    if pinned {
                        conn.execute_batch("COMMIT")?;
                    }
                    let copied = conn.execute("VACUUM INTO ?1", [tmp_str]).map(|_| ());
                    if pinned {
                        conn.execute_batch("BEGIN DEFERRED")?;
                        conn.query_row("SELECT count(*) FROM sqlite_master", [], |r| {
                            r.get::<_, i64>(0)
                        })?;
                    }
                    copied
                };
                run().map_err(|e| sqlite_error(&self.db_path, "back up", e))
            })
            .and_then(|_| {
                File::open(&tmp)
                    .and_then(|f| f.sync_all())
                    .map_err(|e| io("fsync", &tmp, e))
            })
            .and_then(|()| match std::fs::hard_link(&tmp, path) {
                Ok(()) => Ok(()),
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => Err(exists(path)),
                Err(e) => Err(io("link the backup to", path, e)),
            });
        let removed = std::fs::remove_file(&tmp);
        copied?;
        removed.map_err(|e| io("remove", &tmp, e))?;
        File::open(&parent)
            .and_then(|f| f.sync_all())
            .map_err(|e| io("fsync", &parent, e))
    }
}
