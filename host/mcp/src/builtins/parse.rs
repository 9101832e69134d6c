//! A built-in's arguments: parsed into its struct (`tools/`), with the
//! checks the schema cannot say.

use std::time::Duration;

use rmcp::ErrorData;
use rmcp::model::JsonObject;
use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::results::bad_arguments;
use crate::tools::CapsArgs;
use crate::tools::fields::{fields_of, locate};
use crate::tools::sizes::TEXT_MAX;
use glovebox::budget::BudgetCaps;

/// `tool`'s arguments as its argument struct (`tools/`); the error names
/// the tool and the field at fault (`budget.cost`) when it is in one.
///
/// The fields of a group flattened into the struct (`NewSessionArgs`,
/// `HandoffNotes`) are out of the path's sight: for an error serde places
/// at the top, the tool's schema says which field is at fault, and an
/// unknown field's error lists the fields there are.
///
/// Every built-in's arguments come through here, so the limits its schema
/// declares are checked here first, for all of them (`limits.rs`).
pub(super) fn parse<T: DeserializeOwned>(tool: &str, args: JsonObject) -> Result<T, ErrorData> {
    let args = Value::Object(args);
    if let Some(said) = crate::limits::first_exceeded(tool, &args) {
        return Err(bad_arguments(tool, said));
    }
    serde_path_to_error::deserialize(&args).map_err(|e| {
        let field = e.path().to_string();
        let e = e.into_inner().to_string();
        if field != "." {
            return bad_arguments(tool, format!("`{field}`: {e}"));
        }
        if e.starts_with("unknown field")
            && !e.contains("expected")
            && let Some(fields) = fields_of(tool)
        {
            return bad_arguments(tool, format!("{e}, expected one of {fields}"));
        }
        bad_arguments(tool, locate(tool, &args).unwrap_or(e))
    })
}

pub(super) fn text_arg(tool: &str, field: &str, text: &str) -> Result<(), ErrorData> {
    if text.trim().is_empty() {
        return Err(bad_arguments(
            tool,
            format!("`{field}` is empty: say something"),
        ));
    }
    if text.len() > TEXT_MAX {
        return Err(bad_arguments(
            tool,
            format!(
                "`{field}` is {} bytes, over the {TEXT_MAX}-byte limit: shorten it",
                text.len()
            ),
        ));
    }
    Ok(())
}

/// What `session_start` and `session_spawn` are given besides role,
/// project, name and tags: the expected duration and the caps.
pub(super) fn start_extras(
    tool: &str,
    expected_duration: Option<&str>,
    budget: &CapsArgs,
) -> Result<(Option<Duration>, BudgetCaps), ErrorData> {
    let expected = match expected_duration {
        None => None,
        Some(t) => Some(glovebox::manifest::parse_duration(t).map_err(|e| {
            bad_arguments(
                tool,
                format!("`expected_duration`: {e} (write e.g. \"45m\" or \"2h\")"),
            )
        })?),
    };
    let wall = match budget.wall.as_deref() {
        None => None,
        Some(t) => Some(glovebox::manifest::parse_duration(t).map_err(|e| {
            bad_arguments(tool, format!("`budget.wall`: {e} (write e.g. \"30m\")"))
        })?),
    };
    let caps = BudgetCaps::new(budget.cost, budget.calls, wall)
        .map_err(|e| bad_arguments(tool, format!("`budget.cost`: {e}")))?
        .with_tokens(budget.tokens);
    Ok((expected, caps))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tools::*;
    use glovebox::session::HandoffKind;
    use serde_json::json;

    fn refusal<T: DeserializeOwned>(tool: &str, args: Value) -> String {
        match parse::<T>(tool, args.as_object().unwrap().clone()) {
            Ok(_) => panic!("`{tool}` took {args}"),
            Err(e) => e.message.to_string(),
        }
    }

    fn parsed<T: DeserializeOwned>(tool: &str, args: Value) -> T {
        parse(tool, args.as_object().unwrap().clone())
            .unwrap_or_else(|e| panic!("`{tool}` refused {args}: {}", e.message))
    }

    #[test]
    fn bad_arguments_name_the_tool_and_the_field() {
        for (message, want) in [
            (
                refusal::<StartArgs>(SESSION_START, json!({"role": "boss", "project": "p"})),
                "invalid arguments for `session_start`: `role`: unknown role `boss`: expected one of orchestrator, supervisor, workagent, judge",
            ),
            (
                refusal::<StartArgs>(SESSION_START, json!({"role": "judge"})),
                "invalid arguments for `session_start`: missing field `project`",
            ),
            (
                refusal::<StartArgs>(
                    SESSION_START,
                    json!({"role": "judge", "project": "p", "budget": {"cost": "lots"}}),
                ),
                "invalid arguments for `session_start`: `budget.cost`: invalid type: string \"lots\"",
            ),
            (
                refusal::<StartArgs>(
                    SESSION_START,
                    json!({"role": "judge", "project": "p", "completion": {"gates": [{"tool": "a.b", "expected": {}}]}}),
                ),
                "invalid arguments for `session_start`: `completion.gates[0].expected`: unknown field `expected`, expected one of `tool`, `input`, `expect`",
            ),
            (
                refusal::<HandoffArgs>(SESSION_HANDOFF, json!({"kind": "up", "objective": "o"})),
                "invalid arguments for `session_handoff`: `kind`: unknown handoff kind `up`",
            ),
            // The fields of a flattened group are named by the tool's schema.
            (
                refusal::<StartArgs>(
                    SESSION_START,
                    json!({"role": "judge", "project": "p", "tags": "x"}),
                ),
                "invalid arguments for `session_start`: `tags`: \"x\" is not of type \"array\"",
            ),
            (
                refusal::<HandoffArgs>(
                    SESSION_HANDOFF,
                    json!({"kind": "continuation", "objective": "o", "files": "a.txt"}),
                ),
                "invalid arguments for `session_handoff`: `files`: \"a.txt\" is not of type \"array\"",
            ),
            (
                refusal::<SessionSpawnArgs>(
                    SESSION_SPAWN,
                    json!({"role": "workagent", "objective": "o", "name": null, "blockers": ["a", 1]}),
                ),
                "invalid arguments for `session_spawn`: `blockers[1]`: 1 is not of type \"string\"",
            ),
            (
                refusal::<HandoffArgs>(
                    SESSION_HANDOFF,
                    json!({"kind": "continuation", "objective": "o", "filez": []}),
                ),
                "invalid arguments for `session_handoff`: unknown field `filez`, expected one of `blockers`, `current_phase`, `files`, `kind`, `next_steps`, `objective`, `requirements`, `success_criteria`, `to`, `work_completed`",
            ),
            (
                refusal::<EndArgs>(SESSION_END, json!({"outcome": "done"})),
                "invalid arguments for `session_end`: `outcome`: unknown outcome `done`",
            ),
            (
                refusal::<SessionListArgs>(SESSION_LIST, json!({"status": "lost"})),
                "invalid arguments for `session_list`: `status`: unknown status `lost`",
            ),
        ] {
            assert!(message.starts_with(want), "{message}\nwanted: {want}");
        }
    }

    /// An error that quotes what the agent sent is cut, not echoed whole.
    #[test]
    fn a_huge_bad_argument_is_not_echoed_whole() {
        let huge = "x".repeat(100_000);
        for message in [
            refusal::<StartArgs>(
                SESSION_START,
                json!({"role": "judge", "project": "p", "tags": huge}),
            ),
            refusal::<StartArgs>(SESSION_START, json!({"role": huge, "project": "p"})),
        ] {
            assert!(message.len() < 5_000, "{} bytes", message.len());
            assert!(message.ends_with("bytes in all)"), "{}", &message[..200]);
        }
    }

    /// A child's task takes every note a handoff does (docs/operators/children.md says so),
    /// and the new session's name and tags stand beside them.
    #[test]
    fn a_spawn_takes_the_notes_of_a_handoff() {
        let spawn: SessionSpawnArgs = parsed(
            SESSION_SPAWN,
            json!({"role": "workagent", "objective": "o", "name": "kid", "tags": ["t"],
                   "files": ["f"], "work_completed": ["w"], "blockers": ["b"]}),
        );
        assert_eq!(spawn.new.name.as_deref(), Some("kid"));
        assert_eq!(spawn.new.tags, ["t"]);
        assert_eq!(spawn.notes.files, ["f"]);
        assert_eq!(spawn.notes.work_completed, ["w"]);
        assert_eq!(spawn.notes.blockers, ["b"]);
    }

    #[test]
    fn left_out_arguments_take_their_defaults() {
        let end: EndArgs = parsed(SESSION_END, json!({}));
        assert_eq!(end.outcome, glovebox::session::EndOutcome::Completed);
        let end: EndArgs = parsed(SESSION_END, json!({"outcome": "exit"}));
        assert_eq!(end.outcome, glovebox::session::EndOutcome::Exit);
        // A word is read as the config reads it (`-` for `_`), and an
        // optional one may be null.
        let handoff: HandoffArgs = parsed(
            SESSION_HANDOFF,
            json!({"kind": "orchestrator-to-supervisor", "objective": "o"}),
        );
        assert_eq!(handoff.kind, HandoffKind::OrchestratorToSupervisor);
        let list: SessionListArgs = parsed(SESSION_LIST, json!({"status": "paused"}));
        assert_eq!(list.status, Some(glovebox::session::SessionStatus::Paused));
        let start: StartArgs = parsed(SESSION_START, json!({"role": "workagent", "project": "p"}));
        assert!(start.completion.is_empty());
        assert_eq!(start.budget.cost, None);
    }
}
