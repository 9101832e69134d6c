//! Which directory a workspace grant is for one call: the calling
//! session's own worktree (`crate::workspaces`), made on its first call. A
//! call outside any session has no worktree, and is refused.

use crate::error::CallError;
use crate::manifest::{FsGrant, GrantCaller};
use crate::plugin::LoadedPlugin;
use crate::workspaces::Workspaces;

use super::Host;

impl Host {
    /// The directories `plugin`'s workspace grants are for a call of tool
    /// `name` by `caller`: each the session's worktree, at the grant's
    /// guest path with its access. None when the plugin names no workspace
    /// (or none whose `only` is for the caller).
    pub(super) async fn workspace_dirs(
        &self,
        plugin: &LoadedPlugin,
        name: &str,
        caller: &GrantCaller,
    ) -> Result<Vec<FsGrant>, CallError> {
        let grants: Vec<_> = plugin
            .manifest
            .workspaces
            .iter()
            .filter(|g| g.only.admits(caller))
            .cloned()
            .collect();
        if grants.is_empty() {
            return Ok(Vec::new());
        }
        let Some(session) = caller.session.as_deref() else {
            let names: Vec<String> = grants
                .iter()
                .map(|g| format!("`{}`", g.workspace))
                .collect();
            return Err(CallError::NotOffered {
                tool: name.to_string(),
                reason: format!(
                    "its plugin works in a session's own worktree of workspace {}, and this call is in no session: call it in a session (`glovebox call --session`, or `session_start` first)",
                    names.join(", ")
                ),
            });
        };
        let workspaces = Workspaces::of(&self.config);
        let session = session.to_string();
        let made = tokio::task::spawn_blocking(move || {
            grants
                .iter()
                .map(|grant| {
                    let host = workspaces.tree_for(&grant.workspace, &session)?;
                    Ok(FsGrant {
                        host,
                        guest: grant.guest.clone(),
                        access: grant.access,
                    })
                })
                .collect::<Result<Vec<_>, String>>()
        })
        .await;
        let internal = |message: String| CallError::Internal {
            tool: name.to_string(),
            message,
        };
        match made {
            Ok(Ok(dirs)) => Ok(dirs),
            Ok(Err(why)) => Err(internal(why)),
            Err(e) => Err(internal(format!(
                "making the session's worktree failed: {e}"
            ))),
        }
    }
}
