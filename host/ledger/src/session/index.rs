//! The sessions' indexes: the keys that let a listing, a quota count, a
//! name lookup and the recovery at start read a page of what they need
//! instead of every session there is.
//!
//! Why: an agent can start sessions by the hundred thousand (threat 49).
//! Anything that decodes the whole `sessions` bucket on a request (every
//! `session_list`, every start's live-session count, every lookup of an
//! ended session's name) then costs as much as the agent has made, and so
//! does a restart that loads every session to find the calls in flight.
//!
//! What (every value is empty; the key says it all):
//!
//! - `sessions_by_start`: `<newest first>/<id>`, every session, newest
//!   first (`<newest first>` is `u64::MAX - created_at_ms`, 20 digits): the
//!   operators' listing;
//! - `sessions_by_owner`: `<owner>/<newest first>/<id>`: an agent's listing;
//! - `sessions_live`: `<owner>/<id>`, while the session is live or has
//!   calls in flight: the live-session quota counts it, recovery walks it;
//! - `sessions_by_name`: `<name> <owner> <newest first> <id>`, every name a
//!   session had: a name's newest session, by owner (names, owners and
//!   ids hold no spaces, so a prefix names exactly one name and owner);
//! - `session_children`: `<parent>/<start ms, 20 digits>/<child>` → the
//!   [`ChildLink`] the spawn carved, every child of a parent, oldest first
//!   (the parent's state keeps only the newest: `brood.rs`).
//!
//! An index entry is a hint, and the session's own entry in `sessions` (its
//! [`SessionInfo`], written after its log) confirms it: an entry whose
//! session has no record, or whose record says otherwise (another owner,
//! another name, not live, another parent), is passed over. So the entries are written
//! before the event they announce (a crash then leaves a hint nobody
//! confirms, never a session nobody can find), and removed after the event
//! that ends them (a crash then leaves a stale hint, which recovery
//! removes).
//!
//! A data dir written before the indexes existed is indexed once, at the
//! first use, from its logs (`ensure_indexed`), and its global `names`
//! bucket copied into the owners' name spaces (`names.rs`); a marker in
//! `sessions_meta` says it was done.

use super::error::SessionError;
use super::slots::lock;
use super::state::{ChildLink, SessionInfo};
use super::store::Sessions;
use crate::storage::StorageError;

pub(crate) const BY_START: &str = "sessions_by_start";
pub(crate) const BY_OWNER: &str = "sessions_by_owner";
pub(crate) const LIVE: &str = "sessions_live";
pub(crate) const BY_NAME: &str = "sessions_by_name";
pub(crate) const CHILDREN: &str = "session_children";
const META: &str = "sessions_meta";
const INDEXED: &str = "indexes";
/// 1: by start, owner, live, name; 2: and children.
const VERSION: &[u8] = b"2";

/// Keys read per page when walking an index.
pub(crate) const PAGE: usize = 256;

/// `ms` as a key part that sorts the newest first.
pub(crate) fn newest_first(ms: u64) -> String {
    format!("{:020}", u64::MAX - ms)
}

pub(crate) fn start_key(created_ms: u64, id: &str) -> String {
    format!("{}/{id}", newest_first(created_ms))
}

pub(crate) fn owner_key(owner: &str, created_ms: u64, id: &str) -> String {
    format!("{owner}/{}/{id}", newest_first(created_ms))
}

pub(crate) fn live_key(owner: &str, id: &str) -> String {
    format!("{owner}/{id}")
}

/// The prefix of the `sessions_by_name` entries of `name`, and of one
/// owner's when `owner` is given.
pub(crate) fn by_name_prefix(name: &str, owner: Option<&str>) -> String {
    match owner {
        Some(owner) => format!("{name} {owner} "),
        None => format!("{name} "),
    }
}

fn by_name_key(name: &str, owner: &str, created_ms: u64, id: &str) -> String {
    format!(
        "{}{} {id}",
        by_name_prefix(name, Some(owner)),
        newest_first(created_ms)
    )
}

pub(crate) fn child_key(parent: &str, created_ms: u64, child: &str) -> String {
    format!("{parent}/{created_ms:020}/{child}")
}

/// The session id an index key ends with.
pub(crate) fn id_of(key: &str) -> &str {
    key.rsplit(['/', ' ']).next().unwrap_or(key)
}

/// Whether `cursor` is a position among the index keys that start with
/// `prefix` (`<20 digits>/<id>` after it): what every paged listing of the
/// session indexes checks before it reads from a cursor a caller gave.
pub(crate) fn is_position(cursor: &str, prefix: &str) -> bool {
    cursor.strip_prefix(prefix).is_some_and(|rest| {
        rest.split_once('/').is_some_and(|(when, id)| {
            when.len() == 20 && when.bytes().all(|b| b.is_ascii_digit()) && !id.is_empty()
        })
    })
}

/// What a new session is indexed under.
pub(crate) struct NewSession<'a> {
    pub id: &'a str,
    pub owner: &'a str,
    pub created_ms: u64,
    pub name: Option<&'a str>,
    /// A child's parent and what the spawn carved for it.
    pub parent: Option<(&'a str, &'a ChildLink)>,
}

impl Sessions {
    /// Writes the index entries of a session about to be started, before
    /// its first event (see the module docs). Not durable on return: the
    /// durable append of the first event that follows makes them so.
    pub(crate) fn index_new(&self, new: &NewSession<'_>) -> Result<(), StorageError> {
        let s = &*self.storage;
        s.put_unsynced(BY_START, &start_key(new.created_ms, new.id), b"")?;
        s.put_unsynced(BY_OWNER, &owner_key(new.owner, new.created_ms, new.id), b"")?;
        s.put_unsynced(LIVE, &live_key(new.owner, new.id), b"")?;
        if let Some(name) = new.name {
            self.index_name(name, new.owner, new.created_ms, new.id)?;
        }
        if let Some((parent, link)) = new.parent {
            self.index_child(parent, new.created_ms, new.id, link)?;
        }
        Ok(())
    }

    /// Indexes `child` (started at `created_ms`) among `parent`'s children.
    pub(crate) fn index_child(
        &self,
        parent: &str,
        created_ms: u64,
        child: &str,
        link: &ChildLink,
    ) -> Result<(), StorageError> {
        let value = serde_json::to_vec(link).unwrap_or_default();
        self.storage
            .put_unsynced(CHILDREN, &child_key(parent, created_ms, child), &value)
    }

    /// Indexes `name` for session `id` (started at `created_ms`), before
    /// the event that gives it the name.
    pub(crate) fn index_name(
        &self,
        name: &str,
        owner: &str,
        created_ms: u64,
        id: &str,
    ) -> Result<(), StorageError> {
        self.storage
            .put_unsynced(BY_NAME, &by_name_key(name, owner, created_ms, id), b"")
    }

    /// Removes session `id` from the live index, once it is neither live
    /// nor has calls in flight. A failure leaves a stale hint (recovery
    /// removes it); it is logged.
    pub(crate) fn unindex_live(&self, owner: &str, id: &str) {
        if let Err(e) = self.storage.delete(LIVE, &live_key(owner, id)) {
            tracing::warn!(session = %id, error = %e, "could not update the live-session index; the next start's recovery does");
        }
    }

    /// The record of session `id` when it confirms an index entry of
    /// `owner` (any owner when `None`).
    pub(crate) fn confirmed(&self, id: &str, owner: Option<&str>) -> Option<SessionInfo> {
        let info = self.get_info(id).ok().flatten()?;
        (info.header.id == id && owner.is_none_or(|o| o == info.owner_name())).then_some(info)
    }

    /// Indexes a data dir written before the indexes existed, once: every
    /// session's log is read for its record (made again where a crash left
    /// none), its index entries written, and the names the global `names`
    /// bucket holds for live sessions copied into their owners' name
    /// spaces. Then a marker says it is done; until it is, every use waits.
    pub(crate) fn ensure_indexed(&self) -> Result<(), SessionError> {
        let mut done = lock(&self.indexed);
        if *done {
            return Ok(());
        }
        if self.storage.get(META, INDEXED)?.as_deref() != Some(VERSION) {
            let sessions = self.index_every_session()?;
            if sessions > 0 {
                tracing::info!(
                    sessions,
                    "indexed the sessions of a data dir written before the session indexes"
                );
            }
            // Ordered after the entries (a durable write makes every write
            // before it durable), so a crash may lose the marker but never
            // keep it without them: the indexing then runs again, which
            // changes nothing it did.
            self.storage.put_unsynced(META, INDEXED, VERSION)?;
        }
        *done = true;
        Ok(())
    }

    /// What the parent of the child `info` (in a data dir written before the
    /// children index) knew of it: its state then held every child, with its
    /// latest report.
    fn link_of(&self, parent: &str, info: &SessionInfo) -> ChildLink {
        let known = self
            .state_of(parent)
            .ok()
            .and_then(|state| state.children.get(&info.header.id).cloned());
        known.unwrap_or_else(|| ChildLink {
            role: info.header.role,
            name: info.header.name.clone(),
            budget: Default::default(),
            spawned_at_ms: info.header.created_at_ms,
            report: None,
        })
    }

    /// What [`Sessions::ensure_indexed`] does to an unindexed data dir;
    /// returns how many sessions it indexed.
    fn index_every_session(&self) -> Result<usize, SessionError> {
        let ids = self.session_ids()?;
        for id in &ids {
            let info = match self.get_info(id)? {
                Some(info) => info,
                None => match self.state_of(id) {
                    Ok(state) => {
                        self.put_info(&state)?;
                        SessionInfo::from(&state)
                    }
                    Err(e) => {
                        tracing::warn!(session = %id, error = %e, "a session whose log does not load is left out of the indexes");
                        continue;
                    }
                },
            };
            let owner = info.owner_name().to_string();
            let created = info.header.created_at_ms;
            self.storage
                .put_unsynced(BY_START, &start_key(created, id), b"")?;
            self.storage
                .put_unsynced(BY_OWNER, &owner_key(&owner, created, id), b"")?;
            if let Some(name) = &info.header.name {
                self.index_name(name, &owner, created, id)?;
            }
            if info.header.status.is_live() {
                self.storage
                    .put_unsynced(LIVE, &live_key(&owner, id), b"")?;
            }
            if let Some(parent) = &info.parent {
                let link = self.link_of(parent, &info);
                self.index_child(parent, created, id, &link)?;
            }
        }
        self.copy_legacy_names()?;
        Ok(ids.len())
    }
}
