//! Child sessions at the gateway: spawning, listing and waiting for the
//! children of a session on behalf of a principal (the rules are the
//! ledger's, in `glovebox_ledger::session::family`).
//!
//! A wait does not poll: the ledger tells the gateway's [`ChildBell`] when a
//! child may have settled (it ended, or its parent received its handoff),
//! and every waiter looks again then. A wait always ends: with no timeout it
//! waits [`WAIT_DEFAULT`], and a timeout above [`WAIT_MAX`] is refused.

use std::sync::Arc;
use std::time::Duration;

use serde::Serialize;
use tokio::sync::watch;

use crate::gateway::Gateway;
use crate::manifest::Principal;
use crate::page::{Page, PageRequest};
use crate::pipeline::ledger_work;
use crate::session::{
    ChildObserver, ChildStatus, SessionError, SpawnChild, Spawned, WAIT_DEFAULT, WAIT_MAX,
};

/// Rung by the ledger when a child session may have settled; waiters
/// subscribe before they look, so a change between the look and the wait
/// is not missed.
#[derive(Clone, Debug)]
pub struct ChildBell(Arc<watch::Sender<u64>>);

impl Default for ChildBell {
    fn default() -> Self {
        ChildBell(Arc::new(watch::Sender::new(0)))
    }
}

impl ChildObserver for ChildBell {
    fn changed(&self, _parent: &str) {
        self.0.send_modify(|n| *n = n.wrapping_add(1));
    }
}

/// What `session_wait` returns.
#[derive(Clone, Debug, Serialize)]
pub struct ChildrenWaited {
    /// The parent's id.
    pub parent: String,
    /// Every child, settled or not, oldest first: its status, outcome and
    /// latest handoff to the parent.
    pub children: Vec<ChildStatus>,
    /// The children that have neither posted a handoff to the parent nor ended.
    pub pending: Vec<String>,
    /// The timeout passed with children pending.
    pub timed_out: bool,
}

/// The timeout a wait runs with: `asked`, or [`WAIT_DEFAULT`]; above
/// [`WAIT_MAX`] it is refused, naming the limit.
pub fn wait_timeout(asked: Option<Duration>) -> Result<Duration, SessionError> {
    let timeout = asked.unwrap_or(WAIT_DEFAULT);
    if timeout > WAIT_MAX {
        return Err(SessionError::InvalidInput(format!(
            "a wait of {} ms is longer than the {} ms maximum: wait in turns of at most that",
            timeout.as_millis(),
            WAIT_MAX.as_millis()
        )));
    }
    Ok(timeout)
}

impl Gateway {
    /// Spawns a child of session `parent` for `caller` (see
    /// `Sessions::spawn_as`): its role, the caller's ceiling and the
    /// parent's budget are checked before anything is written.
    pub async fn spawn_session_as(
        &self,
        caller: &Principal,
        parent: &str,
        spawn: SpawnChild,
    ) -> Result<Spawned, SessionError> {
        let host = self.host();
        let (sessions, caller, key) = (self.sessions().clone(), caller.clone(), parent.to_string());
        let budgets = host.config().budgets.clone();
        let reserved = crate::manifest::pinned_tags(&host.config().principals);
        ledger_work(move || sessions.spawn_as(&caller, &key, spawn, &budgets, &reserved)).await
    }

    /// A page of the children of a session of `caller`'s, oldest first.
    pub async fn children_as(
        &self,
        caller: &Principal,
        parent: &str,
        page: PageRequest,
    ) -> Result<Page<ChildStatus>, SessionError> {
        let (sessions, caller, key) = (self.sessions().clone(), caller.clone(), parent.to_string());
        ledger_work(move || sessions.children_as(&caller, &key, &page)).await
    }

    /// Waits until every child of session `parent` (one of `caller`'s) has
    /// posted a handoff to it or ended, or `timeout` passes (see
    /// [`wait_timeout`]). Refused for a session with no children.
    pub async fn wait_children_as(
        &self,
        caller: &Principal,
        parent: &str,
        timeout: Option<Duration>,
    ) -> Result<ChildrenWaited, SessionError> {
        let timeout = wait_timeout(timeout)?;
        let deadline = tokio::time::Instant::now() + timeout;
        let mut bell = self.child_bell().0.subscribe();
        loop {
            bell.borrow_and_update();
            let (sessions, who, key) =
                (self.sessions().clone(), caller.clone(), parent.to_string());
            let (state, children) = ledger_work(move || sessions.wait_check_as(&who, &key)).await?;
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

    /// Ends the live children of a session of `caller`'s as `interrupted`
    /// (their own children first); returns their ids.
    pub async fn cancel_children_as(
        &self,
        caller: &Principal,
        parent: &str,
    ) -> Result<Vec<String>, SessionError> {
        let (sessions, caller, key) = (self.sessions().clone(), caller.clone(), parent.to_string());
        ledger_work(move || sessions.cancel_children_as(&caller, &key)).await
    }

    /// Whether session `from` (the caller's bound session) may address
    /// session `target`: a child reaches its family, or along a route of
    /// `[handoffs] routes` (see `glovebox_ledger::session::check_addressable`).
    /// Both must be `caller`'s ("not found" otherwise).
    pub async fn check_addressable_as(
        &self,
        caller: &Principal,
        from: &str,
        target: &str,
    ) -> Result<(), SessionError> {
        let from = self.session_as(caller, from).await?;
        if from.parent.is_none() {
            return Ok(());
        }
        let target = self.session_as(caller, target).await?;
        let routes = self.host().config().handoffs.clone();
        crate::session::check_addressable(&from, &target, &routes).map_err(SessionError::NotAllowed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_wait_always_has_a_bounded_timeout() {
        assert_eq!(wait_timeout(None).unwrap(), WAIT_DEFAULT);
        assert_eq!(
            wait_timeout(Some(Duration::from_secs(1))).unwrap(),
            Duration::from_secs(1)
        );
        let err = wait_timeout(Some(WAIT_MAX + Duration::from_millis(1)))
            .unwrap_err()
            .to_string();
        assert!(err.contains("maximum"), "{err}");
    }
}
