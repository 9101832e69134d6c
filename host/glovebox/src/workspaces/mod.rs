//! A workspace per agent: each session that calls a plugin whose `[[fs]]`
//! grant names a `[[workspace]]` gets its own git worktree of that
//! repository, on a branch of its own, and only that tree is mounted for its
//! calls.
//!
//! Why: a directory grant is the same for every caller, so two agents
//! editing one repository would write into one tree. Here each session's
//! tree is `<data_dir>/workspaces/<workspace>/<session id>`, on branch
//! `<branch_prefix><session id>` started from `base` (which the branch
//! tracks, so the merge knows where it goes), made on the session's first
//! call (`tree.rs`); a handoff or a completed end commits what the session
//! changed there (`commit.rs`); an operator merges the branch into `base`
//! or abandons it, and the tree goes (`merge.rs`, `list.rs`).
//!
//! The decision of which directory a call sees is made here, before the
//! call; the sandbox (`glovebox_runtime::sandbox`) still opens it, as it
//! opens every granted directory. Git is the `git` binary (`git.rs`).

mod commit;
mod git;
mod list;
mod merge;
mod tree;

#[cfg(test)]
mod tests;

use std::path::PathBuf;

use crate::manifest::{HostConfig, WorkspaceConfig};

pub use commit::{Committed, UnitOfWork};
pub use git::{AUTHOR_EMAIL, AUTHOR_NAME};
pub use list::SessionTree;
pub use merge::{Abandoned, Merged, WorkspaceError};

/// The workspaces of one config and where their sessions' trees live.
#[derive(Clone, Debug)]
pub struct Workspaces {
    /// `<data_dir>/workspaces`.
    root: PathBuf,
    configs: Vec<WorkspaceConfig>,
}

impl Workspaces {
    /// The workspaces `config` declares, their trees under its data dir.
    pub fn of(config: &HostConfig) -> Workspaces {
        Workspaces {
            root: config.data_dir.join("workspaces"),
            configs: config.workspaces.clone(),
        }
    }

    /// The workspace named `name`, if the config declares it.
    pub fn config(&self, name: &str) -> Option<&WorkspaceConfig> {
        self.configs.iter().find(|w| w.name == name)
    }

    /// Where session `session`'s tree of workspace `name` is (or would be).
    pub fn tree_path(&self, name: &str, session: &str) -> PathBuf {
        self.root.join(name).join(session)
    }

    /// The declared workspaces whose tree for `session` exists (whatever its
    /// agent made of its `.git`).
    fn trees_of<'a>(
        &'a self,
        session: &'a str,
    ) -> impl Iterator<Item = (&'a WorkspaceConfig, PathBuf)> + 'a {
        self.configs.iter().filter_map(move |w| {
            let path = self.tree_path(&w.name, session);
            path.is_dir().then_some((w, path))
        })
    }
}
