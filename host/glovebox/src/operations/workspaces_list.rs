//! `workspaces.list`: every session's worktree of every `[[workspace]]`
//! (`glovebox workspace list`).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::{Audience, Operation, OperationError, Route};
use crate::scope::Scope;
use crate::workspaces::SessionTree;

pub struct ListWorkspaces;

/// No arguments.
#[derive(Debug, Default, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ListWorkspacesArgs {}

impl Operation for ListWorkspaces {
    const NAME: &'static str = "workspaces.list";
    const SUMMARY: &'static str = "Every session's git worktree of every workspace, with its branch and whether it holds work.";
    const DESCRIPTION: &'static str = "A session gets a worktree of a `[[workspace]]` on its first call of a plugin whose grant names it, on branch `<branch_prefix><session id>`. Each tree is listed with its workspace, session, branch, base, path, the paths changed since its last commit and the commits its base does not have. A merged or abandoned session's tree is gone, and not listed.";
    const AUDIENCE: Audience = Audience::Operator;
    const HTTP: Option<Route> = Some(Route::get("/workspaces"));
    const RUNS_TOOLS: bool = false;
    type Args = ListWorkspacesArgs;
    type Output = Vec<SessionTree>;

    async fn run(
        scope: Scope<'_>,
        _args: ListWorkspacesArgs,
    ) -> Result<Vec<SessionTree>, OperationError> {
        Ok(scope.workspace_trees().await?)
    }
}
