//! What an agent should hear now, on its live connection, rather than at its
//! next call: context a rescue handed over to its session (the description,
//! each file's content and digest, the spec changes). The ledger tells the
//! gateway once the handover is durable ([`HandoverObserver`]); the gateway
//! broadcasts a [`SessionNotice`], and each adapter connection forwards the
//! notices of the sessions it acts in (MCP: a `notifications/message`).
//!
//! A notice is a courtesy, never the record: the handover is in the
//! session's log (`session_status`'s `context`, `session_resume`), so a
//! connection that is not there, or that lags behind the broadcast's bounded
//! queue and misses one, loses nothing.

use std::sync::Arc;

use serde::Serialize;
use tokio::sync::broadcast;

use crate::rescue::ContextEntry;
use crate::session::HandoverObserver;

/// How many notices wait for a slow connection before it misses the oldest.
const QUEUE: usize = 64;

/// Something that happened to a session that its agent should hear now.
#[derive(Clone, Debug, Serialize)]
pub struct SessionNotice {
    /// The session's id.
    pub session: String,
    /// What happened: `rescue_handover`.
    pub kind: &'static str,
    /// One line for the agent, saying what to do.
    pub message: String,
    /// Where it came from: `rescue:<id>`.
    pub source: String,
    /// The context handed over, in the order the session's log keeps it.
    pub entries: Vec<ContextEntry>,
}

/// The broadcast of session notices (cheap to clone).
#[derive(Clone, Debug)]
pub(crate) struct Notices(broadcast::Sender<Arc<SessionNotice>>);

impl Default for Notices {
    fn default() -> Self {
        Notices(broadcast::channel(QUEUE).0)
    }
}

impl Notices {
    /// A receiver of the notices sent from now on.
    pub(crate) fn subscribe(&self) -> broadcast::Receiver<Arc<SessionNotice>> {
        self.0.subscribe()
    }
}

impl HandoverObserver for Notices {
    fn handed_over(&self, session: &str, source: &str, entries: &[ContextEntry]) {
        let rescue = source.strip_prefix("rescue:").unwrap_or(source);
        let notice = SessionNotice {
            session: session.to_string(),
            kind: "rescue_handover",
            message: format!(
                "rescue `{rescue}` handed over context for this session ({} entries, below): read it before your next step; `session_status` returns it too (its `context`)",
                entries.len()
            ),
            source: source.to_string(),
            entries: entries.to_vec(),
        };
        // No receiver: no connection listens now; the log has it.
        let _ = self.0.send(Arc::new(notice));
    }
}
