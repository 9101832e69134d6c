//! Who is calling over HTTP, the pinning of MCP sessions to principals,
//! and what each principal may hold.

use std::convert::Infallible;
use std::sync::Arc;

use http_body_util::BodyExt;

use super::held::{self, MAX_MCP_SESSIONS};
use super::oauth::{self, OAuth};
use super::responses::{
    Request, Response, plain, session_not_found, too_many, unauthorized, unavailable,
};
use super::tool_scopes::{TokenScopes, insufficient, tool_of_body};
use crate::answers::Answers;
use crate::server::McpServer;
use glovebox::Principal;
use glovebox::manifest::QuotasConfig;

/// Authentication, the pinning of MCP sessions to principals, and what
/// each principal may hold.
pub(super) struct Auth {
    pub(super) server: McpServer,
    /// rmcp's MCP sessions, each pinned to the principal that opened it.
    pub(super) pins: Arc<held::Pins>,
    /// Requests in flight by principal (open streams included).
    pub(super) requests: held::Requests,
    /// Set once the server stops: new requests get 503.
    pub(super) stopping: std::sync::atomic::AtomicBool,
    /// The answer streams still open or resumable, which the drain waits for.
    pub(super) answers: Arc<Answers>,
    /// The `Host` values served (a page that rebinds a name to loopback is not).
    pub(super) allowed_hosts: Vec<String>,
    /// The checker of OAuth access tokens (`[auth.oauth]`), if configured.
    pub(super) oauth: OAuth,
}

const SESSION_HEADER: &str = "mcp-session-id";
/// Sent by a client resuming a stream (server-sent events).
const LAST_EVENT_ID_HEADER: &str = "last-event-id";

/// Why a request has no principal.
pub(super) enum Refused {
    /// No valid token (401, with no detail).
    Token,
    /// No principals are declared and the peer is not the server's own
    /// user, or cannot be told to be (403, saying why).
    NotOwnUser(String),
    /// Under `[auth.oauth]`: no token, or one refused (401 pointing at the
    /// protected-resource metadata; `invalid_token` when one was given),
    /// or one without a required scope (403 `insufficient_scope`).
    OAuth {
        metadata_url: String,
        given: bool,
        missing_scopes: Vec<String>,
    },
}

impl Refused {
    pub(super) fn response(self) -> Response {
        match self {
            Refused::Token => unauthorized(),
            Refused::NotOwnUser(why) => plain(hyper::StatusCode::FORBIDDEN, format!("{why}\n")),
            Refused::OAuth {
                metadata_url,
                given,
                missing_scopes,
            } => {
                let mut challenge = format!("Bearer resource_metadata=\"{metadata_url}\"");
                let status = if !missing_scopes.is_empty() {
                    challenge.push_str(&format!(
                        ", error=\"insufficient_scope\", scope=\"{}\"",
                        missing_scopes.join(" ")
                    ));
                    hyper::StatusCode::FORBIDDEN
                } else {
                    if given {
                        challenge.push_str(", error=\"invalid_token\"");
                    }
                    hyper::StatusCode::UNAUTHORIZED
                };
                let mut response = unauthorized();
                *response.status_mut() = status;
                if let Ok(value) = hyper::header::HeaderValue::from_str(&challenge) {
                    response
                        .headers_mut()
                        .insert(hyper::header::WWW_AUTHENTICATE, value);
                }
                response
            }
        }
    }
}

impl Auth {
    /// The principal of a request, as the config served now declares it:
    /// the one whose token it carries, or, when no principal is declared,
    /// the built-in `local` agent for a connection of the server's own user.
    /// With an OAuth access token, its scopes too (they narrow the tools
    /// it reaches, `tool_scopes.rs`).
    pub(super) async fn principal<B>(
        &self,
        req: &hyper::Request<B>,
    ) -> Result<(Principal, Option<TokenScopes>), Refused> {
        let gateway = self.server.gateway();
        if !gateway.principals().declared() {
            return match req.extensions().get::<glovebox_listener::Peer>() {
                Some(peer) => own_user(peer).await.map(|()| (Principal::local(), None)),
                None => Err(Refused::NotOwnUser(
                    "refused: the connection's peer is unknown".into(),
                )),
            };
        }
        let token = req
            .headers()
            .get(hyper::header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.split_once(' '))
            .filter(|(scheme, _)| scheme.eq_ignore_ascii_case("bearer"))
            .map(|(_, token)| token.trim());
        let principals = gateway.principals();
        if let Some(principal) = token.and_then(|token| principals.authenticate(token)) {
            return Ok((principal, None));
        }
        let host = gateway.host();
        let Some(config) = &host.config().oauth else {
            return Err(Refused::Token);
        };
        let verifier = self.oauth.verifier(config);
        let authority = req
            .headers()
            .get(hyper::header::HOST)
            .and_then(|v| v.to_str().ok());
        let refused = |given: bool, missing_scopes: Vec<String>| Refused::OAuth {
            metadata_url: verifier.metadata_url(authority),
            given,
            missing_scopes,
        };
        let Some(token) = token else {
            return Err(refused(false, Vec::new()));
        };
        match verifier.verify(token, |name| principals.named(name)).await {
            Ok((principal, scopes)) => Ok((principal, Some(scopes))),
            Err(oauth::Refusal::Invalid(why)) => {
                tracing::warn!(%why, "refused an OAuth access token");
                Err(refused(true, Vec::new()))
            }
            Err(oauth::Refusal::Scope(missing)) => {
                tracing::warn!(missing = %missing.join(" "), "refused an OAuth access token: it lacks a required scope");
                Err(refused(true, missing))
            }
        }
    }

    /// The protected-resource metadata (RFC 9728) under `[auth.oauth]`;
    /// 404 without it.
    pub(super) fn oauth_metadata(&self) -> Response {
        let host = self.server.gateway().host();
        match &host.config().oauth {
            Some(config) => {
                let doc = self.oauth.verifier(config).metadata();
                let mut response = plain(hyper::StatusCode::OK, format!("{doc}\n"));
                response.headers_mut().insert(
                    hyper::header::CONTENT_TYPE,
                    hyper::header::HeaderValue::from_static("application/json"),
                );
                response
            }
            None => super::responses::not_found(),
        }
    }

    pub(super) async fn serve<F, Fut>(
        &self,
        mut req: Request,
        inner: F,
    ) -> Result<Response, Infallible>
    where
        F: FnOnce(Request) -> Fut,
        Fut: std::future::Future<Output = Result<Response, Infallible>>,
    {
        // A resuming GET asks again for the answer to a request the server
        // took before it began to stop: it is owed, not new work.
        let resuming =
            req.method() == hyper::Method::GET && req.headers().contains_key(LAST_EVENT_ID_HEADER);
        if self.stopping.load(std::sync::atomic::Ordering::SeqCst)
            && req.method() != hyper::Method::DELETE
            && !resuming
        {
            return Ok(unavailable());
        }
        let (principal, scopes) = match self.principal(&req).await {
            Ok(found) => found,
            Err(refused) => {
                tracing::info!(method = %req.method(), "HTTP request refused: no valid token, or not the server's own user");
                return Ok(refused.response());
            }
        };
        let quotas = self.server.gateway().host().config().quotas.clone();
        // Counted until its answer's body ends (an open stream included).
        let Some(in_flight) = self
            .requests
            .enter(&principal.name, cap(&quotas, "connections_per_principal"))
        else {
            return Ok(too_many(format!(
                "quota reached: {principal} has {} requests in flight on this server, open streams included ({}); close some (idle streams, MCP sessions it no longer uses), or ask the operator to raise it",
                quotas.limit("connections_per_principal").value,
                quotas.limit("connections_per_principal")
            )));
        };
        let opening = match self.opening(&req, &principal, &quotas) {
            Ok(opening) => opening,
            Err(answer) => return Ok(*answer),
        };
        let deleting = req.method() == hyper::Method::DELETE;
        let posting = req.method() == hyper::Method::POST;
        if let Some(scopes) = scopes {
            req = match self.within_scopes(req, &scopes).await {
                Ok(req) => req,
                Err(answer) => return Ok(*answer),
            };
            req.extensions_mut().insert(scopes);
        }
        req.extensions_mut().insert(principal);
        let mut response = inner(req).await?;
        // rmcp answers a DELETE it honoured with 202; clients (the official
        // Python SDK among them) expect 200 or 204 and warn otherwise.
        if deleting && response.status() == hyper::StatusCode::ACCEPTED {
            *response.status_mut() = hyper::StatusCode::NO_CONTENT;
        }
        if let Some(opening) = opening
            && let Some(id) = response
                .headers()
                .get(SESSION_HEADER)
                .and_then(|v| v.to_str().ok())
        {
            opening.claim(id);
        }
        // The principal's request counts until its body ends or is dropped
        // (the guard lives in the body's frame mapper); an answer stream is
        // also counted for the drain (see `answers.rs`).
        response = response.map(move |body| {
            body.map_frame(move |frame| {
                let _ = &in_flight;
                frame
            })
            .boxed()
        });
        if posting || resuming {
            let answers = self.answers.clone();
            response = response.map(move |body| answers.track(body));
        }
        Ok(response)
    }

    /// A POST whose `tools/call` reaches a tool its token's scopes do not
    /// cover (`[auth.oauth.tool_scopes]`): 403 `insufficient_scope` naming
    /// the scope, before anything runs. The body is read here (up to the
    /// size rmcp takes) and handed on unchanged.
    async fn within_scopes(
        &self,
        req: Request,
        scopes: &TokenScopes,
    ) -> Result<Request, Box<Response>> {
        let host = self.server.gateway().host();
        let Some(config) = host.config().oauth.as_ref() else {
            return Ok(req);
        };
        if config.tool_scopes.is_empty() || req.method() != hyper::Method::POST {
            return Ok(req);
        }
        let (parts, body) = req.into_parts();
        let limit = super::max_request_body(&host.config().runtime);
        let bytes = match http_body_util::Limited::new(body, limit).collect().await {
            Ok(collected) => collected.to_bytes(),
            Err(_) => {
                return Err(Box::new(plain(
                    hyper::StatusCode::PAYLOAD_TOO_LARGE,
                    format!("the request body is over {limit} bytes\n"),
                )));
            }
        };
        if let Some(tool) = tool_of_body(&bytes)
            && let Some(scope) = scopes.missing(config, &tool)
        {
            tracing::info!(%tool, %scope, "refused a call: its OAuth token lacks the tool's scope");
            let metadata_url = self.oauth.verifier(config).metadata_url(
                parts
                    .headers
                    .get(hyper::header::HOST)
                    .and_then(|v| v.to_str().ok()),
            );
            let mut response = plain(
                hyper::StatusCode::FORBIDDEN,
                format!("{}\n", insufficient(&tool, scope)),
            );
            let challenge = format!(
                "Bearer resource_metadata=\"{metadata_url}\", error=\"insufficient_scope\", scope=\"{scope}\""
            );
            if let Ok(value) = hyper::header::HeaderValue::from_str(&challenge) {
                response
                    .headers_mut()
                    .insert(hyper::header::WWW_AUTHENTICATE, value);
            }
            return Err(Box::new(response));
        }
        Ok(hyper::Request::from_parts(
            parts,
            glovebox_listener::TimedBody::whole(bytes),
        ))
    }

    /// The MCP session a request names, if its principal's own, or, for a
    /// POST without one, the reservation of the one it opens. `Err`: the
    /// answer instead (404, 429).
    fn opening(
        &self,
        req: &Request,
        principal: &Principal,
        quotas: &QuotasConfig,
    ) -> Result<Option<held::Opening>, Box<Response>> {
        let session = req
            .headers()
            .get(SESSION_HEADER)
            .and_then(|v| v.to_str().ok())
            .map(str::to_string);
        match &session {
            // An MCP session this layer never saw opened, or another
            // principal's: unknown, as rmcp answers for one it does not have.
            Some(id) if self.pins.owner(id).as_deref() != Some(principal.name.as_str()) => {
                Err(Box::new(session_not_found()))
            }
            Some(_) => Ok(None),
            // A 2026-07-28 request opens no MCP session (it says its
            // revision in this header, which rmcp checks against its body).
            None if stateless(req) => Ok(None),
            // A POST without a session opens one (`initialize`): reserved
            // against the caps before rmcp makes it.
            None if req.method() == hyper::Method::POST => {
                let cap = cap(quotas, "mcp_sessions_per_principal");
                match self.pins.reserve(&principal.name, cap) {
                    Ok(reserved) => Ok(Some(reserved)),
                    Err(held::Full::Principal) => Err(Box::new(too_many(format!(
                        "quota reached: {principal} holds {cap} MCP sessions on this server ({}); end one (DELETE it, or close its client), or ask the operator to raise it",
                        quotas.limit("mcp_sessions_per_principal")
                    )))),
                    Err(held::Full::Server) => Err(Box::new(too_many(format!(
                        "this server holds {MAX_MCP_SESSIONS} MCP sessions, its most: try again when some end"
                    )))),
                }
            }
            None => Ok(None),
        }
    }
}

/// Whether a request says it is of revision 2026-07-28 or later, which
/// has no MCP sessions (`stateless.rs`).
fn stateless(req: &Request) -> bool {
    req.headers()
        .get("mcp-protocol-version")
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v >= "2026-07-28")
}

/// A quota of `quotas`, as a count.
fn cap(quotas: &QuotasConfig, key: &str) -> usize {
    usize::try_from(quotas.limit(key).value).unwrap_or(usize::MAX)
}

/// Refuses a connection that is not of the server's own user (a server
/// without principals serves only the user who started it).
async fn own_user(peer: &glovebox_listener::Peer) -> Result<(), Refused> {
    let own = glovebox_listener::own_uid();
    match peer.is_own_user().await {
        Ok(true) => Ok(()),
        Ok(false) => {
            let uid = peer.uid().await.unwrap_or(u32::MAX);
            tracing::warn!(peer = %peer.addr, uid, "refused a connection of another user: the config declares no principals, so only the server's own user is served");
            Err(Refused::NotOwnUser(format!(
                "refused: this server declares no principals, so it serves only the user who started it (uid {own}), and this connection is uid {uid}'s; declare principals (`glovebox principal add NAME`) to serve others with a token"
            )))
        }
        Err(why) => {
            tracing::warn!(peer = %peer.addr, %why, "refused a connection whose user cannot be told");
            Err(Refused::NotOwnUser(format!(
                "refused: this server declares no principals, so it serves only the user who started it (uid {own}), and this connection's user cannot be told ({why}); declare principals (`glovebox principal add NAME`) and use a token"
            )))
        }
    }
}
