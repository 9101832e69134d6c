//! The operator's store commands: check, backup, restore.
//!
//! A **backup** is one SQLite database file in the SQLite backend's layout,
//! whatever the backend it was made from, so a backup is also how a data dir
//! moves from one backend to the other. From the SQLite backend it is made
//! online: SQLite lets another process read a consistent snapshot while the
//! server writes (`VACUUM INTO`), so `glovebox store backup` works while
//! `glovebox serve` runs. sled allows one process per data dir, so a backup
//! of a sled store needs the server stopped.
//!
//! **Check** only reads (with SQLite it opens the file read-only and works
//! while serving; sled has no read-only open, so it opens the store as the
//! host does, which may repair it: see `glovebox_store::open`) and verifies
//! every session's hash chain and every record it can decode.
//!
//! **Restore** builds the new store beside the old one, verifies it, and only
//! then swaps the two directories; the old store is kept, renamed, never
//! deleted.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::{Context, bail};
use serde::Serialize;

use crate::chain_key::chain_key_of;
use crate::ledger::{backend_of, store_dir};
use crate::manifest::HostConfig;
use crate::session::{ChainKey, Sessions, SessionsConfig, VerifyReport};
use crate::storage::{
    Backend, CopyStats, Durability, PAGE, SledStore, SqliteStore, Storage, StorageError, copy_all,
    pages,
};

/// What `glovebox store check` found.
#[derive(Debug, Serialize)]
pub struct CheckReport {
    pub backend: String,
    pub store_dir: PathBuf,
    /// Bytes on disk under the store dir.
    pub size_bytes: u64,
    /// Opened read-only (SQLite), or as the host opens it (sled).
    pub read_only: bool,
    /// What the open moved aside to make the store open (sled only).
    pub repairs: Vec<String>,
    pub sessions: Vec<VerifyReport>,
    pub events: u64,
    /// Bucket name and number of keys.
    pub buckets: Vec<(String, u64)>,
    /// Everything that is wrong; empty when the store is whole.
    pub problems: Vec<String>,
}

impl CheckReport {
    pub fn ok(&self) -> bool {
        self.problems.is_empty()
    }
}

/// Opens the configured store for reading: SQLite read-only (no lock: a
/// server may hold the dir), sled as the host does.
fn open_for_reading(config: &HostConfig) -> anyhow::Result<(Arc<dyn Storage>, Vec<String>, bool)> {
    let dir = store_dir(config);
    match backend_of(config)? {
        Backend::Sqlite => {
            let store = SqliteStore::open_read_only(&dir)
                .with_context(|| format!("cannot open the sqlite store in `{}`", dir.display()))?;
            Ok((Arc::new(store), Vec::new(), true))
        }
        Backend::Sled => {
            let store = SledStore::open(&dir, Durability::Flush).map_err(|e| match e {
                StorageError::Locked { .. } => anyhow::anyhow!(
                    "{e}\n  sled allows one process per data dir: stop the server to check or back up its store (the sqlite backend allows both while serving)"
                ),
                e => anyhow::anyhow!("cannot open the sled store in `{}`: {e}", dir.display()),
            })?;
            let repairs = store.repairs().to_vec();
            Ok((Arc::new(store), repairs, false))
        }
    }
}

/// The sessions of `storage`, with the config's chain key (keyed logs
/// verify only with it).
fn keyed_sessions(storage: Arc<dyn Storage>, chain_key: Option<Arc<ChainKey>>) -> Sessions {
    Sessions::with_config(
        storage,
        SessionsConfig {
            chain_key,
            ..SessionsConfig::default()
        },
    )
}

/// `glovebox store check`: opens the store without changing what it holds
/// and verifies everything in it.
pub fn check(config: &HostConfig) -> anyhow::Result<CheckReport> {
    let chain_key = chain_key_of(config)?;
    let (storage, repairs, read_only) = open_for_reading(config)?;
    let mut problems = Vec::new();
    let sessions = keyed_sessions(storage.clone(), chain_key);
    let reports = match sessions.verify_all() {
        Ok(r) => r,
        Err(e) => {
            problems.push(format!("the sessions do not verify: {e}"));
            Vec::new()
        }
    };
    let mut events = 0;
    for r in &reports {
        events += r.events_checked;
        if !r.ok {
            problems.push(match &r.first_bad {
                Some((seq, why)) => format!(
                    "session {}{}: its log is damaged from event {seq}: {why}",
                    r.session,
                    r.name
                        .as_ref()
                        .map(|n| format!(" ({n})"))
                        .unwrap_or_default()
                ),
                None => format!("session {}: its log does not verify", r.session),
            });
        }
    }
    let mut buckets = Vec::new();
    match storage.buckets() {
        Ok(names) => {
            for bucket in names {
                // A page at a time: a big bucket is never one Vec.
                let mut keys = 0u64;
                for entry in pages(&*storage, &bucket, "", PAGE) {
                    match entry {
                        Ok((key, value)) => {
                            keys += 1;
                            if let Err(why) = check_record(&bucket, &key, &value) {
                                problems.push(format!("bucket `{bucket}`, key `{key}`: {why}"));
                            }
                        }
                        Err(e) => problems.push(format!("bucket `{bucket}` does not read: {e}")),
                    }
                }
                buckets.push((bucket, keys));
            }
        }
        Err(e) => problems.push(format!("the list of buckets does not read: {e}")),
    }
    let dir = store_dir(config);
    Ok(CheckReport {
        backend: config.storage.backend.to_string(),
        size_bytes: dir_size(&dir),
        store_dir: dir,
        read_only,
        repairs,
        sessions: reports,
        events,
        buckets,
        problems,
    })
}

/// Why a record of a bucket the host writes does not decode.
#[derive(Debug, thiserror::Error)]
enum BadRecord {
    #[error("the key is not `<session>/<event>`")]
    CheckpointKey,
    #[error("the checkpoint does not verify: {0}")]
    Checkpoint(crate::session::checkpoint::BadCheckpoint),
    #[error("the session id is not text")]
    NotText,
    #[error("the record does not decode as JSON: {0}")]
    NotJson(serde_json::Error),
}

/// Whether a record of a bucket the host writes decodes; a bucket this
/// version does not know is not judged.
fn check_record(bucket: &str, key: &str, value: &[u8]) -> Result<(), BadRecord> {
    match bucket {
        "checkpoints" => {
            let (session, seq) = key
                .split_once('/')
                .and_then(|(s, n)| Some((s, n.parse::<u64>().ok()?)))
                .ok_or(BadRecord::CheckpointKey)?;
            crate::session::checkpoint::decode(session, seq, value)
                .map(|_| ())
                .map_err(BadRecord::Checkpoint)
        }
        "names" | "session_names" => std::str::from_utf8(value)
            .map(|_| ())
            .map_err(|_| BadRecord::NotText),
        "sessions" | "approvals" | "jobs" | "rescues" | "context" => {
            serde_json::from_slice::<serde_json::Value>(value)
                .map(|_| ())
                .map_err(BadRecord::NotJson)
        }
        _ => Ok(()),
    }
}

/// What `glovebox store backup` wrote.
#[derive(Debug, Serialize)]
pub struct BackupReport {
    pub from_backend: String,
    pub path: PathBuf,
    pub size_bytes: u64,
    pub streams: u64,
    pub entries: u64,
    pub buckets: u64,
    pub keys: u64,
}

/// `glovebox store backup PATH`: a consistent copy of the store in one new
/// SQLite file (refused if `path` exists).
pub fn backup(config: &HostConfig, path: &Path) -> anyhow::Result<BackupReport> {
    if path.symlink_metadata().is_ok() {
        bail!(
            "`{}` exists: a backup never overwrites a file; pick a new name",
            path.display()
        );
    }
    let (storage, _, _) = open_for_reading(config)?;
    match backend_of(config)? {
        Backend::Sqlite => {
            let dir = store_dir(config);
            let store = SqliteStore::open_read_only(&dir)?;
            store
                .backup_to(path)
                .with_context(|| format!("cannot back up `{}`", dir.display()))?;
        }
        Backend::Sled => {
            // Copy into a SQLite store in a scratch dir beside the backup,
            // then write that out as the backup file.
            let scratch = sibling(path, "partial.d");
            if scratch.exists() {
                std::fs::remove_dir_all(&scratch)
                    .with_context(|| format!("cannot remove `{}`", scratch.display()))?;
            }
            let result = (|| -> anyhow::Result<()> {
                let copy = SqliteStore::open(&scratch, Durability::Flush)?;
                copy_all(&*storage, &copy).context("cannot copy the sled store")?;
                copy.backup_to(path)?;
                Ok(())
            })();
            let _ = std::fs::remove_dir_all(&scratch);
            result?;
        }
    }
    drop(storage);
    let stats = stats_of_backup(path)?;
    Ok(BackupReport {
        from_backend: config.storage.backend.to_string(),
        size_bytes: std::fs::metadata(path).map(|m| m.len()).unwrap_or(0),
        path: path.to_path_buf(),
        streams: stats.streams,
        entries: stats.entries,
        buckets: stats.buckets,
        keys: stats.keys,
    })
}

/// Counts what a backup file holds (by opening a copy of it as a store).
fn stats_of_backup(path: &Path) -> anyhow::Result<CopyStats> {
    let dir = sibling(path, "count.d");
    let _ = std::fs::remove_dir_all(&dir);
    let result = (|| -> anyhow::Result<CopyStats> {
        place_backup(path, &dir)?;
        let store = SqliteStore::open_read_only(&dir)?;
        let mut stats = CopyStats::default();
        for stream in store.streams()? {
            stats.streams += 1;
            stats.entries += store.last_seq(&stream)?;
        }
        for bucket in store.buckets()? {
            stats.buckets += 1;
            for entry in pages(&store, &bucket, "", PAGE) {
                entry?;
                stats.keys += 1;
            }
        }
        Ok(stats)
    })();
    let _ = std::fs::remove_dir_all(&dir);
    result
}

/// Puts a copy of backup file `backup` where the SQLite backend looks for
/// its database in store dir `dir`.
fn place_backup(backup: &Path, dir: &Path) -> anyhow::Result<()> {
    let db = dir.join("sqlite").join("store.db");
    std::fs::create_dir_all(db.parent().unwrap_or(dir))
        .with_context(|| format!("cannot create `{}`", dir.display()))?;
    std::fs::copy(backup, &db).with_context(|| {
        format!(
            "cannot copy the backup `{}` to `{}`",
            backup.display(),
            db.display()
        )
    })?;
    Ok(())
}

/// `<path>.<suffix>` beside `path`.
fn sibling(path: &Path, suffix: &str) -> PathBuf {
    let mut name = path.file_name().unwrap_or_default().to_os_string();
    name.push(format!(".{suffix}"));
    path.with_file_name(name)
}

/// What `glovebox store restore` did.
#[derive(Debug, Serialize)]
pub struct RestoreReport {
    pub backend: String,
    pub store_dir: PathBuf,
    /// Where the store that was there before went (none if there was none).
    pub previous: Option<PathBuf>,
    pub streams: u64,
    pub entries: u64,
    pub buckets: u64,
    pub keys: u64,
    pub sessions_verified: usize,
}

/// `glovebox store restore BACKUP`: replaces the store with the backup's
/// contents, in the configured backend. Refused while a process holds the
/// data dir. The new store is built beside the old one and every session
/// verified before the swap; the old one is renamed, not deleted.
pub fn restore(config: &HostConfig, backup: &Path) -> anyhow::Result<RestoreReport> {
    if !backup.is_file() {
        bail!(
            "`{}` is not a file: give a file `glovebox store backup` wrote",
            backup.display()
        );
    }
    let dir = store_dir(config);
    // Hold the live store dir's lock for the whole restore, so no server
    // starts on it meanwhile (and refuse if one runs).
    std::fs::create_dir_all(&dir).with_context(|| format!("cannot create `{}`", dir.display()))?;
    let guard = DirGuard::take(&dir)?;
    let staging = sibling(&dir, "restoring");
    if staging.exists() {
        std::fs::remove_dir_all(&staging)
            .with_context(|| format!("cannot remove `{}`", staging.display()))?;
    }
    let source_dir = sibling(&dir, "restore-source");
    let _ = std::fs::remove_dir_all(&source_dir);
    let built = (|| -> anyhow::Result<(CopyStats, usize)> {
        place_backup(backup, &source_dir)?;
        let source = SqliteStore::open_read_only(&source_dir)
            .with_context(|| format!("`{}` is not a glovebox backup", backup.display()))?;
        let target: Arc<dyn Storage> = match backend_of(config)? {
            Backend::Sqlite => Arc::new(SqliteStore::open(&staging, Durability::Flush)?),
            Backend::Sled => Arc::new(SledStore::open(&staging, Durability::Flush)?),
        };
        let stats = copy_all(&source, &*target).context("cannot copy the backup")?;
        let sessions = keyed_sessions(target.clone(), chain_key_of(config)?);
        let reports = sessions.verify_all()?;
        if let Some(bad) = reports.iter().find(|r| !r.ok) {
            bail!(
                "the backup's session {} does not verify ({:?}): nothing was restored",
                bad.session,
                bad.first_bad
            );
        }
        Ok((stats, reports.len()))
    })();
    let _ = std::fs::remove_dir_all(&source_dir);
    let (stats, verified) = match built {
        Ok(b) => b,
        Err(e) => {
            let _ = std::fs::remove_dir_all(&staging);
            return Err(e);
        }
    };
    // The swap: the old store dir (with our lock file in it) is renamed
    // aside, the staged one takes its name.
    let had_data = Backend::detect(&dir)?.is_some();
    let previous = had_data.then(|| {
        sibling(
            &dir,
            &format!(
                "before-restore-{}",
                humantime::format_rfc3339_seconds(std::time::SystemTime::now())
                    .to_string()
                    .replace(':', "")
            ),
        )
    });
    match &previous {
        Some(previous) => std::fs::rename(&dir, previous).with_context(|| {
            format!(
                "cannot move `{}` to `{}`",
                dir.display(),
                previous.display()
            )
        })?,
        None => std::fs::remove_dir_all(&dir)
            .with_context(|| format!("cannot remove the empty `{}`", dir.display()))?,
    }
    std::fs::rename(&staging, &dir)
        .with_context(|| format!("cannot move `{}` to `{}`", staging.display(), dir.display()))?;
    drop(guard);
    Ok(RestoreReport {
        backend: config.storage.backend.to_string(),
        store_dir: dir,
        previous,
        streams: stats.streams,
        entries: stats.entries,
        buckets: stats.buckets,
        keys: stats.keys,
        sessions_verified: verified,
    })
}

/// The data dir lock of a store dir, held without opening the store.
struct DirGuard(#[allow(dead_code)] crate::storage::DirLock);

impl DirGuard {
    fn take(dir: &Path) -> anyhow::Result<DirGuard> {
        crate::storage::DirLock::take(dir)
            .map(DirGuard)
            .map_err(|e| match e {
                StorageError::Locked { .. } => anyhow::anyhow!(
                    "{e}\n  a restore replaces the whole store: stop the server first"
                ),
                e => e.into(),
            })
    }
}

/// Bytes in the files under `dir`.
pub fn dir_size(dir: &Path) -> u64 {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return 0;
    };
    entries
        .flatten()
        .map(|e| match e.metadata() {
            Ok(m) if m.is_dir() => dir_size(&e.path()),
            Ok(m) => m.len(),
            Err(_) => 0,
        })
        .sum()
}

/// What `glovebox store compact` did.
#[derive(Debug, Serialize)]
pub struct CompactReport {
    pub backend: String,
    pub before_bytes: u64,
    pub after_bytes: u64,
}

/// `glovebox store compact`: gives the free space inside the store back to
/// the file system, where the engine can (SQLite: `VACUUM`). The server must
/// be stopped: it rewrites the whole database.
pub fn compact(config: &HostConfig) -> anyhow::Result<CompactReport> {
    let dir = store_dir(config);
    match backend_of(config)? {
        Backend::Sqlite => {
            let store = SqliteStore::open(&dir, Durability::Flush).map_err(|e| match e {
                StorageError::Locked { .. } => anyhow::anyhow!(
                    "{e}\n  compacting rewrites the whole database: stop the server first"
                ),
                e => anyhow::anyhow!("cannot open the sqlite store in `{}`: {e}", dir.display()),
            })?;
            let before_bytes = dir_size(&dir);
            store.compact()?;
            drop(store);
            let after_bytes = dir_size(&dir);
            Ok(CompactReport {
                backend: "sqlite".into(),
                before_bytes,
                after_bytes,
            })
        }
        Backend::Sled => bail!(
            "sled 0.34 cannot be compacted in place (its segment cleaner reuses space as it goes): to rewrite a sled store compactly, `glovebox store backup FILE` then `glovebox store restore FILE` with the server stopped"
        ),
    }
}
