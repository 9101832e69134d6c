//! A session's worktree, made on its first call: `git worktree add` of the
//! workspace's repository, on a new branch `<branch_prefix><session>` that
//! starts from (and tracks) the base branch.
//!
//! Two calls of one session at once make it once: the making is serialized
//! per repository within the process (`MAKING`), and a tree that exists is
//! used as it is (what the agent did to it, `.git` included, is its own:
//! git is never pointed at a tree's git dir by the tree, `git.rs`). Between processes, git's own lock on the branch name
//! refuses the second `worktree add`, after which the tree is found made.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, LazyLock, Mutex, PoisonError};

use super::Workspaces;
use super::git::{git, git_out};
use crate::manifest::WorkspaceConfig;

/// One lock per repository, held while a tree of it is looked for and
/// made: `git worktree add --track` writes the repository's one config
/// file, and git refuses a second writer rather than wait (two sessions'
/// first calls at once failed on `.git/config`'s lock). One entry per
/// repository the config names, so the map does not grow with sessions.
static MAKING: LazyLock<Mutex<HashMap<PathBuf, Arc<Mutex<()>>>>> =
    LazyLock::new(|| Mutex::new(HashMap::new()));

/// Whether `session` may name a directory and a branch: a session id as
/// the ledger makes them (letters, digits, `-`, `_`).
pub(super) fn plain_session(session: &str) -> bool {
    !session.is_empty()
        && session.len() <= 128
        && !session.starts_with('-')
        && session
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_'))
}

impl Workspaces {
    /// Session `session`'s worktree of workspace `name`, made if it is not
    /// there yet. `Err` says why it cannot be had.
    pub fn tree_for(&self, name: &str, session: &str) -> Result<PathBuf, String> {
        let Some(workspace) = self.config(name) else {
            return Err(format!(
                "workspace `{name}` is not declared in the host config: declare it as a `[[workspace]]`"
            ));
        };
        if !plain_session(session) {
            return Err(format!(
                "session id `{}` cannot name a worktree",
                session.escape_debug()
            ));
        }
        let path = self.tree_path(name, session);
        // Looked for under the lock too: `git worktree add` makes the
        // directory before it has checked the files out, so a tree seen
        // without the lock may be half made (and its checkout would then
        // overwrite what a call wrote).
        let lock = MAKING
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .entry(workspace.repo.clone())
            .or_default()
            .clone();
        let _making = lock.lock().unwrap_or_else(PoisonError::into_inner);
        if path.is_dir() {
            return Ok(path);
        }
        make(workspace, &path, session).map_err(|why| {
            format!(
                "cannot make the worktree of workspace `{name}` for session {session} at `{}`: {why}",
                path.display()
            )
        })?;
        Ok(path)
    }
}

/// The branch sessions of `workspace` start from: its `base`, or the branch
/// its repository's `HEAD` names now.
pub(super) fn base_of(workspace: &WorkspaceConfig) -> Result<String, String> {
    if let Some(base) = &workspace.base {
        return Ok(base.clone());
    }
    let head = git_out(
        &workspace.repo,
        "`git symbolic-ref HEAD`",
        &["symbolic-ref", "--short", "HEAD"],
    )
    .map_err(|why| {
        format!("{why}; the repository's HEAD names no branch: set `base` in its `[[workspace]]`")
    })?;
    Ok(head.trim().to_string())
}

fn make(workspace: &WorkspaceConfig, path: &Path, session: &str) -> Result<(), String> {
    let parent = path.parent().unwrap_or(path);
    std::fs::create_dir_all(parent)
        .map_err(|e| format!("cannot create `{}`: {e}", parent.display()))?;
    let branch = workspace.branch_of(session);
    let shown = path.to_string_lossy();
    let exists = git(
        &workspace.repo,
        &[
            "rev-parse",
            "--verify",
            "--quiet",
            &format!("refs/heads/{branch}"),
        ],
    )?
    .ok;
    if exists {
        // The branch outlived its tree (removed by hand): the tree comes back on it.
        git_out(
            &workspace.repo,
            "`git worktree add`",
            &["worktree", "add", "--quiet", &shown, &branch],
        )?;
        return Ok(());
    }
    let base = base_of(workspace)?;
    let made = git(
        &workspace.repo,
        &[
            "worktree", "add", "--quiet", "--track", "-b", &branch, &shown, &base,
        ],
    )?;
    if !made.ok {
        // Another process made it meanwhile: use it.
        if path.is_dir() {
            return Ok(());
        }
        return made.output("`git worktree add`").map(|_| ());
    }
    Ok(())
}
