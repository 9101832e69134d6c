//! `workspaces.abandon`: a session's worktree removed and its branch
//! deleted, unmerged (`glovebox workspace abandon SESSION`).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::sizes::ID_MAX;
use super::{Audience, Operation, OperationError, Route};
use crate::scope::Scope;
use crate::workspaces::Abandoned;

pub struct AbandonWorkspace;

#[derive(Debug, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AbandonWorkspaceArgs {
    /// The session (id or name) whose work is dropped.
    #[schemars(length(max = ID_MAX))]
    pub session: String,
}

impl Operation for AbandonWorkspace {
    const NAME: &'static str = "workspaces.abandon";
    const SUMMARY: &'static str = "Removes a session's worktree and deletes its branch, unmerged.";
    const DESCRIPTION: &'static str = "What the session changed, committed or not, is dropped: its worktree is removed (`git worktree remove --force`) and its branch deleted (`git branch -D`). The base branch and the repository's own checkout are not touched.";
    const AUDIENCE: Audience = Audience::Operator;
    const HTTP: Option<Route> = Some(Route::post("/workspaces/{session}/abandon"));
    const RUNS_TOOLS: bool = false;
    type Args = AbandonWorkspaceArgs;
    type Output = Vec<Abandoned>;

    async fn run(
        scope: Scope<'_>,
        args: AbandonWorkspaceArgs,
    ) -> Result<Vec<Abandoned>, OperationError> {
        Ok(scope.abandon_workspace(&args.session).await?)
    }
}
