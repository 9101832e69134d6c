//! `sessions.log`: a page of a session's log (the named one, or the one the
//! caller acts from).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::sizes::{LOG_PAGE_DEFAULT, LOG_PAGE_MAX, SESSION_REF_MAX};
use super::{Audience, Operation, OperationError, Route, target_session};
use crate::scope::Scope;
use crate::session::Event;

pub struct SessionLog;

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SessionLogArgs {
    /// Session id or name; the bound session when absent.
    #[schemars(length(max = SESSION_REF_MAX))]
    pub session: Option<String>,
    #[serde(default = "first_seq")]
    #[schemars(range(min = 1))]
    pub from_seq: u64,
    #[serde(default = "log_page_default")]
    #[schemars(range(min = 1, max = LOG_PAGE_MAX))]
    pub limit: usize,
}

fn first_seq() -> u64 {
    1
}

fn log_page_default() -> usize {
    LOG_PAGE_DEFAULT
}

/// A page of events.
#[derive(Debug, Serialize, JsonSchema)]
pub struct LogPage {
    pub events: Vec<Event>,
    /// Where the next page starts (its `from_seq`); null at the end.
    pub next_seq: Option<u64>,
}

impl Operation for SessionLog {
    const NAME: &'static str = "sessions.log";
    const SUMMARY: &'static str = "A page of a session's log (the bound one when `session` is absent): events from `from_seq` (1 when absent), at most `limit` (100 when absent, 500 at most).";
    const DESCRIPTION: &'static str = "`next_seq` is where the next page starts, null at the end.";
    const AUDIENCE: Audience = Audience::Anyone;
    const HTTP: Option<Route> = None;
    const MCP: Option<&'static str> = Some("session_log");
    type Args = SessionLogArgs;
    type Output = LogPage;

    async fn run(scope: Scope<'_>, args: SessionLogArgs) -> Result<LogPage, OperationError> {
        let key = target_session::<Self>(scope, args.session).await?;
        let limit = args.limit;
        let events = scope.events(&key, args.from_seq.max(1), limit).await?;
        let next_seq = (events.len() == limit)
            .then(|| events.last().map(|e| e.seq + 1))
            .flatten();
        Ok(LogPage { events, next_seq })
    }
}
