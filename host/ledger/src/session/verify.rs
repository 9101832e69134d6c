//! Verifying a session's log: its whole hash chain in the store
//! ([`verify`], which works on a damaged log and reports the first bad
//! event), and an exported log without a store ([`verify_export`]); and
//! what vouches for a log's end, the head its index entry recorded
//! ([`recorded_head`], [`cut_from_head`]), which loading checks too.

use std::sync::Arc;

use serde::Serialize;

use super::chain::{self, Chain, ChainKey, KeyedChain, Refusal};
use super::checkpoint;
use super::error::SessionError;
use super::event::{Event, GENESIS_HASH};
use super::log::{BATCH, read_to_damage};
use super::state::SessionInfo;
use crate::storage::{Storage, StorageError};

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
    let (checked, broken) = check_links(storage, id, last, &chain)?;
    report.events_checked = checked;
    report.first_bad = broken;
    if report.first_bad.is_none() {
        report.first_bad = damaged_end;
    }
    if report.first_bad.is_none() {
        report.first_bad = checkpoint_past_end(storage, id, last, &chain)?;
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

/// Checks that each event of session `id` up to `last` is there and links
/// to the one before, on `chain`, from the first: the events that did, and
/// the first that did not (missing, damaged in the stream, or not linking)
/// with what is wrong with it.
fn check_links(
    storage: &dyn Storage,
    id: &str,
    last: u64,
    chain: &Chain,
) -> Result<(u64, Option<(u64, String)>), SessionError> {
    let mut checked = 0;
    let mut prev = GENESIS_HASH.to_string();
    let mut next = 1;
    while next <= last {
        let (batch, damage) = read_to_damage(storage, id, next, BATCH)?;
        if batch.is_empty() && damage.is_none() {
            break;
        }
        for (seq, bytes) in batch {
            if seq != next {
                return Ok((checked, Some((next, "it is missing".to_string()))));
            }
            let linked = Event::from_bytes(&bytes)
                .and_then(|e| e.check_link(id, seq, &prev, chain).map(|()| e));
            match linked {
                Ok(event) => prev = event.hash,
                Err(reason) => return Ok((checked, Some((seq, reason.to_string())))),
            }
            checked += 1;
            next += 1;
        }
        if damage.is_some() {
            return Ok((checked, damage));
        }
    }
    if next <= last {
        return Ok((checked, Some((next, "it is missing".to_string()))));
    }
    Ok((checked, None))
}

/// A valid checkpoint of session `id` past `last`, the end of its log on
/// `chain`, as the damage it shows: events were removed.
fn checkpoint_past_end(
    storage: &dyn Storage,
    id: &str,
    last: u64,
    chain: &Chain,
) -> Result<Option<(u64, String)>, SessionError> {
    for (seq, bytes) in checkpoint::list(storage, id)? {
        if seq > last && checkpoint::decode_on(id, seq, &bytes, chain).is_ok() {
            let reason = format!(
                "the log ends at event {last} but was checkpointed at event {seq}: events were removed"
            );
            return Ok(Some((last + 1, reason)));
        }
    }
    Ok(None)
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
