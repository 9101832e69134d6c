//! Reading a session's log: loading its state (newest valid checkpoint plus the
//! tail, the tail's hash chain verified) and reading its events. Verifying
//! the whole chain, and what vouches for a log's end, is in `verify.rs`.
//!
//! Damage the storage finds in a session's stream ([`StorageError::Damaged`]:
//! a missing or undecodable record) is damage to the session's log, reported
//! like an altered event: [`SessionError::Tampered`], or `first_bad` in a
//! [`VerifyReport`], at the first sequence that cannot be read.
//!
//! Every read starts at event 1, which says the log's chain mode (see
//! `chain.rs`): a keyed log is checked under its key, and refused, naming the
//! key file, when that key is not the configured one.

use std::sync::Arc;

use serde::Serialize;

use super::chain::{self, Chain, ChainKey, Refusal};
use super::checkpoint;
use super::error::SessionError;
use super::event::{Event, GENESIS_HASH};
use super::state::SessionState;
use crate::storage::{Storage, StorageError};

/// Events read from storage per batch.
pub(super) const BATCH: usize = 1024;

/// What the last load of a session read.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct LoadStats {
    pub session: String,
    /// The checkpoint the load started from, if any.
    pub checkpoint_seq: Option<u64>,
    /// Events read to fold the state: the checkpoint's anchor event plus
    /// the tail (event 1, always read for the log's chain mode, counts only
    /// when the fold starts from it).
    pub events_read: u64,
    /// Newer checkpoints passed over, with why.
    pub checkpoints_rejected: Vec<(u64, String)>,
}

/// `e`, from the storage of the session named `label` in errors, as a
/// session error: damage to its stream is damage to its log.
pub(crate) fn storage_error(e: StorageError, label: &str) -> SessionError {
    match e {
        StorageError::Damaged { seq, reason, .. } => SessionError::Tampered {
            session: label.to_string(),
            seq,
            reason,
        },
        e => SessionError::Storage(e),
    }
}

/// What a read of session `id` from `from` returned: up to `max` entries,
/// and, when the storage reported damage, the damage (its sequence and what
/// is wrong). The entries before the damage are read all the same, so that
/// callers check them first and report the first bad event.
pub(super) type ReadToDamage = (Vec<(u64, Vec<u8>)>, Option<(u64, String)>);

pub(super) fn read_to_damage(
    storage: &dyn Storage,
    id: &str,
    from: u64,
    max: usize,
) -> Result<ReadToDamage, StorageError> {
    let mut damage = None;
    let mut max = max;
    loop {
        match storage.read(id, from, max) {
            Ok(entries) => return Ok((entries, damage)),
            Err(StorageError::Damaged { seq, reason, .. }) => {
                // Read again, up to the damage only.
                let before = seq.saturating_sub(from);
                damage = Some((seq, reason));
                match usize::try_from(before) {
                    Ok(before) if before > 0 && before < max => max = before,
                    _ => return Ok((Vec::new(), damage)),
                }
            }
            Err(e) => return Err(e),
        }
    }
}

/// The first event of session `id` (named `label` in errors), checked, its
/// size as stored, and the chain its log is sealed with (see `chain.rs`),
/// with `key` the configured chain key.
fn first_event(
    storage: &dyn Storage,
    id: &str,
    label: &str,
    key: Option<&Arc<ChainKey>>,
) -> Result<(Event, usize, Chain), SessionError> {
    let tampered = |seq: u64, reason: String| SessionError::Tampered {
        session: label.to_string(),
        seq,
        reason,
    };
    let (first, damage) = read_to_damage(storage, id, 1, 1)?;
    let Some((1, bytes)) = first.first() else {
        let (seq, reason) = damage.unwrap_or((1, "it is missing".to_string()));
        return Err(tampered(seq, reason));
    };
    let event = Event::from_bytes(bytes).map_err(|r| tampered(1, r.to_string()))?;
    let chain = chain::chain_of(id, label, event.keyed_chain(), key).map_err(|r| match r {
        Refusal::KeyRequired(reason) => SessionError::KeyRequired(reason),
        Refusal::Downgraded(reason) => tampered(1, reason),
    })?;
    event
        .check_link(id, 1, GENESIS_HASH, &chain)
        .map_err(|r| tampered(1, r.to_string()))?;
    Ok((event, bytes.len(), chain))
}

/// Loads the state of session `id` (named `label` in errors), its log
/// checked on its chain, with `key` the configured chain key.
pub(crate) fn load(
    storage: &dyn Storage,
    id: &str,
    label: &str,
    use_checkpoints: bool,
    key: Option<&Arc<ChainKey>>,
) -> Result<(SessionState, LoadStats), SessionError> {
    let last = storage.last_seq(id).map_err(|e| storage_error(e, label))?;
    if last == 0 {
        return Err(SessionError::NotFound(id.to_string()));
    }
    let mut stats = LoadStats {
        session: id.to_string(),
        ..LoadStats::default()
    };
    let tampered = |seq: u64, reason: String| SessionError::Tampered {
        session: label.to_string(),
        seq,
        reason,
    };
    let (first, first_len, chain) = first_event(storage, id, label, key)?;
    let mut start = None;
    if use_checkpoints {
        for (seq, bytes) in checkpoint::list(storage, id)? {
            match anchored(storage, id, seq, last, &bytes, &chain) {
                Ok(state) => {
                    stats.events_read += 1;
                    stats.checkpoint_seq = Some(seq);
                    start = Some(state);
                    break;
                }
                Err(Anchor::Truncated(reason)) => return Err(tampered(last + 1, reason)),
                Err(Anchor::Rejected(reason)) => {
                    tracing::warn!(session = id, seq, %reason, "checkpoint rejected");
                    stats.checkpoints_rejected.push((seq, reason));
                }
                Err(Anchor::Storage(e)) => return Err(e.into()),
            }
        }
    }
    let mut state = match start {
        Some(state) => state,
        None => {
            stats.events_read += 1;
            let mut state = SessionState::start(&first).map_err(|e| tampered(1, e.to_string()))?;
            state.count_written(&first, first_len);
            state
        }
    };
    while state.last_seq < last {
        let (batch, damage) = read_to_damage(storage, id, state.last_seq + 1, BATCH)?;
        if batch.is_empty() && damage.is_none() {
            break;
        }
        for (seq, bytes) in batch {
            let expected = state.last_seq + 1;
            if seq != expected {
                return Err(tampered(expected, "it is missing".to_string()));
            }
            stats.events_read += 1;
            let event = Event::from_bytes(&bytes).map_err(|r| tampered(seq, r.to_string()))?;
            event
                .check_link(id, seq, &state.last_hash, &chain)
                .map_err(|r| tampered(seq, r.to_string()))?;
            state.apply(&event).map_err(|e| {
                tampered(
                    seq,
                    format!("it does not fit the session's lifecycle ({e})"),
                )
            })?;
            state.count_written(&event, bytes.len());
        }
        if let Some((seq, reason)) = damage {
            return Err(tampered(seq, reason));
        }
    }
    if state.last_seq < last {
        return Err(tampered(state.last_seq + 1, "it is missing".to_string()));
    }
    Ok((state, stats))
}

enum Anchor {
    /// The checkpoint does not count; try an older one.
    Rejected(String),
    /// A valid checkpoint lies past the end of the log: events were removed.
    Truncated(String),
    Storage(StorageError),
}

/// The state in checkpoint `seq` if it verifies and the log still holds the
/// event it was taken after.
fn anchored(
    storage: &dyn Storage,
    id: &str,
    seq: u64,
    last: u64,
    bytes: &[u8],
    chain: &Chain,
) -> Result<SessionState, Anchor> {
    let state = checkpoint::decode_on(id, seq, bytes, chain)
        .map_err(|r| Anchor::Rejected(r.to_string()))?;
    if seq > last {
        return Err(Anchor::Truncated(format!(
            "the log ends at event {last} but was checkpointed at event {seq}: events were removed"
        )));
    }
    let read = match storage.read(id, seq, 1) {
        Ok(read) => read,
        Err(StorageError::Damaged {
            seq: at, reason, ..
        }) => {
            return Err(Anchor::Rejected(format!(
                "the log cannot be read at event {at}: {reason}"
            )));
        }
        Err(e) => return Err(Anchor::Storage(e)),
    };
    let Some((found, anchor)) = read.first() else {
        return Err(Anchor::Rejected(format!("event {seq} is not in the log")));
    };
    if *found != seq {
        return Err(Anchor::Rejected(format!("event {seq} is not in the log")));
    }
    let anchor = Event::from_bytes(anchor).map_err(|r| Anchor::Rejected(r.to_string()))?;
    if anchor.session != id || anchor.seq != seq || anchor.compute_hash(chain) != anchor.hash {
        return Err(Anchor::Rejected(format!("event {seq} does not verify")));
    }
    if anchor.hash != state.last_hash {
        return Err(Anchor::Rejected(format!(
            "event {seq} is not the one it was taken after"
        )));
    }
    Ok(state)
}

/// Up to `limit` events of session `id` from `from`, decoded but not verified.
pub(crate) fn read_events(
    storage: &dyn Storage,
    id: &str,
    label: &str,
    from: u64,
    limit: usize,
) -> Result<Vec<Event>, SessionError> {
    let tampered = |seq: u64, reason: String| SessionError::Tampered {
        session: label.to_string(),
        seq,
        reason,
    };
    let (entries, damage) = read_to_damage(storage, id, from.max(1), limit)?;
    let events = entries
        .into_iter()
        .map(|(seq, bytes)| {
            Event::from_bytes(&bytes).map_err(|reason| tampered(seq, reason.to_string()))
        })
        .collect::<Result<Vec<Event>, SessionError>>()?;
    match damage {
        Some((seq, reason)) => Err(tampered(seq, reason)),
        None => Ok(events),
    }
}
