//! Builds the component (`./build.sh`) and has it judge requests through the real
//! `glovebox` binary (`glovebox hook test`), loaded as a host loads its hooks.
//! The binary is `$GLOVEBOX` when set, else `glovebox` on PATH.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Mutex, OnceLock};

use serde_json::{Value, json};

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

/// `glovebox hook test {{name}} --request REQUEST --json [EXTRA...]` with the project's
/// config: the exit code and the JSON document it prints.
fn judge(request: Value, extra: &[&str]) -> (i32, Value) {
    // One at a time: the runs share the config's data dir.
    static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());
    built();
    let binary = glovebox();
    let _turn = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let out = Command::new(&binary)
        .arg("--config")
        .arg(project().join("glovebox.toml"))
        .args(["hook", "test", "{{name}}", "--json", "--request"])
        .arg(request.to_string())
        .args(extra)
        .output()
        .unwrap_or_else(|e| panic!("cannot run `{}`: {e}", binary.display()));
    let doc = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "`glovebox hook test` printed no JSON ({e}); its stderr:\n{}",
            String::from_utf8_lossy(&out.stderr)
        )
    });
    (out.status.code().unwrap_or(-1), doc)
}

#[test]
fn denies_a_recursive_deletion_with_alternatives() {
    let request = json!({"action": "execute:file:delete", "tool": "files.delete",
                         "input": {"path": "/data/old", "recursive": true}});
    let (code, doc) = judge(request, &[]);
    // Exit code 3: denied.
    assert_eq!(code, 3, "{doc:#}");
    assert_eq!(doc["decision"]["decision"], "deny", "{doc:#}");
    let reason = doc["decision"]["reason"].as_str().unwrap_or_default();
    assert!(reason.contains("recursive deletion"), "{doc:#}");
    let alternatives = doc["decision"]["alternatives"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    assert_eq!(alternatives.len(), 2, "{doc:#}");
}

#[test]
fn allows_a_single_deletion() {
    let request = json!({"action": "execute:file:delete", "input": {"path": "/data/old.txt"}});
    let (code, doc) = judge(request, &[]);
    assert_eq!(code, 0, "{doc:#}");
    assert_eq!(doc["decision"]["decision"], "allow", "{doc:#}");
}

#[test]
fn is_not_consulted_for_other_actions() {
    let request = json!({"action": "read:file", "input": {"recursive": true}});
    let (code, doc) = judge(request, &[]);
    assert_eq!(code, 0, "{doc:#}");
    assert_eq!(doc["consulted"], false, "{doc:#}");
}

#[test]
fn fails_closed_on_settings_it_does_not_know() {
    let request = json!({"action": "execute:shell:run", "input": {"command": "ls"}});
    let (code, doc) = judge(request, &["--settings", r#"{"mode": "lenient"}"#]);
    assert_eq!(code, 3, "{doc:#}");
    let reason = doc["decision"]["reason"].as_str().unwrap_or_default();
    assert!(reason.contains("mode"), "{doc:#}");
}
