//! The `glovebox` binary, run as an operator or a plugin author would.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use crate::util::plugins;

use crate::util::{Site, glovebox};

fn examples() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("examples")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

fn run(cmd: &mut Command) -> (i32, String, String) {
    let Output {
        status,
        stdout,
        stderr,
    } = cmd.output().expect("run glovebox");
    (status.code().unwrap_or(-1), text(&stdout), text(&stderr))
}

/// A config in a temp dir with one plugin, written as an operator would.
struct TempConfig {
    dir: tempfile::TempDir,
}

impl TempConfig {
    fn new(name: &str, component: &str, extra: &str) -> TempConfig {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("glovebox.toml"),
            format!(
                "data_dir = \"data\"\nhooks = \"none\"\n[runtime]\n{}\n[[plugin]]\nmanifest = \"{name}.toml\"\n",
                crate::util::cache_keys()
            ),
        )
        .unwrap();
        std::fs::write(
            dir.path().join(format!("{name}.toml")),
            format!("name = \"{name}\"\ncomponent = \"{component}\"\n{extra}"),
        )
        .unwrap();
        TempConfig { dir }
    }

    fn path(&self) -> PathBuf {
        self.dir.path().join("glovebox.toml")
    }
}

#[test]
fn call_echo_on_the_example_config_returns_its_input() {
    let (code, out, err) = run(glovebox()
        .arg("--config")
        .arg(examples().join("glovebox.toml"))
        .args([
            "call",
            "echo.echo",
            "--input",
            r#"{"message":"hello, hands"}"#,
        ]));
    assert_eq!(code, 0, "stderr: {err}");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["message"], "hello, hands");
    assert!(
        err.contains("wall") && err.contains("peak memory") && err.contains("bytes in"),
        "{err}"
    );
}

#[test]
fn call_reads_input_from_a_file_and_from_stdin() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("input.json");
    std::fs::write(&input, r#"{"text":"from a file"}"#).unwrap();
    let config = examples().join("glovebox.toml");
    let (code, out, err) = run(glovebox()
        .arg("--config")
        .arg(&config)
        .args(["call", "text.upper", "--input-file"])
        .arg(&input));
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("FROM A FILE"), "{out}");

    use std::io::Write;
    let mut child = glovebox()
        .arg("--config")
        .arg(&config)
        .args(["call", "text.lower", "--input", "-"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(br#"{"text":"FROM STDIN"}"#)
        .unwrap();
    let output = child.wait_with_output().unwrap();
    assert_eq!(output.status.code(), Some(0), "{}", text(&output.stderr));
    assert!(text(&output.stdout).contains("from stdin"));
}

#[test]
fn call_json_prints_result_metering_and_output() {
    let (code, out, err) = run(glovebox()
        .arg("--config")
        .arg(examples().join("glovebox.toml"))
        .args(["call", "echo", "--json", "--input", r#"{"message":"j"}"#]));
    assert_eq!(code, 0, "{err}");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["ok"], true);
    assert_eq!(v["output"]["message"], "j");
    assert!(v["metering"]["wall"].as_f64().unwrap() > 0.0);
    assert!(v["metering"]["peak_memory_bytes"].as_u64().unwrap() > 0);
}

/// `config schema` prints the JSON Schema an editor checks `glovebox.toml`
/// with (`--manifest`: a plugin manifest's), and the example config and
/// every example manifest are valid under it.
#[test]
fn config_schema_prints_a_schema_the_examples_are_valid_under() {
    let toml_as_json = |path: &Path| -> serde_json::Value {
        let text = std::fs::read_to_string(path).unwrap();
        let value: toml::Value = toml::from_str(&text).unwrap();
        serde_json::to_value(value).unwrap()
    };
    for (args, files) in [
        (
            &["config", "schema"][..],
            vec![examples().join("glovebox.toml")],
        ),
        (
            &["config", "schema", "--manifest"][..],
            std::fs::read_dir(examples().join("plugins"))
                .unwrap()
                .map(|e| e.unwrap().path())
                .filter(|p| p.extension().is_some_and(|x| x == "toml"))
                .collect(),
        ),
    ] {
        let (code, out, err) = run(glovebox().args(args));
        assert_eq!(code, 0, "{args:?}: {err}");
        let schema: serde_json::Value = serde_json::from_str(&out).unwrap();
        let validator = jsonschema::validator_for(&schema).unwrap();
        assert!(!files.is_empty());
        for file in files {
            let errors: Vec<String> = validator
                .iter_errors(&toml_as_json(&file))
                .map(|e| format!("{} at {}", e, e.instance_path()))
                .collect();
            assert!(errors.is_empty(), "{}: {errors:#?}", file.display());
        }
        // A typo is refused by the schema as by the config.
        let typo = serde_json::json!({ "runtime": { "max_concurent_calls": 4 } });
        if args.len() == 2 {
            assert!(!validator.is_valid(&typo));
        }
    }
}

#[test]
fn tools_lists_the_configured_tools() {
    let (code, out, err) = run(glovebox()
        .arg("--config")
        .arg(examples().join("glovebox.toml"))
        .arg("tools"));
    assert_eq!(code, 0, "{err}");
    for tool in [
        "echo.echo",
        "text.upper",
        "files.read",
        "files.write",
        "fetch.fetch",
    ] {
        assert!(out.contains(tool), "{tool} missing from:\n{out}");
    }
    assert!(
        out.contains("destructive"),
        "files.write is marked destructive:\n{out}"
    );
}

#[test]
fn plugin_check_lists_the_tools_of_each_example_plugin() {
    let cases = [
        ("echo.toml", vec!["echo.echo"]),
        (
            "text.toml",
            vec![
                "text.upper",
                "text.lower",
                "text.reverse",
                "text.word-count",
            ],
        ),
        (
            "files.toml",
            vec!["files.list", "files.read", "files.write", "files.create"],
        ),
        ("fetch.toml", vec!["fetch.fetch"]),
    ];
    for (manifest, tools) in cases {
        let (code, out, err) = run(glovebox()
            .args(["plugin", "check"])
            .arg(examples().join("plugins").join(manifest)));
        assert_eq!(code, 0, "{manifest}: {err}");
        assert!(out.contains("is a valid tool plugin"), "{out}");
        assert!(out.contains("input schema"), "{out}");
        for tool in tools {
            assert!(out.contains(tool), "{tool} missing from:\n{out}");
        }
    }
}

#[test]
fn plugin_check_takes_a_bare_component() {
    let (code, out, err) = run(glovebox().args(["plugin", "check", plugins::TOOL_TEXT]));
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("tool-text.upper"), "{out}");
}

#[test]
fn plugin_check_says_exactly_what_is_wrong() {
    for (path, expected) in [
        (plugins::HOSTILE_CORE_MODULE, "core WebAssembly module"),
        (
            plugins::HOSTILE_WRONG_WORLD,
            "does not export `glovebox:plugin/tool@0.1.0`",
        ),
        (plugins::NOT_WASM, "not a WebAssembly file"),
        (plugins::HOSTILE_MISSING_EXPORT, "`call`"),
    ] {
        let (code, _, err) = run(glovebox().args(["plugin", "check", path]));
        assert_eq!(code, 2, "{path}: {err}");
        assert!(err.contains(expected), "{path}: {err}");
    }
}

#[test]
fn exit_codes_are_distinct_per_failure() {
    let looping = TempConfig::new(
        "loop",
        plugins::HOSTILE_INFINITE_LOOP,
        "[limits]\ndeadline = \"300ms\"\n",
    );
    let (code, _, err) = run(glovebox().arg("--config").arg(looping.path()).args([
        "call",
        "loop.spin",
        "--input",
        "{}",
    ]));
    assert_eq!(code, 6, "timeout: {err}");
    assert!(err.contains("timed out"), "{err}");

    let panicky = TempConfig::new("panicky", plugins::HOSTILE_PANIC, "");
    let (code, _, err) = run(glovebox().arg("--config").arg(panicky.path()).args([
        "call",
        "panicky.panic",
        "--input",
        "{}",
    ]));
    assert_eq!(code, 5, "tool error: {err}");

    let echo = TempConfig::new("echo", plugins::TOOL_ECHO, "");
    let (code, _, err) = run(glovebox().arg("--config").arg(echo.path()).args([
        "call",
        "echo.echo",
        "--input",
        "{not json",
    ]));
    assert_eq!(code, 4, "invalid input: {err}");
    let (code, _, err) = run(glovebox()
        .arg("--config")
        .arg(echo.path())
        .args(["call", "nope", "--input", "{}"]));
    assert_eq!(code, 4, "unknown tool: {err}");
    assert!(err.contains("echo.echo"), "{err}");
}

#[test]
fn config_errors_name_the_file_the_key_and_the_fix() {
    let bad = TempConfig::new("echo", plugins::TOOL_ECHO, "[limits]\nmemroy = \"1 MiB\"\n");
    let (code, _, err) = run(glovebox().arg("--config").arg(bad.path()).arg("tools"));
    assert_eq!(code, 2);
    assert!(err.contains("echo.toml") && err.contains("memroy"), "{err}");

    let (code, _, err) = run(glovebox().args(["--config", "/nonexistent/glovebox.toml", "tools"]));
    assert_eq!(code, 2);
    assert!(err.contains("/nonexistent/glovebox.toml"), "{err}");
}

/// `log verify`, `session list` and `context list` on a data dir without
/// entries say so, as `approvals` and `rescue list` do, rather than printing
/// nothing, and succeed (`--json` gives `[]` to scripts). With a session they
/// report it.
#[test]
fn listings_say_when_there_is_nothing() {
    let site = Site::new(false);
    for (args, says) in [
        (
            &["log", "verify"][..],
            "no sessions in this data dir: nothing to verify",
        ),
        (&["session", "list"][..], "no sessions in this data dir"),
        (&["context", "list"][..], "no context entries"),
    ] {
        let (code, out, err) = site.run(args);
        assert_eq!((code, out.trim()), (0, says), "{err}");
    }
    let (code, out, err) = site.run(&["session", "list", "--json"]);
    assert_eq!((code, out.trim()), (0, "[]"), "{err}");

    let (code, _, err) = site.run(&["session", "start", "--role", "workagent", "--project", "p"]);
    assert_eq!(code, 0, "{err}");
    let (code, out, err) = site.run(&["log", "verify"]);
    assert_eq!(code, 0, "{err}");
    assert!(out.starts_with("ok "), "{out}");
    let (code, out, err) = site.run(&["session", "list"]);
    assert_eq!(code, 0, "{err}");
    assert!(
        out.contains("workagent") && !out.contains("no sessions"),
        "{out}"
    );
    let (code, out, err) = site.run(&["session", "list", "--role", "supervisor"]);
    assert_eq!(
        (code, out.trim()),
        (0, "no sessions match the filter"),
        "{err}"
    );
}
