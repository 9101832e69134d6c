//! A session's branch merged into its base, or abandoned; its tree removed
//! either way (an abandoned branch too).
//!
//! The merge is a real `git merge --no-ff` where the base branch is checked
//! out. When the operator's own checkout has the base branch (the usual
//! case), the merge is made there, and only when that checkout has no
//! uncommitted change to a tracked file: merging in a second worktree would
//! move the branch under the operator's checkout and leave its files
//! behind the branch. When no worktree has the base branch, the merge is
//! made in a temporary worktree of it, removed after. On a conflict the
//! merge is aborted (`git merge --abort`), so the repository is as it was,
//! and the refusal lists the conflicting paths.

use std::path::{Path, PathBuf};

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::Workspaces;
use super::git::{TreeGit, git, git_out, porcelain_paths};
use super::tree::base_of;
use crate::manifest::WorkspaceConfig;

/// Why a session's branch cannot be merged or abandoned.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum WorkspaceError {
    #[error(
        "session {session} has no worktree in any workspace: `glovebox workspace list` shows the trees there are"
    )]
    NoTree { session: String },
    #[error(
        "the worktree of session {session} in workspace `{workspace}` has changes not committed ({}): hand off or end the session as completed to commit them, or abandon it",
        .paths.join(", ")
    )]
    Uncommitted {
        session: String,
        workspace: String,
        paths: Vec<String>,
    },
    #[error(
        "`{}` has the base branch `{base}` checked out with changes not committed ({}): commit or stash them, then merge again",
        .checkout.display(),
        .paths.join(", ")
    )]
    BaseDirty {
        checkout: PathBuf,
        base: String,
        paths: Vec<String>,
    },
    #[error(
        "merging `{branch}` into `{base}` conflicts in {}: the merge was aborted and nothing changed; resolve it by hand (`git merge {branch}` in the repository) or abandon the session's branch",
        .paths.join(", ")
    )]
    Conflict {
        branch: String,
        base: String,
        paths: Vec<String>,
    },
    #[error("workspace `{workspace}`: {message}")]
    Git { workspace: String, message: String },
}

/// A session's branch merged into its base.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Merged {
    pub workspace: String,
    pub session: String,
    pub branch: String,
    pub base: String,
    /// The merge commit on the base branch.
    pub commit: String,
    /// The worktree removed (the branch is kept).
    pub removed: PathBuf,
}

/// A session's branch and tree removed unmerged.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Abandoned {
    pub workspace: String,
    pub session: String,
    /// The branch deleted.
    pub branch: String,
    /// The worktree removed.
    pub removed: PathBuf,
}

/// The branch `branch` merges into: the one it tracks (set when its tree
/// was made), else the workspace's base now.
pub(super) fn base_branch(workspace: &WorkspaceConfig, branch: &str) -> Result<String, String> {
    let tracked = git(
        &workspace.repo,
        &["config", "--get", &format!("branch.{branch}.merge")],
    )?;
    if tracked.ok
        && let Some(base) = tracked.stdout.trim().strip_prefix("refs/heads/")
    {
        return Ok(base.to_string());
    }
    base_of(workspace)
}

impl Workspaces {
    /// Merges `session`'s branch of each workspace it has a tree of into
    /// that branch's base, then removes the tree (see the module docs).
    pub fn merge(&self, session: &str) -> Result<Vec<Merged>, WorkspaceError> {
        let trees: Vec<_> = self.trees_of(session).collect();
        if trees.is_empty() {
            return Err(WorkspaceError::NoTree {
                session: session.to_string(),
            });
        }
        let mut merged = Vec::new();
        for (workspace, path) in trees {
            merged.push(self.merge_one(workspace, &path, session)?);
        }
        Ok(merged)
    }

    fn merge_one(
        &self,
        workspace: &WorkspaceConfig,
        tree: &Path,
        session: &str,
    ) -> Result<Merged, WorkspaceError> {
        let failed = |message: String| WorkspaceError::Git {
            workspace: workspace.name.clone(),
            message,
        };
        let uncommitted = TreeGit::of(&workspace.repo, tree)
            .and_then(|tree| tree.changed_paths())
            .map_err(failed)?;
        if !uncommitted.is_empty() {
            return Err(WorkspaceError::Uncommitted {
                session: session.to_string(),
                workspace: workspace.name.clone(),
                paths: uncommitted,
            });
        }
        let branch = workspace.branch_of(session);
        let base = base_branch(workspace, &branch).map_err(failed)?;
        let (checkout, temporary) = match checked_out(&workspace.repo, &base).map_err(failed)? {
            Some(checkout) => (checkout, false),
            None => {
                let temp = self
                    .root
                    .join(&workspace.name)
                    .join(format!(".merge-{session}"));
                git_out(
                    &workspace.repo,
                    "`git worktree add` of the base branch",
                    &["worktree", "add", "--quiet", &temp.to_string_lossy(), &base],
                )
                .map_err(failed)?;
                (temp, true)
            }
        };
        let merged = merge_in(&checkout, &branch, &base, session);
        if temporary {
            let _ = git(
                &workspace.repo,
                &["worktree", "remove", "--force", &checkout.to_string_lossy()],
            );
        }
        let commit = merged.map_err(|e| match e {
            Refused::Error(message) => failed(message),
            Refused::Dirty(paths) => WorkspaceError::BaseDirty {
                checkout: checkout.clone(),
                base: base.clone(),
                paths,
            },
            Refused::Conflict(paths) => WorkspaceError::Conflict {
                branch: branch.clone(),
                base: base.clone(),
                paths,
            },
        })?;
        // Clean, as checked above (with its git dir named): `--force` spares
        // git a look of its own into the tree.
        git_out(
            &workspace.repo,
            "`git worktree remove`",
            &["worktree", "remove", "--force", &tree.to_string_lossy()],
        )
        .map_err(failed)?;
        Ok(Merged {
            workspace: workspace.name.clone(),
            session: session.to_string(),
            branch,
            base,
            commit,
            removed: tree.to_path_buf(),
        })
    }

    /// Removes `session`'s tree of each workspace and deletes its branch,
    /// unmerged.
    pub fn abandon(&self, session: &str) -> Result<Vec<Abandoned>, WorkspaceError> {
        let trees: Vec<_> = self.trees_of(session).collect();
        if trees.is_empty() {
            return Err(WorkspaceError::NoTree {
                session: session.to_string(),
            });
        }
        let mut abandoned = Vec::new();
        for (workspace, path) in trees {
            let failed = |message: String| WorkspaceError::Git {
                workspace: workspace.name.clone(),
                message,
            };
            let branch = workspace.branch_of(session);
            git_out(
                &workspace.repo,
                "`git worktree remove`",
                &["worktree", "remove", "--force", &path.to_string_lossy()],
            )
            .map_err(failed)?;
            git_out(
                &workspace.repo,
                "`git branch -D`",
                &["branch", "-D", &branch],
            )
            .map_err(failed)?;
            abandoned.push(Abandoned {
                workspace: workspace.name.clone(),
                session: session.to_string(),
                branch,
                removed: path,
            });
        }
        Ok(abandoned)
    }
}

/// Why a merge in a checkout did not happen.
enum Refused {
    Dirty(Vec<String>),
    Conflict(Vec<String>),
    Error(String),
}

/// The merge itself, in `checkout` (which has `base` checked out): the
/// merge commit, or why not, with the checkout as it was.
fn merge_in(checkout: &Path, branch: &str, base: &str, session: &str) -> Result<String, Refused> {
    let dirty = git_out(
        checkout,
        "`git status`",
        &["status", "--porcelain", "--untracked-files=no"],
    )
    .map_err(Refused::Error)?;
    let dirty = porcelain_paths(&dirty);
    if !dirty.is_empty() {
        return Err(Refused::Dirty(dirty));
    }
    let message = format!("Merge session {session} (`{branch}`) into `{base}`");
    let ran = git(
        checkout,
        &["merge", "--no-ff", "--no-edit", "-m", &message, branch],
    )
    .map_err(Refused::Error)?;
    if !ran.ok {
        let conflicts = git_out(
            checkout,
            "`git diff`",
            &["diff", "--name-only", "--diff-filter=U"],
        )
        .unwrap_or_default();
        let aborted = git(checkout, &["merge", "--abort"]);
        let paths: Vec<String> = conflicts.lines().map(str::to_string).collect();
        if let Ok(aborted) = aborted
            && !aborted.ok
            && !paths.is_empty()
        {
            return Err(Refused::Error(format!(
                "the merge conflicted in {} and `git merge --abort` failed: {}; run `git merge --abort` in `{}`",
                paths.join(", "),
                aborted.stderr.trim(),
                checkout.display()
            )));
        }
        return Err(match paths.is_empty() {
            true => Refused::Error(format!("`git merge` failed: {}", ran.stderr.trim())),
            false => Refused::Conflict(paths),
        });
    }
    git_out(checkout, "`git rev-parse HEAD`", &["rev-parse", "HEAD"])
        .map(|h| h.trim().to_string())
        .map_err(Refused::Error)
}

/// The worktree of `repo` that has `base` checked out, if one has.
fn checked_out(repo: &Path, base: &str) -> Result<Option<PathBuf>, String> {
    let listing = git_out(
        repo,
        "`git worktree list`",
        &["worktree", "list", "--porcelain"],
    )?;
    let wanted = format!("branch refs/heads/{base}");
    let mut current: Option<PathBuf> = None;
    for line in listing.lines() {
        if let Some(path) = line.strip_prefix("worktree ") {
            current = Some(PathBuf::from(path));
        } else if line == wanted {
            return Ok(current);
        }
    }
    Ok(None)
}
