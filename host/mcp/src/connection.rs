//! One connection's handler and its state: who is on the other end, the
//! session it is bound to, and the default session it starts.

use std::sync::Arc;

use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer};
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use crate::logging;
use crate::results;
use crate::server::{McpServer, Shared};
use glovebox::session::{Role, SessionError, SessionStatus, StartSession};
use glovebox::{Admitted, Gateway, Principal};

impl McpServer {
    /// A handler for one new connection. `bound`: the principal it serves
    /// from the start (stdio: the operator who started the process named
    /// it); `None` over HTTP, where it is the one the HTTP layer
    /// authenticates on its first request.
    pub fn connection(&self, bound: Option<Principal>) -> Connection {
        let connection = Connection {
            server: self.clone(),
            state: Arc::new(ConnState {
                id: uuid::Uuid::new_v4().simple().to_string()[..8].to_string(),
                bound: tokio::sync::Mutex::new(None),
                name: std::sync::OnceLock::new(),
                last: std::sync::Mutex::new(None),
                removed: CancellationToken::new(),
                default_session: std::sync::Mutex::new(None),
                gateway: self.inner.gateway.clone(),
                log: logging::ConnectionLog::new(),
                stateless: false,
                notices: std::sync::OnceLock::new(),
                closed: CancellationToken::new(),
            }),
        };
        if let Some(principal) = bound {
            let _ = connection.state.name.set(principal.name.clone());
            connection.state.remember(principal);
        }
        connection
    }
}

/// One connection's handler: its bound session lives here, so bindings never
/// leak from one connection to another.
#[derive(Clone)]
pub struct Connection {
    pub(crate) server: McpServer,
    pub(crate) state: Arc<ConnState>,
}

pub(crate) struct ConnState {
    /// Names the connection's default session: `mcp-<id>`.
    pub(crate) id: String,
    /// The bound session's id.
    pub(crate) bound: tokio::sync::Mutex<Option<String>>,
    /// The name of who is on the other end: set once, and never changes
    /// (over HTTP the MCP session id is pinned to it, see `http.rs`). What
    /// that principal may do is looked up at every request ([`Connection::caller`]).
    pub(crate) name: std::sync::OnceLock<String>,
    /// The principal as the last request found it: who pauses the default
    /// session when the connection goes away.
    pub(crate) last: std::sync::Mutex<Option<Principal>>,
    /// Cancelled when a request finds the principal no longer declared (a
    /// reload removed it): a stdio server then stops serving it.
    pub(crate) removed: CancellationToken,
    /// The default session this connection started, until the connection
    /// goes away and pauses it (taken then, so it is paused once).
    pub(crate) default_session: std::sync::Mutex<Option<String>>,
    pub(crate) gateway: Gateway,
    /// The server's log lines about this connection's requests (`logging`).
    pub(crate) log: logging::ConnectionLog,
    /// Whether this connection serves one 2026-07-28 request
    /// (`stateless.rs`): a call with nothing bound then runs in the
    /// principal's default session, not one of the connection's.
    pub(crate) stateless: bool,
    /// Set once the task that forwards this connection's session notices
    /// runs (`notices.rs`).
    pub(crate) notices: std::sync::OnceLock<()>,
    /// Cancelled when the connection's state goes: the notices' task ends.
    pub(crate) closed: CancellationToken,
}

impl ConnState {
    /// The state of a connection serving one 2026-07-28 request made on
    /// `base`'s: the same principal, and `bound` as the request names it.
    pub(crate) fn for_request(
        base: &ConnState,
        caller: &Principal,
        bound: Option<String>,
    ) -> ConnState {
        let state = ConnState {
            id: base.id.clone(),
            bound: tokio::sync::Mutex::new(bound),
            name: std::sync::OnceLock::new(),
            last: std::sync::Mutex::new(Some(caller.clone())),
            removed: base.removed.clone(),
            default_session: std::sync::Mutex::new(None),
            gateway: base.gateway.clone(),
            log: logging::ConnectionLog::new(),
            stateless: true,
            notices: std::sync::OnceLock::new(),
            closed: CancellationToken::new(),
        };
        let _ = state.name.set(caller.name.clone());
        state
    }

    /// Whether this connection acts in session `id`: its bound session, or
    /// the default one it started.
    pub(crate) async fn acts_in(&self, id: &str) -> bool {
        if self.bound.lock().await.as_deref() == Some(id) {
            return true;
        }
        self.default_session
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .as_deref()
            == Some(id)
    }

    fn remember(&self, principal: Principal) {
        *self
            .last
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = Some(principal);
    }

    /// What pauses the default session when the connection goes away: `None`
    /// when it started none (or it was paused already).
    fn take_default(&self) -> Option<impl Future<Output = ()> + Send + 'static> {
        let id = self
            .default_session
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .take()?;
        let principal = self
            .last
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone()?;
        let (gateway, conn) = (self.gateway.clone(), self.id.clone());
        Some(async move { pause_default(&gateway, &principal, &id, &conn).await })
    }
}

/// Why a connection of a principal a reload removed is no longer served.
pub(crate) fn removed_message(name: &str) -> String {
    format!(
        "principal `{name}` is no longer declared in the config (a reload removed it): this server no longer serves it; an operator declares it again with `glovebox principal add`"
    )
}

/// The role a connection's default session takes: a workagent, or the
/// principal's first role when it may not act as one.
pub(crate) fn default_role(caller: &Principal) -> Role {
    if caller.may_act_as(Role::Workagent) {
        Role::Workagent
    } else {
        caller.roles.first().copied().unwrap_or(Role::Workagent)
    }
}

/// Pauses a connection's default session once the connection is gone, if it
/// is still active (one that ended or that the host paused stays as it is);
/// the log says why, and its owner may resume it by name.
async fn pause_default(gateway: &Gateway, principal: &Principal, id: &str, conn: &str) {
    match gateway.scope(principal).session(id).await {
        Ok(state) if state.header.status == SessionStatus::Active => {}
        _ => return,
    }
    let reason = format!(
        "the MCP connection that started this default session (mcp-{conn}) went away; resume it (`session_resume mcp-{conn}`) to carry on"
    );
    match gateway.scope(principal).pause_session(id, &reason).await {
        Ok(_) => {
            tracing::info!(session = %id, connection = %conn, "paused the default session of a connection that went away")
        }
        Err(e) => {
            tracing::warn!(session = %id, error = %e, "cannot pause the default session of a connection that went away")
        }
    }
}

/// Over HTTP the connection's handler is dropped when rmcp ends its MCP
/// session (DELETE, idle timeout, the server stopping): the default session
/// is paused then.
impl Drop for ConnState {
    fn drop(&mut self) {
        self.closed.cancel();
        if let Some(pause) = self.take_default()
            && let Ok(runtime) = tokio::runtime::Handle::try_current()
        {
            runtime.spawn(pause);
        }
    }
}

impl Connection {
    pub(crate) fn shared(&self) -> &Shared {
        &self.server.inner
    }

    /// The id of the session this connection is bound to, if any.
    pub async fn bound(&self) -> Option<String> {
        self.state.bound.lock().await.clone()
    }

    /// The client went away (stdio: it closed stdin): pauses the default
    /// session this connection started, if it is still active.
    pub async fn gone(&self) {
        if let Some(pause) = self.state.take_default() {
            pause.await;
        }
    }

    pub(crate) async fn bind(&self, session: Option<String>) {
        *self.state.bound.lock().await = session;
    }

    /// The connection's principal as the config declares it now: over HTTP
    /// the one the HTTP layer authenticated for this very request (its token
    /// checked against the config served now), over stdio the one it was
    /// made for, looked up again by name. So a reload reaches an open
    /// connection at its next request: a demoted principal acts with its new
    /// kind, roles and projects. A principal the config no longer declares
    /// is refused, and its stdio server stops serving it; none at all is
    /// refused too (fail closed).
    pub(crate) fn caller(
        &self,
        context: &RequestContext<RoleServer>,
    ) -> Result<Principal, ErrorData> {
        let from_request = context
            .extensions
            .get::<::http::request::Parts>()
            .and_then(|parts| parts.extensions.get::<Principal>());
        let (name, current) = match from_request {
            Some(from_request) => {
                let fixed = self.state.name.get_or_init(|| from_request.name.clone());
                if *fixed != from_request.name {
                    return Err(ErrorData::invalid_request("session not found", None));
                }
                (fixed, Some(from_request.clone()))
            }
            None => {
                let Some(name) = self.state.name.get() else {
                    return Err(ErrorData::internal_error(
                        "the connection has no principal",
                        None,
                    ));
                };
                (name, self.shared().gateway.principals().current(name))
            }
        };
        match current {
            Some(principal) => {
                self.state.remember(principal.clone());
                Ok(principal)
            }
            None => {
                self.state.removed.cancel();
                Err(ErrorData::invalid_request(removed_message(name), None))
            }
        }
    }

    /// The bound session, or the connection's default session, started now
    /// if needed (and then bound): a workagent (or the principal's first
    /// role) in project `mcp` (or its first project).
    pub(crate) async fn session_for_call(
        &self,
        caller: &Principal,
    ) -> Result<String, SessionError> {
        let mut bound = self.state.bound.lock().await;
        if let Some(id) = bound.as_ref() {
            return Ok(id.clone());
        }
        if self.state.stateless {
            let id = self.principal_default(caller).await?;
            *bound = Some(id.clone());
            return Ok(id);
        }
        let start = self.default_start(caller, &format!("mcp-{}", self.state.id));
        let state = self
            .shared()
            .gateway
            .scope(caller)
            .start_session(start)
            .await?;
        tracing::info!(session = %state.header.id, name = ?state.header.name, principal = %caller.name, "started the connection's default session");
        *self
            .state
            .default_session
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = Some(state.header.id.clone());
        *bound = Some(state.header.id.clone());
        Ok(state.header.id)
    }

    /// How a default session starts: a workagent (or the principal's first
    /// role) in project `mcp` (or its first project), named `name`.
    pub(crate) fn default_start(&self, caller: &Principal, name: &str) -> StartSession {
        let project = if caller.may_touch("mcp") {
            "mcp".to_string()
        } else {
            caller
                .projects
                .first()
                .cloned()
                .unwrap_or_else(|| "mcp".to_string())
        };
        StartSession {
            role: default_role(caller),
            project,
            name: Some(name.to_string()),
            tags: vec!["mcp".to_string()],
            expected_duration: None,
            budget: Default::default(),
            completion: Default::default(),
        }
    }

    /// The pipeline's first stage, before anything is logged: an unknown
    /// tool or a bad input is a bad request (JSON-RPC invalid params).
    pub(crate) fn admit(&self, tool: &str, input: &Value) -> Result<Admitted, ErrorData> {
        self.shared()
            .gateway
            .host()
            .admit_value(tool, input)
            .map_err(|e| results::bad_request(&e))
    }
}
