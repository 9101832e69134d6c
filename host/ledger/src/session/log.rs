//! Reading a session's log: loading its state (newest valid checkpoint plus the
//! tail, the tail's hash chain verified) and verifying the whole chain.
//!
//! Damage the storage finds in a session's stream ([`StorageError::Damaged`]:
//! a missing or undecodable record) is damage to the session's log, reported
//! like an altered event: [`SessionError::Tampered`], or `first_bad` in a
//! [`VerifyReport`], at the first sequence that cannot be read.

use serde::Serialize;

use super::checkpoint;
use super::error::SessionError;
use super::event::{Event, GENESIS_HASH};
use super::state::SessionState;
use crate::storage::{Storage, StorageError};

/// Events read from storage per batch.
const BATCH: usize = 1024;

/// What the last load of a session read.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct LoadStats {
    pub session: String,
    /// The checkpoint the load started from, if any.
    pub checkpoint_seq: Option<u64>,
    /// Events read from the log: the checkpoint's anchor event plus the tail.
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

/// Loads the state of session `id` (named `label` in errors).
pub(crate) fn load(
    storage: &dyn Storage,
    id: &str,
    label: &str,
    use_checkpoints: bool,
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
    let mut start = None;
    if use_checkpoints {
        for (seq, bytes) in checkpoint::list(storage, id)? {
            match anchored(storage, id, seq, last, &bytes) {
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
            let (first, damage) = read_to_damage(storage, id, 1, 1)?;
            let Some((1, bytes)) = first.first() else {
                let (seq, reason) = damage.unwrap_or((1, "it is missing".to_string()));
                return Err(tampered(seq, reason));
            };
            stats.events_read += 1;
            let event = Event::from_bytes(bytes).map_err(|r| tampered(1, r))?;
            event
                .check_link(id, 1, GENESIS_HASH)
                .map_err(|r| tampered(1, r))?;
            SessionState::start(&event).map_err(|e| tampered(1, e.to_string()))?
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
            let event = Event::from_bytes(&bytes).map_err(|r| tampered(seq, r))?;
            event
                .check_link(id, seq, &state.last_hash)
                .map_err(|r| tampered(seq, r))?;
            state.apply(&event).map_err(|e| {
                tampered(
                    seq,
                    format!("it does not fit the session's lifecycle ({e})"),
                )
            })?;
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
) -> Result<SessionState, Anchor> {
    let state = checkpoint::decode(id, seq, bytes).map_err(Anchor::Rejected)?;
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
    let anchor = Event::from_bytes(anchor).map_err(Anchor::Rejected)?;
    if anchor.session != id || anchor.seq != seq || anchor.compute_hash() != anchor.hash {
        return Err(Anchor::Rejected(format!("event {seq} does not verify")));
    }
    if anchor.hash != state.last_hash {
        return Err(Anchor::Rejected(format!(
            "event {seq} is not the one it was taken after"
        )));
    }
    Ok(state)
}

/// Checks the whole chain of session `id`, and that no valid checkpoint lies
/// past its end. Damage the storage finds in the stream is reported in the
/// report, not as an error.
pub(crate) fn verify(
    storage: &dyn Storage,
    id: &str,
    name: Option<String>,
    head: Option<(u64, String)>,
) -> Result<VerifyReport, StorageError> {
    // When the record ending the log does not read, check the events before it.
    let (last, damaged_end) = match storage.last_seq(id) {
        Ok(last) => (last, None),
        Err(StorageError::Damaged { seq, reason, .. }) => {
            (seq.saturating_sub(1), Some((seq, reason)))
        }
        Err(e) => return Err(e),
    };
    let mut report = VerifyReport {
        session: id.to_string(),
        name,
        ok: false,
        events_checked: 0,
        last_seq: last,
        first_bad: None,
        head_checked: None,
    };
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
            let checked =
                Event::from_bytes(&bytes).and_then(|e| e.check_link(id, seq, &prev).map(|()| e));
            match checked {
                Ok(event) => prev = event.hash,
                Err(reason) => {
                    report.first_bad = Some((seq, reason));
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
            if seq > last && checkpoint::decode(id, seq, &bytes).is_ok() {
                let reason = format!(
                    "the log ends at event {last} but was checkpointed at event {seq}: events were removed"
                );
                report.first_bad = Some((last + 1, reason));
                break;
            }
        }
    }
    if report.first_bad.is_none()
        && let Some(head) = head
    {
        report.head_checked = Some(head.0);
        if let Some(reason) = cut_from_head(storage, id, last, &head) {
            report.first_bad = Some(((last + 1).min(head.0), reason));
        }
    }
    report.ok = report.first_bad.is_none();
    Ok(report)
}

/// Checks an exported log (`log export`: one event per line) without a
/// store: every event links to the one before, from the first; with `head`
/// (the sequence and hash the operator took from a trusted place, such as
/// what `log export` printed when the export was made), the export must end
/// exactly there.
pub fn verify_export(
    lines: impl IntoIterator<Item = String>,
    head: Option<(u64, String)>,
) -> VerifyReport {
    let mut report = VerifyReport {
        session: String::new(),
        name: None,
        ok: false,
        events_checked: 0,
        last_seq: 0,
        first_bad: None,
        head_checked: None,
    };
    let mut prev = GENESIS_HASH.to_string();
    for (line, seq) in lines
        .into_iter()
        .filter(|l| !l.trim().is_empty())
        .zip(1u64..)
    {
        let checked = Event::from_bytes(line.as_bytes()).and_then(|e| {
            if seq == 1 {
                report.session.clone_from(&e.session);
            }
            e.check_link(&report.session, seq, &prev).map(|()| e)
        });
        match checked {
            Ok(event) => {
                prev = event.hash;
                report.events_checked = seq;
                report.last_seq = seq;
            }
            Err(reason) => {
                report.first_bad = Some((seq, format!("line {seq}: {reason}")));
                return report;
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
    report
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
        .map(|(seq, bytes)| Event::from_bytes(&bytes).map_err(|reason| tampered(seq, reason)))
        .collect::<Result<Vec<Event>, SessionError>>()?;
    match damage {
        Some((seq, reason)) => Err(tampered(seq, reason)),
        None => Ok(events),
    }
}
