//! How a [`Sessions`] service works ([`SessionsConfig`]), and what the host
//! implements for it to ask (scratch directories, room on the disk).
//!
//! [`Sessions`]: super::Sessions

use std::fmt;
use std::io;
use std::path::PathBuf;
use std::sync::Arc;

use super::chain::ChainKey;
use super::lease::LeaseConfig;
use crate::manifest::{MemoryConfig, QuotasConfig};
use crate::notify::Outbox;

/// How a [`Sessions`](super::Sessions) service works.
#[derive(Clone, Debug)]
pub struct SessionsConfig {
    /// A checkpoint is written at every event whose seq is a multiple of this,
    /// and at every handoff, pause, end and archive. 0 turns checkpoints off.
    pub checkpoint_every: u64,
    /// Checkpoints kept per session (the newest ones).
    pub keep_checkpoints: usize,
    /// The sessions' scratch directories, removed when a session is archived.
    pub scratch: Option<Arc<dyn SessionDirs>>,
    /// Where the notifications derived from appended events go (see
    /// [`crate::notify`]); none without `[[notify]]` targets.
    pub notify: Option<Arc<Outbox>>,
    /// `[quotas]`: tags per session, handoff sizes, live sessions per principal.
    pub quotas: QuotasConfig,
    /// The disk watermark a session start must pass (`storage.min_free`);
    /// none: no check.
    pub disk: Option<Arc<dyn DiskRoom>>,
    /// `[storage] chain_key_file`, read: new sessions' logs are sealed with
    /// HMAC-SHA256 under it, and keyed sessions verify only with it (see
    /// `chain.rs`). None: new sessions are plain.
    pub chain_key: Option<Arc<ChainKey>>,
    /// `[memory]`: how many approved memory entries a new session is handed.
    pub memory: MemoryConfig,
    /// `[[completion]]`: the conditions the operator requires of every
    /// session of a role or project, added to each new session's own.
    pub completion: Vec<crate::manifest::CompletionRule>,
    /// Session leases (see `lease.rs`): only on a store several hosts
    /// share. None (the embedded backends): no lease is read or written.
    pub lease: Option<LeaseConfig>,
    /// `[storage] session_cache`: the sessions whose state is kept in
    /// memory, the least recently used evicted first (see `slots.rs`).
    pub session_cache: usize,
    /// `[detector]`: what a flag raised outside the rules' runs (a handoff
    /// that names blockers) is judged with.
    pub detector: crate::manifest::DetectorConfig,
}

/// Directories kept per session outside the store (the host's scratch
/// directories), which the sessions remove when a session is archived and
/// sweep when they are opened ([`Sessions::archive`](super::Sessions::archive),
/// [`Sessions::sweep_scratch`](super::Sessions::sweep_scratch)).
/// The host implements it; the ledger only asks for removals.
pub trait SessionDirs: fmt::Debug + Send + Sync {
    /// Removes the directory of `session_id`; `false` if it had none.
    fn remove(&self, session_id: &str) -> io::Result<bool>;

    /// The session ids that have a directory, and leftover directories that
    /// belong to no session (a killed host's throwaway ones), to be removed.
    fn list(&self) -> io::Result<(Vec<String>, Vec<PathBuf>)>;
}

/// Room on the disk for new work: a session start is refused, with nothing
/// written, while the host's data dir is nearly full (`storage.min_free`).
/// The host implements it; the ledger only asks.
pub trait DiskRoom: fmt::Debug + Send + Sync {
    /// `Err(reason)` (naming the free space, the key and the fix) while
    /// there is too little room for new work.
    fn check(&self) -> Result<(), NoRoom>;
}

/// Why [`DiskRoom::check`] refuses new work: the host's own error (its
/// `Display` is the whole message, shown as [`SessionError::LowDisk`]), so
/// the host's check keeps its type.
///
/// [`SessionError::LowDisk`]: super::SessionError::LowDisk
pub type NoRoom = Box<dyn std::error::Error + Send + Sync>;

impl Default for SessionsConfig {
    fn default() -> Self {
        SessionsConfig {
            checkpoint_every: 256,
            keep_checkpoints: 2,
            scratch: None,
            notify: None,
            quotas: QuotasConfig::default(),
            disk: None,
            chain_key: None,
            memory: MemoryConfig::default(),
            completion: Vec::new(),
            lease: None,
            session_cache: crate::manifest::DEFAULT_SESSION_CACHE,
            detector: crate::manifest::DetectorConfig::default(),
        }
    }
}
