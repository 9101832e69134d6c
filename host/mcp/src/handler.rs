//! The MCP server handler of a connection: what it offers (`initialize`,
//! `server/discover`, `tools/list`, the resources of `resources.rs`) and
//! how it serves a `tools/call`.

use std::borrow::Cow;

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CancelTaskParams, DiscoverResult, GetTaskParams,
    GetTaskResult, Implementation, InitializeRequestParams, InitializeResult,
    ListResourceTemplatesResult, ListResourcesResult, ListToolsResult, PaginatedRequestParams,
    ProtocolVersion, ReadResourceRequestParams, ReadResourceResponse, ServerCapabilities,
    SubscriptionFilter, Tool, UpdateTaskParams,
};
// `logging` is deprecated from revision 2026-07-28 on (see `logging.rs`).
#[allow(deprecated)]
use rmcp::model::SetLevelRequestParams;
use rmcp::service::{RequestContext, SubscriptionContext};
use rmcp::{ErrorData, RoleServer, ServerHandler};
use serde_json::Value;
use tracing::Instrument as _;

use crate::connection::Connection;
use crate::http::tool_scopes::TokenScopes;
use crate::progress::{Progress, with_progress};
use crate::results;
use crate::tools::BUILTINS;

impl Connection {
    /// Serves one `tools/call`.
    async fn dispatch(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let name = request.name.to_string();
        let args = request.arguments.unwrap_or_default();
        // The second round of a call that answered `input_required` (`rounds.rs`).
        let round = request
            .request_state
            .map(|state| (state, request.input_responses));
        let caller = self.caller(&context)?;
        if let Some((scopes, config)) = self.token_scopes(&context)
            && let Some(refused) = scopes.refusal(&config, &name, &args)
        {
            return Err(refused);
        }
        // Everything this request writes to a log is its principal's doing,
        // and the server's log lines about it reach the connection too.
        let sink = self.state.log.sink(&context.peer);
        crate::notices::forward(&self.state, &context.peer);
        // The caller's trace, if it named one (`traced.rs`).
        let parent = crate::traced::parent_of(&context);
        let span = crate::traced::request_span(&name, parent.as_ref());
        let work = glovebox::tasks::acting_with(caller.name.clone(), Some(sink), async {
            // A 2026-07-28 request's session is its own (`stateless.rs`).
            let this = self.for_request(&caller, &context).await?;
            if BUILTINS.contains(&name.as_str()) {
                if let Err(refused) = this.judge_builtin(&caller, &name, &args).await {
                    return Ok(results::call_error(&refused).into());
                }
                return this.builtin(&caller, &name, args).await.map(Into::into);
            }
            this.call_plugin(&name, Value::Object(args), round, &context)
                .await
        });
        glovebox::trace::within(parent, work).instrument(span).await
    }
}

impl Connection {
    /// The scopes of the OAuth token this request came with, and the
    /// `[auth.oauth]` that says what they cover: `None` for any other
    /// request (`http/tool_scopes.rs`).
    fn token_scopes(
        &self,
        context: &RequestContext<RoleServer>,
    ) -> Option<(TokenScopes, glovebox::manifest::OAuthConfig)> {
        let scopes = context
            .extensions
            .get::<::http::request::Parts>()?
            .extensions
            .get::<TokenScopes>()?
            .clone();
        let config = self.shared().gateway.host().config().oauth.clone()?;
        Some((scopes, config))
    }
}

impl ServerHandler for Connection {
    // `enable_logging`: see `logging.rs`.
    #[allow(deprecated)]
    fn get_info(&self) -> InitializeResult {
        InitializeResult::new(
            ServerCapabilities::builder()
                .enable_tools()
                .enable_tool_list_changed()
                .enable_resources()
                .enable_resources_subscribe()
                .enable_logging()
                .enable_tasks()
                .build(),
        )
        .with_protocol_version(ProtocolVersion::LATEST_WITH_INITIALIZE)
        .with_server_info(Implementation::new("glovebox", env!("CARGO_PKG_VERSION")))
        .with_instructions(
            "Glovebox runs each tool call in a fresh, capability-restricted Wasm sandbox after \
                 permission hooks judge it, and logs it in a durable session. Bind a session with \
                 session_start or session_resume (otherwise calls run in a default session of this \
                 connection); under protocol 2026-07-28 nothing binds: name the session in each \
                 request's _meta as io.glovebox/session, else calls run in your default session \
                 mcp-default. Run long calls in the background with job_spawn and job_wait. \
                 A session's log and a job are resources too (glovebox://sessions/{session}/log, \
                 glovebox://jobs/{id}).",
        )
    }

    /// The revisions served: up to 2026-07-28, each request choosing by
    /// what it says (an `initialize` of an earlier revision starts an MCP
    /// session; a request declaring 2026-07-28 in its `_meta` stands alone,
    /// see `stateless.rs`). rmcp refuses any other revision with -32022 and
    /// this list.
    fn supported_protocol_versions(&self) -> Cow<'static, [ProtocolVersion]> {
        Cow::Borrowed(served_versions())
    }

    /// `initialize` (revisions before 2026-07-28): as rmcp negotiates it,
    /// without what only `subscriptions/listen` serves (`listen.rs`).
    async fn initialize(
        &self,
        request: InitializeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<InitializeResult, ErrorData> {
        context.peer.set_peer_info(request.clone());
        self.negotiate_initialize(&request)
            .map(crate::listen::without_listen)
    }

    /// `subscriptions/listen`: the tool list and session logs (`listen.rs`).
    fn accepted_subscription_filter(
        &self,
        requested: &SubscriptionFilter,
    ) -> Option<SubscriptionFilter> {
        Some(crate::listen::accepted(requested))
    }

    async fn listen(&self, subscription: SubscriptionContext) -> Result<(), ErrorData> {
        self.listen_for(subscription).await
    }

    /// `server/discover`: the revisions served, the capabilities, and who
    /// this server is.
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
        // Only the tools the caller is offered (`offered.rs`).
        let caller = self.caller(&context)?;
        let tools = self
            .offered_tools(&caller, self.shared().tools(), &context)
            .await?;
        // An OAuth token's scopes hide the tools they do not cover.
        let listed = match self.token_scopes(&context) {
            Some((scopes, config)) => tools
                .iter()
                .filter(|t| scopes.missing(&config, &t.name).is_none())
                .cloned()
                .collect(),
            None => tools.as_ref().clone(),
        };
        Ok(ListToolsResult::with_all_items(listed))
    }

    fn get_tool(&self, name: &str) -> Option<Tool> {
        self.shared()
            .tools()
            .iter()
            .find(|t| t.name == name)
            .cloned()
    }

    /// `resources/list`: the logs of the caller's sessions (`resources.rs`).
    async fn list_resources(
        &self,
        request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, ErrorData> {
        let caller = self.caller(&context)?;
        let cursor = request.and_then(|r| r.cursor);
        self.list_session_logs(&caller, cursor).await
    }

    async fn list_resource_templates(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourceTemplatesResult, ErrorData> {
        Ok(crate::resources::templates())
    }

    /// `resources/read`: a page of a session's log, or a job, as the
    /// caller may see it (`resources.rs`).
    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, ErrorData> {
        let caller = self.caller(&context)?;
        let uri = request.uri;
        let sink = self.state.log.sink(&context.peer);
        crate::notices::forward(&self.state, &context.peer);
        glovebox::tasks::acting_with(caller.name.clone(), Some(sink), async {
            self.read(&caller, &uri)
                .await
                .map(ReadResourceResponse::from)
        })
        .await
    }

    /// `tasks/get`, `tasks/cancel`, `tasks/update`: a task is a job of the
    /// caller's (`tasks.rs`).
    async fn get_task(
        &self,
        request: GetTaskParams,
        context: RequestContext<RoleServer>,
    ) -> Result<GetTaskResult, ErrorData> {
        let caller = self.caller(&context)?;
        self.get_job_task(&caller, request).await
    }

    async fn cancel_task(
        &self,
        request: CancelTaskParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        let caller = self.caller(&context)?;
        self.cancel_job_task(&caller, request).await
    }

    async fn update_task(
        &self,
        request: UpdateTaskParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        let caller = self.caller(&context)?;
        self.update_job_task(&caller, request).await
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
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
            Ok(r) => r,
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

/// The revisions served: every one up to 2026-07-28.
fn served_versions() -> &'static [ProtocolVersion] {
    ProtocolVersion::known_up_to(&ProtocolVersion::V_2026_07_28)
}
