//! Completion-gate checks: tools whose JSON answer says whether a piece of work is done,
//! judged from files in a read-only directory the operator grants, never by the agent's
//! own word.
//!
//! A session's completion gates are tool calls run through the normal pipeline when it
//! asks to end `completed`; the host compares each answer with the gate's expected object
//! (`{"passed": true}`). So every tool here answers with a top-level boolean `passed`,
//! and a check that cannot be made (a missing file, bad input, a path outside the grant)
//! is a tool error, never `passed: false`: the gate then fails as "cannot be run", with a
//! message naming the culprit and the fix.
//!
//! The plugin runs no command (a component cannot): a test runner writes its report into
//! the granted directory, and `report` reads it; `json_schema` validates a JSON file the
//! agent produced against a schema with the `jsonschema` crate (no `$ref` is fetched over
//! HTTP or from files: the schema must say everything inline).
//!
//! - `report` `{"path", "max_failed"?: 0, "min_passed"?: 0}` →
//!   `{"passed", "failed", "passed_lines", "failures"}`: `failed` counts the lines with
//!   the word `FAILED` (case-sensitive, as test runners print it), `passed_lines` the other
//!   lines with the word `PASSED` or `ok`; `passed` is `failed <= max_failed` and
//!   `passed_lines >= min_passed`; `failures` holds the first 20 failing lines, each cut
//!   at 200 characters.
//! - `json_schema` `{"path", "schema", "format"?}` (`schema`: a schema file in the grant,
//!   or an inline JSON Schema object) → `{"passed", "errors", "error_count"}`: `errors`
//!   holds the first 20 violations as `"<JSON pointer>: <message>"` (`(root)` for the whole
//!   document). The data file is JSON, or TOML or YAML by its extension (`.toml`, `.yaml`,
//!   `.yml`) or `format`, read into the same JSON value. A data file that does not parse is
//!   `passed: false` with the parse error at `(root)`: that is the agent's output to fix. A
//!   schema that is not valid is a tool error: that is the operator's to fix.
//! - `valid` `{"path", "format"?}` → `{"passed", "format", "errors"}`: whether a JSON,
//!   TOML or YAML file (by its extension, or `format`) parses; `errors` holds the parse
//!   error as `"<path>:<line>:<column>: <message>"`. The check a `[[verify]]` entry runs
//!   after each write of a config file.
//!
//! Paths are guest paths (`/data/report.txt`). Each must be absolute, without `..`, and
//! inside one of the directories the host preopened for this plugin; the error lists them.

mod formats;

use std::fs;
use std::io::Read;

use formats::Format;

use glovebox_plugin_sdk::{
    CallContext, Guest, Input, ToolError, ToolSpec, Value, failed, invalid, json, kind_of, output,
    spec, unknown_tool,
};

/// The largest file a check reads.
const MAX_FILE: u64 = 8 * 1024 * 1024;
/// At most this many failing lines or schema errors are returned.
const MAX_LISTED: usize = 20;
/// A failing line or an error message is cut at this many characters.
const MAX_LINE_CHARS: usize = 200;

struct Gate;

impl Guest for Gate {
    fn list_tools() -> Vec<ToolSpec> {
        vec![
            spec(
                "report",
                "Checks a test report in the granted directory: counts the lines with the word \
                 FAILED and the lines with PASSED or ok. Returns {\"passed\": failed <= max_failed \
                 (and passed_lines >= min_passed), \"failed\", \"passed_lines\", \"failures\": \
                 [the first 20 failing lines]}. A missing report is an error.",
                json!({
                    "type": "object",
                    "properties": {
                        "path": { "type": "string", "description": "The report file, as a guest path such as /data/report.txt." },
                        "max_failed": { "type": "integer", "minimum": 0, "description": "How many FAILED lines still pass. Default 0." },
                        "min_passed": { "type": "integer", "minimum": 0, "description": "How many PASSED/ok lines are needed to pass. Default 0." }
                    },
                    "required": ["path"],
                    "additionalProperties": false
                }),
                "read:gate:report",
                false,
                true,
            ),
            spec(
                "json_schema",
                "Validates a JSON file in the granted directory against a JSON Schema (a schema \
                 file in the grant, or an inline object). Returns {\"passed\", \"errors\": [the \
                 first 20 violations as \"<JSON pointer>: <message>\"], \"error_count\"}.",
                json!({
                    "type": "object",
                    "properties": {
                        "path": { "type": "string", "description": "The file to check (JSON, or TOML or YAML by its extension), as a guest path such as /data/out.json." },
                        "schema": {
                            "description": "The JSON Schema: a guest path to a schema file, or the schema itself as an object.",
                            "type": ["string", "object"]
                        },
                        "format": { "type": "string", "enum": ["json", "toml", "yaml"], "description": "The data file's format, when its extension does not say it. Default: by extension, else JSON." }
                    },
                    "required": ["path", "schema"],
                    "additionalProperties": false
                }),
                "read:gate:json-schema",
                false,
                true,
            ),
            spec(
                "valid",
                "Checks that a JSON, TOML or YAML file in the granted directory parses (the \
                 format from its extension: .json, .toml, .yaml, .yml; or `format`). Returns \
                 {\"passed\", \"format\", \"errors\": [\"<path>:<line>:<column>: <message>\"]}.",
                json!({
                    "type": "object",
                    "properties": {
                        "path": { "type": "string", "description": "The file to check, as a guest path such as /data/config.toml." },
                        "format": { "type": "string", "enum": ["json", "toml", "yaml"], "description": "The file's format, when its extension does not say it." }
                    },
                    "required": ["path"],
                    "additionalProperties": false
                }),
                "read:gate:valid",
                false,
                true,
            ),
        ]
    }

    fn call(_ctx: CallContext, tool: String, input: String) -> Result<String, ToolError> {
        let result = match tool.as_str() {
            "report" => report(&Input::parse_strict(
                &input,
                &["path", "max_failed", "min_passed"],
            )?)?,
            "json_schema" => {
                json_schema(&Input::parse_strict(&input, &["path", "schema", "format"])?)?
            }
            "valid" => valid(&Input::parse_strict(&input, &["path", "format"])?)?,
            _ => return Err(unknown_tool(&tool, &Self::list_tools())),
        };
        output(&result)
    }
}

glovebox_plugin_sdk::export!(Gate);

fn report(input: &Input) -> Result<Value, ToolError> {
    let path = granted_path(input, "path")?;
    let max_failed = input.opt_u64("max_failed")?.unwrap_or(0);
    let min_passed = input.opt_u64("min_passed")?.unwrap_or(0);
    let text = read_file(&path, "path", "the test report")?;
    let counts = count_report(&String::from_utf8_lossy(&text));
    Ok(json!({
        "passed": counts.failed <= max_failed && counts.passed_lines >= min_passed,
        "failed": counts.failed,
        "passed_lines": counts.passed_lines,
        "failures": counts.failures,
    }))
}

fn json_schema(input: &Input) -> Result<Value, ToolError> {
    let path = granted_path(input, "path")?;
    let schema = match input.get("schema") {
        None => {
            return Err(invalid(
                "missing required field `schema`: give a guest path to a schema file in the \
                 granted directory, or the JSON Schema itself as an object",
            ));
        }
        Some(Value::Object(_)) => input.get("schema").cloned().unwrap_or(Value::Null),
        Some(Value::String(_)) => {
            let schema_path = granted_path(input, "schema")?;
            let bytes = read_file(&schema_path, "schema", "the schema")?;
            serde_json::from_slice(&bytes).map_err(|e| {
                failed(format!(
                    "the schema `{schema_path}` (field `schema`) is not valid JSON: {e}; fix \
                     the schema file"
                ))
            })?
        }
        Some(other) => {
            return Err(invalid(format!(
                "field `schema` must be a guest path (a string) to a schema file or an inline \
                 JSON Schema object, got {}",
                kind_of(other)
            )));
        }
    };
    let validator = jsonschema::validator_for(&schema).map_err(|e| {
        let where_ = match input.get("schema") {
            Some(Value::String(p)) => format!("the schema `{p}`"),
            _ => "the inline schema".to_owned(),
        };
        failed(format!(
            "{where_} (field `schema`) is not a valid JSON Schema: {}; fix the schema (it must \
             say everything inline: no `$ref` is fetched from files or the network)",
            cut(&e.to_string(), MAX_LINE_CHARS * 2)
        ))
    })?;
    let format = Format::of(&path, input.opt_str("format")?, Some(Format::Json))?;
    let bytes = read_file(&path, "path", "the data file")?;
    let instance: Value = match format.parse(&bytes) {
        Ok(v) => v,
        Err(e) => {
            return Ok(json!({
                "passed": false,
                "errors": [format!("(root): `{path}` is not valid {}: {e}", format.name().to_uppercase())],
                "error_count": 1,
            }));
        }
    };
    let mut errors = Vec::new();
    let mut count = 0usize;
    for error in validator.iter_errors(&instance) {
        count += 1;
        if errors.len() < MAX_LISTED {
            errors.push(schema_error(
                error.instance_path().as_str(),
                &error.to_string(),
            ));
        }
    }
    Ok(json!({ "passed": count == 0, "errors": errors, "error_count": count }))
}

fn valid(input: &Input) -> Result<Value, ToolError> {
    let path = granted_path(input, "path")?;
    let format = Format::of(&path, input.opt_str("format")?, None)?;
    let bytes = read_file(&path, "path", "the file")?;
    let errors: Vec<String> = match format.parse(&bytes) {
        Ok(_) => Vec::new(),
        Err(e) => vec![cut(&format!("{path}:{e}"), MAX_LINE_CHARS * 2)],
    };
    Ok(json!({ "passed": errors.is_empty(), "format": format.name(), "errors": errors }))
}

/// `"<pointer>: <message>"`, the root written `(root)`, the message cut short.
fn schema_error(pointer: &str, message: &str) -> String {
    let pointer = if pointer.is_empty() {
        "(root)"
    } else {
        pointer
    };
    format!("{pointer}: {}", cut(message, MAX_LINE_CHARS))
}

/// What a report says.
#[derive(Debug, PartialEq)]
struct Counts {
    failed: u64,
    passed_lines: u64,
    failures: Vec<String>,
}

/// Counts the report's lines: a line with the word `FAILED` is a failure (whatever else
/// it says); any other line with the word `PASSED` or `ok` is a pass.
fn count_report(text: &str) -> Counts {
    let mut counts = Counts {
        failed: 0,
        passed_lines: 0,
        failures: Vec::new(),
    };
    for line in text.lines() {
        if has_word(line, "FAILED") {
            counts.failed += 1;
            if counts.failures.len() < MAX_LISTED {
                counts.failures.push(cut(line.trim_end(), MAX_LINE_CHARS));
            }
        } else if has_word(line, "PASSED") || has_word(line, "ok") {
            counts.passed_lines += 1;
        }
    }
    counts
}

/// Whether `word` occurs in `line` as a whole word: not preceded or followed by a letter,
/// a digit or `_` (so `FAILED:` and `... FAILED` count, `UNFAILED` and `okay` do not).
fn has_word(line: &str, word: &str) -> bool {
    let is_word = |c: char| c.is_alphanumeric() || c == '_';
    line.match_indices(word).any(|(at, _)| {
        let before = line[..at].chars().next_back();
        let after = line[at + word.len()..].chars().next();
        !before.is_some_and(is_word) && !after.is_some_and(is_word)
    })
}

/// `text` cut at `max` characters, with `…` when it was longer.
fn cut(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        Some((at, _)) => format!("{}…", &text[..at]),
        None => text.to_owned(),
    }
}

/// The guest path in `field`, checked against the directories the host granted.
fn granted_path(input: &Input, field: &str) -> Result<String, ToolError> {
    let raw = input.str(field)?;
    granted(field, raw, &grant_roots())
}

/// The guest paths of this plugin's preopened directories.
fn grant_roots() -> Vec<String> {
    wasip2::filesystem::preopens::get_directories()
        .into_iter()
        .map(|(_, guest)| normalize(&guest).unwrap_or(guest))
        .collect()
}

/// `raw` without `.` components and repeated or trailing `/`; `None` when it is not
/// absolute or has a `..` component.
fn normalize(raw: &str) -> Option<String> {
    if !raw.starts_with('/') {
        return None;
    }
    let mut parts = Vec::new();
    for part in raw.split('/') {
        match part {
            "" | "." => {}
            ".." => return None,
            other => parts.push(other),
        }
    }
    Some(format!("/{}", parts.join("/")))
}

/// Checks the path `raw` of `field` against the granted `roots`; the normalized path.
fn granted(field: &str, raw: &str, roots: &[String]) -> Result<String, ToolError> {
    let example = match roots.first() {
        Some(root) => format!("{}/report.txt", root.trim_end_matches('/')),
        None => "/data/report.txt".to_owned(),
    };
    if raw.is_empty() {
        return Err(invalid(format!(
            "field `{field}` must not be empty: give a guest path such as {example}"
        )));
    }
    if raw.contains('\0') || raw.contains('\\') {
        return Err(invalid(format!(
            "field `{field}` (`{}`) has a NUL or a backslash: give a guest path with `/` \
             separators such as {example}",
            raw.escape_debug()
        )));
    }
    let Some(path) = normalize(raw) else {
        let why = if raw.starts_with('/') {
            "has a `..` component, which could leave the granted directory"
        } else {
            "is relative"
        };
        return Err(invalid(format!(
            "field `{field}` (`{raw}`) {why}: give an absolute guest path inside the granted \
             directory, such as {example}"
        )));
    };
    if roots.is_empty() {
        return Err(failed(format!(
            "field `{field}` (`{raw}`): this plugin was granted no directory; the operator \
             grants one (read-only) in an [[fs]] table of the plugin's manifest"
        )));
    }
    let inside = roots
        .iter()
        .any(|root| root == "/" || path == *root || path.starts_with(&format!("{root}/")));
    if !inside {
        return Err(invalid(format!(
            "field `{field}` (`{raw}`) is outside the directories granted to this plugin ({}): \
             give a path inside one of them, such as {example}",
            roots.join(", ")
        )));
    }
    Ok(path)
}

/// Reads at most [`MAX_FILE`] bytes of the file at `path` (of `field`; `what` it is for).
fn read_file(path: &str, field: &str, what: &str) -> Result<Vec<u8>, ToolError> {
    let cannot = |e: std::io::Error| {
        let fix = match e.kind() {
            std::io::ErrorKind::NotFound => format!(
                ": there is no such file. Make sure {what} is written there first (for a test \
                 report: run the tests with their output saved to that file), or fix field \
                 `{field}`"
            ),
            _ => format!(": {e}"),
        };
        failed(format!(
            "cannot read {what} `{path}` (field `{field}`){fix}"
        ))
    };
    let file = fs::File::open(path).map_err(cannot)?;
    let meta = file.metadata().map_err(cannot)?;
    if meta.is_dir() {
        return Err(failed(format!(
            "cannot read {what} `{path}` (field `{field}`): it is a directory; give the path \
             of a file"
        )));
    }
    let mut bytes = Vec::with_capacity(meta.len().min(MAX_FILE) as usize);
    file.take(MAX_FILE + 1)
        .read_to_end(&mut bytes)
        .map_err(cannot)?;
    if bytes.len() as u64 > MAX_FILE {
        return Err(failed(format!(
            "cannot read {what} `{path}` (field `{field}`): it is larger than {MAX_FILE} bytes \
             (8 MiB), the most a gate reads; write a shorter file (for a test report: only \
             the results, not the logs)"
        )));
    }
    Ok(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn msg(e: ToolError) -> String {
        match e {
            ToolError::InvalidInput(m) | ToolError::Failed(m) => m,
            #[allow(unreachable_patterns)]
            other => format!("{other:?}"),
        }
    }

    #[test]
    fn failed_is_a_case_sensitive_word() {
        assert!(has_word("test a::b ... FAILED", "FAILED"));
        assert!(has_word(
            "FAILED tests/test_x.py::test_a - assert 1 == 2",
            "FAILED"
        ));
        assert!(has_word(
            "test result: FAILED. 1 passed; 1 failed",
            "FAILED"
        ));
        assert!(!has_word("test a ... failed", "FAILED"));
        assert!(!has_word("UNFAILED", "FAILED"));
        assert!(!has_word("FAILED_COUNT=0", "FAILED"));
        assert!(has_word("x FAILEDX FAILED", "FAILED"));
        assert!(has_word("test a ... ok", "ok"));
        assert!(!has_word("okay then, token", "ok"));
        assert!(has_word("é ok é", "ok"));
    }

    #[test]
    fn a_report_is_counted_line_by_line() {
        let report = "running 3 tests\ntest a ... ok\ntest b ... FAILED\r\n\
                      tests/x.py::c PASSED\ntest result: FAILED. 2 passed; 1 failed\n";
        assert_eq!(
            count_report(report),
            Counts {
                failed: 2,
                passed_lines: 2,
                failures: vec![
                    "test b ... FAILED".to_owned(),
                    "test result: FAILED. 2 passed; 1 failed".to_owned()
                ],
            }
        );
        assert_eq!(count_report("").failed, 0);
    }

    #[test]
    fn failures_are_listed_up_to_twenty_and_cut() {
        let long = format!("FAILED {}", "x".repeat(500));
        let report = vec![long.as_str(); 25].join("\n");
        let counts = count_report(&report);
        assert_eq!(counts.failed, 25);
        assert_eq!(counts.failures.len(), MAX_LISTED);
        assert_eq!(counts.failures[0].chars().count(), MAX_LINE_CHARS + 1);
        assert!(counts.failures[0].ends_with('…'));
        assert_eq!(cut("ééé", 2), "éé…");
        assert_eq!(cut("éé", 2), "éé");
    }

    #[test]
    fn paths_stay_inside_the_grant() {
        let roots = vec!["/data".to_owned()];
        assert_eq!(
            granted("path", "/data/r.txt", &roots).unwrap(),
            "/data/r.txt"
        );
        assert_eq!(
            granted("path", "/data/./a//r.txt", &roots).unwrap(),
            "/data/a/r.txt"
        );
        let e = msg(granted("path", "/data/../etc/passwd", &roots).unwrap_err());
        assert!(e.contains("field `path`") && e.contains("`..`"), "{e}");
        let e = msg(granted("path", "/etc/passwd", &roots).unwrap_err());
        assert!(
            e.contains("outside the directories granted") && e.contains("(/data)"),
            "{e}"
        );
        let e = msg(granted("path", "/database/x", &roots).unwrap_err());
        assert!(e.contains("outside"), "{e}");
        let e = msg(granted("schema", "r.txt", &roots).unwrap_err());
        assert!(
            e.contains("field `schema`") && e.contains("relative"),
            "{e}"
        );
        let e = msg(granted("path", "/data\\..\\x", &roots).unwrap_err());
        assert!(e.contains("backslash"), "{e}");
        let e = msg(granted("path", "", &roots).unwrap_err());
        assert!(
            e.contains("must not be empty") && e.contains("/data/report.txt"),
            "{e}"
        );
        let e = msg(granted("path", "/data/x", &[]).unwrap_err());
        assert!(e.contains("granted no directory"), "{e}");
    }

    #[test]
    fn schema_errors_name_the_pointer() {
        assert_eq!(schema_error("", "bad"), "(root): bad");
        assert_eq!(schema_error("/a/0", "bad"), "/a/0: bad");
    }
}
