//! Child sessions on behalf of the caller: spawning, listing, waiting for
//! and cancelling the children of a session, and whether one session may
//! address another (the rules are the ledger's, in
//! `glovebox_ledger::session::family`; the bell and the wait's bounds are
//! `crate::children`'s).

use std::time::Duration;

use super::Scope;
use crate::children::{ChildrenWaited, wait_timeout};
use crate::page::{Page, PageRequest};
use crate::session::{ChildStatus, SessionError, SpawnChild, Spawned};
use crate::tasks::ledger_work;

impl Scope<'_> {
    /// Spawns a child of session `parent` for the caller (see
    /// `SessionScope::spawn`): its role, the caller's ceiling and the
    /// parent's budget are checked before anything is written.
    pub async fn spawn_session(
        self,
        parent: &str,
        spawn: SpawnChild,
    ) -> Result<Spawned, SessionError> {
        self.spawn_read_only(parent, spawn, false).await
    }

    /// [`Scope::spawn_session`], the child read-only for good when
    /// `read_only` (as it is anyway when its parent or the caller is): it
    /// is offered only tools annotated read-only (`offer.rs`).
    pub async fn spawn_read_only(
        self,
        parent: &str,
        spawn: SpawnChild,
        read_only: bool,
    ) -> Result<Spawned, SessionError> {
        let host = self.gateway.host();
        let (sessions, caller, key) = self.with(parent);
        let budgets = host.config().budgets.clone();
        let reserved = crate::manifest::pinned_tags(&host.config().principals);
        ledger_work(move || {
            sessions
                .scope(&caller)
                .spawn_read_only(&key, spawn, &budgets, &reserved, read_only)
        })
        .await
    }

    /// A page of the children of a session of the caller's, oldest first.
    pub async fn children(
        self,
        parent: &str,
        page: PageRequest,
    ) -> Result<Page<ChildStatus>, SessionError> {
        let (sessions, caller, key) = self.with(parent);
        ledger_work(move || sessions.scope(&caller).children(&key, &page)).await
    }

    /// Waits until every child of session `parent` (one of the caller's)
    /// has posted a handoff to it or ended, or `timeout` passes (see
    /// [`wait_timeout`]). Refused for a session with no children.
    pub async fn wait_children(
        self,
        parent: &str,
        timeout: Option<Duration>,
    ) -> Result<ChildrenWaited, SessionError> {
        let timeout = wait_timeout(timeout)?;
        let deadline = tokio::time::Instant::now() + timeout;
        let mut bell = self.gateway.child_bell().subscribe();
        loop {
            bell.borrow_and_update();
            let (sessions, who, key) = self.with(parent);
            let (state, children) =
                ledger_work(move || sessions.scope(&who).wait_check(&key)).await?;
            let pending: Vec<String> = children
                .iter()
                .filter(|c| !c.settled)
                .map(|c| c.id.clone())
                .collect();
            let settled = pending.is_empty();
            let timed_out = !settled
                && tokio::time::timeout_at(deadline, bell.changed())
                    .await
                    .is_err();
            if settled || timed_out {
                return Ok(ChildrenWaited {
                    parent: state.header.id,
                    children,
                    pending,
                    timed_out,
                });
            }
        }
    }

    /// Ends the live children of a session of the caller's as `interrupted`
    /// (their own children first); returns their ids.
    pub async fn cancel_children(self, parent: &str) -> Result<Vec<String>, SessionError> {
        let (sessions, caller, key) = self.with(parent);
        ledger_work(move || sessions.scope(&caller).cancel_children(&key)).await
    }

    /// Whether the session the caller acts from ([`Scope::acting_from`])
    /// may reach session `key` ([`Self::check_addressable`]): `Ok` when it
    /// acts from none, from `key` itself, or from a session that may; a
    /// session that is not found is left for the operation itself to
    /// answer ("not found" in its own words).
    pub async fn reach(self, key: &str) -> Result<(), SessionError> {
        let Some(from) = self.bound() else {
            return Ok(());
        };
        if from == key {
            return Ok(());
        }
        match self.check_addressable(from, key).await {
            Ok(()) | Err(SessionError::NotFound(_)) => Ok(()),
            Err(e) => Err(e),
        }
    }

    /// The session an operation acts on: `named`, else the one the caller
    /// acts from; `None` when neither. A named one must be within
    /// [`Self::reach`].
    pub async fn target(self, named: Option<String>) -> Result<Option<String>, SessionError> {
        let Some(key) = named.or_else(|| self.bound().map(str::to_string)) else {
            return Ok(None);
        };
        self.reach(&key).await?;
        Ok(Some(key))
    }

    /// Whether session `from` (the caller's bound session) may address
    /// session `target`: a child reaches its family, or along a route of
    /// `[handoffs] routes` (see `glovebox_ledger::session::check_addressable`).
    /// Both must be the caller's ("not found" otherwise).
    pub async fn check_addressable(self, from: &str, target: &str) -> Result<(), SessionError> {
        let from = self.session(from).await?;
        if from.parent.is_none() {
            return Ok(());
        }
        let target = self.session(target).await?;
        let routes = self.gateway.host().config().handoffs.clone();
        crate::session::check_addressable(&from, &target, &routes)
            .map_err(|e| SessionError::NotAllowed(e.to_string()))
    }
}
