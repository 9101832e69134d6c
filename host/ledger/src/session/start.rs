//! Starting a session: the checks before anything is written (name, tags,
//! the disk, the spend ceilings, the live sessions per principal), its id,
//! its name and lease, its index entries, its first event
//! (`session_started`, with its completion condition) and the context it
//! is handed.

use std::time::Duration;

use super::chain::{Chain, KeyedChain};
use super::error::SessionError;
use super::event::Event;
use super::index::NewSession;
use super::kind::{EventKind, Role};
use super::names::owner_or_local;
use super::ops::{check_name, check_tags};
use super::quota;
use super::slots::{Slot, lock, lock_slot};
use super::state::{ChildLink, SessionState};
use super::store::{ID_PREFIX, Sessions};
use crate::context_index::{INDEX_SOURCE, index_entries};
use crate::manifest::AgentCard;
use crate::manifest::{BudgetCaps, Completion, LOCAL_PRINCIPAL, Scope, required_completion};
use crate::memory::{MEMORY_SOURCE, start_entries};

/// What a session is started with.
#[derive(Clone, Debug)]
pub struct StartSession {
    pub role: Role,
    pub project: String,
    /// Unique among its owner's live sessions (see `names.rs`).
    pub name: Option<String>,
    pub tags: Vec<String>,
    pub expected_duration: Option<Duration>,
    /// The session's own budget caps; the lower of these and its role's
    /// (`[budgets.role.<role>]`) hold. See [`crate::budget`].
    pub budget: BudgetCaps,
    /// What must hold before it ends as `completed`; the operator's
    /// `[[completion]]` for its role and project is added (see
    /// `completion.rs`).
    pub completion: Completion,
}

/// Who starts a session, as its first event records it: the owner, the
/// tags pinned for it, and what the operator says about it.
struct Starter {
    owner: Option<String>,
    pinned_tags: Vec<String>,
    agent: Option<AgentCard>,
    read_only: bool,
}

/// What a session is started as besides its [`StartSession`]: what the
/// operator says about its owner (its card), and whether it is read-only.
#[derive(Clone, Debug, Default)]
pub(super) struct StartedAs {
    /// The owner's card, recorded in the first event.
    pub(super) agent: Option<AgentCard>,
    /// Offered only tools annotated read-only, for good.
    pub(super) read_only: bool,
}

impl Sessions {
    /// Starts a session in status `created`, with no owner recorded: it
    /// belongs to the built-in agent `local` and to operators (see
    /// [`SessionScope::start`] for a principal's).
    ///
    /// [`SessionScope::start`]: super::SessionScope::start
    pub fn start(&self, start: StartSession) -> Result<SessionState, SessionError> {
        self.start_read_only(start, false)
    }

    /// [`Sessions::start`], read-only for good when `read_only`: it and its
    /// children are offered only tools annotated read-only.
    pub fn start_read_only(
        &self,
        start: StartSession,
        read_only: bool,
    ) -> Result<SessionState, SessionError> {
        let as_ = StartedAs {
            agent: None,
            read_only,
        };
        self.start_owned(start, None, Vec::new(), false, None, as_)
    }

    /// [`Sessions::start`] recording `owner` and the tags pinned for it
    /// (already among `start.tags`); `counted`: the owner is held to
    /// `quotas.sessions_per_principal` (agents are, operators are not);
    /// `parent`: the session that spawns it, and what it carved for it (see
    /// `family.rs`); `as_`: what the operator says about the owner (its
    /// card), recorded in the first event, and whether it is read-only.
    pub(super) fn start_owned(
        &self,
        start: StartSession,
        owner: Option<String>,
        pinned_tags: Vec<String>,
        counted: bool,
        parent: Option<(String, ChildLink)>,
        as_: StartedAs,
    ) -> Result<SessionState, SessionError> {
        self.check_start(&start, owner.as_deref())?;
        // A keyed session's id carries a MAC tag (see `chain.rs`).
        let id = match self.chain_key() {
            Some(key) => key.session_id(),
            None => format!("{ID_PREFIX}{}", uuid::Uuid::new_v4().simple()),
        };
        let owner_name = owner_or_local(owner.as_deref()).to_string();
        self.ensure_indexed()?;
        let _names = lock(&self.names);
        if let (true, Some(owner)) = (counted, &owner) {
            self.check_session_quota(owner)?;
        }
        let slot = self.slot(&id);
        let mut slot = lock_slot(&slot);
        // On a shared store this host drives what it starts (a no-op
        // otherwise); taken before the name, so that another host finding
        // the name claimed before the log is written sees the claim is live.
        self.ensure_lease(&mut slot, &id)?;
        if let Some(name) = &start.name
            && let Err(e) = self.claim_name(&owner_name, name, &id)
        {
            self.release_lease(&id);
            return Err(e);
        }
        let at = self.now();
        let name = start.name.clone();
        let parent_id = parent.as_ref().map(|(id, _)| id.clone());
        let who = Starter {
            owner,
            pinned_tags,
            agent: as_.agent,
            read_only: as_.read_only,
        };
        let event = self.first_event(&id, at, start, who, parent_id);
        let unclaim = |this: &Sessions| {
            if let Some(name) = &name {
                let _ = this.release_name(&owner_name, name, &id);
            }
            this.release_lease(&id);
        };
        let hints = NewSession {
            id: &id,
            owner: &owner_name,
            created_ms: at,
            name: name.as_deref(),
            parent: parent.as_ref().map(|(id, link)| (id.as_str(), link)),
        };
        let stored = match self.write_first(&event, &hints) {
            Ok(stored) => stored,
            Err(e) => {
                unclaim(self);
                return Err(e);
            }
        };
        let mut state = SessionState::start(&event)?;
        state.count_written(&event, stored);
        if let Err(e) = self.put_info(&state) {
            tracing::warn!(session = %id, error = %e, "could not update the session index");
        }
        slot.state = Some(state.clone());
        self.hand_start_context(&mut slot, &id, state)
    }

    /// The checks before anything of a new session is written: its name
    /// and tags, the disk, and the spend ceilings of its owner (`owner`, or
    /// the built-in agent), project and role.
    fn check_start(&self, start: &StartSession, owner: Option<&str>) -> Result<(), SessionError> {
        if let Some(name) = &start.name {
            check_name(name)?;
        }
        check_tags(&start.tags)?;
        quota::check_tags(&self.config.quotas, &[], &start.tags, &[])?;
        if let Some(disk) = &self.config.disk {
            disk.check().map_err(SessionError::LowDisk)?;
        }
        // A scope at a spend ceiling starts nothing new: ending a paused
        // session and starting another does not reset what it spent.
        let scopes = [
            Scope::principal(owner.unwrap_or(LOCAL_PRINCIPAL)),
            Scope::project(start.project.as_str()),
            Scope::role(start.role),
        ];
        if let Some(breach) = self.tallies.at_ceiling(&scopes, self.now())? {
            return Err(SessionError::Ceiling(breach.start_reason()));
        }
        Ok(())
    }

    /// Session `id`'s first event at `at`, `session_started`, sealed with
    /// the configured chain: what it is started with, with the operator's
    /// `[[completion]]` for its role and project added to its condition,
    /// and the chain key it is sealed with, if one.
    fn first_event(
        &self,
        id: &str,
        at: u64,
        start: StartSession,
        who: Starter,
        parent: Option<String>,
    ) -> Event {
        let Starter {
            owner,
            pinned_tags,
            agent,
            read_only,
        } = who;
        let completion = start.completion.and(&required_completion(
            &self.config.completion,
            start.role,
            &start.project,
        ));
        let kind = EventKind::SessionStarted {
            role: start.role,
            project: start.project,
            name: start.name,
            tags: start.tags,
            expected_duration_ms: start
                .expected_duration
                .map(|d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX)),
            budget: start.budget,
            owner,
            pinned_tags,
            keyed: self.chain_key().map(|key| KeyedChain {
                key_id: key.id().to_string(),
                key_file: key.file().to_string(),
            }),
            parent,
            completion,
            agent,
            read_only,
        };
        let chain = match self.chain_key() {
            Some(key) => Chain::Keyed(key.clone()),
            None => Chain::Plain,
        };
        Event::seal(&chain, id, 1, at, super::event::GENESIS_HASH, kind)
    }

    /// Writes a new session's first `event`: counted against its owner's
    /// daily events and bytes, put in the indexes (`new`), then appended to
    /// its log. Returns the bytes it took; on an error the caller releases
    /// what it claimed.
    fn write_first(&self, event: &Event, new: &NewSession<'_>) -> Result<usize, SessionError> {
        let bytes = event.to_bytes();
        // The owner's daily events and bytes (an agent's): a start past them
        // is refused before anything of it is written.
        self.count_events(
            new.owner,
            std::slice::from_ref(event),
            std::slice::from_ref(&bytes),
            new.created_ms,
        )?;
        self.index_new(new)?;
        let stored = bytes.len();
        self.storage.append(new.id, 0, &[bytes])?;
        Ok(stored)
    }

    /// Hands the session just started (`state`, under its lock `slot`) the
    /// context every new session starts with: its project's context index,
    /// and the approved memory entries of its project, user and role, each
    /// a `context_injected` when there is any. Returns the session after.
    fn hand_start_context(
        &self,
        slot: &mut Slot,
        id: &str,
        state: SessionState,
    ) -> Result<SessionState, SessionError> {
        let index = index_entries(&*self.storage, &state.header.project);
        let memory = start_entries(
            &*self.storage,
            &self.config.memory,
            &state.header.project,
            state.owner_name(),
            state.header.role,
        );
        let mut appended = false;
        for (source, entries) in [(INDEX_SOURCE, index), (MEMORY_SOURCE, memory)] {
            if !entries.is_empty() {
                let kind = EventKind::ContextInjected {
                    source: source.to_string(),
                    entries,
                };
                self.append_locked(slot, id, kind)?;
                appended = true;
            }
        }
        if appended {
            return self.current(slot, id);
        }
        Ok(state)
    }
}
