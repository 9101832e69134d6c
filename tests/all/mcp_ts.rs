//! The MCP server driven by the official TypeScript client
//! (`@modelcontextprotocol/client`, installed from the npm registry under
//! the target dir on first run): a Glovebox session over streamable HTTP in
//! both protocol revisions, 2026-07-28 (stateless: the session named in each
//! request's `_meta`) and 2025-11-25 (an MCP session bound to it). The
//! script is `tests/mcp_ts/session.mjs`.

use std::path::Path;
use std::process::Command;

use serde_json::Value;

use crate::util::{Site, plugins};

/// The client release the script is written against.
const CLIENT: &str = "@modelcontextprotocol/client@2.4.0";

#[test]
fn the_typescript_client_runs_a_session_through_both_revisions() {
    let dir = crate::util::npm_packages("mcp-ts", &[CLIENT]);
    let script = dir.join("session.mjs");
    std::fs::copy(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/mcp_ts/session.mjs"),
        &script,
    )
    .unwrap();
    let site = Site::with_config(
        "",
        &[(
            "echo.toml",
            format!("name = \"echo\"\ncomponent = \"{}\"\n", plugins::TOOL_ECHO),
        )],
    );
    let (mut server, addr, log) = crate::http_limits::serve_logged(&site, &[]);
    let out = Command::new("node")
        .arg(&script)
        .arg(format!("http://{addr}/mcp"))
        .current_dir(&dir)
        .output()
        .expect("node runs");
    let _ = server.kill();
    let _ = server.wait();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "the TypeScript client failed:\n{stdout}\n{}\nserver:\n{}",
        String::from_utf8_lossy(&out.stderr),
        log.lock().unwrap().join("\n")
    );
    let runs: Vec<Value> = stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let versions: Vec<&str> = runs
        .iter()
        .map(|r| r["version"].as_str().unwrap())
        .collect();
    assert_eq!(versions, ["2026-07-28", "2025-11-25"], "{stdout}");
    // Each run's session is a real one, with its log, in the store.
    for run in &runs {
        let session = run["session"].as_str().unwrap();
        let (code, out, err) = site.run(&["log", "verify", session]);
        assert_eq!(code, 0, "{err}");
        assert!(out.starts_with("ok"), "{out}");
    }
}
