//! What a killed process can leave in sled 0.34's dir that sled itself will
//! not open, moved aside before sled opens it.
//!
//! Found with the crash harness (`crash-loop`, `tests/crash/`) and read off
//! sled 0.34.7's source; `docs/durability.md` has the whole analysis.
//!
//! - **Unfinished snapshots.** At open, sled recovers by reading its newest
//!   snapshot and replaying the log after it, then writes a new snapshot to
//!   `snap.<lsn>.generating`, `fsync`s it and renames it to `snap.<lsn>`. But
//!   when it looks for the newest snapshot it takes every file whose name
//!   starts with `snap.`, `.generating` ones included, and `.generating` sorts
//!   after every finished name. A process killed between creating that file
//!   and renaming it (milliseconds at every start that has log to catch up
//!   on, the `fsync` included) leaves a torn snapshot that every later open
//!   reads as the newest one: its checksum fails and sled refuses the whole
//!   store with `Corruption { at: None }`. sled also opens that file without
//!   truncating it, so a stale one it writes over can be renamed into place
//!   with the old tail still in it, corrupting a finished snapshot. An
//!   unfinished snapshot holds nothing the log does not: the previous
//!   snapshot and the log it was made from are still there, since nothing is
//!   reclaimed before the rename. Moving it aside loses nothing.
//! - **A torn `conf`.** sled writes `conf` (its segment size, compression,
//!   version) once, when the db is created, in place and unsynced; a kill
//!   during that first write leaves a file that does not parse and sled
//!   refuses to start. It holds only sled's defaults, which we always use,
//!   so sled writes it again once it is moved aside.
//!
//! Everything moved goes to `<data dir>/quarantine/<time>/`, never deleted,
//! and is reported to the caller, which verifies every session before
//! serving.

use std::path::{Path, PathBuf};

use crate::StorageError;

/// Moves what sled would refuse to open out of `sled_dir` into
/// `quarantine`; returns one line per file moved.
pub(super) fn before_open(sled_dir: &Path, quarantine: &Path) -> Result<Vec<String>, StorageError> {
    let mut repairs = Vec::new();
    let entries = match std::fs::read_dir(sled_dir) {
        Ok(entries) => entries,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(repairs),
        Err(e) => {
            return Err(StorageError::Io(format!(
                "cannot list `{}`: {e}",
                sled_dir.display()
            )));
        }
    };
    let mut unfinished: Vec<PathBuf> = Vec::new();
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        if name.starts_with("snap.") && name.ends_with(".generating") {
            unfinished.push(entry.path());
        }
    }
    unfinished.sort();
    for path in unfinished {
        let size = std::fs::metadata(&path).map(|m| m.len()).unwrap_or(0);
        let moved = move_aside(&path, quarantine)?;
        repairs.push(format!(
            "moved an unfinished sled snapshot `{}` ({size} bytes), left by a process killed while writing it, to `{}`",
            path.display(),
            moved.display()
        ));
    }
    let conf = sled_dir.join("conf");
    if let Ok(bytes) = std::fs::read(&conf)
        && bytes.len() > 8
        && !conf_parses(&bytes)
    {
        let moved = move_aside(&conf, quarantine)?;
        repairs.push(format!(
            "moved a torn sled `conf` (written once at creation by a process killed while writing it) to `{}`; sled writes it again",
            moved.display()
        ));
    }
    if !repairs.is_empty() {
        sync_dir(sled_dir)?;
        sync_dir(quarantine)?;
    }
    Ok(repairs)
}

/// Whether `conf` (its text, then a 4-byte checksum) has the three settings
/// sled reads from it. (A file of 8 bytes or less sled rewrites by itself.)
fn conf_parses(bytes: &[u8]) -> bool {
    let Ok(text) = std::str::from_utf8(&bytes[..bytes.len() - 4]) else {
        return false;
    };
    let mut found = 0;
    for line in text.lines() {
        let Some((key, value)) = line.split_once(": ") else {
            return false;
        };
        let ok = match key {
            "segment_size" => value.parse::<usize>().is_ok(),
            "use_compression" => value.parse::<bool>().is_ok(),
            "version" => value
                .split_once('.')
                .is_some_and(|(a, b)| a.parse::<usize>().is_ok() && b.parse::<usize>().is_ok()),
            _ => true,
        };
        if !ok {
            return false;
        }
        found += usize::from(matches!(
            key,
            "segment_size" | "use_compression" | "version"
        ));
    }
    found == 3
}

fn move_aside(path: &Path, quarantine: &Path) -> Result<PathBuf, StorageError> {
    std::fs::create_dir_all(quarantine)
        .map_err(|e| StorageError::Io(format!("cannot create `{}`: {e}", quarantine.display())))?;
    let to = quarantine.join(path.file_name().unwrap_or_default());
    std::fs::rename(path, &to).map_err(|e| {
        StorageError::Io(format!(
            "cannot move `{}` to `{}`: {e}",
            path.display(),
            to.display()
        ))
    })?;
    Ok(to)
}

fn sync_dir(dir: &Path) -> Result<(), StorageError> {
    std::fs::File::open(dir)
        .and_then(|d| d.sync_all())
        .map_err(|e| StorageError::Io(format!("cannot fsync `{}`: {e}", dir.display())))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_conf_sled_wrote_parses_and_a_torn_one_does_not() {
        let whole =
            b"segment_size: 524288\nuse_compression: false\nversion: 0.34\n\x01\x02\x03\x04";
        assert!(conf_parses(whole));
        // Killed after the text but before the checksum: sled cuts the last
        // 4 bytes off as the checksum, and the version loses its minor.
        let torn = b"segment_size: 524288\nuse_compression: false\nversion: 0.34\n";
        assert!(!conf_parses(torn));
        assert!(!conf_parses(
            b"segment_size: 524288\nuse_compr\x00\x00\x00\x00"
        ));
    }
}

#[cfg(test)]
mod reopen {
    use crate::sled_store::SledStore;
    use crate::{Durability, Storage};

    /// The failure the crash harness found: a kill while sled wrote its
    /// startup snapshot left `snap.<lsn>.generating`, and sled refused the
    /// whole store at the next open.
    #[test]
    fn a_store_opens_with_everything_after_a_kill_left_an_unfinished_snapshot() {
        let tmp = tempfile::tempdir().unwrap();
        {
            let store = SledStore::open(tmp.path(), Durability::Flush).unwrap();
            for i in 0..100u64 {
                store
                    .append("s", i, &[format!("e{i}").into_bytes()])
                    .unwrap();
            }
        }
        let sled_dir = tmp.path().join("sled");
        // What a kill leaves: the file created, part of the snapshot written.
        let torn = sled_dir.join("snap.00000000FFFFFFFF.generating");
        std::fs::write(&torn, [0x5a_u8; 700]).unwrap();
        // sled alone refuses it.
        let refused = sled::Config::new().path(&sled_dir).open();
        assert!(
            matches!(refused, Err(sled::Error::Corruption { .. })),
            "sled 0.34 reads the unfinished snapshot: {:?}",
            refused.map(|_| ())
        );

        let store = SledStore::open(tmp.path(), Durability::Flush).unwrap();
        assert_eq!(store.repairs().len(), 1, "{:?}", store.repairs());
        assert!(store.repairs()[0].contains("unfinished sled snapshot"));
        assert!(!torn.exists());
        assert_eq!(store.last_seq("s").unwrap(), 100);
        assert_eq!(store.read("s", 1, 1000).unwrap().len(), 100);
        drop(store);
        let quarantined: Vec<_> = std::fs::read_dir(tmp.path().join("quarantine"))
            .unwrap()
            .flatten()
            .flat_map(|d| std::fs::read_dir(d.path()).unwrap().flatten())
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .collect();
        assert_eq!(quarantined, ["snap.00000000FFFFFFFF.generating"]);
        // And it stays fixed.
        let again = SledStore::open(tmp.path(), Durability::Flush).unwrap();
        assert!(again.repairs().is_empty());
        assert_eq!(again.last_seq("s").unwrap(), 100);
    }
}
