//! `workspaces.merge`: a session's branch merged into its base, its
//! worktree removed (`glovebox workspace merge SESSION`).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::sizes::ID_MAX;
use super::{Audience, Operation, OperationError, Route};
use crate::scope::Scope;
use crate::workspaces::Merged;

pub struct MergeWorkspace;

#[derive(Debug, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct MergeWorkspaceArgs {
    /// The session (id or name) whose branch is merged.
    #[schemars(length(max = ID_MAX))]
    pub session: String,
}

impl Operation for MergeWorkspace {
    const NAME: &'static str = "workspaces.merge";
    const SUMMARY: &'static str =
        "Merges a session's branch into its workspace's base branch and removes its worktree.";
    const DESCRIPTION: &'static str = "A real `git merge --no-ff` of `<branch_prefix><session id>` into the branch it started from, made where that branch is checked out (the repository's own checkout, which must have no uncommitted change to a tracked file), or in a temporary worktree when none has it. Refused when the session's tree has changes not committed yet (a handoff or a completed end commits them). On a conflict the merge is aborted, nothing changes, and the refusal lists the conflicting paths. The branch is kept; the tree is removed.";
    const AUDIENCE: Audience = Audience::Operator;
    const HTTP: Option<Route> = Some(Route::post("/workspaces/{session}/merge"));
    const RUNS_TOOLS: bool = false;
    type Args = MergeWorkspaceArgs;
    type Output = Vec<Merged>;

    async fn run(
        scope: Scope<'_>,
        args: MergeWorkspaceArgs,
    ) -> Result<Vec<Merged>, OperationError> {
        Ok(scope.merge_workspace(&args.session).await?)
    }
}
