//! Checking the action of a schedule or trigger (the keys both share):
//! which action, the session it works in, the keys that action takes and
//! no others, and whom it tells.

use crate::notify::NotifyTarget;
use crate::source::Source;
use crate::{ConfigError, UnknownWord};

use super::alert_if::AlertIf;
use super::names::check_name;
use super::raw::RawRun;
use super::{Action, HandoffNote, Run, SessionTarget};
use crate::role::Role;

pub(super) fn validate_run(
    src: &Source,
    at: &dyn Fn(&str) -> String,
    raw: &RawRun<'_>,
    targets: &[NotifyTarget],
) -> Result<Run, ConfigError> {
    let action = validate_action(src, at, raw)?;
    let alert_if = validate_alert_if(src, at, raw)?;
    let notify = validate_notify_names(src, at, raw, targets)?;
    if alert_if.is_some() && notify.is_empty() {
        return Err(src.invalid(
            &at("alert_if"),
            "an alert with no one to tell",
            "add `notify = [\"TARGET\"]`, naming `[[notify]]` targets",
        ));
    }
    Ok(Run {
        action,
        alert_if,
        notify,
    })
}

/// `action`, and the keys that action takes: none of another action's.
fn validate_action(
    src: &Source,
    at: &dyn Fn(&str) -> String,
    raw: &RawRun<'_>,
) -> Result<Action, ConfigError> {
    let only = |key: &str, present: bool, action: &str| only(src, at, key, present, action);
    let handoff_keys =
        raw.objective.is_some() || raw.success_criteria.is_some() || raw.next_steps.is_some();
    let call_keys = raw.tool.is_some() || raw.input.is_some() || raw.alert_if.is_some();
    match raw.action {
        Some("start") => {
            only("tool", call_keys, "start")?;
            start_action(src, at, raw)
        }
        Some("call") => {
            only("objective", handoff_keys, "call")?;
            call_action(src, at, raw)
        }
        Some("sweep") => {
            only("tool", call_keys, "sweep")?;
            only("objective", handoff_keys, "sweep")?;
            for (key, present) in [
                ("session", raw.session.is_some()),
                ("project", raw.project.is_some()),
                ("role", raw.role.is_some()),
            ] {
                only(key, present, "sweep")?;
            }
            Ok(Action::Sweep)
        }
        other => Err(src.invalid(
            &at("action"),
            match other {
                None => "the entry has no `action`".to_string(),
                Some(a) => format!("`{a}` is not an action"),
            },
            "write `action = \"start\"` (start or resume a session with a handoff), `\"call\"` (run a tool in a session) or `\"sweep\"` (a pass of the stuck-agent detector)",
        )),
    }
}

/// Refuses `key` when it is `present` in an entry of `action = "<action>"`,
/// which does not read it.
fn only(
    src: &Source,
    at: &dyn Fn(&str) -> String,
    key: &str,
    present: bool,
    action: &str,
) -> Result<(), ConfigError> {
    if present {
        Err(src.invalid(
            &at(key),
            format!("`{key}` is not a setting of `action = \"{action}\"`"),
            "remove it, or pick the action it belongs to (`start`: objective, success_criteria, next_steps; `call`: tool, input, alert_if)",
        ))
    } else {
        Ok(())
    }
}

/// `action = "start"`: a handoff with an objective, into the session.
fn start_action(
    src: &Source,
    at: &dyn Fn(&str) -> String,
    raw: &RawRun<'_>,
) -> Result<Action, ConfigError> {
    let objective = raw
        .objective
        .filter(|o| !o.trim().is_empty())
        .map(str::to_string)
        .ok_or_else(|| {
            src.invalid(
                &at("objective"),
                "`action = \"start\"` posts a handoff, and it has no objective",
                "write `objective = \"...\"`: what the agent that picks the session up is to do",
            )
        })?;
    Ok(Action::Start {
        session: session_target(src, at, raw, "start")?,
        handoff: HandoffNote {
            objective,
            success_criteria: raw.success_criteria.unwrap_or_default().to_vec(),
            next_steps: raw.next_steps.unwrap_or_default().to_vec(),
        },
    })
}

/// `action = "call"`: a tool and its input (a table), in the session.
fn call_action(
    src: &Source,
    at: &dyn Fn(&str) -> String,
    raw: &RawRun<'_>,
) -> Result<Action, ConfigError> {
    let tool = raw
        .tool
        .filter(|t| !t.trim().is_empty())
        .map(str::to_string)
        .ok_or_else(|| {
            src.invalid(
                &at("tool"),
                "`action = \"call\"` names no tool",
                "write `tool = \"plugin.tool\"` (a tool of a `[[plugin]]`)",
            )
        })?;
    let input = match raw.input {
        None => serde_json::json!({}),
        Some(value @ toml::Value::Table(_)) => serde_json::to_value(value).map_err(|e| {
            src.invalid(
                &at("input"),
                format!("the input does not convert to JSON: {e}"),
                "write the tool's input as a TOML table",
            )
        })?,
        Some(_) => {
            return Err(src.invalid(
                &at("input"),
                "the input is not a table",
                "write the tool's input as a table, e.g. `input = { days = 30 }`",
            ));
        }
    };
    Ok(Action::Call {
        session: session_target(src, at, raw, "call")?,
        tool,
        input,
    })
}

/// The session a `start` or `call` works in: its name, its project and its
/// role (default `workagent`).
fn session_target(
    src: &Source,
    at: &dyn Fn(&str) -> String,
    raw: &RawRun<'_>,
    action: &str,
) -> Result<SessionTarget, ConfigError> {
    let name = check_name(raw.session).map_err(|p| {
        src.invalid(
            &at("session"),
            format!("{p}: `action = \"{action}\"` works in a named session"),
            "name the session, e.g. `session = \"billing-watch\"` (1 to 64 letters, digits, `-`, `_`, `.`); it is started when none of that name is live",
        )
    })?;
    let project = raw
        .project
        .filter(|p| !p.trim().is_empty())
        .map(str::to_string)
        .ok_or_else(|| {
            src.invalid(
                &at("project"),
                "the session's project is missing",
                "write `project = \"...\"`: the project the session is started in (its only one)",
            )
        })?;
    let role = match raw.role {
        None => Role::Workagent,
        Some(r) => r.parse().map_err(|e: UnknownWord| {
            src.invalid(
                &at("role"),
                e,
                "the role its session is started as (default `workagent`)",
            )
        })?,
    };
    Ok(SessionTarget {
        name,
        project,
        role,
    })
}

/// `alert_if`, parsed.
fn validate_alert_if(
    src: &Source,
    at: &dyn Fn(&str) -> String,
    raw: &RawRun<'_>,
) -> Result<Option<AlertIf>, ConfigError> {
    Ok(match raw.alert_if {
        None => None,
        Some(text) => Some(AlertIf::parse(text).map_err(|p| {
            src.invalid(
                &at("alert_if"),
                p,
                "write `<field> <comparison> <number>` over the tool's JSON output, e.g. `alert_if = \"count > 0\"` (comparisons: > >= < <= == !=)",
            )
        })?),
    })
}

/// `notify`: each name a declared `[[notify]]` target.
fn validate_notify_names(
    src: &Source,
    at: &dyn Fn(&str) -> String,
    raw: &RawRun<'_>,
    targets: &[NotifyTarget],
) -> Result<Vec<String>, ConfigError> {
    let notify = raw.notify.unwrap_or_default().to_vec();
    for name in &notify {
        if !targets.iter().any(|t| &t.name == name) {
            return Err(src.invalid(
                &at("notify"),
                format!("`{name}` is not a `[[notify]]` target"),
                format!(
                    "name a declared target ({}), or declare it with `[[notify]] name = \"{name}\"`",
                    if targets.is_empty() {
                        "there are none".to_string()
                    } else {
                        targets
                            .iter()
                            .map(|t| format!("`{}`", t.name))
                            .collect::<Vec<_>>()
                            .join(", ")
                    }
                ),
            ));
        }
    }
    Ok(notify)
}
