//! What callers do with sessions: rename, tag, show, pause, resume, end,
//! archive, hand off, append call events, read events (starting one is in
//! `start.rs`, listing in `listing.rs`).

use std::time::Duration;

use serde::Serialize;

use super::error::SessionError;
use super::event::Event;
use super::handoff::{Handoff, HandoffKind};
use super::kind::{EndOutcome, EventKind, Role, UnwaitedJob, annotation_kinds};
use super::lifecycle::SessionStatus;
use super::log;
use super::quota;
use super::slots::{Slot, lock, lock_slot};
use super::state::{HandoffRecord, InterruptedCall, SessionState};
use super::store::{Commit, ID_PREFIX, Sessions};
use crate::values::ContextEntry;

/// Which sessions `list` returns; every given criterion must match.
#[derive(Clone, Debug, Default)]
pub struct SessionFilter {
    pub status: Option<SessionStatus>,
    /// The session has all of these tags.
    pub tags: Vec<String>,
    pub role: Option<Role>,
    pub project: Option<String>,
    /// The session's last event is at least this old.
    pub inactive_for: Option<Duration>,
    /// The principal that owns it (an agent's own listing always has it).
    pub owner: Option<String>,
}

/// What an agent with no memory of a session needs to carry it on.
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
#[derive(Clone, Debug, Serialize)]
pub struct Resumed {
    pub state: SessionState,
    pub latest_handoff: Option<HandoffRecord>,
    /// Calls lost when the host stopped and not re-run since.
    pub interrupted_calls: Vec<InterruptedCall>,
    /// Context handed to the session: its project's context index at start,
    /// and what rescues injected since (see [`crate::rescue`]).
    pub context: Vec<ContextEntry>,
}

impl Resumed {
    /// What `state`, the session as resumed, hands the agent.
    pub(super) fn from_state(state: SessionState) -> Resumed {
        Resumed {
            latest_handoff: state.latest_handoff.clone(),
            interrupted_calls: state.interrupted.clone(),
            context: state.context.clone(),
            state,
        }
    }
}

impl Sessions {
    /// Gives the session a new name, unique among its owner's live sessions.
    pub fn rename(&self, id_or_name: &str, name: &str) -> Result<SessionState, SessionError> {
        check_name(name)?;
        let _names = lock(&self.names);
        let id = self.resolve(id_or_name)?;
        let slot = self.slot(&id);
        let mut slot = lock_slot(&slot);
        let state = self.loaded(&mut slot, &id)?;
        if state.header.name.as_deref() == Some(name) {
            return Ok(state.clone());
        }
        let kind = EventKind::Renamed {
            name: name.to_string(),
        };
        state.check(&kind)?;
        let live = state.header.status.is_live();
        let old = state.header.name.clone();
        let owner = state.owner_name().to_string();
        let created = state.header.created_at_ms;
        if live {
            self.claim_name(&owner, name, &id)?;
        }
        let renamed = self
            .index_name(name, &owner, created, &id)
            .map_err(SessionError::from)
            .and_then(|()| self.append_locked(&mut slot, &id, kind));
        if let Err(e) = renamed {
            if live {
                let _ = self.release_name(&owner, name, &id);
            }
            return Err(e);
        }
        if let (true, Some(old)) = (live, old) {
            self.release_name(&owner, &old, &id)?;
        }
        self.current(&mut slot, &id)
    }

    /// Adds and removes tags.
    pub fn tag(
        &self,
        id_or_name: &str,
        add: &[String],
        remove: &[String],
    ) -> Result<SessionState, SessionError> {
        check_tags(add)?;
        self.with_slot(id_or_name, |this, slot, id| {
            let state = this.loaded(slot, id)?;
            quota::check_tags(&this.config.quotas, &state.header.tags, add, remove)?;
            let kind = EventKind::Tagged {
                add: add.to_vec(),
                remove: remove.to_vec(),
            };
            this.append_locked(slot, id, kind)?;
            this.current(slot, id)
        })
    }

    /// The session's state, its log's tail verified.
    pub fn show(&self, id_or_name: &str) -> Result<SessionState, SessionError> {
        let id = self.resolve(id_or_name)?;
        self.state_of(&id)
    }

    /// [`Sessions::show`] when that takes no work that may block: session
    /// `id` (an id, not a name) is loaded already, from the store as it is
    /// now, and nobody is writing to it at this moment. `None` when any of
    /// that fails: then `show` is the way, off the async threads. What the
    /// call pipeline looks at first, so a call spares a thread hand-off.
    pub fn show_cached(&self, id: &str) -> Option<SessionState> {
        if !id.starts_with(ID_PREFIX) {
            return None;
        }
        let slot = self.existing_slot(id)?;
        // Held by a writer (who may be waiting for the disk), or poisoned:
        // not for an async thread to wait on or repair.
        let slot = slot.try_lock().ok()?;
        if slot.generation != self.storage.generation() {
            return None;
        }
        slot.state.clone()
    }

    /// Pauses an active session.
    pub fn pause(&self, id_or_name: &str, reason: &str) -> Result<SessionState, SessionError> {
        self.with_slot(id_or_name, |this, slot, id| {
            this.append_locked(
                slot,
                id,
                EventKind::Paused {
                    reason: reason.to_string(),
                    by: None,
                },
            )?;
            this.current(slot, id)
        })
    }

    /// Makes a created or paused session active (an active one stays so) and
    /// returns what is needed to carry it on. Refused for a damaged log.
    ///
    /// On a shared store, resuming takes the session's lease first (see
    /// `lease.rs`): an agent that resumes on another node after its node
    /// died is told of the calls the dead node left in flight (marked
    /// interrupted by the takeover), not handed a session whose calls still
    /// look running; a session another live host drives is refused with
    /// where it is driven, as a call would be.
    pub fn resume(&self, id_or_name: &str) -> Result<Resumed, SessionError> {
        self.with_slot(id_or_name, |this, slot, id| {
            this.ensure_lease(slot, id)?;
            if this.loaded(slot, id)?.header.status != SessionStatus::Active {
                this.append_locked(slot, id, EventKind::Resumed)?;
            }
            Ok(Resumed::from_state(this.current(slot, id)?))
        })
    }

    /// Ends the session with `outcome`; the end record carries its totals.
    /// Refused while the session has live children (see `family.rs`).
    pub fn end(&self, id_or_name: &str, outcome: EndOutcome) -> Result<SessionState, SessionError> {
        self.with_slot(id_or_name, |this, slot, id| {
            this.check_no_live_children(this.loaded(slot, id)?)?;
            check_complete(this.loaded(slot, id)?, outcome)?;
            let summary = this.loaded(slot, id)?.summary(this.now());
            this.append_locked(slot, id, EventKind::Ended { outcome, summary })?;
            this.current(slot, id)
        })
    }

    /// Ends the session as [`Sessions::end`] does, first recording (one
    /// write with the `ended` event) the background jobs of its own nobody
    /// waited for (`jobs_unwaited`), when there are any.
    pub fn end_with_unwaited(
        &self,
        id_or_name: &str,
        outcome: EndOutcome,
        unwaited: Vec<UnwaitedJob>,
    ) -> Result<SessionState, SessionError> {
        if unwaited.is_empty() {
            return self.end(id_or_name, outcome);
        }
        self.with_slot(id_or_name, |this, slot, id| {
            this.check_no_live_children(this.loaded(slot, id)?)?;
            check_complete(this.loaded(slot, id)?, outcome)?;
            let summary = this.loaded(slot, id)?.summary(this.now());
            let kinds = vec![
                EventKind::JobsUnwaited { jobs: unwaited },
                EventKind::Ended { outcome, summary },
            ];
            this.append_batch_locked(slot, id, kinds, Commit::Durable)?;
            this.current(slot, id)
        })
    }

    /// Archives a completed or paused session (refused while it has live
    /// children, see `family.rs`), then removes its scratch
    /// directory. The archive stands even if the removal fails (it is logged, and
    /// retried the next time the sessions are opened).
    pub fn archive(&self, id_or_name: &str) -> Result<SessionState, SessionError> {
        let state = self.with_slot(id_or_name, |this, slot, id| {
            // A paused parent is not archived from under its live children.
            this.check_no_live_children(this.loaded(slot, id)?)?;
            this.append_locked(slot, id, EventKind::Archived)?;
            this.current(slot, id)
        })?;
        if let Some(scratch) = &self.config.scratch
            && let Err(e) = scratch.remove(&state.header.id)
        {
            tracing::warn!(session = %state.header.id, error = %e, "cannot remove the scratch directory of an archived session");
        }
        Ok(state)
    }

    /// Archives the session if `derive` (its state and the time, under its
    /// lock) says so: it returns the events to append, `archived` last (after
    /// `ended` for a live session), or none to leave the session as it is.
    /// Then removes the scratch directory, as [`Sessions::archive`] does.
    pub fn archive_if(
        &self,
        id_or_name: &str,
        derive: impl FnOnce(&SessionState, u64) -> Vec<EventKind>,
    ) -> Result<Option<SessionState>, SessionError> {
        let (events, ()) = self.append_with(id_or_name, |state, now| {
            let kinds = derive(state, now);
            match kinds.last() {
                Some(EventKind::Archived) => (kinds, ()),
                _ => (Vec::new(), ()),
            }
        })?;
        let Some(last) = events.last() else {
            return Ok(None);
        };
        let state = self.state_of(&last.session)?;
        if let Some(scratch) = &self.config.scratch
            && let Err(e) = scratch.remove(&state.header.id)
        {
            tracing::warn!(session = %state.header.id, error = %e, "cannot remove the scratch directory of an archived session");
        }
        Ok(Some(state))
    }

    /// Removes the scratch directories of archived sessions and the throwaway
    /// directories of calls a killed host left behind. Returns how many went.
    pub fn sweep_scratch(&self) -> usize {
        let Some(scratch) = &self.config.scratch else {
            return 0;
        };
        let (sessions, leftovers) = match scratch.list() {
            Ok(l) => l,
            Err(e) => {
                tracing::warn!(error = %e, "cannot list the scratch directories");
                return 0;
            }
        };
        let mut removed = 0;
        for dir in leftovers {
            if std::fs::remove_dir_all(&dir).is_ok() {
                removed += 1;
            }
        }
        for id in sessions {
            let archived =
                matches!(self.state_of(&id), Ok(s) if s.header.status == SessionStatus::Archived);
            if archived && scratch.remove(&id).unwrap_or(false) {
                removed += 1;
            }
        }
        removed
    }

    /// Logs a handoff written by the session. With a `target_session`, that
    /// session (live, of the handoff's `to_role`) also receives a copy, which its
    /// `resume` returns. The two appends are not atomic: if the copy fails, the
    /// error is returned and the writer's record stays.
    ///
    /// A handoff that names blockers raises a `handoff` blocker flag on the
    /// writer's session right after it (severity `[detector.severity]
    /// handoff`), so they reach someone: the notifications and triggers
    /// that take `flag`, `session list --blocked`, the escalation ladder.
    pub fn handoff(&self, id_or_name: &str, mut handoff: Handoff) -> Result<Event, SessionError> {
        let id = self.resolve(id_or_name)?;
        let writer = self.state_of(&id)?;
        let bad = |reason: String| SessionError::BadHandoff {
            session: writer.label(),
            reason,
        };
        handoff
            .validate(writer.header.role)
            .map_err(|e| bad(e.to_string()))?;
        quota::check_handoff(&self.config.quotas, &handoff)?;
        let target = match handoff.target_session.as_deref() {
            None => None,
            Some(t) => {
                let target_id = self
                    .resolve(t)
                    .map_err(|e| bad(format!("its target: {e}")))?;
                handoff.target_session = Some(target_id.clone());
                if target_id == id {
                    None
                } else if handoff.kind == HandoffKind::Continuation {
                    return Err(bad(
                        "a continuation is for the session itself: leave out target_session".into(),
                    ));
                } else {
                    let target = self
                        .state_of(&target_id)
                        .map_err(|e| bad(format!("its target: {e}")))?;
                    // Within a family the parent is the child's supervisor,
                    // whatever its role: the handoff goes to the target's role.
                    if super::brood::parent_or_child(&writer, &target) {
                        handoff.to_role = Some(target.header.role);
                    }
                    let to = handoff.to_role.unwrap_or(writer.header.role);
                    if target.header.role != to {
                        return Err(bad(format!(
                            "its target {} is a {}, but a `{}` handoff goes to a {to}",
                            target.label(),
                            target.header.role,
                            handoff.kind
                        )));
                    }
                    if !target.header.status.is_live() {
                        return Err(bad(format!(
                            "its target {} is {}",
                            target.label(),
                            target.header.status
                        )));
                    }
                    // The target's log takes the receipt after the writer's
                    // record (the append does not refuse it then): its room
                    // is checked first, so a refusal writes nothing.
                    let receipt = EventKind::HandoffReceived {
                        from_session: id.clone(),
                        handoff: handoff.clone(),
                    };
                    self.check_log_room(&target, &receipt)?;
                    Some(target_id)
                }
            }
        };
        let event = {
            let slot = self.slot(&id);
            let mut slot = lock_slot(&slot);
            self.append_locked(&mut slot, &id, EventKind::Handoff(handoff.clone()))?
        };
        let blockers = &handoff.notes.blockers;
        if !blockers.is_empty() {
            let flag = super::Flag {
                rule: "handoff".into(),
                severity: self.config.detector.severity_of("handoff"),
                reason: format!(
                    "its handoff names {} blocker(s): {}",
                    blockers.len(),
                    blockers.join("; ")
                ),
                suggested_action: "answer the blockers (a rescue's injection, or a handoff to the session), then resume it".into(),
                call_id: None,
            };
            crate::detect::raise(self, &self.config.detector, &id, flag)?;
        }
        if let Some(target_id) = target {
            let slot = self.slot(&target_id);
            let mut slot = lock_slot(&slot);
            self.append_locked(
                &mut slot,
                &target_id,
                EventKind::HandoffReceived {
                    from_session: id,
                    handoff,
                },
            )?;
        }
        Ok(event)
    }

    /// Appends a call record or an annotation (a note, usage, a budget
    /// warning…: the call pipeline's entry; see `annotation_kinds!`). A call
    /// requested in a created session activates it; one in a paused, completed
    /// or archived session is refused.
    pub fn append(&self, id_or_name: &str, kind: EventKind) -> Result<Event, SessionError> {
        let method = match &kind {
            EventKind::CallRequested { .. }
            | EventKind::CallDecided { .. }
            | EventKind::CallStarted { .. }
            | EventKind::CallFinished { .. }
            | EventKind::CallInterrupted { .. }
            | annotation_kinds!() => None,
            EventKind::ChildSpawned { .. } => Some("spawn"),
            EventKind::GatesChecked { .. } => Some("record_gates"),
            EventKind::VerdictReceived { .. } | EventKind::VerdictGiven { .. } => Some("verdict"),
            EventKind::SessionStarted { .. } => Some("start"),
            EventKind::Renamed { .. } => Some("rename"),
            EventKind::Tagged { .. } => Some("tag"),
            EventKind::Paused { .. } => Some("pause"),
            EventKind::Resumed => Some("resume"),
            EventKind::Ended { .. } => Some("end"),
            EventKind::Archived => Some("archive"),
            EventKind::Handoff(_) | EventKind::HandoffReceived { .. } => Some("handoff"),
        };
        if let Some(method) = method {
            return Err(SessionError::InvalidEvent {
                session: self
                    .resolve(id_or_name)
                    .map(|id| self.label_of(&id))
                    .unwrap_or(format!("`{id_or_name}`")),
                reason: format!("{} events are logged by `Sessions::{method}`", kind.name()),
            });
        }
        self.with_slot(id_or_name, |this, slot, id| {
            this.append_locked(slot, id, kind)
        })
    }

    /// Appends the events `derive` makes of the session's current state (and
    /// the time), under the session's lock: nothing else is appended between
    /// the look and the appends (the budget guard and its accounting). The
    /// events are one write: each is checked against the lifecycle as it would
    /// stand after the ones before it, and if one is refused none is appended.
    /// Returns the events and what `derive` returned besides.
    pub fn append_with<R>(
        &self,
        id_or_name: &str,
        derive: impl FnOnce(&SessionState, u64) -> (Vec<EventKind>, R),
    ) -> Result<(Vec<Event>, R), SessionError> {
        self.append_with_commit(id_or_name, Commit::Durable, derive)
    }

    /// [`Sessions::append_with`] that returns, with [`Commit::Deferred`], once
    /// the events are written but before they are durable (see
    /// [`Sessions::sync`]).
    pub fn append_with_commit<R>(
        &self,
        id_or_name: &str,
        commit: Commit,
        derive: impl FnOnce(&SessionState, u64) -> (Vec<EventKind>, R),
    ) -> Result<(Vec<Event>, R), SessionError> {
        self.with_slot(id_or_name, |this, slot, id| {
            let state = this.loaded(slot, id)?;
            let now = this.now().max(state.header.updated_at_ms);
            let (kinds, extra) = derive(state, now);
            if kinds.is_empty() {
                return Ok((Vec::new(), extra));
            }
            let events = this.append_batch_locked(slot, id, kinds, commit)?;
            Ok((events, extra))
        })
    }

    /// Up to `limit` events from `from_seq` (1 = the first), decoded but not verified.
    pub fn events(
        &self,
        id_or_name: &str,
        from_seq: u64,
        limit: usize,
    ) -> Result<Vec<Event>, SessionError> {
        let id = self.resolve(id_or_name)?;
        log::read_events(&*self.storage, &id, &self.label_of(&id), from_seq, limit)
    }

    pub(super) fn with_slot<T>(
        &self,
        id_or_name: &str,
        f: impl FnOnce(&Sessions, &mut Slot, &str) -> Result<T, SessionError>,
    ) -> Result<T, SessionError> {
        let id = self.resolve(id_or_name)?;
        let slot = self.slot(&id);
        let mut slot = lock_slot(&slot);
        f(self, &mut slot, &id)
    }

    pub(super) fn current(&self, slot: &mut Slot, id: &str) -> Result<SessionState, SessionError> {
        Ok(self.loaded(slot, id)?.clone())
    }
}

pub(super) fn check_name(name: &str) -> Result<(), SessionError> {
    let bad = |reason: &str| {
        Err(SessionError::InvalidInput(format!(
            "invalid session name `{name}`: {reason}"
        )))
    };
    if name.is_empty() || name.len() > 128 {
        return bad("use 1 to 128 characters");
    }
    if name.chars().any(|c| c.is_control() || c.is_whitespace()) {
        return bad("use no spaces or control characters");
    }
    if name
        .strip_prefix(ID_PREFIX)
        .is_some_and(|rest| rest.len() == 32 && rest.bytes().all(|b| b.is_ascii_hexdigit()))
    {
        return bad("it looks like a session id");
    }
    Ok(())
}

pub(super) fn check_tags(tags: &[String]) -> Result<(), SessionError> {
    for tag in tags {
        if tag.is_empty()
            || tag.len() > 64
            || tag
                .chars()
                .any(|c| c.is_control() || c.is_whitespace() || c == ',')
        {
            return Err(SessionError::InvalidInput(format!(
                "invalid tag `{tag}`: use 1 to 64 characters, no spaces or commas"
            )));
        }
    }
    Ok(())
}

/// A session ends as `completed` only when its completion condition holds
/// (see `completion.rs`); other outcomes are not held to it.
fn check_complete(state: &SessionState, outcome: EndOutcome) -> Result<(), SessionError> {
    if outcome == EndOutcome::Completed {
        state.completion.ready(&state.label())?;
    }
    Ok(())
}
