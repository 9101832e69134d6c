//! `glovebox workspace ...`: the sessions' git worktrees of the config's
//! `[[workspace]]`s. Each command runs the registry's operation
//! (`workspaces.list`, `workspaces.merge`, `workspaces.abandon`: on the
//! running server when one holds the data dir) and prints what it gave
//! back.

use std::path::Path;
use std::process::ExitCode;

use anyhow::Result;
use clap::Subcommand;
use glovebox::operations::{
    AbandonWorkspace, AbandonWorkspaceArgs, ListWorkspaces, ListWorkspacesArgs, MergeWorkspace,
    MergeWorkspaceArgs,
};

use crate::call::operation_refused;
use crate::operate::run;
use crate::output::print_json;

#[derive(Subcommand, serde::Serialize, serde::Deserialize)]
pub enum WorkspaceCommand {
    /// The sessions' worktrees: workspace, session, branch, path, and
    /// whether each holds work.
    List {
        #[arg(long)]
        json: bool,
    },
    /// Merge a session's branch into its base branch (`git merge --no-ff`)
    /// and remove its worktree; refused, with the conflicting paths and
    /// nothing changed, on a conflict.
    Merge {
        /// The session (id or name).
        session: String,
    },
    /// Remove a session's worktree and delete its branch, unmerged.
    Abandon {
        /// The session (id or name).
        session: String,
    },
}

/// `glovebox workspace ...`.
pub async fn run_workspace(config: &Path, command: WorkspaceCommand) -> Result<ExitCode> {
    match command {
        WorkspaceCommand::List { json } => {
            let trees = match run::<ListWorkspaces>(config, ListWorkspacesArgs {}).await? {
                Ok(trees) => trees,
                Err(e) => return Ok(operation_refused(&e)),
            };
            if json {
                print_json(&trees)?;
            } else if trees.is_empty() {
                out!("no session worktrees");
            } else {
                for t in &trees {
                    let work = match (t.uncommitted, t.commits_ahead) {
                        (0, 0) => "unchanged".to_string(),
                        (0, n) => format!("{n} commit(s) ahead of {}", t.base),
                        (u, n) => {
                            format!("{u} path(s) uncommitted, {n} commit(s) ahead of {}", t.base)
                        }
                    };
                    out!(
                        "{:12}  {:28}  {:36}  {}  {}",
                        t.workspace,
                        t.session,
                        t.branch,
                        t.path.display(),
                        work
                    );
                }
            }
            Ok(ExitCode::SUCCESS)
        }
        WorkspaceCommand::Merge { session } => {
            match run::<MergeWorkspace>(config, MergeWorkspaceArgs { session }).await? {
                Ok(merged) => print_json(&merged).map(|_| ExitCode::SUCCESS),
                Err(e) => Ok(operation_refused(&e)),
            }
        }
        WorkspaceCommand::Abandon { session } => {
            match run::<AbandonWorkspace>(config, AbandonWorkspaceArgs { session }).await? {
                Ok(abandoned) => print_json(&abandoned).map(|_| ExitCode::SUCCESS),
                Err(e) => Ok(operation_refused(&e)),
            }
        }
    }
}

/// A handoff written at the command line (which records it in the ledger
/// directly, not through the gateway's scope) is a unit of work too: what
/// session `id` changed in its worktrees is committed, as the scope's
/// handoff does. A failure is said on stderr; the handoff stands.
pub fn commit_handoff(config: &Path, id: &str, objective: &str) {
    let config = match crate::reach::config(config) {
        Ok(config) if !config.workspaces.is_empty() => config,
        Ok(_) => return,
        Err(e) => {
            err!("warning: the handoff is recorded, but its worktrees were not committed: {e:#}");
            return;
        }
    };
    let workspaces = glovebox::workspaces::Workspaces::of(&config);
    for committed in
        workspaces.commit_unit(id, glovebox::workspaces::UnitOfWork::Handoff, objective)
    {
        if let Some(why) = committed.error {
            err!(
                "warning: the handoff is recorded, but workspace `{}` was not committed: {why}",
                committed.workspace
            );
        }
    }
}
