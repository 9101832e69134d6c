//! Case files: a plugin's tests as data, for authors who want no code
//! (`glovebox plugin test MANIFEST --cases FILE`), run on a [`Harness`].
//!
//! A case file is TOML (or JSON, when its name ends in `.json`, the same
//! keys):
//!
//! ```toml
//! role = "workagent"          # optional: calls in a session of this role
//!
//! [[hook]]                    # optional: hooks in front, in order
//! component = "hooks/my_hook.wasm"   # from the case file's directory
//! settings = { roles = { workagent = ["files.read"] } }
//!
//! [[case]]
//! name = "reads a granted file"      # optional: `case N`
//! tool = "files.read"
//! input = { path = "/data/a.txt" }   # default {}
//! expect = { content = "hello\n" }   # a fragment the output must hold
//!
//! [[case]]
//! tool = "files.write"
//! input = { path = "/data/b.txt", content = "x" }
//! error = "denied"                   # or the kind of error expected
//! ```
//!
//! A case with neither `expect` nor `error` passes when the call succeeds.
//! `expect` is matched as a subset ([`subset`](crate::subset)). Every
//! problem of the file is refused before anything runs, naming the case
//! and the fix.

use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{Context, Result, anyhow, bail};
use serde::Serialize;
use serde_json::{Map, Value};

use crate::harness::Harness;
use crate::matching::subset;
use glovebox::session::Role;

/// The error kinds a case may expect (`CallError::kind`).
pub const ERROR_KINDS: &[&str] = &[
    "denied",
    "awaiting_approval",
    "unknown_tool",
    "ambiguous_tool",
    "not_offered",
    "invalid_input",
    "tool_failed",
    "timeout",
    "memory_limit",
    "fuel_exhausted",
    "quota",
    "low_disk",
    "stack_overflow",
    "output_too_large",
    "host_limit",
    "trap",
    "busy",
    "internal",
    "cancelled",
];

/// A case file, read and checked.
#[derive(Clone, Debug)]
pub struct Cases {
    /// The role of the session calls are made in; `None`: standalone calls.
    pub role: Option<Role>,
    /// Hooks in front of the calls: component and settings.
    pub hooks: Vec<(PathBuf, Value)>,
    /// The cases, in the file's order.
    pub cases: Vec<Case>,
}

/// One case: a call and what it must give.
#[derive(Clone, Debug)]
pub struct Case {
    /// Its name, or `case N` (N from 1, in the file's order).
    pub name: String,
    pub tool: String,
    pub input: Value,
    pub expect: Expected,
}

/// What a case expects of its call.
#[derive(Clone, Debug, PartialEq)]
pub enum Expected {
    /// Success, with an output holding this fragment (`{}`: any output).
    Output(Value),
    /// An error of this kind.
    Error(String),
}

/// How one case went: one line of `plugin test`, or one JSON object.
#[derive(Clone, Debug, Serialize)]
pub struct CaseResult {
    /// The case's place in the file, from 1.
    pub case: usize,
    pub name: String,
    pub tool: String,
    pub passed: bool,
    /// Why it failed, when it did.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub problem: Option<String>,
    /// The call's output, when it succeeded.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub output: Option<Value>,
    /// The call's error (`kind`, `message`), when it failed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<Value>,
    /// Wall-clock time of the call, in milliseconds.
    pub wall_ms: f64,
}

impl Cases {
    /// Reads and checks the case file at `path` (JSON when it ends in
    /// `.json`, else TOML).
    pub fn load(path: &Path) -> Result<Cases> {
        let text = std::fs::read_to_string(path)
            .with_context(|| format!("cannot read the case file `{}`", path.display()))?;
        let shown = path.display();
        let doc: Value = if path.extension().is_some_and(|e| e == "json") {
            serde_json::from_str(&text)
                .with_context(|| format!("the case file `{shown}` is not JSON"))?
        } else {
            let table: toml::Table = toml::from_str(&text)
                .with_context(|| format!("the case file `{shown}` is not TOML"))?;
            serde_json::to_value(table).context("cannot read the TOML as JSON")?
        };
        let dir = std::path::absolute(path)
            .ok()
            .and_then(|p| p.parent().map(Path::to_path_buf))
            .unwrap_or_default();
        Cases::from_value(doc, &dir).with_context(|| format!("in the case file `{shown}`"))
    }

    /// The cases of a document already parsed; relative hook paths are
    /// taken from `dir`.
    pub fn from_value(doc: Value, dir: &Path) -> Result<Cases> {
        let Value::Object(mut doc) = doc else {
            bail!(
                "the file must be a table (an object) with a `case` list: `[[case]]` tables in TOML, `{{\"case\": [...]}}` in JSON"
            );
        };
        let role = match doc.remove("role") {
            None => None,
            Some(Value::String(role)) => {
                Some(role.parse::<Role>().map_err(|e| anyhow!("`role`: {e}"))?)
            }
            Some(other) => bail!("`role` must be a role's name (\"workagent\"), not {other}"),
        };
        let hooks = match doc.remove("hook") {
            None => Vec::new(),
            Some(Value::Array(hooks)) => hooks
                .into_iter()
                .enumerate()
                .map(|(i, hook)| hook_of(i, hook, dir))
                .collect::<Result<_>>()?,
            Some(_) => bail!("`hook` must be a list of tables: `[[hook]]` with `component`"),
        };
        let cases = match doc.remove("case") {
            Some(Value::Array(cases)) if !cases.is_empty() => cases,
            None | Some(Value::Array(_)) => bail!(
                "there is no case: add a `[[case]]` with `tool`, `input` and `expect` (an output fragment) or `error` (an error kind)"
            ),
            Some(_) => bail!("`case` must be a list of tables: write each case as `[[case]]`"),
        };
        if let Some(key) = doc.keys().next() {
            bail!("unknown key `{key}`: a case file has `role`, `[[hook]]` and `[[case]]`");
        }
        let cases = cases
            .into_iter()
            .enumerate()
            .map(|(i, case)| case_of(i + 1, case))
            .collect::<Result<_>>()?;
        Ok(Cases { role, hooks, cases })
    }

    /// The harness for `plugin` (a manifest `.toml` or a component) with
    /// this file's role and hooks.
    pub fn harness(&self, plugin: &Path) -> Harness {
        let mut harness = Harness::for_path(plugin);
        if let Some(role) = self.role {
            harness = harness.session(role);
        }
        for (component, settings) in &self.hooks {
            harness = harness.hook_with(component, settings.clone());
        }
        harness
    }

    /// Runs every case on `harness`, in order; `Err` only when the harness
    /// cannot start (the plugin does not load, a grant is refused).
    pub fn run(&self, harness: &Harness) -> Result<Vec<CaseResult>> {
        let mut results = Vec::with_capacity(self.cases.len());
        for (i, case) in self.cases.iter().enumerate() {
            results.push(case.run(i + 1, harness)?);
        }
        Ok(results)
    }
}

impl Case {
    /// Runs this case, the `number`th of its file.
    fn run(&self, number: usize, harness: &Harness) -> Result<CaseResult> {
        let mut result = CaseResult {
            case: number,
            name: self.name.clone(),
            tool: self.tool.clone(),
            passed: false,
            problem: None,
            output: None,
            error: None,
            wall_ms: 0.0,
        };
        let report = match harness.report(&self.tool, &self.input) {
            Ok(report) => report,
            // The session refused the call: this case fails, the others run.
            Err(e) if harness.started() => {
                result.problem = Some(format!("{e:#}"));
                return Ok(result);
            }
            Err(e) => return Err(e),
        };
        result.wall_ms = millis(report.metering.wall);
        result.problem = match (&report.outcome, &self.expect) {
            (Ok(output), Expected::Output(fragment)) => subset(fragment, output)
                .err()
                .map(|m| format!("the output differs {m}")),
            (Ok(_), Expected::Error(kind)) => {
                Some(format!("expected a `{kind}` error, but the call succeeded"))
            }
            (Err(e), Expected::Error(kind)) if e.kind() == kind => None,
            (Err(e), Expected::Error(kind)) => Some(format!(
                "expected a `{kind}` error, got `{}`: {e}",
                e.kind()
            )),
            (Err(e), Expected::Output(_)) => {
                Some(format!("expected success, got a `{}` error: {e}", e.kind()))
            }
        };
        result.passed = result.problem.is_none();
        match report.outcome {
            Ok(output) => result.output = Some(output),
            Err(e) => {
                result.error = Some(serde_json::json!({"kind": e.kind(), "message": e.to_string()}))
            }
        }
        Ok(result)
    }
}

fn millis(d: Duration) -> f64 {
    (d.as_secs_f64() * 1e6).round() / 1e3
}

/// Case `number` of the file, checked.
fn case_of(number: usize, case: Value) -> Result<Case> {
    let Value::Object(mut case) = case else {
        bail!("case {number} is not a table: write it as `[[case]]` with `tool` and `input`");
    };
    let name = match case.remove("name") {
        None => format!("case {number}"),
        Some(Value::String(name)) => name,
        Some(other) => bail!("case {number}: `name` must be text, not {other}"),
    };
    let at = if name == format!("case {number}") {
        name.clone()
    } else {
        format!("case {number} (`{name}`)")
    };
    let tool = match case.remove("tool") {
        Some(Value::String(tool)) if !tool.is_empty() => tool,
        None => bail!("{at} has no `tool`: name the tool to call, `tool = \"plugin.tool\"`"),
        Some(other) => bail!("{at}: `tool` must be a tool's name (\"plugin.tool\"), not {other}"),
    };
    let input = case
        .remove("input")
        .unwrap_or_else(|| Value::Object(Map::new()));
    let expect = match (case.remove("expect"), case.remove("error")) {
        (Some(_), Some(_)) => bail!(
            "{at} has both `expect` and `error`: a call either succeeds with an output or fails with an error, keep one"
        ),
        (Some(fragment), None) => Expected::Output(fragment),
        (None, Some(Value::String(kind))) => {
            if !ERROR_KINDS.contains(&kind.as_str()) {
                bail!(
                    "{at}: `error = \"{kind}\"` is not an error kind: use one of {}",
                    ERROR_KINDS.join(", ")
                );
            }
            Expected::Error(kind)
        }
        (None, Some(other)) => {
            bail!("{at}: `error` must be an error kind (\"denied\", \"timeout\", ...), not {other}")
        }
        (None, None) => Expected::Output(Value::Object(Map::new())),
    };
    if let Some(key) = case.keys().next() {
        bail!(
            "{at} has an unknown key `{key}`: a case has `name`, `tool`, `input`, and `expect` or `error`"
        );
    }
    Ok(Case {
        name,
        tool,
        input,
        expect,
    })
}

/// The `i`th `[[hook]]`: its component (from `dir`) and settings.
fn hook_of(i: usize, hook: Value, dir: &Path) -> Result<(PathBuf, Value)> {
    let Value::Object(mut hook) = hook else {
        bail!(
            "hook {} is not a table: write it as `[[hook]]` with `component`",
            i + 1
        );
    };
    let component = match hook.remove("component") {
        Some(Value::String(path)) => dir.join(path),
        _ => bail!(
            "hook {} has no `component`: give the hook component's path (from the case file's directory)",
            i + 1
        ),
    };
    let settings = match hook.remove("settings") {
        None => Value::Object(Map::new()),
        Some(settings @ Value::Object(_)) => settings,
        Some(other) => bail!("hook {}: `settings` must be a table, not {other}", i + 1),
    };
    if let Some(key) = hook.keys().next() {
        bail!(
            "hook {} has an unknown key `{key}`: a hook has `component` and `settings`",
            i + 1
        );
    }
    Ok((component, settings))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn refused(doc: Value) -> String {
        format!("{:#}", Cases::from_value(doc, Path::new("/")).unwrap_err())
    }

    #[test]
    fn a_bad_case_is_refused_naming_the_case_and_the_fix() {
        let both = refused(json!({"case": [
            {"tool": "a.b"},
            {"name": "twice", "tool": "a.b", "expect": {}, "error": "denied"},
        ]}));
        assert!(
            both.contains("case 2 (`twice`) has both `expect` and `error`"),
            "{both}"
        );
        let kind = refused(json!({"case": [{"tool": "a.b", "error": "timeot"}]}));
        assert!(
            kind.contains("case 1: `error = \"timeot\"` is not an error kind: use one of denied"),
            "{kind}"
        );
        let key = refused(json!({"case": [{"tool": "a.b", "expected": {}}]}));
        assert!(
            key.contains("case 1 has an unknown key `expected`"),
            "{key}"
        );
        let tool = refused(json!({"case": [{"input": {}}]}));
        assert!(tool.contains("case 1 has no `tool`"), "{tool}");
        let none = refused(json!({"role": "workagent"}));
        assert!(none.contains("there is no case"), "{none}");
        let role = refused(json!({"role": "boss", "case": [{"tool": "a.b"}]}));
        assert!(role.contains("`role`"), "{role}");
    }

    #[test]
    fn a_good_file_reads_with_its_defaults() {
        let cases = Cases::from_value(
            json!({"role": "supervisor", "case": [
                {"tool": "a.b"},
                {"name": "n", "tool": "a.c", "input": {"x": 1}, "error": "denied"},
            ]}),
            Path::new("/"),
        )
        .unwrap();
        assert_eq!(cases.role, Some(Role::Supervisor));
        assert_eq!(cases.cases[0].name, "case 1");
        assert_eq!(cases.cases[0].input, json!({}));
        assert_eq!(cases.cases[0].expect, Expected::Output(json!({})));
        assert_eq!(cases.cases[1].expect, Expected::Error("denied".into()));
    }
}
