//! Session notices pushed on the connection (`glovebox::notices`): context
//! a rescue hands over to a session this connection acts in (its bound
//! session, or the default one it started) reaches the agent at once, as a
//! `notifications/message` from logger `glovebox.rescue` at level
//! `warning`, whose data is the notice (what to do, the source, each entry
//! with a file's content and digest). It is sent whatever level the client
//! set with `logging/setLevel`: it is addressed to the agent, not a line of
//! the server's log. The session's log keeps the handover either way
//! (`session_status`), so a notice a connection misses loses nothing.
#![allow(deprecated)]

use std::sync::Arc;

use rmcp::RoleServer;
use rmcp::model::{LoggingLevel, LoggingMessageNotificationParam};
use tokio::sync::broadcast::error::RecvError;

use crate::connection::ConnState;

/// Starts, once per connection, the task that forwards to `peer` the
/// notices of the sessions the connection acts in. A connection serving one
/// 2026-07-28 request holds nothing open, and gets none.
pub(crate) fn forward(state: &Arc<ConnState>, peer: &rmcp::Peer<RoleServer>) {
    if state.stateless || state.notices.set(()).is_err() {
        return;
    }
    let mut notices = state.gateway.session_notices();
    let (weak, closed, peer) = (Arc::downgrade(state), state.closed.clone(), peer.clone());
    tokio::spawn(async move {
        loop {
            let notice = tokio::select! {
                _ = closed.cancelled() => break,
                notice = notices.recv() => match notice {
                    Ok(notice) => notice,
                    // Missed ones are in the session's log.
                    Err(RecvError::Lagged(_)) => continue,
                    Err(RecvError::Closed) => break,
                },
            };
            let Some(state) = weak.upgrade() else { break };
            let ours = state.acts_in(&notice.session).await;
            drop(state);
            if !ours {
                continue;
            }
            let Ok(data) = serde_json::to_value(&*notice) else {
                continue;
            };
            let line = LoggingMessageNotificationParam::new(LoggingLevel::Warning, data)
                .with_logger("glovebox.rescue".to_string());
            if peer.notify_logging_message(line).await.is_err() {
                break;
            }
        }
    });
}
