//! The sessions' worktrees as they are on disk (`glovebox workspace list`):
//! for each declared workspace, each session's tree under the data dir,
//! its branch, and whether it holds work (changes not committed yet, or
//! commits its base does not have).

use std::path::PathBuf;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::Workspaces;
use super::git::{TreeGit, git};
use super::merge::base_branch;

/// One session's worktree of one workspace.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct SessionTree {
    /// The `[[workspace]]` it is a tree of.
    pub workspace: String,
    /// The session whose tree it is.
    pub session: String,
    /// Its branch (`glovebox/<session>`).
    pub branch: String,
    /// The branch it is merged into.
    pub base: String,
    /// Where it is on disk.
    pub path: PathBuf,
    /// How many paths changed since its last commit.
    pub uncommitted: u64,
    /// How many commits its branch has that its base does not.
    pub commits_ahead: u64,
    /// Whether it holds any work: uncommitted changes or commits ahead.
    pub changed: bool,
}

impl Workspaces {
    /// Every session's tree of every declared workspace, by workspace then
    /// session. A tree git cannot read is listed with what could be read.
    pub fn list(&self) -> Vec<SessionTree> {
        let mut trees = Vec::new();
        for workspace in &self.configs {
            let Ok(entries) = std::fs::read_dir(self.root.join(&workspace.name)) else {
                continue;
            };
            let mut sessions: Vec<String> = entries
                .flatten()
                .filter(|e| e.path().is_dir())
                .filter_map(|e| e.file_name().into_string().ok())
                .filter(|s| super::tree::plain_session(s))
                .collect();
            sessions.sort();
            for session in sessions {
                let path = self.tree_path(&workspace.name, &session);
                let branch = workspace.branch_of(&session);
                let base = base_branch(workspace, &branch).unwrap_or_default();
                let uncommitted = TreeGit::of(&workspace.repo, &path)
                    .and_then(|tree| tree.changed_paths())
                    .map_or(0, |p| p.len() as u64);
                let commits_ahead = git(
                    &workspace.repo,
                    &["rev-list", "--count", &format!("{base}..{branch}")],
                )
                .ok()
                .filter(|r| r.ok)
                .and_then(|r| r.stdout.trim().parse().ok())
                .unwrap_or(0);
                trees.push(SessionTree {
                    workspace: workspace.name.clone(),
                    session,
                    branch,
                    base,
                    path,
                    uncommitted,
                    commits_ahead,
                    changed: uncommitted > 0 || commits_ahead > 0,
                });
            }
        }
        trees
    }
}
