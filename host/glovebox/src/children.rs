//! Child sessions at the gateway: the bell their waits listen to and the
//! bounds of a wait. The operations on a session's children are the
//! caller's scope's (`Scope::spawn_session`, `children`, `wait_children`,
//! `cancel_children`, in `scope/children.rs`); the rules are the ledger's,
//! in `glovebox_ledger::session::family`.
//!
//! A wait does not poll: the ledger tells the gateway's [`ChildBell`] when a
//! child may have settled (it ended, or its parent received its handoff),
//! and every waiter looks again then. A wait always ends: with no timeout it
//! waits [`WAIT_DEFAULT`], and a timeout above [`WAIT_MAX`] is refused.

use std::sync::Arc;
use std::time::Duration;

use serde::Serialize;
use tokio::sync::watch;

use crate::session::{ChildObserver, ChildStatus, SessionError, WAIT_DEFAULT, WAIT_MAX};

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

impl ChildBell {
    /// A receiver that sees the next ring (subscribe before looking).
    pub(crate) fn subscribe(&self) -> watch::Receiver<u64> {
        self.0.subscribe()
    }
}

impl ChildObserver for ChildBell {
    fn changed(&self, _parent: &str) {
        self.0.send_modify(|n| *n = n.wrapping_add(1));
    }
}

/// What `session_wait` returns.
#[derive(Clone, Debug, Serialize, schemars::JsonSchema)]
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
