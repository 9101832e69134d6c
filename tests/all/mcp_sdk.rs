//! The MCP server driven by a real client: the official Python MCP SDK (the
//! `mcp` package from PyPI, installed into a virtualenv under the target dir
//! on first run), through the pytest suite in `tests/mcp/`.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::util::plugins;

/// The `mcp` release the tests are written against (2.x: `mcp.Client`).
const MCP_VERSION: &str = "2.3.0";

/// A virtualenv with the Python MCP SDK and pytest, made once per target dir.
fn venv() -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("mcp-venv");
    let python = dir.join("bin/python");
    let stamp = dir.join(format!("installed-mcp-{MCP_VERSION}"));
    if !stamp.exists() {
        let status = Command::new("python3")
            .args(["-m", "venv"])
            .arg(&dir)
            .status()
            .expect("python3 runs");
        assert!(
            status.success(),
            "cannot create a virtualenv in {}",
            dir.display()
        );
        let status = Command::new(&python)
            .args([
                "-m",
                "pip",
                "install",
                "--quiet",
                &format!("mcp=={MCP_VERSION}"),
                "pytest",
            ])
            .status()
            .expect("pip runs");
        assert!(
            status.success(),
            "cannot install the Python MCP SDK from PyPI"
        );
        std::fs::write(&stamp, "").unwrap();
    }
    python
}

/// A config serving echo, text (word-count costs 9.00), files and sleep, with
/// the cost-control and destructive hooks.
fn write_config(dir: &Path) -> PathBuf {
    std::fs::create_dir_all(dir.join("work")).unwrap();
    let config = dir.join("glovebox.toml");
    std::fs::write(
        &config,
        format!(
            r#"data_dir = "data"
[runtime]
{cache}
# The agents here are told "awaiting approval" at once (the wait for an
# operator is tested in `operator.rs`).
[approvals]
wait = 0

# Agents may propose to their project's memory (`test_memory.py`).
[memory.propose]
project = ["workagent"]

[[plugin]]
manifest = "echo.toml"
[[plugin]]
manifest = "text.toml"
[[plugin]]
manifest = "files.toml"
[[plugin]]
manifest = "sleep.toml"

[[hook]]
name = "cost-control"
component = "{cost}"

[[hook]]
name = "destructive"
component = "{destructive}"
[hook.settings]
mode = "ask"
"#,
            cache = crate::util::cache_keys(),
            cost = plugins::HOOK_COST_CONTROL,
            destructive = plugins::HOOK_DESTRUCTIVE,
        ),
    )
    .unwrap();
    let manifests = [
        ("echo", plugins::TOOL_ECHO, ""),
        (
            "text",
            plugins::TOOL_TEXT,
            "[tools.word-count]\ncost = 9.0\n",
        ),
        (
            "files",
            plugins::TOOL_FILES,
            "[[fs]]\nhost = \"work\"\nguest = \"/data\"\naccess = \"read-write\"\n",
        ),
        (
            "sleep",
            plugins::HOSTILE_SLEEP,
            "[limits]\ndeadline = \"60s\"\n",
        ),
    ];
    for (name, component, extra) in manifests {
        std::fs::write(
            dir.join(format!("{name}.toml")),
            format!("name = \"{name}\"\ncomponent = \"{component}\"\n{extra}"),
        )
        .unwrap();
    }
    config
}

#[test]
fn the_python_mcp_sdk_drives_the_server_over_stdio_and_http() {
    let python = venv();
    let dir = tempfile::tempdir().unwrap();
    let config = write_config(dir.path());
    let tests = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/mcp");
    let output = Command::new(python)
        .args(["-m", "pytest", "-q", "-rA", "-p", "no:cacheprovider"])
        .arg(&tests)
        .current_dir(&tests)
        .env("GLOVEBOX_BIN", env!("CARGO_BIN_EXE_glovebox"))
        .env("GLOVEBOX_CONFIG", &config)
        .env_remove("RUST_LOG")
        .output()
        .expect("pytest runs");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success(),
        "the Python MCP tests failed:\n{stdout}\n{stderr}"
    );
    assert!(stdout.contains(" passed"), "{stdout}");
    // pytest's summary, shown with `--nocapture`.
    eprintln!("{stdout}");
}
