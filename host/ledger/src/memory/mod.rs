//! The governed memory bank: what agents learn, kept past their sessions
//! only once an operator approved it.
//!
//! Long-running agent work needs memory that outlives a session, but memory
//! that an agent writes and every later session reads is a channel by which
//! one bad session (a confused one, a prompt-injected one) steers all the
//! others. So the bank is governed like a service: every entry has a
//! [`Scope`] (a project, a user, a role), a [`Provenance`] (the principal,
//! and the session or rescue it came from) and a [`MemoryState`]:
//!
//! - agents **propose** (`memory_propose`), only to their own scopes (their
//!   principal's projects, their own user, their session's role) and only
//!   where `[memory.propose]` lets their session's role; the entry is
//!   `proposed` and reaches nobody;
//! - operators **review** (`glovebox memory review|approve|reject|retire`):
//!   an approved entry is handed to every new session of its scope
//!   (bounded by `[memory] max_entries_at_start` and `max_bytes_at_start`,
//!   the most recently approved first), until it is retired;
//! - agents **search** (`memory_search`) the approved entries of their own
//!   scopes, ranked (see `rank.rs`), a page at a time.
//!
//! No read decodes the whole bank: searches, listings and a new session's
//! entries go through the index (`index.rs`). The proposals of one agent
//! principal waiting for review are bounded by `[quotas]
//! memory_proposals_per_principal`, counted in the store (`crate::tally`),
//! and a proposal is refused below the disk watermark like any other write
//! an agent causes (threat 49).
//!
//! Reads and writes are logged in the caller's session: a proposal is a
//! `memory_proposed` event, a search a `memory_searched` event, and the
//! entries a session starts with a `context_injected` event with source
//! `memory` (which `resume` returns, as it does the context index's). The
//! review steps are stamped on the entry with the operator who took them.
//!
//! Beside the context index, not instead of it: the index
//! (`crate::rescue::ContextIndex`, `glovebox context add`) is the operators'
//! own word about a project, applied at once because its author is the
//! reviewer. Everything written by someone else (agents, and rescues'
//! enrich step, which is the rescuer's lesson about an agent's failure) goes
//! through the bank's review.

mod error;
mod index;
mod rank;
mod records;
mod scopes;
#[cfg(test)]
mod tests;

use std::sync::Arc;

pub use error::MemoryError;
pub(crate) use index::start_entries;
pub use rank::Ranked;
pub use records::{MEMORY_SOURCE, MemoryEntry, MemoryState, Provenance, Scope, ScopeError, Stamp};
pub use scopes::{check_proposer, readable, readable_prefixes, resolve_scope};

use crate::manifest::{MemoryConfig, Principal};
use crate::page::{Page, PageRequest};
use crate::session::{Event, EventKind, SessionError, Sessions, actor};
use crate::storage::{Storage, StorageError};
use crate::tally::{Tally, UNSTORED_GRACE_MS};

/// The places of `[quotas] memory_proposals_per_principal`, per principal.
const PLACES: &str = "memory_places";
/// Entries a filtered listing looks at per item it may return: a scope
/// filter over a state walks that state's entries, and stops after this
/// many per item (the page ends early, with a cursor to go on).
const LOOKED_AT_PER_ITEM: usize = 20;

/// The most entries one search returns.
pub const SEARCH_LIMIT_MAX: usize = 50;
/// The longest search query.
pub const MAX_QUERY_BYTES: usize = 1024;

/// A new entry, before it is checked.
#[derive(Clone, Debug)]
pub struct Proposal {
    pub scope: Scope,
    pub text: String,
    pub provenance: Provenance,
}

/// Which entries `list` returns; every given criterion must match.
#[derive(Clone, Debug, Default)]
pub struct MemoryFilter {
    pub scope: Option<Scope>,
    pub state: Option<MemoryState>,
}

/// The memory bank of a data dir, with the operator's `[memory]` settings.
pub struct MemoryBank {
    storage: Arc<dyn Storage>,
    config: MemoryConfig,
}

impl MemoryBank {
    pub fn new(storage: Arc<dyn Storage>, config: MemoryConfig) -> MemoryBank {
        MemoryBank { storage, config }
    }

    pub fn config(&self) -> &MemoryConfig {
        &self.config
    }

    /// A new id: `m-` and 12 hex digits.
    pub fn new_id() -> String {
        let id = uuid::Uuid::new_v4().simple().to_string();
        format!("m-{}", &id[..12])
    }

    /// The entry `proposal` would be, checked (its text trimmed), not written.
    pub fn prepare(&self, proposal: Proposal, now_ms: u64) -> Result<MemoryEntry, MemoryError> {
        let text = proposal.text.trim();
        let max = self.config.max_entry_bytes;
        if text.is_empty() {
            return Err(MemoryError::InvalidInput(
                "a memory entry's text is empty: write the fact, rule or lesson to remember"
                    .to_string(),
            ));
        }
        if text.len() as u64 > max {
            return Err(MemoryError::InvalidInput(format!(
                "a memory entry has at most {max} bytes of text (`[memory] max_entry_bytes`), not {}: shorten it, or split it into entries that each stand alone",
                text.len()
            )));
        }
        Ok(MemoryEntry {
            id: MemoryBank::new_id(),
            scope: proposal.scope,
            text: text.to_string(),
            state: MemoryState::Proposed,
            provenance: proposal.provenance,
            proposed_at_ms: now_ms,
            approved: None,
            rejected: None,
            retired: None,
        })
    }

    /// Records `proposal` as a proposed entry (no scope rule is checked
    /// here: see [`MemoryBank::propose_in`] for an agent's proposal).
    pub fn propose(&self, proposal: Proposal, now_ms: u64) -> Result<MemoryEntry, MemoryError> {
        let entry = self.prepare(proposal, now_ms)?;
        self.put(&entry)?;
        Ok(entry)
    }

    /// Writes an entry [`MemoryBank::prepare`] made.
    pub(crate) fn record(&self, entry: &MemoryEntry) -> Result<(), MemoryError> {
        self.put(entry)
    }

    /// The entry `id`, in any state.
    pub fn get(&self, id: &str) -> Result<MemoryEntry, MemoryError> {
        index::get(&*self.storage, id)?.ok_or_else(|| {
            MemoryError::NotFound(format!(
                "no memory entry `{id}`: `glovebox memory list` lists them (`glovebox memory review` the proposed ones)"
            ))
        })
    }

    /// One page of the entries matching `filter`: oldest proposal first,
    /// or, for the approved entries of one scope, the most recently
    /// approved first. Read through the index, never the whole bank.
    pub fn page(
        &self,
        filter: &MemoryFilter,
        req: &PageRequest,
    ) -> Result<Page<MemoryEntry>, MemoryError> {
        let prefix = match (&filter.scope, filter.state) {
            (Some(scope), Some(MemoryState::Approved)) => index::scope_prefix(scope),
            (_, Some(state)) => index::state_prefix(state),
            (_, None) => index::ALL.to_string(),
        };
        self.page_of(&prefix, filter.scope.as_ref(), req)
    }

    /// One page of the rejected and retired entries, the most recently
    /// closed first.
    pub fn closed(&self, req: &PageRequest) -> Result<Page<MemoryEntry>, MemoryError> {
        self.page_of(index::CLOSED, None, req)
    }

    /// One page of the index under `prefix`, of `scope` only if given.
    fn page_of(
        &self,
        prefix: &str,
        scope: Option<&Scope>,
        req: &PageRequest,
    ) -> Result<Page<MemoryEntry>, MemoryError> {
        if let Some(cursor) = &req.cursor
            && !cursor.starts_with(prefix)
        {
            return Err(MemoryError::InvalidInput(format!(
                "the cursor `{cursor}` is not one of this listing's: pass the cursor the previous page of the same listing (same scope and state) gave"
            )));
        }
        let size = req.size();
        let mut items = Vec::with_capacity(size);
        let (mut last, mut looked) = (None, 0usize);
        let mut more = false;
        for found in index::walk(&*self.storage, prefix, req.cursor.clone()) {
            let (key, entry) = found?;
            if items.len() == size || looked == size * LOOKED_AT_PER_ITEM {
                more = true;
                break;
            }
            looked += 1;
            if scope.is_none_or(|s| &entry.scope == s) {
                items.push(entry);
            }
            last = Some(key);
        }
        Ok(Page {
            items,
            next_cursor: if more { last } else { None },
        })
    }

    /// Approves proposed entry `id`: from now on new sessions of its scope
    /// are handed it. `by`: the operator.
    pub fn approve(&self, id: &str, by: &str, now_ms: u64) -> Result<MemoryEntry, MemoryError> {
        let was = self.in_state(id, MemoryState::Proposed, "approve")?;
        self.check_reviewer(&was, by, "approve")?;
        let mut entry = was.clone();
        entry.state = MemoryState::Approved;
        entry.approved = Some(stamp(by, now_ms, None));
        self.change(&was, &entry)?;
        Ok(entry)
    }

    /// Rejects proposed entry `id` for `reason`: it never reaches a session.
    pub fn reject(
        &self,
        id: &str,
        by: &str,
        reason: &str,
        now_ms: u64,
    ) -> Result<MemoryEntry, MemoryError> {
        if reason.trim().is_empty() {
            return Err(MemoryError::InvalidInput(
                "a rejection needs a reason (`--reason`): it tells the proposer what was wrong"
                    .to_string(),
            ));
        }
        let was = self.in_state(id, MemoryState::Proposed, "reject")?;
        self.check_reviewer(&was, by, "reject")?;
        let mut entry = was.clone();
        entry.state = MemoryState::Rejected;
        entry.rejected = Some(stamp(by, now_ms, Some(reason)));
        self.change(&was, &entry)?;
        Ok(entry)
    }

    /// Retires approved entry `id`: new sessions are no longer handed it (it
    /// stays in the bank, and in the logs of the sessions that got it).
    pub fn retire(
        &self,
        id: &str,
        by: &str,
        reason: Option<&str>,
        now_ms: u64,
    ) -> Result<MemoryEntry, MemoryError> {
        let was = self.in_state(id, MemoryState::Approved, "retire")?;
        self.check_reviewer(&was, by, "retire")?;
        let mut entry = was.clone();
        entry.state = MemoryState::Retired;
        entry.retired = Some(stamp(by, now_ms, reason));
        self.change(&was, &entry)?;
        Ok(entry)
    }

    /// One page of the approved entries under the index prefixes `within`
    /// (see [`readable_prefixes`]) whose scope `scopes` accepts and that
    /// match `query`, best first (see `rank.rs`), at most `limit`, after
    /// `cursor` (the previous page's, for the same query).
    pub fn search(
        &self,
        query: &str,
        within: &[String],
        scopes: &dyn Fn(&Scope) -> bool,
        limit: usize,
        cursor: Option<&str>,
    ) -> Result<Page<Ranked>, MemoryError> {
        if query.len() > MAX_QUERY_BYTES {
            return Err(MemoryError::InvalidInput(format!(
                "a memory search query has at most {MAX_QUERY_BYTES} bytes, not {}: search for a few words",
                query.len()
            )));
        }
        let words = rank::words(query);
        if words.is_empty() {
            return Err(MemoryError::InvalidInput(
                "the memory search query has no words: give the words to look for".to_string(),
            ));
        }
        if limit == 0 || limit > SEARCH_LIMIT_MAX {
            return Err(MemoryError::InvalidInput(format!(
                "`limit` is {limit}: give 1 to {SEARCH_LIMIT_MAX}"
            )));
        }
        let after = match cursor {
            None => None,
            Some(c) => Some(rank::Place::from_cursor(c, &words).ok_or_else(|| {
                MemoryError::InvalidInput(format!(
                    "the cursor `{c}` is not one of this search's: pass the `next_cursor` the previous page of the same query gave"
                ))
            })?),
        };
        let mut best = rank::Best::new(limit, after);
        for prefix in within {
            for found in index::walk(&*self.storage, prefix, None) {
                let (_, entry) = found?;
                if !scopes(&entry.scope) {
                    continue;
                }
                if let Some(ranked) = rank::score(entry, &words) {
                    best.offer(ranked);
                }
            }
        }
        let (items, last) = best.page();
        Ok(Page {
            items,
            next_cursor: last.map(|place| place.cursor(&words)),
        })
    }

    /// `caller`'s proposal, from its session `session` (an id it owns: the
    /// caller's ownership is the gateway's check), to the scope `spec`
    /// names (`project`, `user`, `role` for the session's own, or a full
    /// `kind:name`), logged as a `memory_proposed` event in that session.
    /// Refused, with nothing written, for a scope that is not the caller's or
    /// that `[memory.propose]` does not open to the session's role, and for
    /// a text that is empty or too long.
    pub fn propose_in(
        &self,
        sessions: &Sessions,
        caller: &Principal,
        session: &str,
        spec: &str,
        text: &str,
    ) -> Result<(MemoryEntry, Event), MemoryError> {
        let state = sessions.show(session)?;
        let scope = resolve_scope(spec, &state, caller)?;
        check_proposer(&self.config, caller, &state, &scope)?;
        let proposal = Proposal {
            scope,
            text: text.to_string(),
            provenance: Provenance {
                by: caller.name.clone(),
                session: Some(state.header.id.clone()),
                rescue: None,
            },
        };
        let entry = self.prepare(proposal, sessions.now())?;
        let kind = EventKind::MemoryProposed {
            id: entry.id.clone(),
            scope: entry.scope.to_string(),
            text: entry.text.clone(),
        };
        // A session whose log is closed takes no proposal, and none is
        // taken below the disk watermark or past the log's quotas: checked
        // before the entry is written, and the entry is taken back if the
        // append fails.
        state.check(&kind)?;
        actor::scoped(caller.name.as_str(), || {
            sessions.check_room(std::slice::from_ref(&kind))?;
            sessions.check_log_room(&state, &kind)
        })?;
        let placed = !caller.is_operator();
        if placed {
            self.take_place(sessions, caller, &entry)?;
        }
        let appended = self.put(&entry).and_then(|()| {
            actor::scoped(caller.name.as_str(), || {
                sessions.append(&state.header.id, kind)
            })
            .map_err(MemoryError::from)
        });
        match appended {
            Ok(event) => Ok((entry, event)),
            Err(e) => {
                if let Err(undo) = index::remove(&*self.storage, &entry) {
                    tracing::warn!(entry = %entry.id, error = %undo, "could not take back a memory proposal whose log append failed");
                }
                if placed {
                    self.give_back_place(&entry);
                }
                Err(e)
            }
        }
    }

    /// `caller`'s search, from its session `session`, of the approved
    /// entries of its scopes (see [`readable`]), logged as a
    /// `memory_searched` event in that session.
    pub fn search_in(
        &self,
        sessions: &Sessions,
        caller: &Principal,
        session: &str,
        query: &str,
        limit: usize,
        cursor: Option<&str>,
    ) -> Result<(Page<Ranked>, Event), MemoryError> {
        let state = sessions.show(session)?;
        let within = readable_prefixes(caller, &state);
        let found = self.search(
            query,
            &within,
            &|s| readable(caller, &state, s),
            limit,
            cursor,
        )?;
        let kind = EventKind::MemorySearched {
            query: query.to_string(),
            found: found.items.iter().map(|r| r.entry.id.clone()).collect(),
        };
        let event = actor::scoped(caller.name.as_str(), || {
            sessions.append(&state.header.id, kind)
        })?;
        Ok((found, event))
    }

    /// The places of `[quotas] memory_proposals_per_principal`.
    fn places(&self) -> Tally<'_> {
        Tally {
            storage: &*self.storage,
            bucket: PLACES,
        }
    }

    /// Takes a place for `entry`, `caller`'s proposal, or refuses it with
    /// the quota's error when the caller already has as many proposals
    /// waiting for review as `[quotas] memory_proposals_per_principal`.
    fn take_place(
        &self,
        sessions: &Sessions,
        caller: &Principal,
        entry: &MemoryEntry,
    ) -> Result<(), MemoryError> {
        let limit = sessions
            .config
            .quotas
            .limit("memory_proposals_per_principal");
        let now = entry.proposed_at_ms;
        let storage = &*self.storage;
        let taken =
            self.places()
                .take(&caller.name, &entry.id, limit.value, now, |id, taken_at| {
                    Ok(match index::get(storage, id) {
                        Ok(Some(e)) => e.state == MemoryState::Proposed,
                        Ok(None) => now.saturating_sub(taken_at) <= UNSTORED_GRACE_MS,
                        Err(StorageError::Corrupt(_)) => false,
                        Err(e) => return Err(e),
                    })
                })?;
        match taken {
            Ok(()) => Ok(()),
            Err(count) => Err(MemoryError::Session(SessionError::Quota {
                limit,
                what: format!(
                    "{caller} already has {count} memory proposals waiting for an operator's review"
                ),
                fix: "nothing was written; wait until an operator reviews them (`glovebox memory review`), or ask one to raise the quota".into(),
            })),
        }
    }

    /// Gives back the place `entry`'s proposer took (it was reviewed, or
    /// never stored). A place left behind is dropped at a later take.
    fn give_back_place(&self, entry: &MemoryEntry) {
        if let Err(e) = self.places().give_back(&entry.provenance.by, &entry.id) {
            tracing::warn!(entry = %entry.id, error = %e, "could not give back a memory proposal's place (the next take drops it)");
        }
    }

    /// Indexes a store's entries written before the index existed (once).
    pub fn index_old_records(&self) -> Result<(), MemoryError> {
        Ok(index::index_old_records(&*self.storage)?)
    }

    /// `[memory.approve]`: operator `by` may review entries of `entry`'s scope.
    fn check_reviewer(
        &self,
        entry: &MemoryEntry,
        by: &str,
        action: &str,
    ) -> Result<(), MemoryError> {
        let kind = entry.scope.kind();
        if self.config.may_review(by, kind) {
            return Ok(());
        }
        let names = self.config.approve.get(&kind).cloned().unwrap_or_default();
        Err(MemoryError::NotAllowed(format!(
            "`{by}` may not {action} memory entry `{}`: entries of {} scopes are reviewed by {} (`[memory.approve] {}`); ask one of them, or have the config list this operator",
            entry.id,
            kind.as_str(),
            names
                .iter()
                .map(|n| format!("`{n}`"))
                .collect::<Vec<_>>()
                .join(", "),
            kind.as_str()
        )))
    }

    fn in_state(
        &self,
        id: &str,
        wanted: MemoryState,
        action: &str,
    ) -> Result<MemoryEntry, MemoryError> {
        let entry = self.get(id)?;
        if entry.state == wanted {
            return Ok(entry);
        }
        let fix = match (action, entry.state) {
            ("retire", MemoryState::Proposed) => {
                "it never reached a session: `glovebox memory reject ID --reason ...` it instead"
            }
            (_, MemoryState::Proposed) => "`glovebox memory review` lists what awaits review",
            (_, MemoryState::Approved) => {
                "it is already approved: `glovebox memory retire ID` takes it out of new sessions"
            }
            (_, MemoryState::Rejected | MemoryState::Retired) => {
                "it is closed: propose a new entry if it is wanted again"
            }
        };
        Err(MemoryError::InvalidInput(format!(
            "cannot {action} memory entry `{id}`: it is {}, and only a {wanted} entry can be; {fix}",
            entry.state
        )))
    }

    /// Writes a new entry, with its index keys.
    fn put(&self, entry: &MemoryEntry) -> Result<(), MemoryError> {
        Ok(index::store(&*self.storage, entry, None)?)
    }

    /// Writes `entry`, which was `was`: its index keys follow, and a
    /// proposal reviewed gives its proposer's place back.
    fn change(&self, was: &MemoryEntry, entry: &MemoryEntry) -> Result<(), MemoryError> {
        index::store(&*self.storage, entry, Some(was))?;
        if was.state == MemoryState::Proposed && entry.state != MemoryState::Proposed {
            self.give_back_place(entry);
        }
        Ok(())
    }
}

fn stamp(by: &str, at_ms: u64, reason: Option<&str>) -> Stamp {
    Stamp {
        by: by.to_string(),
        at_ms,
        reason: reason.map(|r| r.trim().to_string()),
    }
}
