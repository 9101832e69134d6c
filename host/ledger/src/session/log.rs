//! Reading a session's log: loading its state (newest valid checkpoint plus the
//! tail, the tail's hash chain verified) and verifying the whole chain.
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

use super::chain::{self, Chain, ChainKey, KeyedChain, Refusal};
use super::checkpoint;
use super::error::SessionError;
use super::event::{Event, GENESIS_HASH};
use super::state::{SessionInfo, SessionState};
use crate::storage::{Storage, StorageError};

/// Events read from storage per batch.
const BATCH: usize = 1024;

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

/// The result of checking a session's hash chain.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct VerifyReport {
    pub session: String,
    pub name: Option<String>,
    pub ok: bool,
    /// Events that verified before the first bad one (all of them when `ok`).
    pub events_checked: u64,
    /// The log's last sequence as the storage reports it; when the record
    /// ending the log does not read, the sequence before that record.
    pub last_seq: u64,
    /// The first bad event and what is wrong with it.
    pub first_bad: Option<(u64, String)>,
    /// The head the session's index recorded, which the log was checked
    /// against (`None`: no head was recorded, as for logs written before
    /// heads were).
    pub head_checked: Option<u64>,
    /// The chain mode checked: the id of the chain key for a keyed log,
    /// none for a plain one (see [`VerifyReport::mode`]).
    pub key_id: Option<String>,
}

impl VerifyReport {
    /// The chain mode checked, as `log verify` prints it: `keyed (key id …)`
    /// or `plain`.
    pub fn mode(&self) -> String {
        chain::describe(self.key_id.as_deref())
    }
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
type ReadToDamage = (Vec<(u64, Vec<u8>)>, Option<(u64, String)>);

fn read_to_damage(
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

/// The head recorded in `info` (the session index entry of session `id`)
/// for a log on `chain`: none when no head was recorded, for a plain log
/// (written before heads were). A keyed log must have one, with a valid MAC
/// under its key: `Err` says why it does not (the index was rewritten
/// without the key, which could hide a cut tail).
pub(crate) fn recorded_head(
    info: Option<&SessionInfo>,
    id: &str,
    chain: &Chain,
) -> Result<Option<(u64, String)>, HeadUnproven> {
    let head = info
        .filter(|i| i.head_seq > 0)
        .map(|i| (i.head_seq, i.head_hash.clone()));
    let Some(key_id) = chain.key_id() else {
        return Ok(head);
    };
    let key_id = key_id.to_string();
    let (Some(info), Some((seq, hash))) = (info, head) else {
        return Err(HeadUnproven::Missing { key_id });
    };
    if chain.head_mac(id, seq, &hash).as_deref() != Some(info.head_mac.as_str()) {
        return Err(HeadUnproven::BadMac { seq, key_id });
    }
    Ok(Some((seq, hash)))
}

/// Why the session index does not vouch for a keyed log's head: its entry
/// was removed or rewritten by someone without the chain key, which could
/// hide a cut tail.
#[derive(Debug, Clone, thiserror::Error)]
pub(crate) enum HeadUnproven {
    #[error(
        "the session index records no head for this keyed log (key id {key_id}): its entry was removed or rewritten, which would hide a cut tail"
    )]
    Missing { key_id: String },
    #[error(
        "the head the session index records (event {seq}) carries no valid MAC under the chain key (key id {key_id}): the index was rewritten without the key"
    )]
    BadMac { seq: u64, key_id: String },
}

/// Checks the whole chain of session `id` on its chain (with `key` the
/// configured chain key), that no valid checkpoint lies past its end, and
/// that it reaches the head `info` (its index entry) records. Damage the
/// storage finds in the stream is reported in the report, not as an error;
/// a keyed log whose key is not configured is an error
/// ([`SessionError::KeyRequired`]).
pub(crate) fn verify(
    storage: &dyn Storage,
    id: &str,
    name: Option<String>,
    key: Option<&Arc<ChainKey>>,
    info: Option<&SessionInfo>,
) -> Result<VerifyReport, SessionError> {
    // When the record ending the log does not read, check the events before it.
    let (last, damaged_end) = match storage.last_seq(id) {
        Ok(last) => (last, None),
        Err(StorageError::Damaged { seq, reason, .. }) => {
            (seq.saturating_sub(1), Some((seq, reason)))
        }
        Err(e) => return Err(e.into()),
    };
    let mut report = VerifyReport {
        session: id.to_string(),
        name,
        ok: false,
        events_checked: 0,
        last_seq: last,
        first_bad: None,
        head_checked: None,
        key_id: None,
    };
    let label = match &report.name {
        Some(name) => format!("`{name}` ({id})"),
        None => format!("`{id}`"),
    };
    // The mode, from event 1; an event 1 that does not read is reported
    // below, by the chain check.
    let first = read_to_damage(storage, id, 1, 1)?
        .0
        .first()
        .and_then(|(_, bytes)| Event::from_bytes(bytes).ok());
    let chain = match first.map(|e| chain::chain_of(id, &label, e.keyed_chain(), key)) {
        None => Chain::Plain,
        Some(Ok(chain)) => chain,
        Some(Err(Refusal::KeyRequired(reason))) => return Err(SessionError::KeyRequired(reason)),
        Some(Err(Refusal::Downgraded(reason))) => {
            report.first_bad = Some((1, reason));
            return Ok(report);
        }
    };
    report.key_id = chain.key_id().map(str::to_string);
    let mut prev = GENESIS_HASH.to_string();
    let mut next = 1;
    'read: while next <= last {
        let (batch, damage) = read_to_damage(storage, id, next, BATCH)?;
        if batch.is_empty() && damage.is_none() {
            break;
        }
        for (seq, bytes) in batch {
            if seq != next {
                report.first_bad = Some((next, "it is missing".to_string()));
                break 'read;
            }
            let checked = Event::from_bytes(&bytes)
                .and_then(|e| e.check_link(id, seq, &prev, &chain).map(|()| e));
            match checked {
                Ok(event) => prev = event.hash,
                Err(reason) => {
                    report.first_bad = Some((seq, reason.to_string()));
                    break 'read;
                }
            }
            report.events_checked += 1;
            next += 1;
        }
        if damage.is_some() {
            report.first_bad = damage;
            break;
        }
    }
    if report.first_bad.is_none() && next <= last {
        report.first_bad = Some((next, "it is missing".to_string()));
    }
    if report.first_bad.is_none() {
        report.first_bad = damaged_end;
    }
    if report.first_bad.is_none() {
        for (seq, bytes) in checkpoint::list(storage, id)? {
            if seq > last && checkpoint::decode_on(id, seq, &bytes, &chain).is_ok() {
                let reason = format!(
                    "the log ends at event {last} but was checkpointed at event {seq}: events were removed"
                );
                report.first_bad = Some((last + 1, reason));
                break;
            }
        }
    }
    if report.first_bad.is_none() {
        match recorded_head(info, id, &chain) {
            Err(reason) => report.first_bad = Some((last + 1, reason.to_string())),
            Ok(None) => {}
            Ok(Some(head)) => {
                report.head_checked = Some(head.0);
                if let Some(reason) = cut_from_head(storage, id, last, &head) {
                    report.first_bad = Some(((last + 1).min(head.0), reason));
                }
            }
        }
    }
    report.ok = report.first_bad.is_none();
    Ok(report)
}

/// Checks an exported log (`log export`: one event per line) without a
/// store: every event links to the one before, from the first; with `head`
/// (the sequence and hash the operator took from a trusted place, such as
/// what `log export` printed when the export was made), the export must end
/// exactly there. An export of a keyed log is checked under `key` (the
/// chain key it was sealed with, `--key`); `Err` when that is not the key
/// given, saying which key it needs.
pub fn verify_export(
    lines: impl IntoIterator<Item = String>,
    head: Option<(u64, String)>,
    key: Option<&Arc<ChainKey>>,
) -> Result<VerifyReport, ExportKeyError> {
    let mut report = VerifyReport {
        session: String::new(),
        name: None,
        ok: false,
        events_checked: 0,
        last_seq: 0,
        first_bad: None,
        head_checked: None,
        key_id: None,
    };
    let mut prev = GENESIS_HASH.to_string();
    let mut chain = Chain::Plain;
    for (line, seq) in lines
        .into_iter()
        .filter(|l| !l.trim().is_empty())
        .zip(1u64..)
    {
        let event = Event::from_bytes(line.as_bytes());
        if seq == 1
            && let Ok(first) = &event
        {
            report.session.clone_from(&first.session);
            chain = match (first.keyed_chain(), key) {
                (Some(keyed), None) => {
                    return Err(ExportKeyError::Missing(keyed.clone()));
                }
                (Some(keyed), Some(key)) if keyed.key_id != key.id() => {
                    return Err(ExportKeyError::Other {
                        sealed: keyed.clone(),
                        given_file: key.file().to_string(),
                        given_id: key.id().to_string(),
                    });
                }
                (keyed, key) => {
                    let label = format!("`{}`", first.session);
                    match chain::chain_of(&first.session, &label, keyed, key) {
                        Ok(chain) => chain,
                        Err(Refusal::KeyRequired(reason)) => {
                            return Err(ExportKeyError::Required(reason));
                        }
                        Err(Refusal::Downgraded(reason)) => {
                            report.first_bad = Some((1, format!("line 1: {reason}")));
                            return Ok(report);
                        }
                    }
                }
            };
            report.key_id = chain.key_id().map(str::to_string);
        }
        let checked = event.and_then(|e| {
            e.check_link(&report.session, seq, &prev, &chain)
                .map(|()| e)
        });
        match checked {
            Ok(event) => {
                prev = event.hash;
                report.events_checked = seq;
                report.last_seq = seq;
            }
            Err(reason) => {
                report.first_bad = Some((seq, format!("line {seq}: {reason}")));
                return Ok(report);
            }
        }
    }
    if let Some((seq, hash)) = head {
        report.head_checked = Some(seq);
        let last = report.last_seq;
        if seq > last {
            report.first_bad = Some((
                last + 1,
                format!(
                    "the export ends at event {last} but the head is event {seq}: events were cut off the tail"
                ),
            ));
        } else if seq < last {
            report.first_bad = Some((
                seq + 1,
                format!("the export goes on past the head (event {seq}) to event {last}"),
            ));
        } else if prev != hash {
            report.first_bad = Some((
                seq,
                format!("event {seq} is not the head: its hash is {prev}, the head's {hash}"),
            ));
        }
    }
    report.ok = report.first_bad.is_none();
    Ok(report)
}

/// Why an export cannot be checked with the key given (`--key`): the
/// message says which key it was sealed with, and where that key was.
#[derive(Debug, Clone, thiserror::Error)]
pub enum ExportKeyError {
    /// The export is of a keyed log and no key was given.
    #[error(
        "the export is of a keyed log (key id {}): check it with `--key FILE`, the chain key it was sealed with (`{}` on the host that wrote it)",
        .0.key_id,
        .0.key_file
    )]
    Missing(KeyedChain),
    /// The key given is not the one the export is sealed with.
    #[error(
        "the export is sealed with key id {}, and `--key {given_file}` has key id {given_id}: give the chain key it was sealed with (`{}` on the host that wrote it)",
        .sealed.key_id,
        .sealed.key_file
    )]
    Other {
        sealed: KeyedChain,
        given_file: String,
        given_id: String,
    },
    /// The chain refused the key given; the message names it.
    #[error("{0}")]
    Required(String),
}

/// Why the log of session `id`, ending at `last`, does not reach the head
/// its index recorded (`None` when it does): events were cut off its tail,
/// or the event at the recorded head is not the one that was there.
pub(crate) fn cut_from_head(
    storage: &dyn Storage,
    id: &str,
    last: u64,
    (seq, hash): &(u64, String),
) -> Option<String> {
    if *seq > last {
        return Some(format!(
            "the log ends at event {last} but its head was recorded at event {seq}: events were cut off the tail"
        ));
    }
    let at = storage.read(id, *seq, 1).ok()?.into_iter().next();
    match at.map(|(_, bytes)| Event::from_bytes(&bytes)) {
        Some(Ok(event)) if event.hash == *hash => None,
        _ => Some(format!(
            "event {seq} is not the one recorded as the log's head when it was written: the tail was replaced"
        )),
    }
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
