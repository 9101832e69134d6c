//! Scopes that narrow the tools an OAuth token reaches
//! (`[auth.oauth.tool_scopes]`).
//!
//! Why: an identity provider's token may be minted for less than everything
//! its principal may do (a read-only integration, a step-up flow); the
//! principal's roles and projects still bound it, and the token's scopes
//! narrow it further. A tool whose scope the token lacks is not listed,
//! and a call of it (directly, as a task, or through `job_spawn`) is
//! answered HTTP 403 with `WWW-Authenticate: ... error="insufficient_scope",
//! scope="..."` before anything runs or is logged, so a client can ask its
//! authorization server for that scope (the spec's step-up). The handler
//! checks again ([`TokenScopes::refusal`]) for whatever the HTTP layer
//! could not read.
//!
//! Static principal tokens carry no scopes and are not narrowed.

use std::collections::BTreeSet;

use rmcp::ErrorData;
use serde_json::{Value, json};

use glovebox::manifest::OAuthConfig;

/// The scopes of the OAuth access token a request was authenticated with;
/// in the request's extensions only for such a request.
#[derive(Clone, Debug)]
pub(crate) struct TokenScopes(pub(crate) BTreeSet<String>);

impl TokenScopes {
    /// The scope `tool` needs under `config` that this token lacks.
    pub(crate) fn missing<'c>(&self, config: &'c OAuthConfig, tool: &str) -> Option<&'c str> {
        config.scope_for(tool).filter(|s| !self.0.contains(*s))
    }

    /// The handler's own check of a `tools/call` (the HTTP layer answers
    /// 403 first when it can read the request): the refusal, naming the
    /// scope.
    pub(crate) fn refusal(
        &self,
        config: &OAuthConfig,
        name: &str,
        args: &serde_json::Map<String, Value>,
    ) -> Option<ErrorData> {
        let tool = called_tool(name, args)?;
        let scope = self.missing(config, tool)?;
        Some(ErrorData::invalid_request(
            insufficient(tool, scope),
            Some(json!({"error": "insufficient_scope", "scope": scope})),
        ))
    }
}

/// The plugin tool a `tools/call` of `name` runs: the tool itself, or the
/// one `job_spawn` queues.
pub(crate) fn called_tool<'a>(
    name: &'a str,
    args: &'a serde_json::Map<String, Value>,
) -> Option<&'a str> {
    if name == "job_spawn" {
        return args.get("tool").and_then(Value::as_str);
    }
    Some(name)
}

/// The words of a refusal for lack of `scope`.
pub(crate) fn insufficient(tool: &str, scope: &str) -> String {
    format!(
        "insufficient_scope: `{tool}` needs the scope `{scope}`, which this access token lacks; ask the authorization server for a token with it"
    )
}

/// The plugin tool a JSON-RPC request body calls, if it is a `tools/call`
/// (of a tool, or of `job_spawn` with one): what the HTTP layer checks
/// before the request goes on.
pub(crate) fn tool_of_body(body: &[u8]) -> Option<String> {
    let message: Value = serde_json::from_slice(body).ok()?;
    if message.get("method")?.as_str()? != "tools/call" {
        return None;
    }
    let params = message.get("params")?;
    let name = params.get("name")?.as_str()?;
    let empty = serde_json::Map::new();
    let args = params
        .get("arguments")
        .and_then(Value::as_object)
        .unwrap_or(&empty);
    called_tool(name, args).map(str::to_string)
}
