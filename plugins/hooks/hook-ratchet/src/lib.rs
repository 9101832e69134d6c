//! Permission hook: the test ratchet. An agent asked to make the tests pass must not get
//! there by deleting or weakening them, so a call that would delete or rewrite a file
//! under a configured test path is denied; every other call is allowed.
//!
//! Settings:
//!
//! ```json
//! {"test_paths": ["tests/", "*_test.py", "test_*.py"],
//!  "tools": {"files.write": ["path"], "files.delete": ["path"], "files.move": ["from", "to"]},
//!  "destructive_fields": ["path", "paths", "from", "to"],
//!  "create_tools": {"files.create": ["path"]},
//!  "exempt_roles": ["operator"]}
//! ```
//!
//! - `test_paths` (required, at least one): the protected paths, in a small pattern
//!   language. A pattern is `/`-separated names; `*` in a name matches any run of
//!   characters within that name (there is no `**`, no `?`, no anchoring). A pattern
//!   ending in `/` is a directory: it matches a path that contains its names as
//!   consecutive directories at any depth, and everything below (`tests/` protects
//!   `/data/tests/a.rs`, `/data/pkg/tests/unit/b.rs` and `/data/tests` itself). Any other
//!   pattern matches the last names of a path (`*_test.py` matches `/data/x/y_test.py`;
//!   `fixtures/*.json` matches `/data/tests/fixtures/a.json`). Matching ignores ASCII case,
//!   because the host's filesystem may (macOS, Windows): `Tests/` does not dodge `tests/`.
//! - `tools` (optional): which tools write, delete or move files, and the top-level input
//!   fields that carry their paths (a string, or an array of strings). Keys are tool
//!   patterns (`files.write`, `files.*`, `*`). Default: `{"files.write": ["path"]}`, the
//!   one tool of the example file plugin that changes files. Both ends of a move are
//!   judged: moving a test away deletes it, moving onto one rewrites it.
//! - `destructive_fields` (optional): the safety net for a tool the operator forgot to
//!   list. A call of a tool that no `tools` key matches, but that is destructive (the
//!   host's flag, after the manifest's overrides), is judged by these input fields.
//!   Default: `["path", "paths", "from", "to"]`; `[]` turns the net off.
//! - `create_tools` (optional): tools that only ever create a new file and fail, changing
//!   nothing, when anything exists at the path (`O_EXCL`), with the input fields that
//!   carry their paths. Keys are tool patterns. A call of one of them under a test path is
//!   allowed: it can add a test, never weaken one. Default: none (such a tool is judged
//!   as `tools` or `destructive_fields` say, so a new test is denied as before); the
//!   example file plugin's create-only tool is `{"files.create": ["path"]}`. Name here
//!   only a tool you know refuses to overwrite: the hook takes that on trust. A tool
//!   matched by both `create_tools` and `tools` is judged as a create-only one.
//! - `exempt_roles` (optional): session roles the ratchet does not bind, for the human
//!   who decides a test really is wrong. Default: none.
//!
//! What "rewrite" means: a hook has no capabilities, so it cannot tell whether the file
//! exists. A tool that may overwrite (the example `files.write` creates or overwrites) is
//! therefore denied every path under a test path, a new test file included; a new test
//! is added with a create-only tool (`create_tools`, `files.create`), which the tool
//! itself refuses when the file exists, or by an exempt role. Reading tests is never
//! judged (list only tools that change files). A path that is the root (`/`, or `.`, or
//! empty, once normalized) is denied too, whichever the tool: it holds every test path,
//! so deleting or overwriting it deletes them.
//!
//! Paths are normalized before matching, so spelling cannot dodge a pattern: `\` is a
//! separator, empty and `.` names are dropped, `..` is resolved lexically, and a path
//! with `..` is also judged by every directory it passes through (`tests/../src/a.rs`
//! touches `tests/` on the way, and `tests` could be a symlink). A relative path is
//! matched the same way (patterns are not anchored). What a hook cannot see: a symlink
//! elsewhere that points into a test directory, and a test file inside a directory that a
//! recursive delete removes by a path no pattern matches; don't grant such links, and
//! protect directories with directory patterns.
//!
//! Fail closed: settings of the wrong shape deny every call, naming the bad key; a listed
//! tool's input that is not a JSON object, or a path field that is neither a string nor
//! an array of strings, is denied.

#![cfg_attr(target_arch = "wasm32", no_std)]

extern crate alloc;

use glovebox_hook_sdk::prelude::*;

struct Ratchet;

impl Guest for Ratchet {
    fn triggers() -> Vec<String> {
        vec!["*".to_owned()]
    }

    fn validate(settings: String, req: Request) -> Decision {
        judge(&settings, &req)
    }

    fn after(_settings: String, _req: Request, _ok: bool, _summary: String) {}
}

glovebox_hook_sdk::export!(Ratchet);

/// One protected path pattern.
#[derive(Debug, Clone, PartialEq)]
struct Pattern {
    /// As the operator wrote it, for messages.
    text: String,
    /// Its names, lowercased.
    names: Vec<String>,
    /// Ends in `/`: a directory and everything below it.
    dir: bool,
}

#[derive(Debug, Clone, PartialEq)]
struct Policy {
    test_paths: Vec<Pattern>,
    /// Tool pattern → the input fields with paths.
    tools: Vec<(String, Vec<String>)>,
    /// The path fields of an unlisted destructive tool.
    destructive_fields: Vec<String>,
    /// Create-only tool pattern → the input fields with paths.
    create_tools: Vec<(String, Vec<String>)>,
    exempt_roles: Vec<String>,
}

/// Why a path is protected.
#[derive(Debug, PartialEq)]
enum Protected<'p> {
    /// It is under this pattern.
    By(&'p Pattern),
    /// It is the root, which holds every test path.
    Root,
}

fn policy(settings: &str) -> Result<Policy, String> {
    let settings = Settings::parse(
        settings,
        &[
            "test_paths",
            "tools",
            "destructive_fields",
            "create_tools",
            "exempt_roles",
        ],
    )?;
    let test_paths = match settings.get("test_paths") {
        None => {
            return Err(
                "settings key `test_paths` is missing: list the paths to protect, \
                 e.g. {\"test_paths\": [\"tests/\", \"*_test.py\"]}"
                    .to_owned(),
            );
        }
        Some(value) => strings(value, "test_paths")?,
    };
    if test_paths.is_empty() {
        return Err(
            "settings key `test_paths` is empty: list at least one path to protect, \
             e.g. [\"tests/\", \"*_test.py\"]"
                .to_owned(),
        );
    }
    let test_paths = test_paths
        .iter()
        .enumerate()
        .map(|(i, p)| parse_pattern(p).map_err(|e| format!("settings key `test_paths[{i}]`: {e}")))
        .collect::<Result<Vec<_>, _>>()?;
    let tools = match settings.opt_object("tools")? {
        None => vec![("files.write".to_owned(), vec!["path".to_owned()])],
        Some(map) => tool_fields(map, "tools")?,
    };
    let create_tools = match settings.opt_object("create_tools")? {
        None => Vec::new(),
        Some(map) => tool_fields(map, "create_tools")?,
    };
    let destructive_fields = match settings.get("destructive_fields") {
        None => ["path", "paths", "from", "to"].map(String::from).to_vec(),
        Some(value) => strings(value, "destructive_fields")?,
    };
    if let Some(i) = destructive_fields.iter().position(|f| f.is_empty()) {
        return Err(format!(
            "settings key `destructive_fields[{i}]` is empty: name an input field"
        ));
    }
    let exempt_roles = match settings.get("exempt_roles") {
        None => Vec::new(),
        Some(value) => strings(value, "exempt_roles")?,
    };
    Ok(Policy {
        test_paths,
        tools,
        destructive_fields,
        create_tools,
        exempt_roles,
    })
}

/// The settings object at `key` (`tools`, `create_tools`): tool patterns, each
/// with the input fields that carry its paths.
fn tool_fields(map: &Map<String, Value>, key: &str) -> Result<Vec<(String, Vec<String>)>, String> {
    let mut tools = Vec::with_capacity(map.len());
    for (tool, fields) in map {
        pattern::check(tool).map_err(|e| format!("settings key `{key}.{tool}`: {e}"))?;
        let fields = strings(fields, &format!("{key}.{tool}"))?;
        if fields.is_empty() {
            return Err(format!(
                "settings key `{key}.{tool}` is empty: name the input fields that \
                 carry the tool's paths, e.g. [\"path\"]"
            ));
        }
        if let Some(i) = fields.iter().position(|f| f.is_empty()) {
            return Err(format!(
                "settings key `{key}.{tool}[{i}]` is empty: name an input field"
            ));
        }
        tools.push((tool.clone(), fields));
    }
    Ok(tools)
}

fn parse_pattern(text: &str) -> Result<Pattern, String> {
    if text.is_empty() {
        return Err("a test path pattern cannot be empty".to_owned());
    }
    if text.contains('\\') {
        return Err(format!(
            "pattern `{text}` has a `\\`: write `/` between names"
        ));
    }
    if text.starts_with('/') {
        return Err(format!(
            "pattern `{text}` starts with `/`: patterns match at any depth, so drop the \
             leading `/` (e.g. `tests/`)"
        ));
    }
    let dir = text.ends_with('/');
    let body = text.strip_suffix('/').unwrap_or(text);
    let mut names = Vec::new();
    for name in body.split('/') {
        match name {
            "" => return Err(format!("pattern `{text}` has an empty name (`//`)")),
            "." | ".." => {
                return Err(format!(
                    "pattern `{text}` has a `{name}` name; write the names of the protected \
                     directories and files"
                ));
            }
            n if n.contains("**") => {
                return Err(format!(
                    "pattern `{text}` has `**`, which is not supported: a directory pattern \
                     (`tests/`) already matches at any depth, and `*` matches within a name"
                ));
            }
            n => names.push(n.to_ascii_lowercase()),
        }
    }
    Ok(Pattern {
        text: text.to_owned(),
        names,
        dir,
    })
}

/// Every directory and file name `raw` passes through, `..` aside.
fn passed_through(raw: &str) -> Vec<String> {
    raw.split(['/', '\\'])
        .filter(|n| !matches!(*n, "" | "." | ".."))
        .map(|n| n.to_ascii_lowercase())
        .collect()
}

/// Whether the wildcard `pattern` (`*` only) matches the whole of `name`.
fn name_matches(pattern: &str, name: &str) -> bool {
    let mut parts = pattern.split('*');
    let first = parts.next().unwrap_or("");
    let Some(mut rest) = name.strip_prefix(first) else {
        return false;
    };
    let parts: Vec<&str> = parts.collect();
    let Some((last, middle)) = parts.split_last() else {
        // No `*`: the whole name must have been the prefix.
        return rest.is_empty();
    };
    for part in middle {
        match rest.find(part) {
            Some(at) => rest = &rest[at + part.len()..],
            None => return false,
        }
    }
    rest.len() >= last.len() && rest.ends_with(last)
}

fn window_matches(pattern: &[String], names: &[String]) -> bool {
    pattern.len() == names.len() && pattern.iter().zip(names).all(|(p, n)| name_matches(p, n))
}

/// Whether the path with these `names` is protected by `pattern`.
fn protects(pattern: &Pattern, names: &[String]) -> bool {
    let n = pattern.names.len();
    if names.len() < n {
        return false;
    }
    if pattern.dir {
        names.windows(n).any(|w| window_matches(&pattern.names, w))
    } else {
        window_matches(&pattern.names, &names[names.len() - n..])
    }
}

/// The first pattern that protects the path `raw`, if any.
fn protected_by<'p>(policy: &'p Policy, raw: &str) -> Option<Protected<'p>> {
    let lexical = path::names(raw);
    if lexical.is_empty() {
        return Some(Protected::Root);
    }
    let through = if raw.split(['/', '\\']).any(|n| n == "..") {
        Some(passed_through(raw))
    } else {
        None
    };
    policy
        .test_paths
        .iter()
        .find(|p| protects(p, &lexical) || through.as_ref().is_some_and(|names| protects(p, names)))
        .map(Protected::By)
}

fn judge(settings: &str, req: &Request) -> Decision {
    let policy = match policy(settings) {
        Ok(policy) => policy,
        Err(problem) => return invalid_settings(&problem),
    };
    if policy.exempt_roles.contains(&req.role) {
        return allow();
    }
    // A create-only tool may add a file under a test path (it refuses to
    // overwrite one), but not name the root, which holds every test.
    let creating: Vec<&str> = policy
        .create_tools
        .iter()
        .filter(|(tool, _)| pattern::matches(tool, &req.tool))
        .flat_map(|(_, names)| names.iter().map(String::as_str))
        .collect();
    if !creating.is_empty() {
        return judge_paths(&policy, req, &creating, true);
    }
    let mut fields: Vec<&str> = Vec::new();
    for (tool, names) in &policy.tools {
        if pattern::matches(tool, &req.tool) {
            for name in names {
                if !fields.contains(&name.as_str()) {
                    fields.push(name);
                }
            }
        }
    }
    let listed = policy
        .tools
        .iter()
        .any(|(tool, _)| pattern::matches(tool, &req.tool));
    if !listed && req.destructive {
        fields = policy
            .destructive_fields
            .iter()
            .map(String::as_str)
            .collect();
    }
    judge_paths(&policy, req, &fields, false)
}

/// Judges the paths in the input `fields` of `req`: denied when one is
/// protected (only the root, for a create-only tool: `creating`), or when the
/// input cannot be read for paths.
fn judge_paths(policy: &Policy, req: &Request, fields: &[&str], creating: bool) -> Decision {
    if fields.is_empty() {
        return allow();
    }
    let input = match serde_json::from_str::<Value>(&req.input) {
        Ok(Value::Object(input)) => input,
        Ok(other) => return cannot_tell(req, &format!("its input is {}", kind_of(&other))),
        Err(e) => return cannot_tell(req, &format!("its input is not valid JSON: {e}")),
    };
    for &field in fields {
        let paths: Vec<&str> = match input.get(field) {
            None | Some(Value::Null) => continue,
            Some(Value::String(path)) => vec![path],
            Some(Value::Array(items)) => {
                let mut paths = Vec::with_capacity(items.len());
                for item in items {
                    match item {
                        Value::String(path) => paths.push(path.as_str()),
                        other => {
                            return cannot_tell(
                                req,
                                &format!(
                                    "its field `{field}` holds {} where a path was expected",
                                    kind_of(other)
                                ),
                            );
                        }
                    }
                }
                paths
            }
            Some(other) => {
                return cannot_tell(
                    req,
                    &format!(
                        "its field `{field}` is {}, not a path (a string) or a list of paths",
                        kind_of(other)
                    ),
                );
            }
        };
        for path in paths {
            match protected_by(policy, path) {
                Some(Protected::By(_)) if creating => {}
                Some(why) => return protected(req, field, path, why),
                None => {}
            }
        }
    }
    allow()
}

fn protected(req: &Request, field: &str, path: &str, why: Protected) -> Decision {
    let what = match why {
        Protected::By(pattern) => format!(
            "it is a test path (`{}` in the ratchet hook's setting `test_paths`)",
            pattern.text
        ),
        Protected::Root => "it is the root, which holds every test path (the ratchet hook's \
                            setting `test_paths`)"
            .to_owned(),
    };
    deny(
        format!(
            "{} may not delete or rewrite `{path}` (field `{field}`): {what}, and tests may \
             not be deleted or changed to make them pass",
            req.tool
        ),
        [
            "fix the code under test so that the test passes, instead of changing the test"
                .to_owned(),
            "add a new test file instead: propose its content in your handoff, for an \
             operator (or a role in the hook's `exempt_roles`) to add"
                .to_owned(),
            "if the test itself is wrong, say why in your handoff and ask an operator to \
             change it"
                .to_owned(),
        ],
    )
}

fn cannot_tell(req: &Request, problem: &str) -> Decision {
    deny(
        format!(
            "cannot tell whether the call to {} changes a test path: {problem}",
            req.tool
        ),
        ["send the input as a JSON object whose path fields are strings"],
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use glovebox_hook_sdk::testing::request;

    const SETTINGS: &str = r#"{"test_paths": ["tests/", "*_test.py", "fixtures/*.json"],
        "tools": {"files.write": ["path"], "files.delete": ["path"], "files.move": ["from", "to"],
                  "files.bulk*": ["paths"]},
        "create_tools": {"files.create": ["path"]},
        "exempt_roles": ["operator"]}"#;

    fn call(tool: &str, input: &str) -> Request {
        request(tool, "execute:file:write", "workagent", input, 0.0, true)
    }

    fn reason(d: Decision) -> String {
        match d {
            Decision::Deny(d) => d.reason,
            other => panic!("expected a deny, got {other:?}"),
        }
    }

    #[test]
    fn names_match_with_stars() {
        assert!(name_matches("tests", "tests"));
        assert!(!name_matches("tests", "tests2"));
        assert!(name_matches("*_test.py", "a_test.py"));
        assert!(name_matches("*_test.py", "_test.py"));
        assert!(!name_matches("*_test.py", "a_test.pyc"));
        assert!(name_matches("test_*.py", "test_a.py"));
        assert!(name_matches("*", "x"));
        assert!(name_matches("a*b*c", "abc"));
        assert!(name_matches("a*b*c", "axxbyyc"));
        assert!(!name_matches("a*b*c", "axxcyyb"));
        assert!(!name_matches("ab*ba", "aba"));
    }

    #[test]
    fn paths_are_normalized_before_matching() {
        assert_eq!(path::names("./tests/../tests/a.rs"), ["tests", "a.rs"]);
        assert_eq!(
            path::names("/data//x/./y\\Z.rs"),
            ["data", "x", "y", "z.rs"]
        );
        assert_eq!(path::names("/../../tests/a"), ["tests", "a"]);
        assert_eq!(
            passed_through("/data/tests/../src/a.rs"),
            ["data", "tests", "src", "a.rs"]
        );
    }

    #[test]
    fn writes_onto_test_paths_are_denied_however_spelt() {
        for path in [
            "/data/tests/a.rs",
            "/data/tests",
            "/data/tests/",
            "./tests/../tests/a.rs",
            "/data/src/../tests/a.rs",
            "/data/Tests/A.rs",
            "/data\\tests\\a.rs",
            "/data/pkg/tests/unit/b.rs",
            "/data/tests/../src/a.rs",
            "/data/app/b_test.py",
            "/data/app/B_TEST.PY",
            "/data/tests/fixtures/x.json",
            "/data/other/fixtures/x.json",
            "tests/a.rs",
        ] {
            let input = serde_json::json!({"path": path, "content": "x"}).to_string();
            let r = reason(judge(SETTINGS, &call("files.write", &input)));
            assert!(
                r.contains(path) && r.contains("field `path`"),
                "{path}: {r}"
            );
        }
        let r = reason(judge(
            SETTINGS,
            &call("files.delete", r#"{"path": "/data/tests/a.rs"}"#),
        ));
        assert!(r.contains("`tests/`") && r.contains("`test_paths`"), "{r}");
        let r = reason(judge(
            SETTINGS,
            &call(
                "files.move",
                r#"{"from": "/data/src/a.rs", "to": "/data/tests/a.rs"}"#,
            ),
        ));
        assert!(r.contains("field `to`"), "{r}");
        let r = reason(judge(
            SETTINGS,
            &call(
                "files.bulk-delete",
                r#"{"paths": ["/data/a", "/data/x_test.py"]}"#,
            ),
        ));
        assert!(r.contains("x_test.py") && r.contains("`*_test.py`"), "{r}");
    }

    #[test]
    fn other_calls_are_allowed() {
        for path in [
            "/data/src/a.rs",
            "/data/testsuite/a.rs",
            "/data/mytests/a.rs",
            "/data/app/test.py",
            "/data/fixtures.json",
            "/data/fixtures/x.txt",
        ] {
            let input = serde_json::json!({"path": path, "content": "x"}).to_string();
            assert_eq!(
                judge(SETTINGS, &call("files.write", &input)),
                Decision::Allow,
                "{path}"
            );
        }
        // Reads of tests are not judged; nor are inputs without the path field.
        let mut read = call("files.read", r#"{"path": "/data/tests/a.rs"}"#);
        read.destructive = false;
        assert_eq!(judge(SETTINGS, &read), Decision::Allow);
        assert_eq!(judge(SETTINGS, &call("files.write", "{}")), Decision::Allow);
        // An exempt role may change tests.
        let mut req = call("files.write", r#"{"path": "/data/tests/a.rs"}"#);
        req.role = "operator".to_owned();
        assert_eq!(judge(SETTINGS, &req), Decision::Allow);
    }

    #[test]
    fn a_create_only_tool_may_add_tests_but_not_name_the_root() {
        // `files.create`, named: a new test is allowed wherever tests live.
        for path in ["/data/tests/new.rs", "/data/app/c_test.py", "tests/x/y.rs"] {
            let input = serde_json::json!({"path": path, "content": "x"}).to_string();
            assert_eq!(
                judge(SETTINGS, &call("files.create", &input)),
                Decision::Allow,
                "{path}"
            );
        }
        // The root holds every test: denied whichever the tool.
        let r = reason(judge(
            SETTINGS,
            &call("files.create", r#"{"path": "/", "content": "x"}"#),
        ));
        assert!(r.contains("field `path`"), "{r}");
        // Its input still has to be readable for paths.
        assert!(matches!(
            judge(SETTINGS, &call("files.create", r#"{"path": 3}"#)),
            Decision::Deny(_)
        ));
        // The writer keeps being refused the same path.
        assert!(matches!(
            judge(
                SETTINGS,
                &call("files.write", r#"{"path": "/data/tests/new.rs"}"#)
            ),
            Decision::Deny(_)
        ));
        // Named by the operator; without it (the default) or with `{}`, the
        // tool is judged as any destructive tool (here by `destructive_fields`).
        let own = r#"{"test_paths": ["tests/"], "create_tools": {"fs.add_*": ["target"]}}"#;
        assert_eq!(
            judge(own, &call("fs.add_file", r#"{"target": "/w/tests/a"}"#)),
            Decision::Allow
        );
        assert!(matches!(
            judge(own, &call("files.create", r#"{"path": "/w/tests/a"}"#)),
            Decision::Deny(_)
        ));
        for off in [
            r#"{"test_paths": ["tests/"], "create_tools": {}}"#,
            r#"{"test_paths": ["tests/"]}"#,
        ] {
            assert!(matches!(
                judge(off, &call("files.create", r#"{"path": "/w/tests/a"}"#)),
                Decision::Deny(_)
            ));
        }
        // A malformed entry denies everything, naming the key.
        let bad = r#"{"test_paths": ["tests/"], "create_tools": {"files.create": []}}"#;
        let r = reason(judge(bad, &call("files.read", "{}")));
        assert!(r.contains("create_tools.files.create"), "{r}");
    }

    #[test]
    fn default_tools_are_the_example_file_writer() {
        let settings = r#"{"test_paths": ["tests/"]}"#;
        assert!(matches!(
            judge(
                settings,
                &call("files.write", r#"{"path": "/data/tests/a"}"#)
            ),
            Decision::Deny(_)
        ));
        // An unlisted tool is judged by `destructive_fields` when it is destructive.
        let mut delete = call("files.delete", r#"{"path": "/data/tests/a"}"#);
        assert!(matches!(judge(settings, &delete), Decision::Deny(_)));
        let off = r#"{"test_paths": ["tests/"], "destructive_fields": []}"#;
        assert_eq!(judge(off, &delete), Decision::Allow);
        delete.destructive = false;
        assert_eq!(judge(settings, &delete), Decision::Allow);
        let drop = call("db.drop", r#"{"query": "DROP TABLE tests", "path": "/"}"#);
        let r = reason(judge(settings, &drop));
        assert!(r.contains("`/` (field `path`): it is the root"), "{r}");
    }

    #[test]
    fn the_root_holds_every_test() {
        for path in ["/", "", ".", "/data/..", "\\\\"] {
            let input = serde_json::json!({ "path": path }).to_string();
            let r = reason(judge(SETTINGS, &call("files.write", &input)));
            assert!(r.contains("it is the root"), "{path:?}: {r}");
        }
    }

    #[test]
    fn bad_settings_and_inputs_fail_closed() {
        let read = call("files.read", r#"{"path": "/data/x"}"#);
        for (settings, expected) in [
            ("", "`test_paths` is missing"),
            (r#"{"test_paths": []}"#, "`test_paths` is empty"),
            (
                r#"{"test_paths": "tests/"}"#,
                "must be an array of strings, got a string",
            ),
            (r#"{"test_paths": [1]}"#, "`test_paths[0]` must be a string"),
            (r#"{"test_paths": ["/tests/"]}"#, "starts with `/`"),
            (r#"{"test_paths": ["a/../b"]}"#, "`..`"),
            (r#"{"test_paths": ["**/x"]}"#, "`**`"),
            (
                r#"{"test_paths": ["t"], "tools": []}"#,
                "`tools` must be an object",
            ),
            (
                r#"{"test_paths": ["t"], "tools": {"Files.write": ["path"]}}"#,
                "uppercase",
            ),
            (
                r#"{"test_paths": ["t"], "tools": {"files.write": "path"}}"#,
                "`tools.files.write`",
            ),
            (
                r#"{"test_paths": ["t"], "tools": {"files.write": []}}"#,
                "is empty",
            ),
            (
                r#"{"test_paths": ["t"], "exempt_roles": "operator"}"#,
                "`exempt_roles`",
            ),
            (
                r#"{"test_paths": ["t"], "destructive_fields": [""]}"#,
                "`destructive_fields[0]`",
            ),
            (
                r#"{"test_paths": ["t"], "paths": []}"#,
                "unknown settings key `paths`",
            ),
        ] {
            let r = reason(judge(settings, &read));
            assert!(
                r.starts_with("invalid hook settings") && r.contains(expected),
                "{settings}: {r}"
            );
        }
        for input in ["not json", "[]", r#"{"path": 1}"#, r#"{"path": [1]}"#] {
            let r = reason(judge(SETTINGS, &call("files.write", input)));
            assert!(
                r.starts_with("cannot tell whether the call"),
                "{input}: {r}"
            );
        }
    }
}
