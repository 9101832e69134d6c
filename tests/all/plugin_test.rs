//! `glovebox plugin test PLUGIN --cases FILE`: a plugin's cases run by the
//! real binary in the real host, passing and failing, in text and `--json`,
//! and a case file that is wrong refused with the case and the fix.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

use crate::util::{glovebox, plugins};

/// A plugin manifest for the files tool with `work/` granted read-write at
/// `/data` (holding `a.txt`), as an author would write it.
fn files_plugin(dir: &Path) -> PathBuf {
    std::fs::create_dir(dir.join("work")).unwrap();
    std::fs::write(dir.join("work/a.txt"), "hello\n").unwrap();
    let manifest = dir.join("files.toml");
    std::fs::write(
        &manifest,
        format!(
            "name = \"files\"\ncomponent = \"{}\"\n[[fs]]\nhost = \"work\"\nguest = \"/data\"\naccess = \"read-write\"\n",
            plugins::TOOL_FILES
        ),
    )
    .unwrap();
    manifest
}

/// `plugin test` with the compile cache under the target dir.
fn plugin_test(manifest: &Path, cases: &Path, json: bool) -> (i32, String, String) {
    let mut cmd: Command = glovebox();
    cmd.args(["plugin", "test"])
        .arg(manifest)
        .arg("--cases")
        .arg(cases)
        .env(
            "XDG_CACHE_HOME",
            PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("plugin-test-cache"),
        );
    if json {
        cmd.arg("--json");
    }
    crate::util::outcome(&mut cmd)
}

#[test]
fn passing_cases_print_a_line_each_and_exit_0() {
    let dir = tempfile::tempdir().unwrap();
    let manifest = files_plugin(dir.path());
    let cases = dir.path().join("cases.toml");
    std::fs::write(
        &cases,
        format!(
            r#"role = "workagent"

[[hook]]
component = "{roles}"
settings = {{ roles = {{ workagent = ["files.read", "files.list"] }} }}

[[case]]
name = "reads a granted file"
tool = "files.read"
input = {{ path = "/data/a.txt" }}
expect = {{ content = "hello\n" }}

[[case]]
tool = "files.read"
input = {{ path = "/data/missing.txt" }}
error = "tool_failed"

[[case]]
name = "a workagent may not write"
tool = "files.write"
input = {{ path = "/data/b.txt", content = "x" }}
error = "denied"
"#,
            roles = plugins::HOOK_ROLE_ALLOWLIST
        ),
    )
    .unwrap();
    let (code, out, err) = plugin_test(&manifest, &cases, false);
    assert_eq!(code, 0, "{out}\n{err}");
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines.len(), 4, "{out}");
    assert!(
        lines[0].starts_with("ok    reads a granted file  ("),
        "{out}"
    );
    assert!(lines[1].starts_with("ok    case 2  ("), "{out}");
    assert!(
        lines[2].starts_with("ok    a workagent may not write  ("),
        "{out}"
    );
    assert_eq!(lines[3], "3 cases: 3 passed, 0 failed");
    // The hook denied the write: nothing was written.
    assert!(!dir.path().join("work/b.txt").exists());
}

#[test]
fn a_failing_case_is_named_with_why_and_the_run_exits_1() {
    let dir = tempfile::tempdir().unwrap();
    let manifest = files_plugin(dir.path());
    let cases = dir.path().join("cases.json");
    std::fs::write(
        &cases,
        r#"{"case": [
            {"name": "reads", "tool": "files.read", "input": {"path": "/data/a.txt"}, "expect": {"content": "hello\n"}},
            {"name": "wrong content", "tool": "files.read", "input": {"path": "/data/a.txt"}, "expect": {"content": "bye"}},
            {"name": "not denied", "tool": "files.list", "input": {"path": "/data"}, "error": "denied"}
        ]}"#,
    )
    .unwrap();
    let (code, out, err) = plugin_test(&manifest, &cases, false);
    assert_eq!(code, 1, "{out}\n{err}");
    assert!(
        out.contains("FAIL  wrong content: the output differs at `$.content`: expected \"bye\", got \"hello\\n\""),
        "{out}"
    );
    assert!(
        out.contains("FAIL  not denied: expected a `denied` error, but the call succeeded"),
        "{out}"
    );
    assert!(out.ends_with("3 cases: 1 passed, 2 failed\n"), "{out}");

    // The same with --json: one object per case, for a test runner to read.
    let (code, out, err) = plugin_test(&manifest, &cases, true);
    assert_eq!(code, 1, "{out}\n{err}");
    let results: Vec<Value> = out
        .lines()
        .map(|line| serde_json::from_str(line).expect("a JSON object per line"))
        .collect();
    assert_eq!(results.len(), 3, "{out}");
    assert_eq!(results[0]["passed"], true);
    assert_eq!(results[0]["output"]["content"], "hello\n");
    assert_eq!(results[1]["passed"], false);
    assert_eq!(results[1]["case"], 2);
    assert!(
        results[1]["problem"]
            .as_str()
            .unwrap()
            .contains("at `$.content`"),
        "{out}"
    );
    assert_eq!(results[2]["name"], "not denied");
    assert_eq!(results[2]["passed"], false);
}

#[test]
fn a_wrong_case_file_is_refused_naming_the_case_and_the_fix() {
    let dir = tempfile::tempdir().unwrap();
    let manifest = files_plugin(dir.path());
    let cases = dir.path().join("cases.toml");
    std::fs::write(
        &cases,
        "[[case]]\ntool = \"files.read\"\n\n[[case]]\nname = \"slow\"\ntool = \"files.read\"\nerror = \"timeot\"\n",
    )
    .unwrap();
    let (code, out, err) = plugin_test(&manifest, &cases, false);
    assert_eq!(code, 2, "{out}\n{err}");
    assert!(out.is_empty(), "nothing ran: {out}");
    assert!(
        err.contains(
            "case 2 (`slow`): `error = \"timeot\"` is not an error kind: use one of denied"
        ),
        "{err}"
    );
    assert!(err.contains("cases.toml"), "{err}");
}

/// The Python package beside the Rust crate (`host/test/python`): its
/// pytest fixture runs cases through this binary; a passing test, a wrong
/// case file raised as `GloveboxError`, and a test that must fail, failing.
#[test]
fn a_pytest_fixture_runs_cases_through_the_binary() {
    let python = crate::util::venv("pytest-venv", &["pytest"]);
    let dir = tempfile::tempdir().unwrap();
    let manifest = files_plugin(dir.path());
    std::fs::write(
        dir.path().join("test_plugin.py"),
        r#"import os
import pytest
from glovebox_test import GloveboxError

PLUGIN = os.environ["PLUGIN"]
ROLES = {"component": os.environ["HOOK"], "settings": {"roles": {"workagent": ["files.read"]}}}


def test_reads_and_is_denied(glovebox):
    files = glovebox(PLUGIN, role="workagent", hooks=[ROLES])
    ok = files.call("files.read", {"path": "/data/a.txt"}, expect={"content": "hello\n"})
    assert ok.passed, ok.problem
    assert ok.output == {"content": "hello\n"}
    denied = files.call("files.write", {"path": "/data/b.txt", "content": "x"})
    assert not denied.passed
    assert denied.kind == "denied"
    assert "role workagent may not use files.write" in denied.error["message"]


def test_a_wrong_case_raises(glovebox):
    with pytest.raises(GloveboxError, match="is not an error kind"):
        glovebox(PLUGIN).call("files.read", {"path": "/data/a.txt"}, error="timeot")


def test_must_fail(glovebox):
    result = glovebox(PLUGIN).call("files.read", {"path": "/data/a.txt"}, expect={"content": "bye"})
    assert result.passed, result.problem
"#,
    )
    .unwrap();
    let package = Path::new(env!("CARGO_MANIFEST_DIR")).join("host/test/python");
    let out = Command::new(python)
        .args([
            "-m",
            "pytest",
            "-p",
            "glovebox_test.plugin",
            "-q",
            "-p",
            "no:cacheprovider",
        ])
        .arg("test_plugin.py")
        .current_dir(dir.path())
        .env("PYTHONPATH", &package)
        .env("GLOVEBOX_BIN", env!("CARGO_BIN_EXE_glovebox"))
        .env("PLUGIN", &manifest)
        .env("HOOK", plugins::HOOK_ROLE_ALLOWLIST)
        .env(
            "XDG_CACHE_HOME",
            PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("plugin-test-cache"),
        )
        .output()
        .expect("run pytest");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{stdout}");
    assert!(stdout.contains("1 failed, 2 passed"), "{stdout}");
    assert!(
        stdout.contains("FAILED test_plugin.py::test_must_fail"),
        "{stdout}"
    );
    assert!(
        stdout.contains("the output differs at `$.content`"),
        "{stdout}"
    );
}
