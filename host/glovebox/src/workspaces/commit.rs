//! A unit of work committed: at a handoff or a completed end, everything
//! the session changed in each of its worktrees (`git add -A`) is committed
//! on its branch, with the session id and the objective in the message,
//! authored by Glovebox. A tree with nothing to commit is left as it is.
//!
//! A commit that fails does not undo what was recorded (the handoff or the
//! end is in the log before this runs): it is logged here and said in what
//! is returned, and the changes stay in the tree for the next unit or the
//! operator.

use serde::Serialize;

use super::Workspaces;
use super::git::TreeGit;

/// What a unit of work is, for the commit message.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum UnitOfWork {
    /// The session handed off.
    Handoff,
    /// The session ended `completed`.
    Completed,
}

impl UnitOfWork {
    fn as_str(self) -> &'static str {
        match self {
            UnitOfWork::Handoff => "handoff",
            UnitOfWork::Completed => "completed",
        }
    }
}

/// What committing one of a session's trees did.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Committed {
    pub workspace: String,
    pub branch: String,
    /// The new commit, or `None` when there was nothing to commit.
    pub commit: Option<String>,
    /// Why it could not commit, when it could not.
    pub error: Option<String>,
}

impl Workspaces {
    /// Commits what `session` changed in each of its trees, for `unit`
    /// whose objective is `objective`.
    pub fn commit_unit(&self, session: &str, unit: UnitOfWork, objective: &str) -> Vec<Committed> {
        self.trees_of(session)
            .map(|(workspace, path)| {
                let branch = workspace.branch_of(session);
                let committed = TreeGit::of(&workspace.repo, &path)
                    .and_then(|tree| commit_tree(&tree, session, unit, objective));
                if let Err(why) = &committed {
                    tracing::error!(
                        %session,
                        workspace = %workspace.name,
                        error = %why,
                        "the session's worktree could not be committed; its changes stay in the tree"
                    );
                }
                let (commit, error) = match committed {
                    Ok(commit) => (commit, None),
                    Err(why) => (None, Some(why)),
                };
                Committed {
                    workspace: workspace.name.clone(),
                    branch,
                    commit,
                    error,
                }
            })
            .collect()
    }
}

/// The commit message of a unit of work: its objective first, then the session.
pub fn message(session: &str, unit: UnitOfWork, objective: &str) -> String {
    let objective = objective.trim();
    let subject = match objective.is_empty() {
        true => "(no objective stated)",
        false => objective,
    };
    format!(
        "{subject}\n\nGlovebox-Session: {session}\nGlovebox-Unit: {}\n",
        unit.as_str()
    )
}

fn commit_tree(
    tree: &TreeGit,
    session: &str,
    unit: UnitOfWork,
    objective: &str,
) -> Result<Option<String>, String> {
    if tree.changed_paths()?.is_empty() {
        return Ok(None);
    }
    tree.out("`git add -A`", &["add", "-A"])?;
    let text = message(session, unit, objective);
    tree.out(
        "`git commit`",
        &["commit", "--quiet", "--no-verify", "-m", &text],
    )?;
    let head = tree.out("`git rev-parse HEAD`", &["rev-parse", "HEAD"])?;
    Ok(Some(head.trim().to_string()))
}
