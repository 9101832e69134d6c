//! Builds the component (`./build.sh`) and calls its tool through the real `glovebox`
//! binary, with the grants of `{{name}}.toml`: what an agent's call would get.
//! The binary is `$GLOVEBOX` when set, else `glovebox` on PATH.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Mutex, OnceLock};

use serde_json::Value;

fn project() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// The `glovebox` binary: `$GLOVEBOX`, else the first `glovebox` on PATH.
fn glovebox() -> PathBuf {
    if let Some(path) = std::env::var_os("GLOVEBOX") {
        return path.into();
    }
    std::env::var_os("PATH")
        .and_then(|paths| {
            std::env::split_paths(&paths)
                .map(|dir| dir.join("glovebox"))
                .find(|file| file.is_file())
        })
        .unwrap_or_else(|| {
            panic!(
                "the `glovebox` binary was not found on PATH: install it, or set \
                 GLOVEBOX=/path/to/glovebox"
            )
        })
}

/// Runs `./build.sh` once for all the tests.
fn built() {
    static BUILD: OnceLock<Result<(), String>> = OnceLock::new();
    let result = BUILD.get_or_init(|| {
        let status = Command::new("sh")
            .arg("build.sh")
            .current_dir(project())
            .status()
            .map_err(|e| format!("cannot run `sh build.sh`: {e}"))?;
        if status.success() {
            Ok(())
        } else {
            Err(format!(
                "`./build.sh` failed ({status}): see its output above"
            ))
        }
    });
    if let Err(e) = result {
        panic!("{e}");
    }
}

/// `glovebox call TOOL --input INPUT --json` with the project's config: the exit code
/// and the JSON document it prints.
fn call(tool: &str, input: &str) -> (i32, Value) {
    // One call at a time: the calls share the config's data dir.
    static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());
    built();
    let binary = glovebox();
    let _turn = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let out = Command::new(&binary)
        .arg("--config")
        .arg(project().join("glovebox.toml"))
        .args(["call", tool, "--input", input, "--json"])
        .output()
        .unwrap_or_else(|e| panic!("cannot run `{}`: {e}", binary.display()));
    let doc = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "`glovebox call {tool}` printed no JSON ({e}); its stderr:\n{}",
            String::from_utf8_lossy(&out.stderr)
        )
    });
    (out.status.code().unwrap_or(-1), doc)
}

#[test]
fn greets_by_name() {
    let (code, doc) = call("{{name}}.greet", r#"{"name": "Ada"}"#);
    assert_eq!(code, 0, "{doc:#}");
    assert_eq!(doc["output"]["greeting"], "hello, Ada", "{doc:#}");
}

#[test]
fn refuses_a_blank_name() {
    let (code, doc) = call("{{name}}.greet", r#"{"name": "  "}"#);
    // Exit code 4: invalid input.
    assert_eq!(code, 4, "{doc:#}");
    assert_eq!(doc["error"]["kind"], "invalid_input", "{doc:#}");
    let message = doc["error"]["message"].as_str().unwrap_or_default();
    assert!(message.contains("`name` is blank"), "{doc:#}");
}

#[test]
fn the_host_checks_the_schema_first() {
    // `name` is required by the tool's input schema: the host refuses the call
    // before the tool runs.
    let (code, doc) = call("{{name}}.greet", "{}");
    assert_eq!(code, 4, "{doc:#}");
    assert_eq!(doc["error"]["kind"], "invalid_input", "{doc:#}");
}
