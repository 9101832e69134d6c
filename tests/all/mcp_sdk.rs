//! The MCP server driven by a real client: the official Python MCP SDK (the
//! `mcp` package from PyPI, installed into a virtualenv under the target dir
//! on first run), through the pytest suite in `tests/mcp/`.

use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::util::plugins;

/// The `mcp` release the tests are written against (2.x: `mcp.Client`).
const MCP_VERSION: &str = "2.3.0";

/// A virtualenv with the Python MCP SDK and pytest, made once per target dir.
fn venv() -> PathBuf {
    crate::util::venv("mcp-venv", &[&format!("mcp=={MCP_VERSION}"), "pytest"])
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

/// Runs the pytest suite in `tests/<suite>/` with the venv's Python, the
/// glovebox binary in `GLOVEBOX_BIN` and `env` set; fails, with pytest's
/// output, unless it ran and every test passed. Returns pytest's stdout.
pub(crate) fn pytest(suite: &str, env: &[(&str, &OsStr)]) -> String {
    let tests = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests")
        .join(suite);
    let output = Command::new(venv())
        .args(["-m", "pytest", "-q", "-rA", "-p", "no:cacheprovider"])
        .arg(&tests)
        .current_dir(&tests)
        .env("GLOVEBOX_BIN", env!("CARGO_BIN_EXE_glovebox"))
        // The suites' shared helpers (`tests/python/`).
        .env("PYTHONPATH", tests.parent().unwrap().join("python"))
        .envs(env.iter().copied())
        .env_remove("RUST_LOG")
        .output()
        .expect("pytest runs");
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success(),
        "the Python tests in tests/{suite} failed:\n{stdout}\n{stderr}"
    );
    assert!(stdout.contains(" passed"), "{stdout}");
    stdout
}

#[test]
fn the_python_mcp_sdk_drives_the_server_over_stdio_and_http() {
    let dir = tempfile::tempdir().unwrap();
    let config = write_config(dir.path());
    let stdout = pytest("mcp", &[("GLOVEBOX_CONFIG", config.as_os_str())]);
    // pytest's summary, shown with `--nocapture`.
    eprintln!("{stdout}");
}

/// Issue 16's supervisor flow, as `examples/supervisor/flow.sh` runs it: the
/// example's own script, with the official Python SDK, against the real
/// server on the example's config; then the bill by family.
#[test]
fn the_supervisor_example_spawns_three_workagents_gates_and_judges_them_and_bills_them_under_it() {
    let python = venv();
    let dir = tempfile::tempdir().unwrap();
    let config = crate::util::example_config("supervisor", dir.path());
    let glovebox = |args: &[&str]| {
        let out = Command::new(env!("CARGO_BIN_EXE_glovebox"))
            .arg("--config")
            .arg(&config)
            .args(args)
            .env_remove("RUST_LOG")
            .output()
            .unwrap();
        let (stdout, stderr) = (
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        );
        assert!(out.status.success(), "glovebox {args:?}: {stderr}");
        stdout
    };
    let lead = glovebox(&[
        "principal",
        "add",
        "team",
        "--kind",
        "agent",
        "--roles",
        "supervisor,workagent",
        "--projects",
        "demo",
    ]);
    let judge = glovebox(&[
        "principal",
        "add",
        "reviewer",
        "--kind",
        "agent",
        "--roles",
        "judge",
        "--projects",
        "demo",
    ]);
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    /// The server, killed when the test ends, also when it fails.
    struct Killed(std::process::Child);
    impl Drop for Killed {
        fn drop(&mut self) {
            let _ = self.0.kill();
            let _ = self.0.wait();
        }
    }
    let _server = Killed(
        Command::new(env!("CARGO_BIN_EXE_glovebox"))
            .arg("--config")
            .arg(&config)
            .args(["serve", "--http", &format!("127.0.0.1:{port}")])
            .env_remove("RUST_LOG")
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap(),
    );
    let started = std::time::Instant::now();
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(
            started.elapsed() < std::time::Duration::from_secs(60),
            "the server did not listen"
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let flow = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/supervisor/flow.py");
    let output = Command::new(python)
        .arg(&flow)
        .arg(format!("http://127.0.0.1:{port}/mcp"))
        .env("LEAD_TOKEN", lead.trim())
        .env("JUDGE_TOKEN", judge.trim())
        .output()
        .expect("the flow runs");
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&output.stderr);
    let sup = stdout
        .lines()
        .find_map(|l| l.strip_prefix("supervisor: sup-"))
        .map(|run| format!("sup-{run}"));
    // The flow's files in examples/workspace/ go, whatever happened.
    if let Some(sup) = &sup {
        let run = sup.trim_start_matches("sup-");
        let workspace = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/workspace");
        for entry in std::fs::read_dir(&workspace).unwrap().flatten() {
            if entry
                .file_name()
                .to_string_lossy()
                .starts_with(&format!("sv-{run}-"))
            {
                std::fs::remove_file(entry.path()).unwrap();
            }
        }
    }
    assert!(
        output.status.success(),
        "the supervisor flow failed:\n{stdout}\n{stderr}"
    );
    eprintln!("{stdout}");
    assert!(
        stdout.contains("completed refused: session `w2-") && stdout.contains("gate.json_schema"),
        "{stdout}"
    );
    assert!(
        stdout.contains("session_wait returned 3 reports"),
        "{stdout}"
    );
    assert_eq!(stdout.matches("judge: passed").count(), 3, "{stdout}");
    let sup = sup.expect("the flow names its supervisor");

    // The bill, by family, through the running server's control socket: the
    // three children under their supervisor.
    let bill: serde_json::Value =
        serde_json::from_str(&glovebox(&["billing", "--by", "family", "--json"])).unwrap();
    let family = bill["groups"]
        .as_array()
        .unwrap()
        .iter()
        .find(|g| g["label"] == sup.as_str() || g["key"] == sup.as_str())
        .unwrap_or_else(|| panic!("no family of {sup}: {bill:#}"));
    assert_eq!(family["roles"]["workagent"]["sessions"], 3, "{family:#}");
    assert_eq!(family["roles"]["supervisor"]["sessions"], 1, "{family:#}");
    // Each child read, counted, wrote and ran its gate at least once.
    assert!(
        family["roles"]["workagent"]["total"]["calls"]
            .as_u64()
            .unwrap()
            >= 12,
        "{family:#}"
    );
    let report = glovebox(&["billing", "--by", "family"]);
    eprintln!("{report}");
    let verified = glovebox(&["log", "verify", &sup]);
    assert!(verified.starts_with("ok"), "{verified}");
}
