//! The data dir lock: one glovebox process per data dir.
//!
//! An exclusive `flock` on `<dir>/LOCK`, held as long as the file stays open.
//! The holder writes its pid and start time into the file, so the process
//! that is refused can say who holds it. flock belongs to the open file, not
//! to the process: a second open in the same process is refused too, and the
//! kernel drops the lock when the holder dies, so a crash leaves no stale
//! lock behind.

use std::fs::{File, OpenOptions, TryLockError};
use std::io::{Read, Write};
use std::path::Path;
use std::time::SystemTime;

use crate::StorageError;

/// Creates `dir` if needed and takes its lock: how every backend's open begins.
pub(crate) fn create_and_lock(dir: &Path) -> Result<File, StorageError> {
    std::fs::create_dir_all(dir).map_err(|e| {
        StorageError::Io(format!("cannot create data dir `{}`: {e}", dir.display()))
    })?;
    lock_data_dir(dir)
}

/// Takes the lock on `dir` (which must exist) or says who holds it.
pub(crate) fn lock_data_dir(dir: &Path) -> Result<File, StorageError> {
    let path = dir.join("LOCK");
    let io = |what: &str, e: std::io::Error| {
        StorageError::Io(format!("cannot {what} `{}`: {e}", path.display()))
    };
    // Not truncated on open: the text belongs to whoever holds the lock.
    let mut file = OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .open(&path)
        .map_err(|e| io("open the lock file", e))?;
    match file.try_lock() {
        Ok(()) => {}
        Err(TryLockError::WouldBlock) => {
            let mut text = String::new();
            // The holder may be between truncating and writing: then we name nobody.
            let holder = file
                .read_to_string(&mut text)
                .ok()
                .map(|_| text.trim().to_string())
                .filter(|t| !t.is_empty());
            return Err(StorageError::Locked {
                dir: dir.display().to_string(),
                holder,
            });
        }
        Err(TryLockError::Error(e)) => return Err(io("lock", e)),
    }
    let holder = format!(
        "pid {}, started {}\n",
        std::process::id(),
        humantime::format_rfc3339_seconds(SystemTime::now())
    );
    file.set_len(0)
        .and_then(|()| file.write_all(holder.as_bytes()))
        .map_err(|e| io("write the lock file", e))?;
    Ok(file)
}

/// The data dir lock held on its own, without a store: for an operator
/// command that replaces the store under it (a restore).
pub struct DirLock {
    _file: File,
}

impl DirLock {
    /// Takes the lock on `dir` (which must exist), or fails with
    /// [`StorageError::Locked`] naming its holder.
    pub fn take(dir: &Path) -> Result<DirLock, StorageError> {
        lock_data_dir(dir).map(|file| DirLock { _file: file })
    }
}
