//! The `git` binary, run as a child process: the one way this crate touches
//! a repository (no git is written by hand here). Every command runs with
//! the operator's environment minus what would make git ask a person
//! (`GIT_TERMINAL_PROMPT=0`, no editor) and with Glovebox as its committer,
//! so nothing depends on the user's global `user.name`.
//!
//! A session's tree is written by its agent, so nothing in it is trusted:
//! its `.git` file (which names the tree's git dir) could be rewritten to
//! name a git dir the agent made, whose config runs commands (`core.fsmonitor`).
//! So git never finds a tree's git dir from the tree: [`TreeGit`] names it
//! (`--git-dir`, found from the repository's side when the tree is used) and
//! the tree as `--work-tree`. And every command runs with no hooks
//! (`core.hooksPath=/dev/null`), no fsmonitor and submodules ignored (these
//! `-c` settings also reach any git that git starts).

use std::path::{Path, PathBuf};
use std::process::Command;

/// The name commits made for a session are authored and committed as.
pub const AUTHOR_NAME: &str = "Glovebox";
/// Their e-mail address.
pub const AUTHOR_EMAIL: &str = "glovebox@localhost";

/// What one git command gave: its exit status, stdout and stderr.
pub(super) struct Ran {
    pub(super) ok: bool,
    pub(super) stdout: String,
    pub(super) stderr: String,
}

impl Ran {
    /// Stdout, or the command's failure worded with its stderr.
    pub(super) fn output(self, what: &str) -> Result<String, String> {
        match self.ok {
            true => Ok(self.stdout),
            false => Err(format!("{what} failed: {}", self.stderr.trim())),
        }
    }
}

/// `git` with the settings every command here runs with, from `dir`.
fn command(dir: &Path) -> Command {
    let mut git = Command::new("git");
    git.arg("-C").arg(dir);
    for setting in [
        format!("user.name={AUTHOR_NAME}"),
        format!("user.email={AUTHOR_EMAIL}"),
        "commit.gpgsign=false".to_string(),
        "core.hooksPath=/dev/null".to_string(),
        "core.fsmonitor=false".to_string(),
        "diff.ignoreSubmodules=all".to_string(),
        "submodule.recurse=false".to_string(),
    ] {
        git.arg("-c").arg(setting);
    }
    git.env("GIT_TERMINAL_PROMPT", "0")
        .env("GIT_EDITOR", "true")
        .env("GIT_MERGE_AUTOEDIT", "no")
        .env_remove("GIT_DIR")
        .env_remove("GIT_WORK_TREE")
        .env_remove("GIT_INDEX_FILE")
        .env_remove("GIT_CONFIG_PARAMETERS");
    git
}

fn ran(mut command: Command, args: &[&str]) -> Result<Ran, String> {
    let out = command
        .args(args)
        .output()
        .map_err(|e| format!("cannot run `git` (is it installed and on PATH?): {e}"))?;
    Ok(Ran {
        ok: out.status.success(),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    })
}

/// Runs `git -C dir ARGS` in a directory the operator owns (the repository,
/// its checkout of the base). Only a git that cannot be started is `Err`.
pub(super) fn git(dir: &Path, args: &[&str]) -> Result<Ran, String> {
    ran(command(dir), args)
}

/// `git -C dir ARGS`'s stdout, or why it failed (`what` names the step).
pub(super) fn git_out(dir: &Path, what: &str, args: &[&str]) -> Result<String, String> {
    git(dir, args)?.output(what)
}

/// A session's tree and its git dir, which git is told rather than left to
/// find in the tree (see the module docs).
pub(super) struct TreeGit {
    pub(super) tree: PathBuf,
    git_dir: PathBuf,
}

impl TreeGit {
    /// The tree at `tree`, a worktree of `repo`: its git dir is the one of
    /// the repository's worktrees whose `gitdir` names `tree` (read on the
    /// repository's side, where the agent cannot write).
    pub(super) fn of(repo: &Path, tree: &Path) -> Result<TreeGit, String> {
        let common = git_out(
            repo,
            "`git rev-parse --git-common-dir`",
            &["rev-parse", "--path-format=absolute", "--git-common-dir"],
        )?;
        let worktrees = PathBuf::from(common.trim()).join("worktrees");
        let wanted = tree.join(".git");
        let entries = std::fs::read_dir(&worktrees)
            .map_err(|e| format!("cannot read `{}`: {e}", worktrees.display()))?;
        for entry in entries.flatten() {
            let Ok(named) = std::fs::read_to_string(entry.path().join("gitdir")) else {
                continue;
            };
            if Path::new(named.trim()) == wanted {
                return Ok(TreeGit {
                    tree: tree.to_path_buf(),
                    git_dir: entry.path(),
                });
            }
        }
        Err(format!(
            "`{}` is not a worktree of the repository `{}` (`git worktree list` there shows its worktrees)",
            tree.display(),
            repo.display()
        ))
    }

    /// Runs `git ARGS` on the tree, its git dir named.
    pub(super) fn run(&self, args: &[&str]) -> Result<Ran, String> {
        let mut command = command(&self.tree);
        command
            .arg("--git-dir")
            .arg(&self.git_dir)
            .arg("--work-tree")
            .arg(&self.tree);
        ran(command, args)
    }

    /// Its stdout, or why it failed.
    pub(super) fn out(&self, what: &str, args: &[&str]) -> Result<String, String> {
        self.run(args)?.output(what)
    }

    /// The paths `git status --porcelain` lists: what a commit would take.
    pub(super) fn changed_paths(&self) -> Result<Vec<String>, String> {
        let out = self.out(
            "`git status`",
            &[
                "status",
                "--porcelain",
                "--untracked-files=all",
                "--ignore-submodules=all",
            ],
        )?;
        Ok(porcelain_paths(&out))
    }
}

/// The paths of `git status --porcelain` output.
pub(super) fn porcelain_paths(out: &str) -> Vec<String> {
    out.lines()
        .filter(|l| l.len() > 3)
        .map(|l| l[3..].to_string())
        .collect()
}
