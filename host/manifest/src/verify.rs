//! `[[verify]]`: a check that runs after each successful call of some tools
//! in a session, so an agent learns at once that its edit broke something.
//!
//! Why: the loop that keeps an agent honest is edit, check, fix. Completion
//! gates check only at `completed`, by which time a broken file has been
//! built upon for an hour. A `[[verify]]` entry names the tools whose calls
//! change something (`files.write`, `files.*`) and a gate, a tool call with
//! an expected result (the same shape as a completion gate). After each
//! successful call of one of those tools in a session, the host runs the
//! gate in that session (hooks, limits and log as any call), and a failure
//! comes back with the call's result, so the agent's next step fixes it.
//! `flag_after` failures in a row raise a blocker flag (rule `verify`).
//!
//! The gate's input may quote the call's input: a string `"{input.path}"`
//! becomes the call's `path` (a whole string, or inside a longer one).

use serde::Deserialize;
use serde_json::Value;

use crate::source::Source;
use crate::{ConfigError, Gate};

/// The default of `flag_after`.
pub const DEFAULT_FLAG_AFTER: u32 = 3;

/// `[[verify]]`.
#[derive(Deserialize)]
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub(crate) struct RawVerify {
    /// What the check is called in results, logs and flags (`json-valid`).
    name: String,
    /// The tools whose successful calls it follows: `plugin.tool`, or
    /// `plugin.*` for every tool of a plugin.
    tools: Vec<String>,
    /// The check: a tool call, its input (strings may quote the call's
    /// input: `"{input.path}"`) and the result it must give.
    gate: Gate,
    /// Failures in a row, in one session, that raise a blocker flag (rule
    /// `verify`); `0` never flags.
    #[cfg_attr(feature = "schemars", schemars(extend("default" = 3)))]
    flag_after: Option<u32>,
}

/// One `[[verify]]` entry, checked.
#[derive(Clone, Debug, PartialEq)]
pub struct VerifyRule {
    pub name: String,
    pub tools: Vec<String>,
    pub gate: Gate,
    pub flag_after: u32,
}

impl VerifyRule {
    /// Whether a call of `tool` (`plugin.tool`) is followed by this check.
    pub fn follows(&self, tool: &str) -> bool {
        self.tools
            .iter()
            .any(|pattern| crate::tool_pattern_matches(pattern, tool))
    }

    /// The gate's input for a call whose input was `input`: each
    /// `{input.FIELD}` in its strings replaced by that field (a string as
    /// it is, anything else as JSON). `Err` names a field the input lacks.
    pub fn gate_input(&self, input: &Value) -> Result<Value, MissingField> {
        fill(&self.gate.input, input)
    }
}

/// A `{input.FIELD}` of a check's gate input that the call's input lacks.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("the call's input has no `{field}`")]
pub struct MissingField {
    /// The field named.
    pub field: String,
}

fn fill(template: &Value, input: &Value) -> Result<Value, MissingField> {
    Ok(match template {
        Value::String(text) => Value::String(fill_text(text, input)?),
        Value::Array(items) => Value::Array(
            items
                .iter()
                .map(|v| fill(v, input))
                .collect::<Result<_, _>>()?,
        ),
        Value::Object(map) => Value::Object(
            map.iter()
                .map(|(k, v)| Ok((k.clone(), fill(v, input)?)))
                .collect::<Result<_, MissingField>>()?,
        ),
        other => other.clone(),
    })
}

fn fill_text(text: &str, input: &Value) -> Result<String, MissingField> {
    let mut out = String::new();
    let mut rest = text;
    while let Some(at) = rest.find("{input.") {
        out.push_str(&rest[..at]);
        let after = &rest[at + "{input.".len()..];
        let Some(end) = after.find('}') else {
            out.push_str(&rest[at..]);
            return Ok(out);
        };
        let field = &after[..end];
        match input.get(field) {
            Some(Value::String(s)) => out.push_str(s),
            Some(other) => out.push_str(&other.to_string()),
            None => {
                return Err(MissingField {
                    field: field.to_string(),
                });
            }
        }
        rest = &after[end + 1..];
    }
    out.push_str(rest);
    Ok(out)
}

/// Checks the `[[verify]]` entries against the configured plugins (`known`
/// says whether a plugin of that name is configured).
pub(crate) fn validate_verify(
    src: &Source,
    raw: &[RawVerify],
    known_plugin: impl Fn(&str) -> bool,
) -> Result<Vec<VerifyRule>, ConfigError> {
    let mut rules: Vec<VerifyRule> = Vec::new();
    for (i, entry) in raw.iter().enumerate() {
        let at = |key: &str| format!("verify[{i}].{key}");
        if !crate::source::is_plain_name(&entry.name) {
            return Err(src.invalid(
                &at("name"),
                format!("`{}` is not a plain name", entry.name),
                "use letters, digits, `-` and `_` (e.g. `json-valid`)",
            ));
        }
        if rules.iter().any(|r| r.name == entry.name) {
            return Err(src.invalid(
                &at("name"),
                format!("check `{}` is declared twice", entry.name),
                "give each `[[verify]]` its own name",
            ));
        }
        if entry.tools.is_empty() {
            return Err(src.invalid(
                &at("tools"),
                "no tool is listed",
                "list the tools whose calls it follows: `tools = [\"files.write\"]` or `[\"files.*\"]`",
            ));
        }
        for (j, pattern) in entry.tools.iter().enumerate() {
            let plugin = pattern.split_once('.').map(|(p, _)| p);
            if !plugin.is_some_and(&known_plugin) || !crate::is_tool_pattern(pattern) {
                return Err(src.invalid(
                    &at(&format!("tools[{j}]")),
                    format!("`{pattern}` names no configured plugin's tool"),
                    "write `plugin.tool` or `plugin.*` for a plugin the config lists",
                ));
            }
        }
        let gate_plugin = entry.gate.tool.split_once('.').map(|(p, _)| p);
        if !gate_plugin.is_some_and(&known_plugin) {
            return Err(src.invalid(
                &at("gate.tool"),
                format!("`{}` names no configured plugin's tool", entry.gate.tool),
                "name the check's tool as `plugin.tool`, of a plugin the config lists",
            ));
        }
        if !entry.gate.input.is_object() {
            return Err(src.invalid(
                &at("gate.input"),
                "the gate's input is not a table",
                "write the input as a table: `input = { path = \"{input.path}\" }`",
            ));
        }
        let rule = VerifyRule {
            name: entry.name.clone(),
            tools: entry.tools.clone(),
            gate: entry.gate.clone(),
            flag_after: entry.flag_after.unwrap_or(DEFAULT_FLAG_AFTER),
        };
        if rule.follows(&rule.gate.tool) {
            return Err(src.invalid(
                &at("gate.tool"),
                format!(
                    "the check's tool `{}` is among the tools it follows, so it would follow itself",
                    rule.gate.tool
                ),
                "use a check tool of another plugin, or narrow `tools`",
            ));
        }
        if rule.flag_after > 100 {
            return Err(src.invalid(
                &at("flag_after"),
                format!("{} failures in a row is more than 100", rule.flag_after),
                "write 1 to 100, or 0 never to flag",
            ));
        }
        rules.push(rule);
    }
    Ok(rules)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn rule(tools: &[&str], input: Value) -> VerifyRule {
        VerifyRule {
            name: "check".into(),
            tools: tools.iter().map(|t| t.to_string()).collect(),
            gate: Gate {
                tool: "gate.json_schema".into(),
                input,
                expect: Default::default(),
            },
            flag_after: 3,
        }
    }

    #[test]
    fn a_check_follows_its_tools_and_quotes_the_calls_input() {
        let r = rule(
            &["files.write", "text.*"],
            json!({"path": "{input.path}", "note": "at {input.line}: {input.path}", "n": 1}),
        );
        assert!(r.follows("files.write") && r.follows("text.upper"));
        assert!(!r.follows("files.read") && !r.follows("texts.upper"));
        assert_eq!(
            r.gate_input(&json!({"path": "/data/a.json", "line": 7}))
                .unwrap(),
            json!({"path": "/data/a.json", "note": "at 7: /data/a.json", "n": 1})
        );
        assert_eq!(
            r.gate_input(&json!({"path": "x"})).unwrap_err().to_string(),
            "the call's input has no `line`"
        );
    }
}
