//! The hook chain's verdict on a built-in, before it runs.

use rmcp::model::JsonObject;
use serde_json::Value;

use crate::connection::{Connection, default_role};
use crate::tools;
use glovebox::{CallError, Principal};

impl Connection {
    /// The hook chain's verdict on built-in `name` with `args` (see
    /// `glovebox::actions`): it acts as the session it names (or the bound
    /// one), or, for `session_start`, as the role it asks for.
    pub(crate) async fn judge_builtin(
        &self,
        caller: &Principal,
        name: &str,
        args: &JsonObject,
    ) -> Result<(), CallError> {
        let gateway = &self.shared().gateway;
        let input = serde_json::to_string(args).unwrap_or_default();
        let text = |key: &str| args.get(key).and_then(Value::as_str).map(str::to_string);
        let (role, session, tags, project) = if name == tools::SESSION_START {
            let tags = args
                .get("tags")
                .and_then(Value::as_array)
                .map(|t| {
                    t.iter()
                        .filter_map(|t| t.as_str().map(str::to_string))
                        .collect()
                })
                .unwrap_or_default();
            let role = text("role").unwrap_or_else(|| default_role(caller).to_string());
            (role, String::new(), tags, text("project"))
        } else {
            let key = match text("session") {
                Some(key) => Some(key),
                None => self.bound().await,
            };
            let state = match key {
                // Another's or no such session: the action itself says "not found".
                Some(key) => gateway.scope(caller).session(&key).await.ok(),
                None => None,
            };
            match state {
                Some(s) => {
                    let project = (!s.header.project.is_empty()).then_some(s.header.project);
                    (
                        s.header.role.to_string(),
                        s.header.id,
                        s.header.tags,
                        project,
                    )
                }
                None => (
                    default_role(caller).to_string(),
                    String::new(),
                    Vec::new(),
                    None,
                ),
            }
        };
        let action = glovebox::actions::Action {
            builtin: name,
            input: &input,
            role: &role,
            session: &session,
            tags,
            project,
        };
        glovebox::actions::judge(gateway, caller, action).await
    }
}
