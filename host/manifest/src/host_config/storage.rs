//! `[storage]`: the engine, the durability of the session log, the chain
//! key and the checkpoint cadence. The keys only `backend = "nats"` reads
//! are checked after it, in [`super::nats`], which reads this table too.

use std::path::Path;

use serde::Deserialize;

use crate::paths::normalize;
use crate::source::Source;
use crate::units::{Millis, Size};
use crate::{ConfigError, DurabilityMode, StorageBackend, StorageConfig};

/// `[storage]`: the engine, the durability of the session log and the
/// checkpoint cadence; with `backend = "nats"`, where the store is.
#[derive(Default, Deserialize)]
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub(crate) struct RawStorage {
    /// `"sled"`, `"sqlite"` or `"nats"` ([`operators/storage.md`](operators/storage.md));
    /// a data dir keeps the backend it was created with.
    #[cfg_attr(feature = "schemars", schemars(extend("default" = "sled")))]
    #[cfg_attr(feature = "schemars", schemars(extend("enum" = ["sled", "sqlite", "nats"])))]
    backend: Option<String>,
    /// `"flush"`: survives a killed process; `"strict"`: also `fdatasync`,
    /// survives a power cut.
    #[cfg_attr(feature = "schemars", schemars(extend("default" = "flush")))]
    #[cfg_attr(feature = "schemars", schemars(extend("enum" = ["flush", "strict"])))]
    durability: Option<String>,
    /// Checkpoint a session every this many events (and at every handoff
    /// and pause); `0`: only at handoffs, pauses and ends.
    #[cfg_attr(feature = "schemars", schemars(extend("default" = 256)))]
    checkpoint_every: Option<i64>,
    /// Free space the data dir's disk must keep, else new work is refused
    /// (`low_disk`); `0` turns it off.
    #[cfg_attr(feature = "schemars", schemars(extend("default" = "256 MiB")))]
    min_free: Option<Size>,
    /// A key (32+ bytes, mode 0600, outside the data dir) for HMAC-SHA256
    /// chains of new sessions.
    #[cfg_attr(feature = "schemars", schemars(extend("x-default" = "none (plain SHA-256)")))]
    chain_key_file: Option<String>,
    /// Sessions' states kept in memory (1 to 1,000,000); a session in use is
    /// never dropped.
    #[cfg_attr(feature = "schemars", schemars(extend("default" = 1024)))]
    session_cache: Option<i64>,
    // `backend = "nats"` only.
    /// `nats://host:4222`, or `tls://` for TLS; several servers
    /// comma-separated.
    #[cfg_attr(feature = "schemars", schemars(extend("x-default" = "(required with `nats`)")))]
    pub(super) url: Option<String>,
    /// A `.creds` file for the host's NATS user; or `user` and `password`.
    #[cfg_attr(feature = "schemars", schemars(extend("x-default" = "none")))]
    pub(super) creds: Option<String>,
    /// The host's NATS user, with `password` (instead of `creds`).
    #[cfg_attr(feature = "schemars", schemars(extend("x-default" = "none")))]
    pub(super) user: Option<String>,
    /// The NATS user's password, with `user`.
    #[cfg_attr(feature = "schemars", schemars(extend("x-default" = "none")))]
    pub(super) password: Option<String>,
    /// Starts every stream and bucket name: one per deployment (1 to 32
    /// letters, digits and `-`).
    #[cfg_attr(feature = "schemars", schemars(extend("default" = "glovebox")))]
    pub(super) prefix: Option<String>,
    /// JetStream replicas (3 on a three-node cluster; 1 to 5).
    #[cfg_attr(feature = "schemars", schemars(extend("default" = 1)))]
    pub(super) replicas: Option<i64>,
    /// This host's id.
    #[cfg_attr(feature = "schemars", schemars(extend("x-default" = "kept in `<data_dir>/node-id`")))]
    pub(super) node: Option<String>,
    /// Where clients reach this host's MCP server (named in lease refusals).
    #[cfg_attr(feature = "schemars", schemars(extend("x-default" = "none")))]
    pub(super) advertise: Option<String>,
    /// How long other hosts wait for a host that died (1s to 1h).
    #[cfg_attr(feature = "schemars", schemars(extend("default" = "15s")))]
    pub(super) lease_ttl: Option<Millis>,
}

pub(super) fn validate_storage(
    src: &Source,
    raw: &RawStorage,
    dir: &Path,
) -> Result<StorageConfig, ConfigError> {
    let mut storage = StorageConfig::default();
    match raw.backend.as_deref() {
        None => {}
        Some("sqlite") => storage.backend = StorageBackend::Sqlite,
        Some("sled") => storage.backend = StorageBackend::Sled,
        Some("nats") => storage.backend = StorageBackend::Nats,
        Some(other) => {
            return Err(src.invalid(
                "storage.backend",
                format!("`{other}` is not a storage backend"),
                "write `\"sqlite\"` (SQLite in WAL mode), `\"sled\"` or `\"nats\"` (NATS JetStream, shared by several hosts); see docs/durability.md for what each guarantees",
            ));
        }
    }
    match raw.durability.as_deref() {
        None | Some("flush") => {}
        Some("strict") => storage.durability = DurabilityMode::Strict,
        Some(other) => {
            return Err(src.invalid(
                "storage.durability",
                format!("`{other}` is not a durability mode"),
                "write `\"flush\"` (survives a killed process) or `\"strict\"` (also fdatasync, survives a power cut)",
            ));
        }
    }
    if let Some(text) = &raw.chain_key_file {
        if text.trim().is_empty() {
            return Err(src.invalid(
                "storage.chain_key_file",
                "`chain_key_file` is empty",
                "name the chain key file (at least 32 bytes, mode 0600, outside the data dir), or remove the key for a plain SHA-256 chain",
            ));
        }
        storage.chain_key_file = Some(normalize(&dir.join(text)));
    }
    if let Some(every) = raw.checkpoint_every {
        storage.checkpoint_every = u64::try_from(every).map_err(|_| {
            src.invalid(
                "storage.checkpoint_every",
                format!("{every} is negative"),
                "write a number of events, or 0 for checkpoints only at handoffs, pauses and ends",
            )
        })?;
    }
    if let Some(Size(min_free)) = raw.min_free {
        // Zero is meaningful: no watermark (the operator watches the disk).
        storage.min_free = min_free;
    }
    if let Some(size) = raw.session_cache {
        storage.session_cache = usize::try_from(size)
            .ok()
            .filter(|n| (1..=1_000_000).contains(n))
            .ok_or_else(|| {
                src.invalid(
                    "storage.session_cache",
                    format!("{size} is not a number of sessions from 1 to 1000000"),
                    "write how many sessions' states to keep in memory (default 1024); the least recently used are loaded again when used",
                )
            })?;
    }
    Ok(storage)
}
