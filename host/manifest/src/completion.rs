//! Completion conditions: what must hold before a session may end as
//! `completed`, written down before the work starts.
//!
//! A condition has gates (tool calls that must succeed with an expected
//! result: a test-runner, a lint, a schema check) and may require a judge (a
//! `judge` session of another principal that passes the worker's completion
//! handoff). A session declares its own at start, its parent declares one for
//! a child it spawns, and the operator requires more per role or project in
//! `[[completion]]`; the session carries the sum of all of them, recorded in
//! its first event, so its log says what "done" meant.
//!
//! The rules themselves (run every gate again at each `completed`, require a
//! passing verdict on the latest handoff) are the ledger's and the gateway's;
//! this file owns the words and their validation, so the config and the
//! start of a session refuse a condition the same way.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::ConfigError;
use super::role::Role;
use super::source::Source;

/// Gates one condition may hold: each runs at every `completed`, so a long
/// list makes every end slow.
pub const MAX_GATES: usize = 16;
/// The largest gate input (JSON).
pub const MAX_GATE_INPUT_BYTES: usize = 64 << 10;

/// A tool call that must succeed, with the result it must give.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct Gate {
    /// `plugin.tool`.
    #[cfg_attr(feature = "schemars", schemars(length(max = 256)))]
    pub tool: String,
    /// The call's input; `{}` when left out.
    // Any JSON parses, so that the check's own error (`gates[i].input must
    // be a JSON object`) is the one given, from the config as from MCP; the
    // schema says what is right.
    #[serde(default = "empty_object")]
    #[cfg_attr(feature = "schemars", schemars(with = "Map<String, Value>"))]
    pub input: Value,
    /// Fields the tool's JSON result must have, each with exactly this
    /// value (nested objects compare the same way, key by key); empty: the
    /// call only has to succeed.
    #[serde(default, skip_serializing_if = "Map::is_empty")]
    pub expect: Map<String, Value>,
}

fn empty_object() -> Value {
    Value::Object(Map::new())
}

/// Why a gate's result is not what it expects: the first field that
/// differs (as a path like `/report/failed`), and how.
#[derive(thiserror::Error, Clone, Debug, PartialEq)]
pub enum GateMismatch {
    /// The result lacks an expected field.
    #[error("the result has no `{path}` (expected {want})")]
    Missing { path: String, want: Value },
    /// The field holds another value.
    #[error("`{path}` is {have}, expected {want}")]
    Differs {
        path: String,
        have: Value,
        want: Value,
    },
}

impl Gate {
    /// Whether `output` (the tool's JSON result) is what the gate expects;
    /// the error says the first field that differs, and how.
    pub fn judge_output(&self, output: &Value) -> Result<(), GateMismatch> {
        subset("", &self.expect, output)
    }
}

fn subset(at: &str, expect: &Map<String, Value>, got: &Value) -> Result<(), GateMismatch> {
    for (key, want) in expect {
        let path = format!("{at}/{key}");
        let Some(have) = got.get(key) else {
            return Err(GateMismatch::Missing {
                path,
                want: want.clone(),
            });
        };
        match (want, have) {
            (Value::Object(want), Value::Object(_)) => subset(&path, want, have)?,
            _ if want == have => {}
            _ => {
                return Err(GateMismatch::Differs {
                    path,
                    have: have.clone(),
                    want: want.clone(),
                });
            }
        }
    }
    Ok(())
}

/// Why a completion condition is refused (by the config, or at the start of
/// a session): each names the gate (`gates[i]`) and the fix.
#[derive(thiserror::Error, Clone, Debug, PartialEq)]
#[non_exhaustive]
pub enum CompletionError {
    /// More than [`MAX_GATES`] gates.
    #[error(
        "{count} gates is more than the {MAX_GATES} a completion condition may hold: merge checks into fewer gates"
    )]
    TooManyGates { count: usize },
    /// A gate names a tool the host does not have.
    #[error(
        "gates[{index}]: `{tool}` is not a tool of this host, so the gate could never run: name a tool as `plugin.tool` (`glovebox plugin list` shows them)"
    )]
    UnknownTool { index: usize, tool: String },
    /// A gate's input is not a JSON object.
    #[error("gates[{index}].input must be a JSON object (the tool's input), got {input}")]
    InputNotObject { index: usize, input: Value },
    /// A gate's input is larger than [`MAX_GATE_INPUT_BYTES`].
    #[error(
        "gates[{index}].input is {size} bytes, more than the {MAX_GATE_INPUT_BYTES} a gate's input may be: point the tool at a file instead"
    )]
    InputTooLarge { index: usize, size: usize },
}

/// What must hold before a session ends as `completed`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct Completion {
    /// Run in order, every time; all must pass.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[cfg_attr(feature = "schemars", schemars(length(max = MAX_GATES)))]
    pub gates: Vec<Gate>,
    /// A `judge` session of another principal must pass the session's latest
    /// handoff.
    // The schema's default, which `skip_serializing_if` would hide.
    #[serde(default, skip_serializing_if = "is_false")]
    #[cfg_attr(feature = "schemars", schemars(extend("default" = false)))]
    pub judge: bool,
}

fn is_false(b: &bool) -> bool {
    !*b
}

impl Completion {
    pub fn is_empty(&self) -> bool {
        self.gates.is_empty() && !self.judge
    }

    /// This condition and `more`: every gate of both (once each, this
    /// one's first), and a judge if either asks for one.
    pub fn and(mut self, more: &Completion) -> Completion {
        for gate in &more.gates {
            if !self.gates.contains(gate) {
                self.gates.push(gate.clone());
            }
        }
        self.judge |= more.judge;
        self
    }

    /// Checks the condition: at most [`MAX_GATES`] gates, each naming a tool
    /// `known` accepts, with an object input of at most
    /// [`MAX_GATE_INPUT_BYTES`]. The error names the gate (`gates[i]`) and
    /// the fix.
    pub fn check(&self, known: impl Fn(&str) -> bool) -> Result<(), CompletionError> {
        if self.gates.len() > MAX_GATES {
            return Err(CompletionError::TooManyGates {
                count: self.gates.len(),
            });
        }
        for (index, gate) in self.gates.iter().enumerate() {
            if !known(&gate.tool) {
                return Err(CompletionError::UnknownTool {
                    index,
                    tool: gate.tool.clone(),
                });
            }
            if !gate.input.is_object() {
                return Err(CompletionError::InputNotObject {
                    index,
                    input: gate.input.clone(),
                });
            }
            let size = gate.input.to_string().len();
            if size > MAX_GATE_INPUT_BYTES {
                return Err(CompletionError::InputTooLarge { index, size });
            }
        }
        Ok(())
    }
}

/// One `[[completion]]` entry: the condition the operator requires of every
/// session of a role and/or project.
#[derive(Clone, Debug, PartialEq)]
pub struct CompletionRule {
    /// Sessions of this role; every role when absent.
    pub role: Option<Role>,
    /// Sessions of this project; every project when absent.
    pub project: Option<String>,
    pub completion: Completion,
}

/// What the operator requires of a session of `role` in `project`: every
/// matching rule's condition together.
pub fn required(rules: &[CompletionRule], role: Role, project: &str) -> Completion {
    rules
        .iter()
        .filter(|r| r.role.is_none_or(|want| want == role))
        .filter(|r| r.project.as_deref().is_none_or(|want| want == project))
        .fold(Completion::default(), |acc, r| acc.and(&r.completion))
}

/// `[[completion]]`: a completion condition the operator requires
/// ([`operators/completion.md`](operators/completion.md)).
#[derive(Deserialize)]
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub(super) struct RawCompletion {
    /// The sessions it applies to, by role.
    #[cfg_attr(feature = "schemars", schemars(extend("x-default" = "every role")))]
    role: Option<String>,
    /// The sessions it applies to, by project.
    #[cfg_attr(feature = "schemars", schemars(extend("x-default" = "every project")))]
    project: Option<String>,
    /// `{ tool, input, expect }`: tool calls run at every `session_end completed`.
    #[serde(default)]
    #[cfg_attr(feature = "schemars", schemars(extend("default" = [])))]
    #[cfg_attr(feature = "schemars", schemars(extend("x-one-row" = true)))]
    gates: Vec<Gate>,
    /// A judge of another principal must pass the latest handoff.
    #[serde(default)]
    #[cfg_attr(feature = "schemars", schemars(extend("default" = false)))]
    judge: bool,
}

/// `[[completion]]`: each entry's role is a role, its condition is not empty
/// and every gate names a tool of a listed plugin (`known`).
pub(super) fn validate_completion(
    src: &Source,
    raw: &[RawCompletion],
    known: impl Fn(&str) -> bool,
) -> Result<Vec<CompletionRule>, ConfigError> {
    let mut rules = Vec::with_capacity(raw.len());
    for (i, entry) in raw.iter().enumerate() {
        let at = |key: &str| format!("completion[{i}].{key}");
        let role = match &entry.role {
            None => None,
            Some(role) => Some(role.parse::<Role>().map_err(|e| {
                src.invalid(
                    &at("role"),
                    e,
                    "leave `role` out to require the condition of every role",
                )
            })?),
        };
        let completion = Completion {
            gates: entry.gates.clone(),
            judge: entry.judge,
        };
        if completion.is_empty() {
            return Err(src.invalid(
                &at("gates"),
                "the entry requires nothing: no gates and `judge = false`",
                "add `gates = [{ tool = \"plugin.tool\", expect = { ... } }]` or `judge = true`, or remove the entry",
            ));
        }
        completion.check(&known).map_err(|e| {
            src.invalid(
                &at("gates"),
                e,
                "see `[[completion]]` in docs/operators/completion.md",
            )
        })?;
        rules.push(CompletionRule {
            role,
            project: entry.project.clone(),
            completion,
        });
    }
    Ok(rules)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn gate(expect: Value) -> Gate {
        Gate {
            tool: "gate.report".into(),
            input: json!({}),
            expect: expect.as_object().cloned().unwrap_or_default(),
        }
    }

    #[test]
    fn a_gate_expects_a_subset_of_the_result() {
        let g = gate(json!({"passed": true, "summary": {"failed": 0}}));
        g.judge_output(&json!({"passed": true, "summary": {"failed": 0, "ok": 3}, "x": 1}))
            .unwrap();
        let err = g
            .judge_output(&json!({"passed": false, "summary": {"failed": 0}}))
            .unwrap_err();
        assert_eq!(err.to_string(), "`/passed` is false, expected true");
        let err = g
            .judge_output(&json!({"passed": true, "summary": {"failed": 2}}))
            .unwrap_err();
        assert_eq!(err.to_string(), "`/summary/failed` is 2, expected 0");
        let err = g
            .judge_output(&json!({"passed": true}))
            .unwrap_err()
            .to_string();
        assert!(err.contains("no `/summary`"), "{err}");
        gate(json!({})).judge_output(&json!("anything")).unwrap();
    }

    #[test]
    fn conditions_add_up_without_repeating_a_gate() {
        let a = Completion {
            gates: vec![gate(json!({"passed": true}))],
            judge: false,
        };
        let b = Completion {
            gates: vec![gate(json!({"passed": true})), gate(json!({"n": 1}))],
            judge: true,
        };
        let both = a.clone().and(&b);
        assert_eq!(both.gates.len(), 2);
        assert!(both.judge);
        let rules = vec![
            CompletionRule {
                role: Some(Role::Workagent),
                project: None,
                completion: a.clone(),
            },
            CompletionRule {
                role: None,
                project: Some("demo".into()),
                completion: b,
            },
        ];
        assert_eq!(required(&rules, Role::Workagent, "other"), a);
        assert_eq!(required(&rules, Role::Workagent, "demo"), both);
        assert!(required(&rules, Role::Supervisor, "other").is_empty());
    }

    #[test]
    fn a_gate_that_could_never_run_is_refused() {
        let c = Completion {
            gates: vec![gate(json!({}))],
            judge: false,
        };
        let err = c.check(|_| false).unwrap_err().to_string();
        assert!(
            err.starts_with("gates[0]: `gate.report` is not a tool"),
            "{err}"
        );
        c.check(|t| t == "gate.report").unwrap();
        let mut bad = c.clone();
        bad.gates[0].input = json!([1]);
        assert!(
            bad.check(|_| true)
                .unwrap_err()
                .to_string()
                .contains("must be a JSON object")
        );
        let many = Completion {
            gates: vec![gate(json!({})); MAX_GATES + 1],
            judge: false,
        };
        assert!(
            many.check(|_| true)
                .unwrap_err()
                .to_string()
                .contains("more than the 16")
        );
    }
}
