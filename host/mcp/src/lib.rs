//! The MCP server: agents use Glovebox over the Model Context Protocol.
//!
//! This crate is an adapter and stays thin: it translates MCP requests into
//! the gateway's calls (the `glovebox` crate) and their results back. It never
//! imports the engine, the sandbox, a storage engine or the ledger directly:
//! whatever it serves goes through the gateway's one pipeline, so MCP gets
//! exactly the checks, hooks and log of every other way in
//! (`tests/all/architecture.rs` holds the rule).
//!
//! `tools/list` offers every configured plugin tool (`plugin.tool`, with its
//! input schema) and the built-in tools ([`BUILTINS`]) for sessions, their
//! notes, usage, pauses, logs and re-runs, approvals and background jobs,
//! each within what the caller owns (the caller's `Gateway::scope`).
//!
//! Each connection (one stdio peer, or one MCP session over HTTP) has its own
//! [`Connection`] handler and so its own bound session: `session_start` and
//! `session_resume` bind it, `session_end` unbinds it. A plugin tool call or a
//! `job_spawn` with nothing bound runs in a default session of the connection
//! (role workagent, project `mcp`, name `mcp-<short id>`), started on first use
//! and then bound; when the connection goes away (stdin closed; over HTTP, its
//! handler dropped as rmcp ends the MCP session) it is paused, if still
//! active, with the reason in its log. Every plugin call takes the host's one pipeline
//! (`Scope::call`): hooks, sandbox, log.
//!
//! A denied call is a tool error (`isError`) with the hook, pattern, reason and
//! alternatives, as text and as structured content (`{"denied": ...}`). A
//! call a hook wants a human to approve is put to the client's user through
//! MCP elicitation when the client declared it (accept runs it, decline denies
//! it); otherwise, or if the user cancels, the result says it awaits approval
//! and gives the approval id (`{"awaiting_approval": ...}`).
//!
//! A bad request (unknown tool, input that is too large, not JSON or not
//! fitting the tool's schema) is checked before anything is logged and gets a
//! JSON-RPC `invalid params` error that says what is wrong. A panic while
//! serving a call ends that call with an internal error, not the server.

#![forbid(unsafe_code)]

mod answers;
mod builtins;
mod http;
mod limits;
mod logging;
mod results;
mod tools;

use std::borrow::Cow;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, DiscoverResult, ElicitRequestParams,
    ElicitationAction, ElicitationSchema, Implementation, InitializeResult, JsonObject,
    ListToolsResult, PaginatedRequestParams, ProgressNotificationParam, ProtocolVersion,
    ServerCapabilities, Tool,
};
use tokio_util::sync::CancellationToken;
// `logging` is deprecated from revision 2026-07-28 on (see `logging.rs`).
#[allow(deprecated)]
use rmcp::model::SetLevelRequestParams;
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer, ServerHandler, ServiceExt};
use serde_json::Value;

use glovebox::approvals::{Approval, ApprovalStatus};
use glovebox::jobs::{Jobs, JobsConfig};
use glovebox::manifest::ApproveBy;
use glovebox::session::{Role, SessionError, SessionStatus, StartSession};
use glovebox::settled::Settled;
use glovebox::{Admitted, CallError, Gateway, Principal};

pub use http::{DEFAULT_GRACE, DEFAULT_MAX_CONNECTIONS, HttpOptions, HttpServer};
pub use logging::connection_log;
pub use tools::BUILTINS;

/// How long a call waits for the client's user to answer an approval
/// elicitation; after that the approval stays pending for an operator.
const ELICITATION_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(600);

/// What every connection shares: the gateway (the host and its ledger), the jobs runner
/// and the tool list (made again after a reload).
#[derive(Clone)]
pub struct McpServer {
    inner: Arc<Shared>,
}

struct Shared {
    gateway: Gateway,
    jobs: Arc<Jobs>,
    /// The tool list and the host it was made from.
    tools: std::sync::Mutex<(Arc<glovebox::Host>, Arc<Vec<Tool>>)>,
    /// The host's own work while it serves (`glovebox::background`),
    /// stopped with the server.
    _background: Option<glovebox::background::Background>,
}

impl McpServer {
    /// Loads the host from `config`, opens its durable store and starts the
    /// host's own work while it serves (`glovebox::background`: the jobs
    /// runner, re-queueing the jobs a previous run left, the sweeps,
    /// notifications, schedules and triggers).
    pub async fn open(config: &Path) -> anyhow::Result<McpServer> {
        let gateway = Gateway::open(config).await?;
        let background =
            glovebox::background::Background::start(&gateway, JobsConfig::default()).await?;
        let jobs = background.jobs().clone();
        Ok(McpServer::build(gateway, jobs, Some(background)))
    }

    pub fn new(gateway: Gateway, jobs: Arc<Jobs>) -> McpServer {
        McpServer::build(gateway, jobs, None)
    }

    fn build(
        gateway: Gateway,
        jobs: Arc<Jobs>,
        background: Option<glovebox::background::Background>,
    ) -> McpServer {
        let host = gateway.host();
        let tools = tool_list(&host);
        McpServer {
            inner: Arc::new(Shared {
                gateway,
                jobs,
                tools: std::sync::Mutex::new((host, tools)),
                _background: background,
            }),
        }
    }

    pub fn gateway(&self) -> &Gateway {
        &self.inner.gateway
    }

    pub fn jobs(&self) -> &Arc<Jobs> {
        &self.inner.jobs
    }

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
            }),
        };
        if let Some(principal) = bound {
            let _ = connection.state.name.set(principal.name.clone());
            connection.state.remember(principal);
        }
        connection
    }

    /// Serves one client over stdin/stdout until it closes stdin, as
    /// `principal`.
    pub async fn serve_stdio(&self, principal: Principal) -> anyhow::Result<()> {
        self.serve_stdio_until(principal, CancellationToken::new(), Duration::ZERO)
            .await
    }

    /// [`McpServer::serve_stdio`] until the client closes stdin or `stop` is
    /// cancelled; then the server drains for up to `grace` (see
    /// [`McpServer::drain`]) while the client still gets its answers.
    pub async fn serve_stdio_until(
        &self,
        principal: Principal,
        stop: CancellationToken,
        grace: Duration,
    ) -> anyhow::Result<()> {
        tracing::info!(principal = %principal, "serving MCP over stdio");
        let name = principal.name.clone();
        let connection = self.connection(Some(principal));
        let running = tokio::select! {
            running = connection.clone().serve(rmcp::transport::stdio()) => {
                running.context("the MCP handshake over stdio failed")?
            }
            () = stop.cancelled() => {
                // Stopped before a client said hello: the jobs still drain.
                self.drain(grace).await;
                return Ok(());
            }
        };
        let cancel = running.cancellation_token();
        let mut waiting = std::pin::pin!(running.waiting());
        let removed = connection.state.removed.clone();
        let mut reloads = self.gateway().reloads();
        let waited = loop {
            tokio::select! {
                waited = waiting.as_mut() => break waited,
                () = stop.cancelled() => {
                    self.drain(grace).await;
                    cancel.cancel();
                    break waiting.await;
                }
                // A reload that removed the principal ends the connection
                // now, not at its next request.
                changed = reloads.changed() => {
                    if changed.is_err() {
                        reloads = self.gateway().reloads();
                    } else if self.gateway().principals().current(&name).is_none() {
                        removed.cancel();
                    }
                }
                () = removed.cancelled() => {
                    // The client sees its stdout close (EOF) after any
                    // answer already written; the process exits non-zero.
                    tracing::error!(principal = %name, "{}", removed_message(&name));
                    cancel.cancel();
                    let _ = waiting.await;
                    connection.gone().await;
                    anyhow::bail!("{}; stopped serving MCP over stdio", removed_message(&name));
                }
            }
        };
        // The client is gone: its default session must not stay active.
        connection.gone().await;
        waited.context("the MCP stdio service stopped")?;
        Ok(())
    }

    /// For a server that stops: the requests, calls and jobs in flight get
    /// until `grace` to finish (a request waiting for an operator's approval
    /// is answered "awaiting approval" at once); queued jobs stay queued for
    /// the next start; jobs still running then are stopped and recorded as
    /// interrupted (or re-queued, if idempotent; see [`Jobs::shutdown`]).
    pub async fn drain(&self, grace: Duration) {
        let gateway = self.gateway();
        let (idle, stopped) = tokio::join!(gateway.wait_idle(grace), self.jobs().shutdown(grace));
        if !stopped.is_empty() {
            tracing::warn!(
                jobs = stopped.len(),
                "stopping: jobs still running after the grace period were stopped and recorded as interrupted"
            );
        }
        if !idle {
            tracing::warn!(
                calls = gateway.host().calls_in_flight(),
                "stopping: calls still running after {}s are cut off (they are marked interrupted at the next start)",
                grace.as_secs()
            );
        }
    }
}

/// One connection's handler: its bound session lives here, so bindings never
/// leak from one connection to another.
#[derive(Clone)]
pub struct Connection {
    server: McpServer,
    state: Arc<ConnState>,
}

struct ConnState {
    /// Names the connection's default session: `mcp-<id>`.
    id: String,
    /// The bound session's id.
    bound: tokio::sync::Mutex<Option<String>>,
    /// The name of who is on the other end: set once, and never changes
    /// (over HTTP the MCP session id is pinned to it, see `http.rs`). What
    /// that principal may do is looked up at every request ([`Connection::caller`]).
    name: std::sync::OnceLock<String>,
    /// The principal as the last request found it: who pauses the default
    /// session when the connection goes away.
    last: std::sync::Mutex<Option<Principal>>,
    /// Cancelled when a request finds the principal no longer declared (a
    /// reload removed it): a stdio server then stops serving it.
    removed: CancellationToken,
    /// The default session this connection started, until the connection
    /// goes away and pauses it (taken then, so it is paused once).
    default_session: std::sync::Mutex<Option<String>>,
    gateway: Gateway,
    /// The server's log lines about this connection's requests (`logging`).
    log: logging::ConnectionLog,
}

impl ConnState {
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
fn removed_message(name: &str) -> String {
    format!(
        "principal `{name}` is no longer declared in the config (a reload removed it): this server no longer serves it; an operator declares it again with `glovebox principal add`"
    )
}

/// The role a connection's default session takes: a workagent, or the
/// principal's first role when it may not act as one.
fn default_role(caller: &Principal) -> Role {
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
        if let Some(pause) = self.take_default()
            && let Ok(runtime) = tokio::runtime::Handle::try_current()
        {
            runtime.spawn(pause);
        }
    }
}

impl Connection {
    fn shared(&self) -> &Shared {
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

    async fn bind(&self, session: Option<String>) {
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
    fn caller(&self, context: &RequestContext<RoleServer>) -> Result<Principal, ErrorData> {
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

    /// The hook chain's verdict on built-in `name` with `args` (see
    /// `glovebox::actions`): it acts as the session it names (or the bound
    /// one), or, for `session_start`, as the role it asks for.
    async fn judge_builtin(
        &self,
        caller: &Principal,
        name: &str,
        args: &JsonObject,
    ) -> Result<(), CallError> {
        let gateway = &self.shared().gateway;
        let input = serde_json::to_string(args).unwrap_or_default();
        let text = |key: &str| args.get(key).and_then(Value::as_str).map(str::to_string);
        let (role, session, tags) = if name == tools::SESSION_START {
            let tags = args
                .get("tags")
                .and_then(Value::as_array)
                .map(|t| {
                    t.iter()
                        .filter_map(|t| t.as_str().map(str::to_string))
                        .collect()
                })
                .unwrap_or_default();
            let role = text("role").unwrap_or_else(|| default_role(caller).to_string());
            (role, String::new(), tags)
        } else {
            let key = match text("session") {
                Some(key) => Some(key),
                None => self.bound().await,
            };
            let state = match key {
                // Another's or no such session: the action itself says "not found".
                Some(key) => gateway.scope(caller).session(&key).await.ok(),
                None => None,
            };
            match state {
                Some(s) => (s.header.role.to_string(), s.header.id, s.header.tags),
                None => (default_role(caller).to_string(), String::new(), Vec::new()),
            }
        };
        let action = glovebox::actions::Action {
            builtin: name,
            input: &input,
            role: &role,
            session: &session,
            tags,
        };
        glovebox::actions::judge(gateway, caller, action).await
    }

    /// The bound session, or the connection's default session, started now
    /// if needed (and then bound): a workagent (or the principal's first
    /// role) in project `mcp` (or its first project).
    async fn session_for_call(&self, caller: &Principal) -> Result<String, SessionError> {
        let mut bound = self.state.bound.lock().await;
        if let Some(id) = bound.as_ref() {
            return Ok(id.clone());
        }
        let role = default_role(caller);
        let project = if caller.may_touch("mcp") {
            "mcp".to_string()
        } else {
            caller
                .projects
                .first()
                .cloned()
                .unwrap_or_else(|| "mcp".to_string())
        };
        let start = StartSession {
            role,
            project,
            name: Some(format!("mcp-{}", self.state.id)),
            tags: vec!["mcp".to_string()],
            expected_duration: None,
            budget: Default::default(),
            completion: Default::default(),
        };
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

    /// The pipeline's first stage, before anything is logged: an unknown
    /// tool or a bad input is a bad request (JSON-RPC invalid params).
    fn admit(&self, tool: &str, input: &Value) -> Result<Admitted, ErrorData> {
        self.shared()
            .gateway
            .host()
            .admit_value(tool, input)
            .map_err(|e| results::bad_request(&e))
    }

    /// A plugin tool call in the bound (or default) session.
    async fn call_plugin(
        &self,
        tool: &str,
        input: Value,
        context: &RequestContext<RoleServer>,
    ) -> Result<CallToolResult, ErrorData> {
        let caller = self.caller(context)?;
        let call = self.admit(tool, &input)?;
        let name = call.name().to_string();
        let session = match self.session_for_call(&caller).await {
            Ok(s) => s,
            Err(e) => return Ok(results::session_failure(&e)),
        };
        let report = match self
            .shared()
            .gateway
            .scope(&caller)
            .call(&session, call, None, None)
            .await
        {
            Ok(r) => r,
            Err(e) => return Ok(results::session_failure(&e)),
        };
        let Err(CallError::AwaitingApproval { approval_id, .. }) = &report.outcome else {
            return Ok(results::report(report));
        };
        // Who settles it: the client's own user when its principal says so
        // (`approve_by = "client"`), an operator otherwise, for whom the
        // call waits up to `[approvals] wait`.
        let settled = if caller.approve_by == ApproveBy::Client {
            self.elicit_approval(&caller, &name, approval_id, context)
                .await
        } else {
            self.wait_for_operator(&name, approval_id, context).await
        };
        Ok(settled.unwrap_or_else(|| results::report(report)))
    }

    /// Waits up to `[approvals] wait` for an operator to settle the
    /// approval, telling a client that asked for progress that it waits.
    /// `None`: still pending when the wait ended.
    async fn wait_for_operator(
        &self,
        tool: &str,
        approval_id: &str,
        context: &RequestContext<RoleServer>,
    ) -> Option<CallToolResult> {
        let gateway = &self.shared().gateway;
        let within = gateway.host().config().approvals.wait;
        if within.is_zero() {
            return None;
        }
        if let Some(status) = context.extensions.get::<Progress>() {
            status.set(format!(
                "waiting up to {}s for an operator to approve {approval_id} (`glovebox approve {approval_id}`)",
                within.as_secs()
            ));
        }
        let settled = gateway.wait_for_approval(approval_id, within).await;
        match settled? {
            Settled::Ran(report) => Some(results::report(report)),
            Settled::RanElsewhere(approval) => Some(results::approved_elsewhere(&approval)),
            Settled::Denied(approval) => Some(results::call_error(&denied(tool, &approval))),
        }
    }

    /// Asks the client's user to settle a pending approval through MCP
    /// elicitation (its principal has `approve_by = "client"`), when the
    /// client declared it can. The question shows the approval as every
    /// surface does (`Host::show_approval`: the whole input or a preview of
    /// every key with its SHA-256, the keys the hook named and the tool's
    /// schema order first, invisible characters marked, with a legend).
    /// `None`: not asked, or no answer (the approval stays pending for an
    /// operator).
    async fn elicit_approval(
        &self,
        caller: &Principal,
        tool: &str,
        approval_id: &str,
        context: &RequestContext<RoleServer>,
    ) -> Option<CallToolResult> {
        let supported = context
            .peer
            .peer_info()
            .is_some_and(|info| info.capabilities.elicitation.is_some());
        if !supported {
            return None;
        }
        let schema = ElicitationSchema::builder()
            .required_bool_property("approve", |b| {
                b.title("Approve").description("Run the call now")
            })
            .build()
            .ok()?;
        let shared = self.shared();
        let approval = shared.gateway.ledger().approvals.get(approval_id).ok()?;
        // The one rendering of an approval every surface shows (threat 55).
        let shown = shared.gateway.host().show_approval(&approval);
        let whole_at = format!(
            "`approval_status` with `id` = \"{id}\" returns it whole (its `input`), as `glovebox approvals --input {id}` does for an operator",
            id = shown.id
        );
        let request = ElicitRequestParams::FormElicitationParams {
            meta: None,
            message: format!(
                "The permission hook `{}` asks a human to approve a call to `{}` in session {}: {}.\n{}\nApprove it (approval {})?",
                shown.hook,
                shown.tool,
                shown.session_words(),
                shown.reason,
                shown.input_lines(&whole_at).join("\n"),
                shown.id,
            ),
            requested_schema: schema,
        };
        let answer = match context
            .peer
            .create_elicitation_with_timeout(request, Some(ELICITATION_TIMEOUT))
            .await
        {
            Ok(a) => a,
            Err(e) => {
                tracing::info!(approval = %approval_id, error = %e, "elicitation failed: the approval stays pending");
                return None;
            }
        };
        let approved = answer
            .content
            .as_ref()
            .and_then(|c| c.get("approve"))
            .and_then(Value::as_bool);
        match (answer.action, approved) {
            (ElicitationAction::Accept, Some(true)) => {
                match shared
                    .gateway
                    .scope(caller)
                    .approvals()
                    .approve(approval_id)
                    .await
                {
                    Ok(report) => Some(results::report(report)),
                    Err(e) => Some(results::session_failure(&e)),
                }
            }
            (ElicitationAction::Accept, _) | (ElicitationAction::Decline, _) => {
                let why = "declined by the client's user (MCP elicitation)";
                match shared
                    .gateway
                    .scope(caller)
                    .approvals()
                    .deny(approval_id, why)
                    .await
                {
                    Ok(a) => Some(results::call_error(&denied(tool, &a))),
                    Err(e) => Some(results::session_failure(&e)),
                }
            }
            // Cancelled (or anything newer): the approval stays pending.
            _ => None,
        }
    }

    /// Serves one `tools/call`.
    async fn dispatch(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, ErrorData> {
        let name = request.name.to_string();
        let args = request.arguments.unwrap_or_default();
        let caller = self.caller(&context)?;
        // Everything this request writes to a log is its principal's doing,
        // and the server's log lines about it reach the connection too.
        let sink = self.state.log.sink(&context.peer);
        glovebox::tasks::acting_with(caller.name.clone(), Some(sink), async {
            if BUILTINS.contains(&name.as_str()) {
                if let Err(refused) = self.judge_builtin(&caller, &name, &args).await {
                    return Ok(results::call_error(&refused));
                }
                return self.builtin(&caller, &name, args).await;
            }
            self.call_plugin(&name, Value::Object(args), &context).await
        })
        .await
    }
}

impl ServerHandler for Connection {
    // `enable_logging`: see `logging.rs`.
    #[allow(deprecated)]
    fn get_info(&self) -> InitializeResult {
        InitializeResult::new(
            ServerCapabilities::builder()
                .enable_tools()
                .enable_logging()
                .build(),
        )
        .with_protocol_version(ProtocolVersion::LATEST_WITH_INITIALIZE)
        .with_server_info(Implementation::new("glovebox", env!("CARGO_PKG_VERSION")))
        .with_instructions(
            "Glovebox runs each tool call in a fresh, capability-restricted Wasm sandbox after \
                 permission hooks judge it, and logs it in a durable session. Bind a session with \
                 session_start or session_resume (otherwise calls run in a default session of this \
                 connection); run long calls in the background with job_spawn and job_wait.",
        )
    }

    /// The revisions rmcp lets through to this handler: up to 2026-07-28,
    /// so that a client's `server/discover` probe at 2026-07-28 reaches
    /// [`Self::discover`] and is answered, not refused with -32022. What
    /// this server serves is the revisions up to 2025-11-25 (see
    /// [`served_versions`]).
    fn supported_protocol_versions(&self) -> Cow<'static, [ProtocolVersion]> {
        Cow::Borrowed(ProtocolVersion::known_up_to(&ProtocolVersion::V_2026_07_28))
    }

    /// Advertises the revisions with `initialize` and MCP sessions only: a
    /// connection, and so a bound session, needs them (2026-07-28 serves
    /// every request statelessly). A client that probes (the official
    /// Python SDK does) falls back to `initialize` without an error.
    async fn discover(
        &self,
        _context: RequestContext<RoleServer>,
    ) -> Result<DiscoverResult, ErrorData> {
        Ok(DiscoverResult::from_server_info(
            served_versions().to_vec(),
            self.get_info(),
        ))
    }

    /// `logging/setLevel`: the least severe of the server's lines about
    /// this connection's requests that it gets (see `logging.rs`).
    #[allow(deprecated)]
    async fn set_level(
        &self,
        request: SetLevelRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        self.state.log.set_level(request.level);
        Ok(())
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        served_version(&context)?;
        Ok(ListToolsResult::with_all_items(
            self.shared().tools().as_ref().clone(),
        ))
    }

    fn get_tool(&self, name: &str) -> Option<Tool> {
        self.shared()
            .tools()
            .iter()
            .find(|t| t.name == name)
            .cloned()
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        served_version(&context)?;
        // Counted from here to its answer: a stopping server drains it.
        let in_flight = self.shared().gateway.request();
        // A task of its own, so a panic ends this call, not the connection.
        let this = self.clone();
        let name = request.name.to_string();
        let mut context = context;
        let status = Progress::new(format!("running `{name}`"));
        context.extensions.insert(status.clone());
        let serve = async move {
            let _in_flight = in_flight;
            let (token, peer) = (context.meta.get_progress_token(), context.peer.clone());
            let dispatched = this.dispatch(request, context);
            match token {
                Some(token) => with_progress(dispatched, token, peer, status).await,
                None => dispatched.await,
            }
        };
        match tokio::spawn(serve).await {
            Ok(r) => r.map(CallToolResponse::from),
            Err(e) => {
                let message = if e.is_panic() {
                    format!("the host panicked while serving `{name}`")
                } else {
                    format!("serving `{name}` was cancelled")
                };
                tracing::error!(tool = %name, %message, "MCP call failed inside the host");
                Ok(results::failure("internal", message).into())
            }
        }
    }
}

/// What a request that takes long is doing, for its progress notifications
/// (the approval wait says what it waits for).
#[derive(Clone)]
struct Progress(Arc<std::sync::Mutex<String>>);

impl Progress {
    fn new(message: String) -> Progress {
        Progress(Arc::new(std::sync::Mutex::new(message)))
    }

    fn set(&self, message: String) {
        *self
            .0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = message;
    }

    fn get(&self) -> String {
        self.0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone()
    }
}

/// Runs `request`; when it takes more than a second, the client that gave
/// a progress token hears every second how long it has run and what it does.
async fn with_progress<F: Future>(
    request: F,
    token: rmcp::model::ProgressToken,
    peer: rmcp::Peer<RoleServer>,
    status: Progress,
) -> F::Output {
    const EVERY: std::time::Duration = std::time::Duration::from_secs(1);
    let started = tokio::time::Instant::now();
    let mut ticks = tokio::time::interval_at(started + EVERY, EVERY);
    tokio::pin!(request);
    loop {
        tokio::select! {
            done = &mut request => break done,
            _ = ticks.tick() => {
                let progress = ProgressNotificationParam::new(
                    token.clone(),
                    started.elapsed().as_secs_f64(),
                )
                .with_message(status.get());
                if let Err(e) = peer.notify_progress(progress).await {
                    tracing::debug!(error = %e, "a progress notification was not sent");
                }
            }
        }
    }
}

/// The revisions served: those with `initialize` and MCP sessions.
fn served_versions() -> &'static [ProtocolVersion] {
    ProtocolVersion::known_up_to(&ProtocolVersion::LATEST_WITH_INITIALIZE)
}

/// Refuses a request that declares a revision this server does not serve
/// in its `_meta` (a 2026-07-28 client that skipped the discovery answer):
/// -32022 with the revisions it serves, so the client can negotiate down.
fn served_version(context: &RequestContext<RoleServer>) -> Result<(), ErrorData> {
    match context.meta.protocol_version() {
        Some(asked) if !served_versions().contains(&asked) => Err(
            ErrorData::unsupported_protocol_version(asked, served_versions()),
        ),
        _ => Ok(()),
    }
}

/// A denied approval as the call's refusal: who denied it and why.
fn denied(tool: &str, approval: &Approval) -> CallError {
    let (why, by) = match &approval.status {
        ApprovalStatus::Denied { reason, by, .. } => (reason.as_str(), by.as_deref()),
        _ => ("", None),
    };
    CallError::Denied {
        tool: tool.to_string(),
        hook: "operator".to_string(),
        pattern: approval.pattern.clone(),
        reason: format!(
            "approval {} ({}: {}) denied by {}: {why}",
            approval.id,
            approval.hook,
            approval.reason,
            by.unwrap_or("an operator")
        ),
        alternatives: Vec::new(),
    }
}

/// The tools a host offers over MCP: its plugins' tools, then the built-ins.
fn tool_list(host: &glovebox::Host) -> Arc<Vec<Tool>> {
    let mut tools: Vec<Tool> = host.tools().into_iter().map(tools::plugin_tool).collect();
    tools.extend(tools::builtin_tools());
    Arc::new(tools)
}

impl Shared {
    /// The tool list of the host served now (made again after a reload).
    fn tools(&self) -> Arc<Vec<Tool>> {
        let host = self.gateway.host();
        let mut cached = self
            .tools
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if !Arc::ptr_eq(&cached.0, &host) {
            *cached = (host.clone(), tool_list(&host));
        }
        cached.1.clone()
    }
}
