//! `sessions.usage`: what the agent's model used, which Glovebox cannot see
//! (tokens in and out, the model's cost, the context's size), logged into a
//! session: it counts toward the session's cost and token caps, budgets and
//! billing, and the detector's context rule reads it.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::sizes::{MODEL_MAX, SESSION_REF_MAX};
use super::{Audience, Operation, OperationError, Route, target_session};
use crate::budget::UsageReport;
use crate::scope::Scope;
use crate::session::Event;

pub struct ReportUsage;

#[derive(Debug, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ReportUsageArgs {
    #[serde(default)]
    pub tokens_in: u64,
    #[serde(default)]
    pub tokens_out: u64,
    #[schemars(length(max = MODEL_MAX))]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// Model cost in decimal units.
    #[serde(default)]
    #[schemars(range(min = 0))]
    pub cost: f64,
    /// The tokens in your context now (with `context_limit`): at
    /// `[detector] context_fraction` (85%) of the window the session is
    /// flagged to hand off.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context_tokens: Option<u64>,
    /// Your context window's size in tokens (with `context_tokens`).
    #[schemars(range(min = 1))]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context_limit: Option<u64>,
    /// Session id or name; the session your calls go to when absent.
    #[schemars(length(max = SESSION_REF_MAX))]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session: Option<String>,
}

/// What the report logged: the usage event, and what it set off (a cap's
/// warning or pause, a budget's, the context rule's flag).
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
pub struct UsageLogged {
    pub events: Vec<Event>,
}

impl Operation for ReportUsage {
    const NAME: &'static str = "sessions.usage";
    const SUMMARY: &'static str =
        "Reports the model's usage (tokens, cost, context) into a session.";
    const DESCRIPTION: &'static str = "Logged as a `usage` event by the caller; the cost counts toward the session's cost cap, its principal's and the host's budgets and billing, the tokens toward a `tokens` cap, and the context's share toward the detector's `context` rule. A report that takes the session past a cap pauses it. Over MCP, with no session named, it goes to the session the connection's calls go to. Another principal's session is not found.";
    const AUDIENCE: Audience = Audience::Anyone;
    // Its session is the connection's when not named, which no HTTP path says.
    const HTTP: Option<Route> = None;
    const MCP: Option<&'static str> = Some("session_usage");
    const CALL_SESSION: bool = true;
    const RUNS_TOOLS: bool = false;
    type Args = ReportUsageArgs;
    type Output = UsageLogged;

    async fn run(scope: Scope<'_>, args: ReportUsageArgs) -> Result<UsageLogged, OperationError> {
        let key = target_session::<Self>(scope, args.session).await?;
        let usage = UsageReport {
            tokens_in: args.tokens_in,
            tokens_out: args.tokens_out,
            cost: args.cost,
            model: args.model,
            context_tokens: args.context_tokens,
            context_limit: args.context_limit,
        };
        Ok(UsageLogged {
            events: scope.report_usage(&key, usage).await?,
        })
    }
}
