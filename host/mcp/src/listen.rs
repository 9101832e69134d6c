//! `subscriptions/listen` (revision 2026-07-28): a stream of the changes a
//! client asked to hear of, on a request it holds open.
//!
//! What it offers: `notifications/tools/list_changed` when a `reload`
//! changes what is served, and `notifications/resources/updated` for the
//! session logs a client names (an event was appended). Why polling the
//! store for those, every [`POLL`]: the store is what every node shares, so
//! a subscription on one node hears of a session driven on another, and a
//! watch costs one read of a session's state per period, bounded by
//! [`MAX_WATCHED`] logs per subscription. Jobs are not watched: a look at a
//! finished job marks its result as read, which a watcher must not do;
//! clients poll them (or run them as tasks).
//!
//! Who hears of what: the caller's scope decides, at every poll, exactly
//! as for a read: a URI naming a session or job the caller may not see
//! (another principal's, or none) is acknowledged like any well-formed URI,
//! so the acknowledgment says nothing of what exists, and never notified.
//!
//! The earlier revisions' `resources/subscribe` and list-changed pushes are
//! not served (their `initialize` does not advertise them).

use std::time::Duration;

use rmcp::ErrorData;
use rmcp::model::{InitializeResult, SubscriptionFilter};
use rmcp::service::SubscriptionContext;

use crate::connection::Connection;
use crate::resources::{Watched, watched};
use glovebox::Principal;

/// How often the watched resources are read.
pub const POLL: Duration = Duration::from_millis(250);

/// Resources one subscription may watch.
pub const MAX_WATCHED: usize = 64;

/// The part of a requested filter this server serves: the tool list, and
/// up to [`MAX_WATCHED`] URIs of session logs.
pub(crate) fn accepted(requested: &SubscriptionFilter) -> SubscriptionFilter {
    let mut filter = SubscriptionFilter::new();
    filter.tools_list_changed = requested.tools_list_changed.filter(|on| *on);
    filter.resource_subscriptions = requested.resource_subscriptions.as_ref().map(|uris| {
        uris.iter()
            .filter(|uri| matches!(watched(uri), Some(Watched::Log(_))))
            .take(MAX_WATCHED)
            .cloned()
            .collect()
    });
    filter
}

/// An `initialize` answer (revisions before 2026-07-28) without what only
/// `subscriptions/listen` serves.
pub(crate) fn without_listen(mut info: InitializeResult) -> InitializeResult {
    if let Some(tools) = info.capabilities.tools.as_mut() {
        tools.list_changed = None;
    }
    if let Some(resources) = info.capabilities.resources.as_mut() {
        resources.subscribe = None;
    }
    info
}

impl Connection {
    /// Serves one subscription until the client cancels it.
    pub(crate) async fn listen_for(
        &self,
        subscription: SubscriptionContext,
    ) -> Result<(), ErrorData> {
        let caller = self.caller(subscription.request_context())?;
        let accepted = subscription.accepted().clone();
        let sink = subscription.sink().clone();
        let mut reloads = self.shared().gateway.reloads();
        let tools = accepted.tools_list_changed == Some(true);
        let mut watches: Vec<(String, String, Option<u64>)> = Vec::new();
        for uri in accepted.resource_subscriptions.iter().flatten() {
            if let Some(Watched::Log(session)) = watched(uri) {
                let now = self.last_seq(&caller, &session).await;
                watches.push((uri.clone(), session, now));
            }
        }
        let mut tick = tokio::time::interval(POLL);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tokio::select! {
                () = subscription.cancelled() => return Ok(()),
                changed = reloads.changed(), if tools => {
                    if changed.is_err() || sink.notify_tool_list_changed().await.is_err() {
                        return Ok(());
                    }
                }
                _ = tick.tick(), if !watches.is_empty() => {
                    for (uri, session, seen) in &mut watches {
                        let now = self.last_seq(&caller, session).await;
                        if now.is_some() && now != *seen {
                            *seen = now;
                            if sink.notify_resource_updated(uri.clone()).await.is_err() {
                                return Ok(());
                            }
                        }
                    }
                }
            }
        }
    }

    /// The sequence number of `session`'s last event, as the caller may
    /// see it; `None` when it may not.
    async fn last_seq(&self, caller: &Principal, session: &str) -> Option<u64> {
        self.shared()
            .gateway
            .scope(caller)
            .session(session)
            .await
            .ok()
            .map(|state| state.last_seq)
    }
}
