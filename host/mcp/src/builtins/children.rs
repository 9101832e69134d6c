//! The child-session built-in that is not an operation yet: `session_spawn`
//! (`session_wait` is the registry's `sessions.wait`).

use rmcp::ErrorData;
use rmcp::model::{CallToolResult, JsonObject};

use super::parse::{parse, start_extras};
use crate::connection::Connection;
use crate::results;
use crate::tools::SessionSpawnArgs;
use glovebox::Principal;
use glovebox::session::{Handoff, HandoffKind, SpawnChild};

impl Connection {
    /// `session_spawn`.
    pub(super) async fn session_spawn(
        &self,
        caller: &Principal,
        tool: &str,
        args: JsonObject,
    ) -> Result<CallToolResult, ErrorData> {
        let scope = self.shared().gateway.scope(caller);
        let a: SessionSpawnArgs = parse(tool, args)?;
        let role = a.role;
        let (expected_duration, budget) =
            start_extras(tool, a.new.expected_duration.as_deref(), &a.budget)?;
        let parent = match self.target(caller, tool, a.session).await {
            Ok(key) => key,
            Err(answer) => return Ok(answer),
        };
        // Kind, roles and target are the spawn's to set.
        let mut task = Handoff::new(HandoffKind::Task, role, a.objective);
        task.notes = a.notes;
        let completion = a.completion;
        if let Some(refused) = self.completion_refused(&completion) {
            return Ok(refused);
        }
        let read_only = a.new.read_only;
        let spawn = SpawnChild {
            role,
            name: a.new.name,
            tags: a.new.tags,
            expected_duration,
            budget,
            task,
            completion,
        };
        Ok(results::session(
            scope.spawn_read_only(&parent, spawn, read_only).await,
        ))
    }
}
