//! The `git` binary, run as a child process: the one way this crate touches
//! a repository (no git is written by hand here). Every command runs with
//! the operator's environment minus what would make git ask a person
//! (`GIT_TERMINAL_PROMPT=0`, no editor) and with Glovebox as its committer,
//! so nothing depends on the user's global `user.name`.

use std::path::Path;
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

/// Runs `git -C dir ARGS`. Only a git that cannot be started is `Err`.
pub(super) fn git(dir: &Path, args: &[&str]) -> Result<Ran, String> {
    let out = Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(["-c", &format!("user.name={AUTHOR_NAME}")])
        .args(["-c", &format!("user.email={AUTHOR_EMAIL}")])
        .args([
            "-c",
            "commit.gpgsign=false",
            "-c",
            "core.hooksPath=/dev/null",
        ])
        .args(args)
        .env("GIT_TERMINAL_PROMPT", "0")
        .env("GIT_EDITOR", "true")
        .env("GIT_MERGE_AUTOEDIT", "no")
        .env_remove("GIT_DIR")
        .env_remove("GIT_WORK_TREE")
        .env_remove("GIT_INDEX_FILE")
        .output()
        .map_err(|e| format!("cannot run `git` (is it installed and on PATH?): {e}"))?;
    Ok(Ran {
        ok: out.status.success(),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    })
}

/// `git -C dir ARGS`'s stdout, or why it failed (`what` names the step).
pub(super) fn git_out(dir: &Path, what: &str, args: &[&str]) -> Result<String, String> {
    git(dir, args)?.output(what)
}

/// The paths `git status --porcelain` lists in `dir`: what a commit would take.
pub(super) fn changed_paths(dir: &Path) -> Result<Vec<String>, String> {
    let out = git_out(
        dir,
        "`git status`",
        &["status", "--porcelain", "--untracked-files=all"],
    )?;
    Ok(out
        .lines()
        .filter(|l| l.len() > 3)
        .map(|l| l[3..].to_string())
        .collect())
}
