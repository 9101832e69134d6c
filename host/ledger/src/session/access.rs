//! Who may touch a session: the principal that started it (its owner) and
//! operators, nobody else.
//!
//! Every operation that depends on who calls is a method of the caller's
//! [`SessionScope`], made by [`Sessions::scope`]: here (start, show, act,
//! resume, pause, end, tag, hand off, read events, list), in `family.rs`
//! (spawn, children, wait, cancel children) and in `completion.rs`
//! (verdict). The checks are made there, once, for every front end (the
//! gateway's `Scope`, the command line, tests and benches). The operator is
//! a principal like any other, of kind `operator`, so there is no `_as`
//! twin for it: an operator's scope sees and acts in every session.
//!
//! The rules:
//! - a session that is not the caller's is "not found", exactly as one that
//!   does not exist (the same error, the key as the caller gave it), so
//!   names and ids leak nothing; an agent's names are looked up in its own
//!   space only (`names.rs`);
//! - an agent starts sessions only as a role of its ceiling, in a project it
//!   may touch; the tags its operator pinned for it are added, and it cannot
//!   give a tag some principal has pinned (it would pass for the operator's),
//!   nor remove a pinned one;
//! - a pause the host took (a critical flag, a budget, a rescue, a pending
//!   approval, a failed write) is lifted only by an operator; an agent may
//!   pause its own session and lift its own pause.
//!
//! - an agent acts in a session (resumes it, calls a tool in it, writes a
//!   handoff, a note or usage from it, spawns from it, proposes or searches
//!   memory from it, judges from it, tags it) only while the session's role
//!   is among its roles now ([`check_ceiling`], through
//!   [`SessionScope::act`]): the ceiling is checked at every act, not only
//!   at the start, so a session started at the command line, or before a
//!   reload took a role away, is not a way to act above it. Seeing a
//!   session (status, log, listings, a wait), pausing it, ending it (a
//!   `completed` end's gates are calls, so they are checked) and cancelling
//!   its children stay the owner's: stopping work needs no role.
//!
//! The checks run under the session's lock where the state could change
//! between the look and the write (resume, pause, end).
//!
//! The unscoped methods of [`Sessions`] of the same names (`start`, `show`,
//! `show_cached`, `pause`, `resume`, `end`, `end_with_unwaited`, `tag`,
//! `handoff`, `events`, `list`) stay public because the host's own work
//! needs them, with no caller to check: a budget, a rescue, a failed write
//! or the detector pauses a session (a pause no agent lifts), a recovery or
//! a schedule reads and ends one, the doctor and replay read any log, and
//! the offline command line works on sessions of the built-in agent `local`
//! (`session start` with no server records no owner, so `local` may use the
//! session over stdio). A scope method is the same operation after its
//! check, and calls them.

use std::collections::HashSet;

use super::actor;
use super::error::SessionError;
use super::event::Event;
use super::handoff::Handoff;
use super::kind::{EndOutcome, EventKind, Flag, UnwaitedJob};
use super::lifecycle::SessionStatus;
use super::names::Scope;
use super::ops::{Resumed, SessionFilter};
use super::start::StartSession;
use super::state::{SessionInfo, SessionState};
use super::store::Sessions;
use crate::manifest::{DetectorConfig, HandoffsConfig, Principal};
use crate::page::{Page, PageRequest};

/// The sessions on behalf of one caller (see the module docs); cheap: two
/// references. Made by [`Sessions::scope`].
#[derive(Clone, Copy)]
pub struct SessionScope<'s> {
    pub(super) sessions: &'s Sessions,
    pub(super) caller: &'s Principal,
}

impl Sessions {
    /// The sessions on behalf of `caller`: every operation that depends on
    /// who calls (see [`SessionScope`]).
    pub fn scope<'s>(&'s self, caller: &'s Principal) -> SessionScope<'s> {
        SessionScope {
            sessions: self,
            caller,
        }
    }
}

/// Whether `caller` may see and touch the session owned by `owner`.
pub fn may_touch(caller: &Principal, owner: &str) -> bool {
    caller.is_operator() || caller.name == owner
}

impl<'s> SessionScope<'s> {
    /// Who calls.
    pub fn caller(self) -> &'s Principal {
        self.caller
    }

    /// The sessions this scope is of.
    pub fn sessions(self) -> &'s Sessions {
        self.sessions
    }

    /// Runs `f` with the caller as the actor of the events it appends.
    pub(super) fn by<T>(self, f: impl FnOnce() -> T) -> T {
        actor::scoped(self.caller.name.as_str(), f)
    }

    /// Starts a session owned by the caller, within its ceiling. `reserved`:
    /// every tag some principal has pinned (the config's `pinned_tags`).
    /// It is read-only when the caller is.
    pub fn start(
        self,
        start: StartSession,
        reserved: &HashSet<String>,
    ) -> Result<SessionState, SessionError> {
        self.start_read_only(start, reserved, false)
    }

    /// [`SessionScope::start`], read-only for good when `read_only` (or when
    /// the caller is): it is offered only tools annotated read-only.
    pub fn start_read_only(
        self,
        mut start: StartSession,
        reserved: &HashSet<String>,
        read_only: bool,
    ) -> Result<SessionState, SessionError> {
        let caller = self.caller;
        if !caller.may_act_as(start.role) {
            let roles: Vec<&str> = caller.roles.iter().map(|r| r.as_str()).collect();
            return Err(SessionError::NotAllowed(format!(
                "cannot start a session as {}: it is above this principal's ceiling ({}); start it as one of those roles, or ask an operator to add the role to the principal's `roles`",
                start.role,
                roles.join(", ")
            )));
        }
        if !caller.may_touch(&start.project) {
            return Err(SessionError::NotAllowed(format!(
                "cannot start a session in project `{}`: this principal may touch only {}; ask an operator to add the project to its `projects`",
                start.project,
                caller
                    .projects
                    .iter()
                    .map(|p| format!("`{p}`"))
                    .collect::<Vec<_>>()
                    .join(", ")
            )));
        }
        if !caller.is_operator()
            && let Some(tag) = start
                .tags
                .iter()
                .find(|t| reserved.contains(*t) && !caller.tags.contains(t))
        {
            return Err(SessionError::NotAllowed(format!(
                "cannot give the tag `{tag}`: it is pinned by the operator and only the operator gives it; pick another tag"
            )));
        }
        for tag in &caller.tags {
            if !start.tags.contains(tag) {
                start.tags.push(tag.clone());
            }
        }
        self.by(|| {
            self.sessions.start_owned(
                start,
                Some(caller.name.clone()),
                caller.tags.clone(),
                !caller.is_operator(),
                None,
                super::start::StartedAs {
                    agent: (!caller.card.is_empty()).then(|| caller.card.clone()),
                    read_only: read_only || caller.read_only,
                },
            )
        })
    }

    /// The session's state, if the caller may see it; "not found" otherwise.
    pub fn show(self, id_or_name: &str) -> Result<SessionState, SessionError> {
        let not_found = || SessionError::NotFound(id_or_name.to_string());
        // A name only in the caller's space (an operator's: every space).
        let id = match self.sessions.resolve_in(id_or_name, Scope::of(self.caller)) {
            Err(SessionError::NotFound(_)) => return Err(not_found()),
            other => other?,
        };
        let state = self.sessions.state_of(&id)?;
        if may_touch(self.caller, state.owner_name()) {
            Ok(state)
        } else {
            Err(not_found())
        }
    }

    /// The session's state, if the caller may act in it: it may see it
    /// ([`SessionScope::show`]) and the session's role is among its roles
    /// now ([`check_ceiling`]).
    pub fn act(self, id_or_name: &str) -> Result<SessionState, SessionError> {
        let state = self.show(id_or_name)?;
        check_ceiling(self.caller, &state)?;
        Ok(state)
    }

    /// [`SessionScope::show`] when that takes no work that may block (see
    /// [`Sessions::show_cached`]); `None` when it would.
    pub fn show_cached(self, id: &str) -> Option<Result<SessionState, SessionError>> {
        let state = self.sessions.show_cached(id)?;
        Some(if may_touch(self.caller, state.owner_name()) {
            Ok(state)
        } else {
            Err(SessionError::NotFound(id.to_string()))
        })
    }

    /// Resumes the session (see [`Sessions::resume`]) for the caller:
    /// refused for a pause only an operator may lift.
    pub fn resume(self, id_or_name: &str) -> Result<Resumed, SessionError> {
        let id = self.act(id_or_name)?.header.id;
        self.sessions.with_slot(&id, |this, slot, id| {
            // As in `Sessions::resume`: the lease first, so the calls a dead
            // holder left are marked before they are reported.
            this.ensure_lease(slot, id)?;
            let state = this.loaded(slot, id)?;
            if state.header.status == SessionStatus::Paused {
                check_may_lift(self.caller, state)?;
            }
            if state.header.status != SessionStatus::Active {
                self.by(|| this.append_locked(slot, id, EventKind::Resumed))?;
            }
            Ok(Resumed::from_state(this.current(slot, id)?))
        })
    }

    /// Pauses the session for the caller's own reasons: the pause is
    /// recorded as the caller's, so the caller may lift it.
    pub fn pause(self, id_or_name: &str, reason: &str) -> Result<SessionState, SessionError> {
        let id = self.show(id_or_name)?.header.id;
        self.sessions.with_slot(&id, |this, slot, id| {
            let kind = EventKind::Paused {
                reason: reason.to_string(),
                by: Some(self.caller.name.clone()),
            };
            self.by(|| this.append_locked(slot, id, kind))?;
            this.current(slot, id)
        })
    }

    /// Raises a blocker flag the caller says holds on a session it may act
    /// in ([`crate::detect::raise`]): its agent blocked on something, or a
    /// handoff naming blockers. Recorded as the caller's.
    pub fn flag(
        self,
        id_or_name: &str,
        detector: &DetectorConfig,
        flag: Flag,
    ) -> Result<crate::detect::Check, SessionError> {
        let id = self.act(id_or_name)?.header.id;
        self.by(|| crate::detect::raise(self.sessions, detector, &id, flag))
    }

    /// Ends the session (see [`Sessions::end`]) for the caller.
    pub fn end(self, id_or_name: &str, outcome: EndOutcome) -> Result<SessionState, SessionError> {
        let id = self.show(id_or_name)?.header.id;
        self.by(|| self.sessions.end(&id, outcome))
    }

    /// Ends the session for the caller as [`Sessions::end_with_unwaited`]
    /// does: `unwaited` gets the session's id and returns its jobs nobody
    /// waited for, recorded with the end.
    pub fn end_with_unwaited(
        self,
        id_or_name: &str,
        outcome: EndOutcome,
        unwaited: impl FnOnce(&str) -> Vec<UnwaitedJob>,
    ) -> Result<SessionState, SessionError> {
        let id = self.show(id_or_name)?.header.id;
        let jobs = unwaited(&id);
        self.by(|| self.sessions.end_with_unwaited(&id, outcome, jobs))
    }

    /// Adds and removes tags for the caller: an agent cannot remove a
    /// pinned tag nor add a reserved one.
    pub fn tag(
        self,
        id_or_name: &str,
        add: &[String],
        remove: &[String],
        reserved: &HashSet<String>,
    ) -> Result<SessionState, SessionError> {
        let state = self.act(id_or_name)?;
        if !self.caller.is_operator() {
            if let Some(tag) = remove.iter().find(|t| state.pinned_tags.contains(t)) {
                return Err(SessionError::NotAllowed(format!(
                    "cannot remove the tag `{tag}`: the operator pinned it; only an operator removes it"
                )));
            }
            if let Some(tag) = add
                .iter()
                .find(|t| reserved.contains(*t) && !state.pinned_tags.contains(t))
            {
                return Err(SessionError::NotAllowed(format!(
                    "cannot give the tag `{tag}`: it is pinned by the operator and only the operator gives it; pick another tag"
                )));
            }
        }
        self.by(|| self.sessions.tag(&state.header.id, add, remove))
    }

    /// Writes a handoff from the caller's session; a target must be the
    /// caller's too (another's is "not found").
    pub fn handoff(
        self,
        id_or_name: &str,
        mut handoff: Handoff,
        routes: &HandoffsConfig,
    ) -> Result<Event, SessionError> {
        let sessions = self.sessions;
        let writer = self.act(id_or_name)?;
        if let Some(target) = handoff.target_session.clone() {
            // Another principal's session only along a configured route
            // (writer's role to the target's), in a project the caller may
            // touch; otherwise it is not found, as for a name nobody has.
            let routed = |e: SessionError| match sessions
                .resolve_routed(&target)
                .and_then(|id| sessions.state_of(&id))
            {
                Ok(t)
                    if routes.allows(writer.header.role, t.header.role)
                        && self.caller.may_touch(&t.header.project)
                        && t.header.status.is_live() =>
                {
                    Ok(t)
                }
                _ => Err(e),
            };
            let target =
                self.show(&target)
                    .or_else(routed)
                    .map_err(|e| SessionError::BadHandoff {
                        session: writer.label(),
                        reason: format!("its target: {e}"),
                    })?;
            // A child addresses only its family, or along a route.
            super::brood::check_addressable(&writer, &target, routes).map_err(|e| {
                SessionError::BadHandoff {
                    session: writer.label(),
                    reason: e.to_string(),
                }
            })?;
            // By id: the name could pass to another session in between.
            handoff.target_session = Some(target.header.id);
        }
        self.by(|| sessions.handoff(&writer.header.id, handoff))
    }

    /// Up to `limit` events of the caller's session from `from_seq`.
    pub fn events(
        self,
        id_or_name: &str,
        from_seq: u64,
        limit: usize,
    ) -> Result<Vec<Event>, SessionError> {
        let id = self.show(id_or_name)?.header.id;
        self.sessions.events(&id, from_seq, limit)
    }

    /// A page of the caller's sessions matching `filter` (every session for
    /// an operator), newest first (see `listing.rs`).
    pub fn list(
        self,
        filter: &SessionFilter,
        page: &PageRequest,
    ) -> Result<Page<SessionInfo>, SessionError> {
        if self.caller.is_operator() {
            return self.sessions.list(filter, page);
        }
        let own = SessionFilter {
            owner: Some(self.caller.name.clone()),
            ..filter.clone()
        };
        self.sessions.list(&own, page)
    }
}

/// Whether `caller` may lift the pause of `state` (paused): an operator
/// always; an agent only a pause it asked for itself.
pub fn check_may_lift(caller: &Principal, state: &SessionState) -> Result<(), SessionError> {
    if caller.is_operator() || state.paused_by.as_deref() == Some(caller.name.as_str()) {
        return Ok(());
    }
    let reason = state.paused_reason.as_deref().unwrap_or("no reason given");
    Err(SessionError::NotAllowed(format!(
        "session {} stays paused: the host or an operator paused it ({reason}), and only an operator lifts that pause (`glovebox session resume {}`, `glovebox approve`, or the end of a rescue)",
        state.label(),
        state.header.id
    )))
}

/// Refuses `caller` acting in `state` when the session's role is not among
/// the caller's roles as the config says them now (operators act in any):
/// the role ceiling holds at every act, not only at a start (threat 52).
pub fn check_ceiling(caller: &Principal, state: &SessionState) -> Result<(), SessionError> {
    if caller.may_act_as(state.header.role) {
        return Ok(());
    }
    let roles: Vec<&str> = caller.roles.iter().map(|r| r.as_str()).collect();
    let roles = if roles.is_empty() {
        "none".to_string()
    } else {
        roles.join(", ")
    };
    Err(SessionError::NotAllowed(format!(
        "{caller} may not act in session {}: it is a {} session, and the principal's roles are now {roles}; it may still see, pause or end it. An operator adds `{}` to the principal's `roles` (then `glovebox reload`), or acts in the session itself (`glovebox session resume {}`)",
        state.label(),
        state.header.role,
        state.header.role,
        state.header.id
    )))
}
