//! The sessions' worktrees on behalf of the caller (`crate::workspaces`):
//! what a handoff or a completed end commits, and the operator's list,
//! merge and abandon, each run off the async threads with the workspaces
//! the host serves now.

use super::Scope;
use crate::session::SessionError;
use crate::tasks::blocking;
use crate::workspaces::{
    Abandoned, Committed, Merged, SessionTree, UnitOfWork, WorkspaceError, Workspaces,
};

impl Scope<'_> {
    /// The workspaces of the config the host serves now.
    fn workspaces(self) -> Workspaces {
        Workspaces::of(self.gateway.host().config())
    }

    /// Commits what session `id` changed in its worktrees, once its `unit`
    /// of work is recorded: the one place a unit of work becomes commits.
    /// A failure is logged (and in what is returned), never the caller's
    /// error: the handoff or end it follows stands.
    pub(crate) async fn commit_workspaces(
        self,
        id: &str,
        unit: UnitOfWork,
        objective: &str,
    ) -> Vec<Committed> {
        let workspaces = self.workspaces();
        if self.gateway.host().config().workspaces.is_empty() {
            return Vec::new();
        }
        let (id, objective) = (id.to_string(), objective.to_string());
        let session = id.clone();
        blocking(
            move || Ok::<_, String>(workspaces.commit_unit(&id, unit, &objective)),
            |why| why,
        )
        .await
        .unwrap_or_else(|why| {
            tracing::error!(%session, error = %why, "the session's worktrees could not be committed");
            Vec::new()
        })
    }

    /// Every session's worktree (operators).
    pub async fn workspace_trees(self) -> Result<Vec<SessionTree>, WorkspaceError> {
        let workspaces = self.workspaces();
        blocking(move || Ok(workspaces.list()), git_failed).await
    }

    /// Merges the branch of session `session` (id or name) into its base
    /// and removes its worktree (see `crate::workspaces`).
    pub async fn merge_workspace(self, session: &str) -> Result<Vec<Merged>, MergeError> {
        let id = self.session(session).await?.header.id;
        let workspaces = self.workspaces();
        Ok(blocking(move || workspaces.merge(&id), git_failed).await?)
    }

    /// Removes the worktree and deletes the branch of session `session`
    /// (id or name), unmerged.
    pub async fn abandon_workspace(self, session: &str) -> Result<Vec<Abandoned>, MergeError> {
        let id = self.session(session).await?.header.id;
        let workspaces = self.workspaces();
        Ok(blocking(move || workspaces.abandon(&id), git_failed).await?)
    }
}

fn git_failed(why: String) -> WorkspaceError {
    WorkspaceError::Git {
        workspace: String::new(),
        message: why,
    }
}

/// Why a merge or an abandon was refused: the session, or its trees.
#[derive(Debug, thiserror::Error)]
pub enum MergeError {
    #[error(transparent)]
    Session(#[from] SessionError),
    #[error(transparent)]
    Workspace(#[from] WorkspaceError),
}
