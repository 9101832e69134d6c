//! Requests of revision 2026-07-28, which has no MCP session: what session
//! such a request runs in.
//!
//! Why: from 2026-07-28 on every request stands alone (no `initialize`, no
//! `Mcp-Session-Id`), so "the session this connection bound" means nothing:
//! over HTTP each request may reach another handler, or another node behind
//! a load balancer. A Glovebox session is then an explicit handle the
//! client names in each request's `_meta` as [`SESSION_META`] (an id, or a
//! name of the caller's: `scope(caller).session` decides whether the caller
//! may see it, exactly as for a named session anywhere else); a request
//! that names none runs in the caller's default session, named
//! [`DEFAULT_NAME`] in its own name space and kept in the store, so any node
//! finds the same one. Nothing of it lives in the connection: each request
//! gets a connection of its own ([`Connection::for_request`]) whose binding
//! is that request's, so two requests in flight on one stdio pipe never see
//! each other's session.
//!
//! Requests of the earlier revisions keep the connection's binding
//! (`session_start` binds, the connection's `mcp-<id>` default session).

use std::sync::Arc;

use rmcp::model::{CallToolResult, ProtocolVersion};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer};
use serde_json::{Value, json};

use crate::connection::{ConnState, Connection};
use crate::results;
use glovebox::Principal;
use glovebox::session::{SessionError, SessionStatus};

/// The `_meta` key naming the Glovebox session a 2026-07-28 request runs in.
pub const SESSION_META: &str = "io.glovebox/session";

/// The name of a principal's default session under 2026-07-28.
pub const DEFAULT_NAME: &str = "mcp-default";

/// Times a start of the default session is retried when another request
/// started it first (the name is then taken: the next lookup finds it).
const START_RETRIES: usize = 3;

/// Whether a request declares revision 2026-07-28 or later in its `_meta`.
pub(crate) fn is_stateless(context: &RequestContext<RoleServer>) -> bool {
    context
        .meta
        .protocol_version()
        .is_some_and(|v| v.as_str() >= ProtocolVersion::V_2026_07_28.as_str())
}

/// The session a request names in its `_meta`, if any: a string, or a
/// refusal that names the key and what it takes.
fn named_session(context: &RequestContext<RoleServer>) -> Result<Option<String>, ErrorData> {
    match context.meta.get(SESSION_META) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(key)) if !key.is_empty() => Ok(Some(key.clone())),
        Some(other) => Err(ErrorData::invalid_params(
            format!(
                "`_meta.{SESSION_META}` must be a session's id or name (a non-empty string), not {other}; leave it out to run in your default session `{DEFAULT_NAME}`"
            ),
            Some(json!({"meta": SESSION_META})),
        )),
    }
}

impl Connection {
    /// The connection a request runs on. A request of an earlier revision
    /// runs on this one, with its binding. A 2026-07-28 request runs on a
    /// connection of its own, bound to the session its `_meta` names
    /// (refused, -32602, when the caller may not see it), or to none: its
    /// calls then run in the caller's default session
    /// ([`Connection::principal_default`]).
    pub(crate) async fn for_request(
        &self,
        caller: &Principal,
        context: &RequestContext<RoleServer>,
    ) -> Result<Connection, ErrorData> {
        if !is_stateless(context) {
            return Ok(self.clone());
        }
        let bound = match named_session(context)? {
            None => None,
            Some(key) => match self.shared().gateway.scope(caller).session(&key).await {
                Ok(state) => Some(state.header.id),
                Err(e) => {
                    return Err(ErrorData::invalid_params(
                        format!(
                            "`_meta.{SESSION_META}` names session `{key}`, which you cannot use: {e}; name one of your own sessions (`session_list`), or leave the key out to run in your default session `{DEFAULT_NAME}`"
                        ),
                        Some(json!({"meta": SESSION_META, "session": key})),
                    ));
                }
            },
        };
        Ok(Connection {
            server: self.server.clone(),
            state: Arc::new(ConnState::for_request(&self.state, caller, bound)),
        })
    }

    /// The answer of `session_start` or `session_resume`: the session's
    /// state, and under 2026-07-28 (where they bind nothing) a `binding`
    /// that says how the client runs its requests in it.
    pub(crate) fn bound_answer(&self, state: &impl serde::Serialize, id: &str) -> CallToolResult {
        let mut value = serde_json::to_value(state).unwrap_or(Value::Null);
        if let (true, Some(map)) = (self.state.stateless, value.as_object_mut()) {
            map.insert(
                "binding".into(),
                format!(
                    "protocol 2026-07-28 binds no session to a connection: to run requests in this one, name it in each request's `_meta` as `{SESSION_META}`: \"{id}\"; requests that name none run in your default session `{DEFAULT_NAME}`"
                )
                .into(),
            );
        }
        results::ok(&value)
    }

    /// The caller's default session under 2026-07-28 (named [`DEFAULT_NAME`]
    /// in its name space): the live one (just started, or active), resumed
    /// when its owner paused it; a new one when it never had one or it
    /// ended. Of requests that start it at once, one does and the others,
    /// refused the name, find it. A pause the host took
    /// (an approval wait, a stop) is not lifted here: the resume's refusal
    /// says so.
    pub(crate) async fn principal_default(
        &self,
        caller: &Principal,
    ) -> Result<String, SessionError> {
        // An operator sees every principal's names: its own is `OWNER/NAME`.
        let key = if caller.is_operator() {
            format!("{}/{DEFAULT_NAME}", caller.name)
        } else {
            DEFAULT_NAME.to_string()
        };
        let scope = || self.shared().gateway.scope(caller);
        let mut attempt = 0;
        loop {
            match scope().session(&key).await {
                Ok(state) if state.header.status == SessionStatus::Paused => {
                    return Ok(scope()
                        .resume_session(&state.header.id)
                        .await?
                        .state
                        .header
                        .id);
                }
                // Started (by another request a moment ago, perhaps) or active.
                Ok(state) if state.header.status.is_live() => return Ok(state.header.id),
                Ok(_) | Err(SessionError::NotFound(_)) => {}
                Err(e) => return Err(e),
            }
            match scope()
                .start_session(self.default_start(caller, DEFAULT_NAME))
                .await
            {
                Ok(state) => {
                    tracing::info!(session = %state.header.id, principal = %caller.name, "started the principal's default session");
                    return Ok(state.header.id);
                }
                Err(SessionError::NameTaken { .. }) if attempt < START_RETRIES => attempt += 1,
                Err(e) => return Err(e),
            }
        }
    }
}
