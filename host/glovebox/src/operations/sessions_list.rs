//! `sessions.list`: the caller's sessions (every session for an operator)
//! that match a filter, newest first, a page at a time.

use std::time::Duration;

use schemars::JsonSchema;
use serde::Deserialize;

use super::paging::paged_args;
use super::sizes::{ID_MAX, PROJECT_MAX, TAG_MAX, TAGS_MAX};
use super::{Audience, Operation, OperationError, Route, page_request};
use crate::page::Page;
use crate::scope::Scope;
use crate::session::{Role, SessionFilter, SessionInfo, SessionStatus};

pub struct ListSessions;

paged_args!(
    #[derive(Debug, Default, Deserialize, JsonSchema)]
    #[serde(deny_unknown_fields)]
    pub struct ListSessionsArgs paging "Sessions" {
        /// Only sessions in this status.
        #[serde(default)]
        pub status: Option<SessionStatus>,
        /// Only sessions with every one of these tags.
        #[serde(default)]
        #[schemars(length(max = TAGS_MAX), inner(length(max = TAG_MAX)))]
        pub tag: Vec<String>,
        /// Only sessions of this role.
        #[serde(default)]
        pub role: Option<Role>,
        /// Only sessions of this project.
        #[serde(default)]
        #[schemars(length(max = PROJECT_MAX))]
        pub project: Option<String>,
        /// Only the sessions of this principal (an agent's listing is its own
        /// whatever it asks).
        #[serde(default)]
        #[schemars(length(max = ID_MAX))]
        pub owner: Option<String>,
        /// Only sessions with no activity for more than this many days.
        #[serde(default)]
        pub inactive_days: Option<u64>,
    }
);

impl Operation for ListSessions {
    const NAME: &'static str = "sessions.list";
    const SUMMARY: &'static str = "Sessions that match a filter, newest first, a page at a time.";
    const DESCRIPTION: &'static str = "An agent principal sees its own sessions only; an operator sees every session. Each entry is the session's header (id, name, role, project, tags, status, times), its owner and its log's head.";
    const AUDIENCE: Audience = Audience::Anyone;
    const HTTP: Option<Route> = Some(Route::get("/sessions"));
    type Args = ListSessionsArgs;
    type Output = Page<SessionInfo>;

    async fn run(
        scope: Scope<'_>,
        args: ListSessionsArgs,
    ) -> Result<Page<SessionInfo>, OperationError> {
        let inactive_for = match args.inactive_days {
            Some(days) => Some(Duration::from_secs(days.checked_mul(86_400).ok_or_else(
                || OperationError::invalid(format!("`inactive_days` = {days} is too many days")),
            )?)),
            None => None,
        };
        let filter = SessionFilter {
            status: args.status,
            tags: args.tag,
            role: args.role,
            project: args.project,
            inactive_for,
            owner: args.owner,
        };
        let page = page_request(args.limit, args.cursor)?;
        Ok(scope.list_sessions(filter, page).await?)
    }
}
