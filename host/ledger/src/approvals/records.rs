//! The approvals' records and the index that finds them without a walk of
//! every approval ever asked for.
//!
//! Why: an agent whose calls a hook asks about makes an approval per call,
//! and settled ones stay until `[quotas] retain_finished` removes them. A
//! listing, a page, the sweep or an expiry that decoded the whole bucket
//! would hold as much as agents made (threat 49). So every reader goes
//! through the index, a page at a time: the pending approvals oldest first,
//! a session's pending ones, the settled ones newest first.
//!
//! What: the record of approval `ap-…` in bucket `approvals` (as before),
//! and in bucket `approval_index` one key per way it is found:
//!
//! - `p/<requested at>/<id>` while it is pending (oldest first);
//! - `x/<session>/<requested at>/<id>` while it is pending, per session;
//! - `s/<u64::MAX - settled at>/<id>` once it is settled (newest first; the
//!   sweep's removal reads from the old end).
//!
//! Times are 20-digit, zero-padded, so key order is time order. The index
//! is a hint: a key is written before the record it points to and removed
//! after the record changed, so it may point to a record that is gone or no
//! longer in that state; each reader confirms the record and repairs (or
//! skips) a stale key. A store written before the index existed is indexed
//! once, a page at a time ([`index_old_records`]).
//!
//! This sits at the bottom of the ledger, below `session`, like the memory
//! bank's records: a session that ends settles its pending approvals
//! (`session/closing.rs`) through these functions.

use serde::{Deserialize, Serialize};

use crate::storage::{self, Storage, StorageError, Swap};
use crate::tally::{Tally, UNSTORED_GRACE_MS};

pub(crate) const BUCKET: &str = "approvals";
pub(crate) const INDEX: &str = "approval_index";
/// The places of `[quotas] approvals_per_principal`, per principal.
const PLACES: &str = "approval_places";
/// In [`INDEX`]: present once every record of the store is indexed.
const INDEXED: &str = "v/1";

pub(crate) const PENDING: &str = "p/";
pub(crate) const SETTLED: &str = "s/";

/// Where an approval stands.
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "state", rename_all = "snake_case")]
pub enum ApprovalStatus {
    Pending,
    /// `by`: who approved it (a principal's name, or `cli:<uid>`); absent
    /// in approvals settled before it was recorded.
    Approved {
        at_ms: u64,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        by: Option<String>,
    },
    Denied {
        at_ms: u64,
        reason: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        by: Option<String>,
    },
}

impl ApprovalStatus {
    /// When it was settled; `None` while pending.
    pub fn settled_at_ms(&self) -> Option<u64> {
        match self {
            ApprovalStatus::Pending => None,
            ApprovalStatus::Approved { at_ms, .. } | ApprovalStatus::Denied { at_ms, .. } => {
                Some(*at_ms)
            }
        }
    }
}

/// A call waiting for a human.
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Approval {
    pub id: String,
    pub session: String,
    pub session_name: Option<String>,
    /// The call the hook judged.
    pub call_id: String,
    pub tool: String,
    /// The plugin's digest when the hook judged the call: a changed tool
    /// is not run on this approval.
    pub tool_digest: String,
    pub input_hash: String,
    pub input: String,
    pub action: String,
    pub hook: String,
    pub pattern: String,
    pub reason: String,
    pub requested_at_ms: u64,
    pub status: ApprovalStatus,
    /// The agent principal whose call it is, counted against `[quotas]
    /// approvals_per_principal` while it is pending; `None` for an
    /// operator's call (operators are not held to it) and in approvals
    /// asked for before it was recorded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub principal: Option<String>,
    /// The background job whose call it is, if any: the job waits for it
    /// (`awaiting_approval`) and takes the approved call's result.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub job: Option<String>,
}

fn pending_key(a: &Approval) -> String {
    format!("{PENDING}{:020}/{}", a.requested_at_ms, a.id)
}

fn session_prefix(session: &str) -> String {
    format!("x/{session}/")
}

fn session_key(a: &Approval) -> String {
    format!(
        "{}{:020}/{}",
        session_prefix(&a.session),
        a.requested_at_ms,
        a.id
    )
}

fn settled_key(id: &str, at_ms: u64) -> String {
    format!("{SETTLED}{:020}/{id}", u64::MAX - at_ms)
}

/// The approval id an index key ends with.
pub(crate) fn id_of(key: &str) -> &str {
    key.rsplit('/').next().unwrap_or(key)
}

fn decode(id: &str, bytes: &[u8]) -> Result<Approval, StorageError> {
    serde_json::from_slice(bytes)
        .map_err(|e| StorageError::Corrupt(format!("approval `{id}` does not decode: {e}")))
}

fn encode(approval: &Approval) -> Result<Vec<u8>, StorageError> {
    serde_json::to_vec(approval)
        .map_err(|e| StorageError::Io(format!("cannot encode approval `{}`: {e}", approval.id)))
}

/// The record of approval `id`, if there is one.
pub(crate) fn get(storage: &dyn Storage, id: &str) -> Result<Option<Approval>, StorageError> {
    storage
        .get(BUCKET, id)?
        .map(|bytes| decode(id, &bytes))
        .transpose()
}

/// Stores `approval` with its index keys (written first: a key whose
/// record is missing is skipped by readers, never the other way round).
pub(crate) fn put(storage: &dyn Storage, approval: &Approval) -> Result<(), StorageError> {
    put_keys(storage, approval)?;
    storage.put(BUCKET, &approval.id, &encode(approval)?)
}

/// The index keys of `approval` in its state.
pub(crate) fn put_keys(storage: &dyn Storage, approval: &Approval) -> Result<(), StorageError> {
    let id = approval.id.as_bytes();
    match approval.status.settled_at_ms() {
        None => {
            storage.put(INDEX, &pending_key(approval), id)?;
            storage.put(INDEX, &session_key(approval), id)
        }
        Some(at) => storage.put(INDEX, &settled_key(&approval.id, at), id),
    }
}

/// How a settlement went.
pub(crate) enum Swapped {
    /// Recorded: the approval was pending, and is now what was asked.
    Done,
    /// Not recorded: the approval is not pending (any more).
    Was,
    /// Not recorded: there is no such approval.
    Missing,
    /// Not recorded: the record changed between the read and the write.
    Changed,
}

/// Records `settled` (an approval with its new status) if the stored one is
/// still pending: a compare-and-set, so of two settlements racing (two
/// operators, two hosts, an end and an approval) exactly one is recorded.
/// Then moves its index keys and gives back its place.
pub(crate) fn settle(storage: &dyn Storage, settled: &Approval) -> Result<Swapped, StorageError> {
    let id = &settled.id;
    let Some(stored) = storage.get(BUCKET, id)? else {
        return Ok(Swapped::Missing);
    };
    let current = decode(id, &stored)?;
    if current.status != ApprovalStatus::Pending {
        return Ok(Swapped::Was);
    }
    if !storage.put_if(
        BUCKET,
        id,
        Swap::new(Some(&stored), Some(&encode(settled)?)),
    )? {
        return Ok(Swapped::Changed);
    }
    reindex_settled(storage, &current, settled);
    Ok(Swapped::Done)
}

/// After `was` (pending) became `now` (settled): its pending keys go, its
/// settled key comes, its place is given back. Best effort: the record is
/// what counts, and a reader repairs what is left behind.
fn reindex_settled(storage: &dyn Storage, was: &Approval, now: &Approval) {
    let at = now.status.settled_at_ms().unwrap_or(0);
    let moved = storage
        .put(INDEX, &settled_key(&now.id, at), now.id.as_bytes())
        .and_then(|()| storage.delete(INDEX, &pending_key(was)))
        .and_then(|()| storage.delete(INDEX, &session_key(was)));
    if let Err(e) = moved {
        tracing::warn!(approval = %now.id, error = %e, "could not move a settled approval in the index (the next reader repairs it)");
    }
    if let Some(principal) = &was.principal
        && let Err(e) = places(storage).give_back(principal, &was.id)
    {
        tracing::warn!(approval = %now.id, error = %e, "could not give back a settled approval's place (the next take drops it)");
    }
}

/// The record index key `key` points to, if it is still in that state:
/// a stale key is repaired (removed, or moved where its record now
/// belongs) and `None` returned. A key whose record is not there is
/// passed over and left: [`put`] writes the keys first, so a reader racing
/// it finds the key of a record about to land, and removing that key would
/// hide the approval from every listing for good (an operator's `approvals`
/// polling while an agent's call was being recorded did). [`collect`]
/// removes the keys a crash left without their record.
pub(crate) fn confirm(storage: &dyn Storage, key: &str) -> Result<Option<Approval>, StorageError> {
    let id = id_of(key);
    let record = match get(storage, id) {
        Ok(record) => record,
        Err(StorageError::Corrupt(why)) => {
            tracing::warn!(approval = id, error = %why, "unreadable approval skipped");
            return Ok(None);
        }
        Err(e) => return Err(e),
    };
    let wants_pending = !key.starts_with(SETTLED);
    match record {
        Some(a) if (a.status == ApprovalStatus::Pending) == wants_pending => {
            let fits = match key.split('/').nth(1) {
                Some(session) if key.starts_with("x/") => session == a.session,
                _ => true,
            };
            if fits {
                return Ok(Some(a));
            }
            storage.delete(INDEX, key)?;
        }
        Some(a) if wants_pending => {
            // Settled, and its move in the index did not happen.
            let at = a.status.settled_at_ms().unwrap_or(0);
            storage.put(INDEX, &settled_key(&a.id, at), a.id.as_bytes())?;
            storage.delete(INDEX, &pending_key(&a))?;
            storage.delete(INDEX, &session_key(&a))?;
            storage.delete(INDEX, key)?;
        }
        Some(_) => storage.delete(INDEX, key)?,
        None => {}
    }
    Ok(None)
}

/// Up to `limit` keys of the index under `prefix` after `after`.
pub(crate) fn keys(
    storage: &dyn Storage,
    prefix: &str,
    after: Option<&str>,
    limit: usize,
) -> Result<Vec<String>, StorageError> {
    Ok(storage
        .scan_page(INDEX, prefix, after, limit)?
        .into_iter()
        .map(|(key, _)| key)
        .collect())
}

/// Every approval whose index key starts with `prefix` (and is confirmed),
/// in key order, read a page at a time: what a caller holds is one page of
/// keys and the approval it is looking at.
pub(crate) fn walk<'a>(
    storage: &'a dyn Storage,
    prefix: &'a str,
) -> impl Iterator<Item = Result<Approval, StorageError>> + 'a {
    storage::pages(storage, INDEX, prefix, storage::PAGE).filter_map(move |item| match item {
        Ok((key, _)) => confirm(storage, &key).transpose(),
        Err(e) => Some(Err(e)),
    })
}

/// The pending approvals of `session`, oldest first.
pub(crate) fn pending_of_session(
    storage: &dyn Storage,
    session: &str,
) -> Result<Vec<Approval>, StorageError> {
    let prefix = session_prefix(session);
    walk(storage, &prefix).collect()
}

/// The oldest pending approval of `session`, if it has one.
pub(crate) fn oldest_pending_of_session(
    storage: &dyn Storage,
    session: &str,
) -> Result<Option<Approval>, StorageError> {
    let prefix = session_prefix(session);
    walk(storage, &prefix).next().transpose()
}

/// Removes the approvals settled before `before_ms` (and their keys);
/// returns how many. Reads from the old end of the settled keys, so the
/// work is what is removed, not what is kept. Then removes the pending keys
/// from before `before_ms` whose record never came (a host that died
/// between [`put`]'s writes).
pub(crate) fn collect(storage: &dyn Storage, before_ms: u64) -> Result<usize, StorageError> {
    let removed = collect_settled(storage, before_ms)?;
    collect_unstored_pending(storage, before_ms)?;
    Ok(removed)
}

/// The pending keys older than `before_ms` without a record, removed.
fn collect_unstored_pending(storage: &dyn Storage, before_ms: u64) -> Result<(), StorageError> {
    let end = format!("{PENDING}{before_ms:020}");
    let mut after = None;
    loop {
        let page = keys(storage, PENDING, after.as_deref(), storage::PAGE)?;
        for key in &page {
            if *key >= end {
                return Ok(());
            }
            if storage.get(BUCKET, id_of(key))?.is_none() {
                storage.delete(INDEX, key)?;
            }
        }
        match page.last() {
            Some(key) if page.len() == storage::PAGE => after = Some(key.clone()),
            _ => return Ok(()),
        }
    }
}

fn collect_settled(storage: &dyn Storage, before_ms: u64) -> Result<usize, StorageError> {
    let Some(from) = (u64::MAX - before_ms).checked_add(1) else {
        return Ok(0);
    };
    let mut after = format!("{SETTLED}{from:020}");
    let mut removed = 0;
    loop {
        let page = keys(storage, SETTLED, Some(&after), storage::PAGE)?;
        let last = page.len() < storage::PAGE;
        for key in &page {
            let keep = match get(storage, id_of(key)) {
                Ok(Some(a)) => match a.status.settled_at_ms() {
                    Some(at) if at < before_ms => {
                        storage.delete(BUCKET, &a.id)?;
                        removed += 1;
                        false
                    }
                    Some(at) => settled_key(&a.id, at) == *key,
                    // Pending: the key is stale.
                    None => false,
                },
                // Gone, or unreadable (left for `glovebox store check`): the key goes.
                Ok(None) | Err(StorageError::Corrupt(_)) => false,
                Err(e) => return Err(e),
            };
            if !keep {
                storage.delete(INDEX, key)?;
            }
        }
        match page.last() {
            Some(key) if !last => after = key.clone(),
            _ => return Ok(removed),
        }
    }
}

/// The places of `[quotas] approvals_per_principal`.
fn places(storage: &dyn Storage) -> Tally<'_> {
    Tally {
        storage,
        bucket: PLACES,
    }
}

/// Takes a place for approval `id` of `principal`, unless it already has
/// `limit` pending: then `Ok(Err(count))`, nothing written.
pub(crate) fn take_place(
    storage: &dyn Storage,
    principal: &str,
    id: &str,
    limit: u64,
    now_ms: u64,
) -> Result<Result<(), u64>, StorageError> {
    places(storage).take(principal, id, limit, now_ms, |other, taken_at| {
        Ok(match get(storage, other) {
            Ok(Some(a)) => a.status == ApprovalStatus::Pending,
            Ok(None) => now_ms.saturating_sub(taken_at) <= UNSTORED_GRACE_MS,
            // Unreadable: it cannot be settled, so it does not hold a place.
            Err(StorageError::Corrupt(_)) => false,
            Err(e) => return Err(e),
        })
    })
}

/// Gives back the place approval `id` of `principal` took (it was never stored).
pub(crate) fn give_back_place(
    storage: &dyn Storage,
    principal: &str,
    id: &str,
) -> Result<(), StorageError> {
    places(storage).give_back(principal, id)
}

/// Indexes the approvals of a store written before the index existed, a
/// page at a time, once (a marker says it was done). Returns whether it
/// indexed anything now.
pub(crate) fn index_old_records(storage: &dyn Storage) -> Result<bool, StorageError> {
    if storage.get(INDEX, INDEXED)?.is_some() {
        return Ok(false);
    }
    let mut indexed = 0usize;
    for item in storage::pages(storage, BUCKET, "", storage::PAGE) {
        let (key, bytes) = item?;
        let approval = match decode(&key, &bytes) {
            Ok(a) => a,
            Err(e) => {
                tracing::warn!(approval = %key, error = %e, "unreadable approval left out of the index");
                continue;
            }
        };
        put_keys(storage, &approval)?;
        indexed += 1;
    }
    storage.put(INDEX, INDEXED, b"")?;
    if indexed > 0 {
        tracing::info!(
            indexed,
            "indexed the approvals of a store written before the approvals index"
        );
    }
    Ok(indexed > 0)
}
