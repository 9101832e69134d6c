//! Checkpoints: a session's folded state at event N, so loading it reads one
//! checkpoint plus the events after N.
//!
//! Stored in the bucket `checkpoints` under `<session id>/<N, 20 digits>` as a
//! header line `glovebox-checkpoint 1 <N> <sha256 of the state JSON>` followed by
//! the state JSON. A checkpoint counts only if its checksum verifies and the
//! event at N is still the one it was taken after (same hash); a crash while
//! writing one leaves it torn, and loading falls back to the one before.
//!
//! A checkpoint of a keyed session (see `chain.rs`) carries a fourth header
//! field, a MAC of the state JSON under the chain key: the checksum finds a
//! torn write, the MAC a state rewritten by someone without the key (who
//! could otherwise recompute the checksum and hand loading a forged state).

use sha2::{Digest, Sha256};

use super::chain::Chain;
use super::state::SessionState;
use crate::storage::{Storage, StorageError};

pub(crate) const BUCKET: &str = "checkpoints";

const MAGIC: &str = "glovebox-checkpoint 1";

pub(crate) fn key(session: &str, seq: u64) -> String {
    format!("{session}/{seq:020}")
}

fn prefix(session: &str) -> String {
    format!("{session}/")
}

/// The stored form of a checkpoint of `state`, whose log is sealed on `chain`.
pub(crate) fn encode(state: &SessionState, chain: &Chain) -> Vec<u8> {
    let json = serde_json::to_vec(state).unwrap_or_default();
    let sum = hex::encode(Sha256::digest(&json));
    let mac = chain
        .checkpoint_mac(&json)
        .map(|mac| format!(" {mac}"))
        .unwrap_or_default();
    let mut out = format!("{MAGIC} {} {sum}{mac}\n", state.last_seq).into_bytes();
    out.extend_from_slice(&json);
    out
}

/// [`decode`], for a session whose log is sealed on `chain`: a keyed
/// session's checkpoint must carry a valid MAC under its key, a plain
/// one's none, and the state's chain must be the session's.
pub(crate) fn decode_on(
    session: &str,
    seq: u64,
    bytes: &[u8],
    chain: &Chain,
) -> Result<SessionState, BadCheckpoint> {
    let (state, mac) = decode_with_mac(session, seq, bytes)?;
    let json = bytes
        .iter()
        .position(|b| *b == b'\n')
        .map(|newline| &bytes[newline + 1..])
        .unwrap_or_default();
    match (chain.checkpoint_mac(json), mac) {
        (None, None) => {}
        (Some(expected), Some(mac)) if expected == mac => {}
        (Some(_), Some(_)) => return Err(BadCheckpoint::MacInvalid),
        (Some(_), None) => return Err(BadCheckpoint::MacMissing),
        (None, Some(_)) => return Err(BadCheckpoint::MacUnexpected),
    }
    if state.keyed.as_ref().map(|k| k.key_id.as_str()) != chain.key_id() {
        return Err(BadCheckpoint::OtherMode);
    }
    Ok(state)
}

/// The state in a stored checkpoint taken at `seq` of `session`, or why it
/// does not count. Public for the host's store check, which verifies every
/// stored record it can decode.
pub fn decode(session: &str, seq: u64, bytes: &[u8]) -> Result<SessionState, BadCheckpoint> {
    decode_with_mac(session, seq, bytes).map(|(state, _)| state)
}

/// [`decode`], and the MAC of a keyed session's checkpoint (not checked).
fn decode_with_mac(
    session: &str,
    seq: u64,
    bytes: &[u8],
) -> Result<(SessionState, Option<String>), BadCheckpoint> {
    let newline = bytes
        .iter()
        .position(|b| *b == b'\n')
        .ok_or(BadCheckpoint::NoHeader)?;
    let header =
        std::str::from_utf8(&bytes[..newline]).map_err(|_| BadCheckpoint::HeaderNotText)?;
    let json = &bytes[newline + 1..];
    let rest = header
        .strip_prefix(MAGIC)
        .ok_or(BadCheckpoint::NotCheckpointHeader)?;
    let mut fields = rest.split_whitespace();
    let (Some(header_seq), Some(sum), mac, None) =
        (fields.next(), fields.next(), fields.next(), fields.next())
    else {
        return Err(BadCheckpoint::MalformedHeader);
    };
    if header_seq != seq.to_string() {
        return Err(BadCheckpoint::OtherSeq(header_seq.to_string()));
    }
    if hex::encode(Sha256::digest(json)) != sum {
        return Err(BadCheckpoint::Checksum);
    }
    let mut state: SessionState =
        serde_json::from_slice(json).map_err(BadCheckpoint::Undecodable)?;
    // Written before children were counted: counted from its list.
    state.upgrade_children();
    if state.header.id != session || state.last_seq != seq {
        return Err(BadCheckpoint::OtherState {
            seq: state.last_seq,
            session: state.header.id,
        });
    }
    Ok((state, mac.map(str::to_string)))
}

/// Why a stored checkpoint does not count: loading passes over it to an
/// older one, and the store check reports it.
#[derive(Debug, thiserror::Error)]
pub enum BadCheckpoint {
    #[error("it has no header")]
    NoHeader,
    #[error("its header is not text")]
    HeaderNotText,
    #[error("its header is not a checkpoint header")]
    NotCheckpointHeader,
    #[error("its header is malformed")]
    MalformedHeader,
    /// The event its header names, as written there.
    #[error("its header says event {0}")]
    OtherSeq(String),
    #[error("its checksum does not match (torn or altered)")]
    Checksum,
    #[error("its state does not decode ({0})")]
    Undecodable(serde_json::Error),
    /// The state is of another event or session than its key says.
    #[error("it holds event {seq} of session `{session}`")]
    OtherState { seq: u64, session: String },
    #[error("its MAC does not verify under the chain key (written without the key)")]
    MacInvalid,
    #[error("it carries no MAC, and the session is keyed")]
    MacMissing,
    #[error("it carries a MAC, and the session is plain")]
    MacUnexpected,
    #[error("its state is of another chain mode than the session's log")]
    OtherMode,
}

/// The checkpoints of `session`, newest first, as (seq, stored bytes).
pub(crate) fn list(
    storage: &dyn Storage,
    session: &str,
) -> Result<Vec<(u64, Vec<u8>)>, StorageError> {
    // A few at most (`write` keeps `keep`), but read a page at a time all
    // the same: the bucket holds every session's.
    let prefix = prefix(session);
    let mut found = Vec::new();
    for entry in crate::storage::pages(storage, BUCKET, &prefix, crate::storage::PAGE) {
        let (key, value) = entry?;
        if let Some(seq) = key.strip_prefix(&prefix).and_then(|s| s.parse().ok()) {
            found.push((seq, value));
        }
    }
    found.sort_by_key(|(seq, _)| std::cmp::Reverse(*seq));
    Ok(found)
}

/// Stores a checkpoint of `state` (sealed on `chain`), then deletes all but
/// the newest `keep`.
pub(crate) fn write(
    storage: &dyn Storage,
    state: &SessionState,
    chain: &Chain,
    keep: usize,
) -> Result<(), StorageError> {
    storage.put(
        BUCKET,
        &key(&state.header.id, state.last_seq),
        &encode(state, chain),
    )?;
    for (seq, _) in list(storage, &state.header.id)?
        .into_iter()
        .skip(keep.max(1))
    {
        storage.delete(BUCKET, &key(&state.header.id, seq))?;
    }
    Ok(())
}

/// The seqs of the checkpoints kept for `session`, newest first.
#[cfg(test)]
pub(crate) fn seqs(storage: &dyn Storage, session: &str) -> Result<Vec<u64>, StorageError> {
    Ok(list(storage, session)?
        .into_iter()
        .map(|(seq, _)| seq)
        .collect())
}
