//! What each principal holds of the HTTP transport: MCP sessions, and
//! requests in flight (threats 52 and 58).
//!
//! Why: rmcp keeps one MCP session per `Mcp-Session-Id` and serves as many
//! as clients open, and the listener serves `--max-connections` connections
//! shared by everyone. One principal could open MCP sessions without end, or
//! hold every connection with open SSE streams, and the others would get
//! nothing. So each principal holds at most `quotas.mcp_sessions_per_principal`
//! MCP sessions and `quotas.connections_per_principal` requests in flight
//! (open streams included), and all principals together at most
//! [`MAX_MCP_SESSIONS`] MCP sessions; past them a request is refused (429)
//! with the quota named, and the others keep being served.
//!
//! [`Pins`] wraps rmcp's session manager, so a session's pin (the principal
//! that opened it) lives exactly as long as the session: when rmcp ends a
//! session (DELETE, its idle timeout, the server stopping) its pin goes with
//! it, and ending the sessions of a principal a reload removed is closing
//! them here.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use futures::Stream;
use rmcp::model::{ClientJsonRpcMessage, ServerJsonRpcMessage};
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::session::{
    ServerSseMessage, SessionId, SessionManager,
};

/// MCP sessions open at once over all principals: a bound on the server's
/// memory whatever the principals (each session holds a handler, a worker
/// task and its buffers).
pub const MAX_MCP_SESSIONS: usize = 4096;

/// rmcp's session manager, with each session's owner.
pub(super) struct Pins {
    inner: LocalSessionManager,
    state: Mutex<PinState>,
}

#[derive(Default)]
struct PinState {
    /// Live MCP session id → the principal that opened it (`None` until the
    /// request that opened it is answered).
    owners: HashMap<String, Option<String>>,
    /// Sessions being opened (an `initialize` in flight), by principal:
    /// counted against the caps before rmcp makes them.
    opening: HashMap<String, usize>,
}

/// Why a principal may not open another MCP session.
pub(super) enum Full {
    /// It holds `quotas.mcp_sessions_per_principal` already.
    Principal,
    /// All principals together hold [`MAX_MCP_SESSIONS`].
    Server,
}

impl Pins {
    pub(super) fn new(inner: LocalSessionManager) -> Pins {
        Pins {
            inner,
            state: Mutex::default(),
        }
    }

    fn lock(&self) -> MutexGuard<'_, PinState> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The principal that opened session `id`, if it is live and was
    /// claimed.
    pub(super) fn owner(&self, id: &str) -> Option<String> {
        self.lock().owners.get(id).cloned().flatten()
    }

    /// Reserves a session for `name` (an `initialize` it sends), if it
    /// holds fewer than `cap` and the server fewer than [`MAX_MCP_SESSIONS`].
    pub(super) fn reserve(self: &Arc<Self>, name: &str, cap: usize) -> Result<Opening, Full> {
        let mut state = self.lock();
        let opening: usize = state.opening.values().sum();
        if state.owners.len() + opening >= MAX_MCP_SESSIONS {
            return Err(Full::Server);
        }
        let held = state
            .owners
            .values()
            .filter(|o| o.as_deref() == Some(name))
            .count()
            + state.opening.get(name).copied().unwrap_or(0);
        if held >= cap {
            return Err(Full::Principal);
        }
        *state.opening.entry(name.to_string()).or_default() += 1;
        Ok(Opening {
            pins: self.clone(),
            name: name.to_string(),
        })
    }

    /// The ids of the sessions whose owner `keep` no longer keeps (a reload
    /// removed it); [`SessionManager::close_session`] ends each.
    pub(super) fn owned_by_none_of(&self, keep: impl Fn(&str) -> bool) -> Vec<String> {
        self.lock()
            .owners
            .iter()
            .filter(|(_, owner)| owner.as_deref().is_some_and(|o| !keep(o)))
            .map(|(id, _)| id.clone())
            .collect()
    }

    /// MCP sessions open now.
    #[cfg(test)]
    fn open(&self) -> usize {
        self.lock().owners.len()
    }
}

/// A session being opened, counted until the answer to its `initialize`.
pub(super) struct Opening {
    pins: Arc<Pins>,
    name: String,
}

impl Opening {
    /// The answer named session `id`: it is `name`'s from now on (unless
    /// it already ended).
    pub(super) fn claim(self, id: &str) {
        let mut state = self.pins.lock();
        if let Some(owner) = state.owners.get_mut(id) {
            *owner = Some(self.name.clone());
        }
    }
}

impl Drop for Opening {
    fn drop(&mut self) {
        let mut state = self.pins.lock();
        if let Some(n) = state.opening.get_mut(&self.name) {
            *n -= 1;
            if *n == 0 {
                state.opening.remove(&self.name);
            }
        }
    }
}

impl SessionManager for Pins {
    type Error = <LocalSessionManager as SessionManager>::Error;
    type Transport = <LocalSessionManager as SessionManager>::Transport;

    async fn create_session(&self) -> Result<(SessionId, Self::Transport), Self::Error> {
        let (id, transport) = self.inner.create_session().await?;
        self.lock().owners.insert(id.to_string(), None);
        Ok((id, transport))
    }

    async fn initialize_session(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<ServerJsonRpcMessage, Self::Error> {
        self.inner.initialize_session(id, message).await
    }

    async fn has_session(&self, id: &SessionId) -> Result<bool, Self::Error> {
        self.inner.has_session(id).await
    }

    /// Every way a session ends comes here (rmcp closes a session whose
    /// worker ended): its pin goes with it.
    async fn close_session(&self, id: &SessionId) -> Result<(), Self::Error> {
        self.lock().owners.remove(id.as_ref());
        self.inner.close_session(id).await
    }

    async fn create_stream(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        self.inner.create_stream(id, message).await
    }

    async fn accept_message(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<(), Self::Error> {
        self.inner.accept_message(id, message).await
    }

    async fn create_standalone_stream(
        &self,
        id: &SessionId,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        self.inner.create_standalone_stream(id).await
    }

    async fn resume(
        &self,
        id: &SessionId,
        last_event_id: String,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        self.inner.resume(id, last_event_id).await
    }
}

/// Requests in flight (their answers' bodies not ended yet: an open SSE
/// stream counts until it closes), by principal.
#[derive(Clone, Default)]
pub(super) struct Requests(Arc<Mutex<HashMap<String, usize>>>);

/// One request in flight of a principal; it ends when dropped.
pub(super) struct InFlight {
    requests: Requests,
    name: String,
}

impl Requests {
    fn lock(&self) -> MutexGuard<'_, HashMap<String, usize>> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Counts a request of `name`, if it has fewer than `cap` in flight.
    pub(super) fn enter(&self, name: &str, cap: usize) -> Option<InFlight> {
        let mut map = self.lock();
        let n = map.entry(name.to_string()).or_default();
        if *n >= cap {
            if *n == 0 {
                map.remove(name);
            }
            return None;
        }
        *n += 1;
        Some(InFlight {
            requests: self.clone(),
            name: name.to_string(),
        })
    }
}

impl Drop for InFlight {
    fn drop(&mut self) {
        let mut map = self.requests.lock();
        if let Some(n) = map.get_mut(&self.name) {
            *n -= 1;
            if *n == 0 {
                map.remove(&self.name);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_past_a_principals_cap_are_refused_and_freed_when_they_end() {
        let requests = Requests::default();
        let a: Vec<_> = (0..2).filter_map(|_| requests.enter("a", 2)).collect();
        assert_eq!(a.len(), 2);
        assert!(
            requests.enter("a", 2).is_none(),
            "a third of `a` was let in"
        );
        let b = requests.enter("b", 2);
        assert!(b.is_some(), "another principal is served");
        drop(a);
        assert!(requests.enter("a", 2).is_some(), "freed when they end");
        drop(b);
        assert!(requests.lock().len() <= 1, "ended principals are not kept");
    }

    #[tokio::test]
    async fn a_sessions_pin_is_reserved_claimed_and_goes_with_the_session() {
        let pins = Arc::new(Pins::new(LocalSessionManager::default()));
        let opening = pins.reserve("a", 1).ok().unwrap();
        assert!(matches!(pins.reserve("a", 1), Err(Full::Principal)));
        let (id, _transport) = pins.create_session().await.unwrap();
        opening.claim(&id);
        assert_eq!(pins.owner(&id).as_deref(), Some("a"));
        assert!(matches!(pins.reserve("a", 1), Err(Full::Principal)));
        assert!(pins.reserve("b", 1).is_ok());
        assert_eq!(pins.owned_by_none_of(|n| n == "a"), Vec::<String>::new());
        assert_eq!(pins.owned_by_none_of(|n| n == "b"), vec![id.to_string()]);
        pins.close_session(&id).await.unwrap();
        assert_eq!(pins.open(), 0);
        assert!(pins.owner(&id).is_none());
        assert!(pins.reserve("a", 1).is_ok(), "its slot is free again");
    }
}
