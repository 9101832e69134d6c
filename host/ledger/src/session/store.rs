//! The sessions service: per-session serialized appends over a [`Storage`], a
//! cache of the states it has loaded, the name and listing indexes, and
//! checkpoints. The operations themselves are in `ops.rs` and the files
//! beside it; the service's config is in `config.rs`, and each session's
//! record in the `sessions` bucket in `info.rs`.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use super::chain::{self, Chain, ChainKey, Refusal};
use super::checkpoint;
use super::config::SessionsConfig;
use super::error::SessionError;
use super::event::Event;
use super::growth::starts_work;
use super::kind::EventKind;
use super::log::{self, LoadStats};
use super::observers::{ApprovalObserver, ChildObserver, HandoverObserver};
use super::slots::{Slot, lock, lock_slot};
use super::state::SessionState;
use super::verify;
use crate::notify;
use crate::storage::{Storage, StorageError};

/// Calls whose record failed with the store, by session: each with the
/// store's generation at the failure. Once the store was reopened, the next
/// load of the session marks each one still in flight `interrupted`
/// (`Sessions::settle_owed`, in `owed.rs`), as a restart's recovery would.
pub(super) type Owed = HashMap<String, Vec<(String, u64)>>;

/// Session ids start with this; other streams in the storage are not sessions.
pub(crate) const ID_PREFIX: &str = "s-";

/// Appends retried when another writer got there first.
const CONFLICT_RETRIES: usize = 3;

/// When an append returns: once its events are durable, or as soon as they
/// are written (the call pipeline's write-ahead record of a call that is safe
/// to run again; its outcome is then appended durably, which makes both durable).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Commit {
    Durable,
    Deferred,
}

/// The sessions of one storage. Methods are blocking (the storage is); async
/// callers run them with `spawn_blocking`.
pub struct Sessions {
    pub(crate) storage: Arc<dyn Storage>,
    pub(crate) config: SessionsConfig,
    clock: crate::clock::Clock,
    pub(crate) slots: super::slots::Slots,
    /// Held while a name is claimed, so two sessions cannot claim one name.
    /// Lock order: `names`, then a session's slot.
    pub(crate) names: Mutex<()>,
    /// Whether the store's session indexes are known to be there (see
    /// `index.rs`); held while a data dir of an older shape is indexed.
    pub(crate) indexed: Mutex<bool>,
    last_load: Mutex<Option<LoadStats>>,
    /// Calls owed an ending (see `owed.rs`).
    pub(super) owed: Mutex<Owed>,
    /// Told when a child session may have settled (see `family.rs`).
    pub(crate) observers: Mutex<Vec<Arc<dyn ChildObserver>>>,
    /// Told of every notification an event means (see [`notify::NotifyObserver`]).
    notified: Mutex<Vec<Arc<dyn notify::NotifyObserver>>>,
    /// The session leases this process holds, on a shared store.
    pub(crate) leases: Option<super::lease::Leases>,
    /// Told of the approvals a session's end denied (see `closing.rs`).
    pub(crate) approval_observers: Mutex<Vec<Arc<dyn ApprovalObserver>>>,
    /// Told of the context rescues hand over (see [`HandoverObserver`]).
    handover_observers: Mutex<Vec<Arc<dyn HandoverObserver>>>,
    /// What the sessions of each principal, project and role spent
    /// together, against the ceilings and daily quotas (see [`crate::spend`]).
    pub(crate) tallies: crate::spend::Tallies,
}

/// A clean shutdown releases the leases held, so other hosts need not wait
/// for them to expire, and writes the events and bytes still batched for
/// the principals' daily quotas.
impl Drop for Sessions {
    fn drop(&mut self) {
        self.release_on_drop();
        self.tallies.flush(self.now());
    }
}

impl Sessions {
    /// The sessions in `storage`, with the default config.
    pub fn new(storage: Arc<dyn Storage>) -> Sessions {
        Sessions::with_config(storage, SessionsConfig::default())
    }

    pub fn with_config(storage: Arc<dyn Storage>, config: SessionsConfig) -> Sessions {
        let leases = config.lease.clone().map(super::lease::Leases::new);
        let slots = super::slots::Slots::new(config.session_cache);
        let tallies = crate::spend::Tallies::new(storage.clone());
        Sessions {
            tallies,
            storage,
            config,
            clock: crate::clock::system(),
            slots,
            names: Mutex::new(()),
            indexed: Mutex::new(false),
            last_load: Mutex::new(None),
            owed: Mutex::new(HashMap::new()),
            observers: Mutex::new(Vec::new()),
            notified: Mutex::new(Vec::new()),
            leases,
            approval_observers: Mutex::new(Vec::new()),
            handover_observers: Mutex::new(Vec::new()),
        }
    }

    /// Registers `observer`, told of every rescue's handover once durable.
    pub fn observe_handovers(&self, observer: Arc<dyn HandoverObserver>) {
        lock(&self.handover_observers).push(observer);
    }

    /// After `event` was appended to session `id`: tells the handover
    /// observers of a rescue's injection.
    fn tell_handed_over(&self, id: &str, event: &Event) {
        if let EventKind::ContextInjected { source, entries } = &event.kind
            && source.starts_with("rescue:")
        {
            for observer in lock(&self.handover_observers).iter() {
                observer.handed_over(id, source, entries);
            }
        }
    }

    /// Replaces the clock (unix millis), for tests of time-based filters.
    pub fn with_clock(mut self, clock: impl Fn() -> u64 + Send + Sync + 'static) -> Sessions {
        self.clock = Arc::new(clock);
        self
    }

    /// What the last load of a session from storage read (a cache miss or a `reload`).
    pub fn last_load_stats(&self) -> Option<LoadStats> {
        lock(&self.last_load).clone()
    }

    /// Drops the cached state of session `id_or_name` and loads it again from
    /// storage, from its newest valid checkpoint or, with `use_checkpoints`
    /// false, from its first event. For benchmarks and diagnostics.
    pub fn reload(
        &self,
        id_or_name: &str,
        use_checkpoints: bool,
    ) -> Result<(SessionState, LoadStats), SessionError> {
        let id = self.resolve(id_or_name)?;
        let slot = self.slot(&id);
        let mut slot = lock_slot(&slot);
        slot.state = None;
        let (state, stats) = log::load(
            &*self.storage,
            &id,
            &self.label_of(&id),
            use_checkpoints,
            self.chain_key(),
        )?;
        *lock(&self.last_load) = Some(stats.clone());
        slot.state = Some(state.clone());
        Ok((state, stats))
    }

    pub(crate) fn now(&self) -> u64 {
        (self.clock)()
    }

    /// The spend tallies across sessions (see [`crate::spend`]); the host
    /// configures them from its config at open and at each reload.
    pub fn tallies(&self) -> &crate::spend::Tallies {
        &self.tallies
    }

    /// Now, in unix millis, by the sessions' clock (injectable: see
    /// [`Sessions::with_clock`]). Everything the ledger's users stamp uses it.
    pub fn clock_ms(&self) -> u64 {
        self.now()
    }

    /// The lock and cache of session `id` (made, or loaded again, if the
    /// cache evicted it: see `slots.rs`).
    pub(crate) fn slot(&self, id: &str) -> Arc<Mutex<Slot>> {
        self.slots.get_or_make(id, &|id| self.drives(id))
    }

    /// The slot of session `id` if it has one already (this makes none).
    pub(crate) fn existing_slot(&self, id: &str) -> Option<Arc<Mutex<Slot>>> {
        self.slots.existing(id)
    }

    /// How many sessions have a slot now (at most `[storage]
    /// session_cache` of them idle).
    pub fn cached_sessions(&self) -> usize {
        self.slots.len()
    }

    /// The state of the session whose slot is `slot`, loaded if not cached.
    pub(crate) fn loaded<'a>(
        &self,
        slot: &'a mut Slot,
        id: &str,
    ) -> Result<&'a mut SessionState, SessionError> {
        let generation = self.storage.generation();
        if slot.generation != generation {
            slot.state = None;
        }
        if slot.state.is_none() {
            let label = self.label_of(id);
            let (state, stats) = log::load(&*self.storage, id, &label, true, self.chain_key())?;
            let chain = self.chain_of(&state)?;
            let info = self.get_info(id).ok().flatten();
            let cut = match verify::recorded_head(info.as_ref(), id, &chain) {
                Err(reason) => Some(reason.to_string()),
                Ok(head) => head.and_then(|head| {
                    verify::cut_from_head(&*self.storage, id, state.last_seq, &head)
                }),
            };
            if let Some(reason) = cut {
                return Err(SessionError::Tampered {
                    session: label,
                    seq: state.last_seq + 1,
                    reason,
                });
            }
            *lock(&self.last_load) = Some(stats);
            self.reconcile_info(&state);
            slot.state = Some(state);
            slot.generation = generation;
            self.settle_owed(slot, id, generation)?;
        }
        slot.state
            .as_mut()
            .ok_or_else(|| SessionError::NotFound(id.to_string()))
    }

    /// The configured chain key (`[storage] chain_key_file`).
    pub(crate) fn chain_key(&self) -> Option<&Arc<ChainKey>> {
        self.config.chain_key.as_ref()
    }

    /// The chain the log of the session in `state` is sealed with; an error
    /// when it is keyed and its key is not the configured one.
    pub(crate) fn chain_of(&self, state: &SessionState) -> Result<Chain, SessionError> {
        chain::chain_of(
            &state.header.id,
            &state.label(),
            state.keyed.as_ref(),
            self.chain_key(),
        )
        .map_err(|refusal| match refusal {
            Refusal::KeyRequired(reason) => SessionError::KeyRequired(reason),
            Refusal::Downgraded(reason) => SessionError::Tampered {
                session: state.label(),
                seq: 1,
                reason,
            },
        })
    }

    /// A copy of the state of session `id`.
    pub(crate) fn state_of(&self, id: &str) -> Result<SessionState, SessionError> {
        let slot = self.slot(id);
        let mut slot = lock_slot(&slot);
        Ok(self.loaded(&mut slot, id)?.clone())
    }

    /// Appends `kind` to session `id` after checking it against the lifecycle;
    /// the caller holds the session's slot. Updates the cache, the indexes and
    /// writes a checkpoint when one is due.
    pub(crate) fn append_locked(
        &self,
        slot: &mut Slot,
        id: &str,
        kind: EventKind,
    ) -> Result<Event, SessionError> {
        let mut events = self.append_batch_locked(slot, id, vec![kind], Commit::Durable)?;
        events
            .pop()
            .ok_or_else(|| SessionError::NotFound(id.to_string()))
    }

    /// Appends `kinds` to session `id` as one write: each is checked against
    /// the lifecycle as it would stand after the ones before it, and either
    /// all of them reach the log or none does. The caller holds the session's
    /// slot. With [`Commit::Deferred`] it may return before they are durable
    /// (see [`Storage::append_unsynced`]): a crash may lose them until a later
    /// durable write (or [`Sessions::sync`]) returns.
    pub(crate) fn append_batch_locked(
        &self,
        slot: &mut Slot,
        id: &str,
        kinds: Vec<EventKind>,
        commit: Commit,
    ) -> Result<Vec<Event>, SessionError> {
        self.check_room(&kinds)?;
        self.ensure_lease(slot, id)?;
        // A batch that closes the session settles its pending approvals
        // first, once it is known to be accepted (see `closing.rs`).
        let mut kinds = self.settle_on_close(id, kinds, |kinds| {
            let state = self.loaded(slot, id)?;
            self.sealed(state, id, kinds.to_vec()).map(|_| ())
        })?;
        let mut attempt = 0;
        loop {
            attempt += 1;
            let state = self.loaded(slot, id)?;
            let (next, events) = self.sealed(state, id, kinds)?;
            let bytes: Vec<Vec<u8>> = events.iter().map(Event::to_bytes).collect();
            // The log's own quotas first: a batch they refuse is not
            // counted in the owner's day either.
            super::quota::check_batch(&self.config.quotas, state, &events, &bytes)?;
            if attempt == 1 {
                // Counted once, before the write: a write that then fails
                // leaves them counted (over, never under).
                self.count_events(state.owner_name(), &events, &bytes, self.now())?;
            }
            let written = match commit {
                Commit::Durable => self.storage.append(id, state.last_seq, &bytes),
                Commit::Deferred => self.storage.append_unsynced(id, state.last_seq, &bytes),
            };
            match written {
                Ok(_) => self.record_head(&next, state),
                Err(StorageError::Conflict { .. }) if attempt < CONFLICT_RETRIES => {
                    // Another host extended the log: reload and check again.
                    slot.state = None;
                    kinds = events.into_iter().map(|e| e.kind).collect();
                    continue;
                }
                Err(e) => {
                    // The write may or may not have reached the log: reload next time.
                    slot.state = None;
                    if matches!(e, StorageError::Io(_)) {
                        self.owe(id, &events);
                    }
                    return Err(log::storage_error(e, &self.label_of(id)));
                }
            }
            // Applied one by one, so each event's upkeep (index, checkpoint)
            // sees the state it left.
            for (event, stored) in events.iter().zip(&bytes) {
                let was_live = state.header.status.is_live();
                let watched = !lock(&self.notified).is_empty();
                let notifications = match &self.config.notify {
                    Some(_) => notify::derive(state, event),
                    None if watched => notify::derive(state, event),
                    None => Vec::new(),
                };
                if let Err(e) = state.apply(event) {
                    slot.state = None;
                    return Err(e);
                }
                // Before the upkeep, so a checkpoint taken after this event
                // counts it.
                state.count_written(event, stored.len());
                self.after_append(state, was_live, event);
                if watched {
                    for observer in lock(&self.notified).iter() {
                        for (kind, n) in &notifications {
                            observer.raised(event.by.as_deref(), *kind, n);
                        }
                    }
                }
                self.enqueue(notifications);
                self.wake_parents(state, event);
                self.tell_handed_over(&state.header.id, event);
            }
            return Ok(events);
        }
    }

    /// `kinds` sealed as the events that would follow `state`, each checked
    /// against the lifecycle as it would stand after the ones before it,
    /// and the state they would leave; nothing is written. Checked on a
    /// copy, so a refusal anywhere in the batch leaves the cache as it was.
    fn sealed(
        &self,
        state: &SessionState,
        id: &str,
        kinds: Vec<EventKind>,
    ) -> Result<(SessionState, Vec<Event>), SessionError> {
        let chain = self.chain_of(state)?;
        let mut next = state.clone();
        let mut events = Vec::with_capacity(kinds.len());
        let now = self.now();
        for kind in kinds {
            next.check(&kind)?;
            let at = now.max(next.header.updated_at_ms);
            let event = Event::seal(&chain, id, next.last_seq + 1, at, &next.last_hash, kind);
            next.apply(&event)?;
            events.push(event);
        }
        Ok((next, events))
    }

    /// Counts the events of `events` (stored as `bytes`) that the session's
    /// owner `owner` caused, against its daily quotas
    /// (`principal_events_per_day`, `principal_bytes_per_day`; agents only).
    /// A batch that starts new work is refused past a quota, with nothing
    /// written; one that finishes work already admitted is counted only.
    pub(crate) fn count_events(
        &self,
        owner: &str,
        events: &[Event],
        bytes: &[Vec<u8>],
        now: u64,
    ) -> Result<(), SessionError> {
        let (mut n, mut size) = (0u64, 0u64);
        for (event, stored) in events.iter().zip(bytes) {
            if event.by.as_deref() == Some(owner) {
                n += 1;
                size = size.saturating_add(stored.len() as u64);
            }
        }
        let refusable = events.iter().any(|e| starts_work(&e.kind));
        match self.tallies.count_events(owner, n, size, refusable, now)? {
            Ok(()) => Ok(()),
            Err(over) => Err(SessionError::Quota {
                limit: over.limit,
                what: over.what,
                fix: "wait for the next UTC day, end the sessions it is done with, or ask an operator to raise the quota".into(),
            }),
        }
    }

    /// Returns once every event appended before the call is durable (after
    /// appends with [`Commit::Deferred`]).
    pub fn sync(&self) -> Result<(), SessionError> {
        self.storage
            .sync()
            .map_err(|e| log::storage_error(e, "the session store"))
    }

    /// Index and checkpoint upkeep after an acknowledged append. The event is
    /// durable already, so failures here only cost a slower load or a stale
    /// listing (repaired by `recover`); they are logged, not returned.
    fn after_append(&self, state: &SessionState, was_live: bool, event: &Event) {
        let live = state.header.status.is_live();
        if was_live
            && !live
            && let Some(name) = &state.header.name
            && let Err(e) = self.release_name(state.owner_name(), name, &state.header.id)
        {
            tracing::warn!(session = %state.header.id, error = %e, "could not release the session's name");
        }
        // Out of the live index once neither live nor with calls in flight
        // (recovery walks the index for the calls a stop left in flight).
        let settles = matches!(
            event.kind,
            EventKind::CallFinished { .. } | EventKind::CallInterrupted { .. }
        );
        if !live && (was_live || settles) && state.in_flight.is_empty() {
            self.unindex_live(state.owner_name(), &state.header.id);
        }
        // A session that is not live is driven by nobody.
        if !state.header.status.is_live() {
            self.release_lease(&state.header.id);
        }
        let every = self.config.checkpoint_every;
        let due = matches!(
            event.kind,
            EventKind::Handoff(_)
                | EventKind::HandoffReceived { .. }
                | EventKind::Paused { .. }
                | EventKind::Ended { .. }
                | EventKind::Archived
        ) || event.seq.is_multiple_of(every.max(1));
        if every > 0
            && due
            && let Ok(chain) = self.chain_of(state)
            && let Err(e) =
                checkpoint::write(&*self.storage, state, &chain, self.config.keep_checkpoints)
        {
            tracing::warn!(session = %state.header.id, error = %e, "could not write a checkpoint");
        }
    }

    /// Registers `observer`, told of every notification an acknowledged
    /// event means from now on.
    pub fn observe_notifications(&self, observer: Arc<dyn notify::NotifyObserver>) {
        lock(&self.notified).push(observer);
    }

    /// Puts what an acknowledged event means for the `[[notify]]` targets
    /// into the outbox. Never fails the append (the event is durable
    /// already): a failed write is logged, and that notification is lost.
    fn enqueue(&self, notifications: Vec<(notify::NotifyKind, notify::Notification)>) {
        let Some(outbox) = &self.config.notify else {
            return;
        };
        for (kind, n) in notifications {
            if let Err(e) = outbox.enqueue(kind, &n, self.now()) {
                tracing::warn!(session = %n.session, seq = n.seq, event = %kind, error = %e, "notify: could not write the notification to the outbox; it is not sent");
            }
        }
    }

    /// Ids of all sessions in the storage, from their log streams.
    pub(crate) fn session_ids(&self) -> Result<Vec<String>, StorageError> {
        Ok(self
            .storage
            .streams()?
            .into_iter()
            .filter(|s| s.starts_with(ID_PREFIX))
            .collect())
    }
}
