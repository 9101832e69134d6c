//! Built-in actions judged by the hook chain, as tool calls are.
//!
//! What an agent does besides calling tools (start or end a session, write a
//! handoff, spawn or cancel a job, read a log, search the context index,
//! propose to or search the memory bank) is
//! policy too: each is an action `glovebox:<noun>:<verb>` (`session_start` is
//! `glovebox:session:start`) that the hooks whose triggers cover it judge,
//! before the gateway's ownership rules and the action itself run. A hook
//! that triggers on `*` sees them, so a config's allow-lists must name them
//! (the tool name is `glovebox.<builtin>`: `glovebox.*` allows them all).
//!
//! A refusal is the caller's error, worded as a tool call's, and is counted
//! in the metrics; when the action concerns one of the caller's sessions it
//! is also written to that session's log (`action_refused`, by the caller,
//! naming the hook and its digest). An allowed action writes nothing of its
//! verdict (the action's own events say what it did), and neither does a
//! refusal with no session (`session_start`, or a session that is not the
//! caller's: that one gets "not found" from the action itself).
//!
//! An `ask` refuses the action: only calls wait for a human, so the message
//! says who can change the policy.

use crate::call::new_call_id;
use crate::error::CallError;
use crate::gateway::Gateway;
use crate::hooks::{HookRequest, Verdict};
use crate::manifest::Principal;
use crate::session::EventKind;

/// The tool name and action of built-in `builtin` (`session_start`):
/// `glovebox.session_start` and `glovebox:session:start`.
pub fn builtin_action(builtin: &str) -> (String, String) {
    let action = match builtin.split_once('_') {
        Some((noun, verb)) => format!("glovebox:{noun}:{verb}"),
        None => format!("glovebox:{builtin}"),
    };
    (format!("glovebox.{builtin}"), action)
}

/// One built-in action, as the hooks see it.
#[derive(Clone, Debug)]
pub struct Action<'a> {
    /// The built-in's name (`session_start`, `job_spawn`).
    pub builtin: &'a str,
    /// Its arguments, as JSON text.
    pub input: &'a str,
    /// The role it acts as: the session's it concerns, or the one it starts.
    pub role: &'a str,
    /// The session it concerns (id), or empty when none.
    pub session: &'a str,
    /// That session's tags.
    pub tags: Vec<String>,
    /// That session's project (or the one it starts in), if any.
    pub project: Option<String>,
}

/// Whether `caller` may take `action` by the hook chain: `Err` with the
/// denial (or the refused ask) when a hook says no.
pub async fn judge(
    gateway: &Gateway,
    caller: &Principal,
    action: Action<'_>,
) -> Result<(), CallError> {
    let (tool, name) = builtin_action(action.builtin);
    let request = HookRequest {
        call_id: new_call_id(),
        tool: tool.clone(),
        action: name.clone(),
        role: action.role.to_string(),
        session: action.session.to_string(),
        input: action.input.to_string(),
        estimated_cost: 0.0,
        destructive: false,
        tags: action.tags,
        principal: caller.name.clone(),
        project: action.project,
        http: None,
    };
    let host = gateway.host();
    let outcome = host.evaluate_hooks(&request).await;
    let decided = crate::pipeline::decided(&request.call_id, &outcome.decisions);
    gateway.metrics().decisions(&decided);
    let (refusal, by) = match &outcome.verdict {
        Verdict::Allow => return Ok(()),
        Verdict::Deny(d) => (crate::pipeline::denied(&tool, d), d.clone()),
        Verdict::Ask(d) => {
            let mut d = d.clone();
            d.reason = Some(format!(
                "{}: built-in actions do not wait for approval (only tool calls do); ask an operator to allow `{name}` in hook `{}`",
                d.reason.as_deref().unwrap_or("approval needed"),
                d.hook
            ));
            (crate::pipeline::denied(&tool, &d), d)
        }
    };
    tracing::info!(principal = %caller.name, action = %name, error = %refusal, "a built-in action was refused by a hook");
    // The caller's own session (the adapter resolved it as the caller's,
    // or left it empty): the refusal goes in its log, by the caller.
    if !action.session.is_empty() {
        let sessions = gateway.sessions().clone();
        let session = action.session.to_string();
        let kind = EventKind::ActionRefused {
            action: name.clone(),
            hook: by.hook.clone(),
            reason: refusal.to_string(),
            hook_digest: by.digest.clone(),
        };
        let logged = crate::tasks::ledger_work(move || sessions.append(&session, kind)).await;
        if let Err(e) = logged {
            tracing::warn!(session = %action.session, action = %name, error = %e, "a refused built-in action could not be logged in its session");
        }
    }
    Err(refusal)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builtins_are_named_as_actions() {
        assert_eq!(
            builtin_action("session_start"),
            (
                "glovebox.session_start".to_string(),
                "glovebox:session:start".to_string()
            )
        );
        assert_eq!(builtin_action("job_spawn").1, "glovebox:job:spawn");
        assert_eq!(
            builtin_action("approval_status").1,
            "glovebox:approval:status"
        );
        assert_eq!(
            builtin_action("memory_propose").1,
            "glovebox:memory:propose"
        );
        assert_eq!(builtin_action("memory_search").1, "glovebox:memory:search");
        for builtin in [
            "session_start",
            "job_cancel",
            "context_search",
            "memory_propose",
        ] {
            assert!(crate::hooks::pattern_matches(
                "glovebox:*",
                &builtin_action(builtin).1
            ));
        }
    }
}
