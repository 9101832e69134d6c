//! `sessions.wait`: waits until the children of a session (the named one,
//! or the one the caller acts from) have reported or ended.

use std::time::Duration;

use schemars::JsonSchema;
use serde::Deserialize;

use super::sizes::{SESSION_REF_MAX, WAIT_MAX_MS};
use super::{Audience, Operation, OperationError, target_session};
use crate::children::ChildrenWaited;
use crate::scope::Scope;

pub struct WaitChildren;

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct WaitChildrenArgs {
    #[schemars(range(max = WAIT_MAX_MS))]
    pub timeout_ms: Option<u64>,
    /// The parent (id or name); the bound session when absent.
    #[schemars(length(max = SESSION_REF_MAX))]
    pub session: Option<String>,
}

impl Operation for WaitChildren {
    const NAME: &'static str = "sessions.wait";
    const SUMMARY: &'static str = "Wait until every child session of the bound session (or `session`) has posted a handoff to it or ended, up to a timeout (30 s when absent, 600 s at most; never forever).";
    const DESCRIPTION: &'static str = "Returns each child's status, outcome and latest handoff, the pending ones and whether the wait timed out.";
    const AUDIENCE: Audience = Audience::Anyone;
    // The parent is the bound session when absent, which a path cannot say.
    const HTTP: Option<super::Route> = None;
    const MCP: Option<&'static str> = Some("session_wait");
    type Args = WaitChildrenArgs;
    type Output = ChildrenWaited;

    async fn run(
        scope: Scope<'_>,
        args: WaitChildrenArgs,
    ) -> Result<ChildrenWaited, OperationError> {
        let parent = target_session::<Self>(scope, args.session).await?;
        let timeout = args.timeout_ms.map(Duration::from_millis);
        Ok(scope.wait_children(&parent, timeout).await?)
    }
}
