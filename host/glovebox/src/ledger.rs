//! What a host keeps in its data dir, opened: the store (whichever backend
//! the config names), the sessions and approvals on it, and what recovery and
//! repair found at open. The call pipeline (`pipeline.rs`) writes through it.

use std::sync::Arc;

use anyhow::Context;

use crate::approvals::Approvals;
use crate::manifest::{DurabilityMode, HostConfig, StorageBackend};
use crate::notify::Outbox;
use crate::scratch::ScratchDirs;
use crate::session::{LeaseConfig, Recovery, SessionDirs, Sessions, SessionsConfig};
use crate::storage::{Backend, Durability, Opened, Reopening, Storage, StorageError};
use crate::watermark::Watermark;

/// What a host keeps in its data dir.
pub struct Durable {
    pub sessions: Arc<Sessions>,
    pub approvals: Arc<Approvals>,
    /// The store itself, for the other buckets kept there (background jobs).
    pub storage: Arc<dyn Storage>,
    /// The notifications waiting for delivery to the `[[notify]]` targets
    /// (the sessions write to it; `crate::notify` delivers from it).
    pub outbox: Arc<Outbox>,
    /// What recovery found at open: calls marked interrupted, damaged sessions.
    pub recovery: Recovery,
    /// What the store had to repair to open (see `glovebox_store::open`);
    /// every session verified afterwards.
    pub repairs: Vec<String>,
}

/// Opens the session store in the config's data dir (refused if another
/// process holds it) and recovers calls that were in flight when the last
/// process died: they are marked `interrupted`. When the open had to repair
/// the store (see `glovebox_store::open`), every session's hash chain is
/// verified before anything is served: a store that is not whole is refused.
pub fn open_sessions(config: &HostConfig) -> anyhow::Result<Durable> {
    // Read before the store opens: a key that is set and cannot be used
    // stops the host, never downgrades new sessions to the plain chain.
    let chain_key = crate::chain_key::chain_key_of(config)?;
    // The NATS store repairs nothing at open: JetStream recovers its own files.
    let (storage, repairs) = match config.storage.backend {
        StorageBackend::Nats => (open_nats(config)?, Vec::new()),
        _ => {
            let opened = open_store(config)?;
            (reopening(config, opened.storage), opened.repairs)
        }
    };
    let approvals = Arc::new(Approvals::new(storage.clone()));
    let outbox = Arc::new(
        Outbox::new(storage.clone(), config.notify.clone())
            .with_cap(config.quotas.limit("outbox_per_target")),
    );
    let sessions = Sessions::with_config(
        storage.clone(),
        SessionsConfig {
            checkpoint_every: config.storage.checkpoint_every,
            scratch: Some(Arc::new(Scratch(ScratchDirs::new(config.scratch_dir())))),
            notify: (!config.notify.is_empty()).then(|| outbox.clone()),
            quotas: config.quotas.clone(),
            disk: Some(Arc::new(Watermark::of(config))),
            chain_key,
            memory: config.memory.clone(),
            completion: config.completion.clone(),
            lease: lease_config(config)?,
            session_cache: config.storage.session_cache,
            detector: config.detector.clone(),
            ..SessionsConfig::default()
        },
    );
    sessions
        .tallies()
        .configure(crate::spend::SpendConfig::of(config));
    if !repairs.is_empty() {
        verify_after_repair(config, &sessions, &repairs)?;
    }
    let recovery = sessions.recover().context("cannot recover the sessions")?;
    crate::memory::MemoryBank::new(storage.clone(), config.memory.clone())
        .index_old_records()
        .context("cannot index the memory bank")?;
    // A store written before the approvals' index: indexed once, and the
    // pending approvals of sessions that ended then are settled now.
    if approvals
        .index_old_records()
        .context("cannot index the approvals")?
    {
        for a in sessions
            .settle_orphaned_approvals()
            .context("cannot settle the approvals of ended sessions")?
        {
            tracing::warn!(approval = %a.id, session = %a.session, "denied a pending approval of a session that had ended");
        }
    }
    // Job records of the shape before bodies and indexes were apart get
    // theirs now, once (later opens read one key): the listings and the
    // recovery read only the indexes (see `glovebox_ledger::jobs`).
    let upgraded = crate::jobs::JobStore::new(storage.clone())
        .upgrade(&|session| {
            sessions
                .show(session)
                .ok()
                .map(|s| s.owner_name().to_string())
        })
        .context("cannot rewrite the job records of an older glovebox")?;
    if upgraded > 0 {
        tracing::info!(
            jobs = upgraded,
            "rewrote job records of an older glovebox with their bodies and indexes apart"
        );
    }
    let swept = sessions.sweep_scratch();
    if swept > 0 {
        tracing::info!(
            swept,
            "removed scratch directories of archived sessions and killed calls"
        );
    }
    for call in &recovery.interrupted {
        tracing::warn!(
            session = %call.session,
            call_id = %call.call_id,
            tool = %call.tool,
            idempotent = call.idempotent,
            "call was in flight when the host stopped: marked interrupted"
        );
    }
    Ok(Durable {
        sessions: Arc::new(sessions),
        approvals,
        storage,
        outbox,
        recovery,
        repairs,
    })
}

/// The session leases of a host on a shared store (`backend = "nats"`):
/// its node id, the URL it advertises, the TTL. None on the embedded
/// backends, where one process holds the data dir and leases are moot.
fn lease_config(config: &HostConfig) -> anyhow::Result<Option<LeaseConfig>> {
    let Some(nats) = &config.storage.nats else {
        return Ok(None);
    };
    let node = match &nats.node {
        Some(node) => node.clone(),
        None => node_id(&config.data_dir)?,
    };
    Ok(Some(LeaseConfig {
        node,
        addr: nats.advertise.clone(),
        ttl: nats.lease_ttl,
    }))
}

/// The node id kept in `<data_dir>/node-id`, made at the first start: the
/// host name and a random suffix, so two data dirs on one machine are two
/// nodes, and a restarted host is the same one.
fn node_id(data_dir: &std::path::Path) -> anyhow::Result<String> {
    let path = data_dir.join("node-id");
    if let Ok(text) = std::fs::read_to_string(&path) {
        let id = text.trim();
        if !id.is_empty() {
            return Ok(id.to_string());
        }
    }
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname")
        .ok()
        .map(|h| {
            h.trim()
                .chars()
                .filter(|c| c.is_ascii_alphanumeric() || *c == '-')
                .take(40)
                .collect::<String>()
        })
        .filter(|h| !h.is_empty())
        .unwrap_or_else(|| "node".to_string());
    let suffix = uuid::Uuid::new_v4().simple().to_string();
    let id = format!("{host}-{}", &suffix[..6]);
    let failed = |e: std::io::Error| {
        anyhow::anyhow!(
            "cannot keep this host's node id in `{}`: {e}: make the data dir writable, or set `node = \"...\"` in `[storage]`",
            path.display()
        )
    };
    std::fs::create_dir_all(data_dir).map_err(failed)?;
    // Written whole under a temporary name, then linked into place: two
    // processes starting at once agree on the one that landed first.
    let tmp = data_dir.join(format!(".node-id.{}", std::process::id()));
    std::fs::write(&tmp, format!("{id}\n")).map_err(failed)?;
    let linked = std::fs::hard_link(&tmp, &path);
    let _ = std::fs::remove_file(&tmp);
    match linked {
        Ok(()) => Ok(id),
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
            let text = std::fs::read_to_string(&path).map_err(failed)?;
            Ok(text.trim().to_string())
        }
        Err(e) => Err(failed(e)),
    }
}

/// The embedded store `storage` of `config`, reopened in place after it
/// failed (a flush that failed on a full disk or an I/O error), once the
/// disk watermark says there is room again: see `glovebox_store::Reopening`.
/// The sessions notice the reopen and reload what they cached.
fn reopening(config: &HostConfig, storage: Arc<dyn Storage>) -> Arc<dyn Storage> {
    let reopen_config = config.clone();
    let watermark = Watermark::of(config);
    Arc::new(Reopening::new(
        storage,
        Box::new(move || {
            let opened = crate::storage::open(
                &store_dir(&reopen_config),
                backend_of(&reopen_config).map_err(|e| StorageError::Io(e.to_string()))?,
                durability_of(&reopen_config),
            )?;
            for repair in &opened.repairs {
                tracing::warn!(repair = %repair, "reopening the failed store repaired it");
            }
            Ok(opened.storage)
        }),
        Box::new(move || watermark.check().map_err(Into::into)),
    ))
}

/// The sessions' scratch directories (the runtime's), as the ledger sees them:
/// directories it removes when a session is archived.
#[derive(Debug)]
struct Scratch(ScratchDirs);

impl SessionDirs for Scratch {
    fn remove(&self, session_id: &str) -> std::io::Result<bool> {
        self.0.remove(session_id)
    }

    fn list(&self) -> std::io::Result<(Vec<String>, Vec<std::path::PathBuf>)> {
        self.0.list()
    }
}

/// The store dir of a config: `<data_dir>/store`.
pub fn store_dir(config: &HostConfig) -> std::path::PathBuf {
    config.data_dir.join("store")
}

/// The embedded backend a config names, as the store crate knows it. A
/// store on NATS has none: the commands that work on the files of a data
/// dir (`glovebox store check/backup/restore/compact`) refuse it.
pub fn backend_of(config: &HostConfig) -> anyhow::Result<Backend> {
    match config.storage.backend {
        StorageBackend::Sqlite => Ok(Backend::Sqlite),
        StorageBackend::Sled => Ok(Backend::Sled),
        StorageBackend::Nats => anyhow::bail!(
            "the store of `{}` is on NATS (`backend = \"nats\"`), not in the data dir: `glovebox store check/backup/restore/compact` work on the embedded backends (sled, sqlite) only; back up the streams with the NATS tools (`nats stream backup`, or a JetStream mirror) for now",
            config.path.display()
        ),
    }
}

fn durability_of(config: &HostConfig) -> Durability {
    match config.storage.durability {
        DurabilityMode::Flush => Durability::Flush,
        DurabilityMode::Strict => Durability::Strict,
    }
}

/// Opens the config's store on NATS JetStream (`backend = "nats"`). The
/// error names the config and the server; what to fix follows from the store.
fn open_nats(config: &HostConfig) -> anyhow::Result<Arc<dyn Storage>> {
    use glovebox_store_nats::{Auth, NatsConfig, NatsStore};
    let nats = config.storage.nats.as_ref().with_context(|| {
        format!(
            "`backend = \"nats\"` in `{}` has no `url`",
            config.path.display()
        )
    })?;
    let auth = match (&nats.creds, &nats.user, &nats.password) {
        (Some(creds), _, _) => Auth::CredsFile(creds.clone()),
        (None, Some(user), Some(password)) => Auth::UserPassword {
            user: user.clone(),
            password: password.clone(),
        },
        _ => Auth::None,
    };
    let nats_config = NatsConfig {
        auth,
        prefix: nats.prefix.clone(),
        replicas: usize::from(nats.replicas),
        ..NatsConfig::new(nats.url.clone())
    };
    let store = NatsStore::open(&nats_config, durability_of(config)).map_err(|e| {
        anyhow::anyhow!(
            "cannot open the nats store (config `{}`): {e}",
            config.path.display()
        )
    })?;
    Ok(Arc::new(store))
}

/// Opens the config's store for writing, with the error an operator can act
/// on when it does not open: the data dir, what is wrong, and what to run.
pub fn open_store(config: &HostConfig) -> anyhow::Result<Opened> {
    let durability = durability_of(config);
    let dir = store_dir(config);
    // Every command that opens the store, not only those that load plugins:
    // a data dir another user owns or may write is refused (threat 48).
    glovebox_runtime::private_dir::ensure_private_dir(&config.data_dir, "the data dir")?;
    glovebox_runtime::private_dir::ensure_private_dir(&dir, "the store dir")?;
    crate::storage::open(&dir, backend_of(config)?, durability).map_err(|e| {
        let what = format!(
            "cannot open the {} store in `{}` (config `{}`): {e}",
            config.storage.backend,
            dir.display(),
            config.path.display()
        );
        match e {
            StorageError::Locked { .. } => anyhow::anyhow!(what),
            StorageError::Corrupt(_) | StorageError::Damaged { .. } => anyhow::anyhow!(
                "{what}\n  check it: `glovebox store check` reports what is damaged (it only reads)\n  restore it: `glovebox store restore BACKUP` replaces it with a backup made by `glovebox store backup` (the damaged store is kept beside it)"
            ),
            _ => anyhow::anyhow!(
                "{what}\n  if the disk is fine, `glovebox store check` reports what is wrong with the store"
            ),
        }
    })
}

/// After a repair at open: every session's chain must verify, or nothing is served.
fn verify_after_repair(
    config: &HostConfig,
    sessions: &Sessions,
    repairs: &[String],
) -> anyhow::Result<()> {
    let reports = sessions
        .verify_all()
        .context("cannot verify the sessions after repairing the store")?;
    let broken: Vec<String> = reports
        .iter()
        .filter(|r| !r.ok)
        .map(|r| match &r.first_bad {
            Some((seq, why)) => format!("session {} at event {seq}: {why}", r.session),
            None => format!("session {}", r.session),
        })
        .collect();
    if !broken.is_empty() {
        anyhow::bail!(
            "the store in `{}` was repaired at open ({}), and then {} session log(s) did not verify: {}; nothing is served from it: run `glovebox store check`, and restore a backup with `glovebox store restore BACKUP`",
            store_dir(config).display(),
            repairs.join("; "),
            broken.len(),
            broken.join("; ")
        );
    }
    tracing::warn!(
        sessions = reports.len(),
        "the store was repaired at open and every session's log verifies"
    );
    Ok(())
}
