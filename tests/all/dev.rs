//! `glovebox dev` over stdio, with a real MCP client: a plugin whose build
//! (a shell script, so the test needs no toolchain) writes the component
//! its source names; the test edits the source, waits for the reload and
//! calls the new tool without a restart; a failed build and a component
//! that does not load leave the last good one serving, with the error on
//! stderr; a changed manifest reloads too.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::json;

use crate::mcp::Server;
use crate::util::plugins;

/// How long a change may take to be built and served.
const WITHIN: Duration = Duration::from_secs(60);

/// The build: copies the component `src/tool.txt` names to `out/tool.wasm`
/// (written beside and renamed, as a compiler would), or fails naming it.
fn build_script() -> String {
    format!(
        r#"set -e
mkdir -p out
which=$(cat src/tool.txt)
case "$which" in
    echo) from="{echo}" ;;
    text) from="{text}" ;;
    truncated) from="{truncated}" ;;
    *) echo "compiling src/tool.txt" ; echo "build.sh: error: no component called \`$which\`" >&2 ; exit 3 ;;
esac
cp "$from" out/tool.wasm.part
mv out/tool.wasm.part out/tool.wasm
"#,
        echo = plugins::TOOL_ECHO,
        text = plugins::TOOL_TEXT,
        truncated = plugins::TRUNCATED_ECHO,
    )
}

/// The plugin's manifest, with `extra` at its end.
fn manifest(extra: &str) -> String {
    format!(
        "name = \"dev\"\ncomponent = \"out/tool.wasm\"\n[build]\ncommand = \"sh build.sh\"\nwatch = [\"src/*.txt\"]\n{extra}"
    )
}

/// A config serving the plugin in `plugin/`, built once as an author
/// would before starting (`glovebox dev` builds it again at start).
fn site(dir: &Path) -> PathBuf {
    let plugin = dir.join("plugin");
    std::fs::create_dir_all(plugin.join("src")).unwrap();
    std::fs::create_dir_all(plugin.join("out")).unwrap();
    std::fs::write(plugin.join("build.sh"), build_script()).unwrap();
    std::fs::write(plugin.join("src/tool.txt"), "echo\n").unwrap();
    std::fs::copy(plugins::TOOL_ECHO, plugin.join("out/tool.wasm")).unwrap();
    std::fs::write(plugin.join("dev.toml"), manifest("")).unwrap();
    let config = dir.join("glovebox.toml");
    std::fs::write(
        &config,
        format!(
            "data_dir = \"data\"\nhooks = \"none\"\n[runtime]\n{}\n[[plugin]]\nmanifest = \"plugin/dev.toml\"\n",
            crate::util::cache_keys()
        ),
    )
    .unwrap();
    config
}

/// What `glovebox dev` wrote to stderr so far, line by line.
#[derive(Clone, Default)]
struct Stderr(Arc<Mutex<Vec<String>>>);

impl Stderr {
    /// Waits until a line from `from` on contains `text`; the index after
    /// it. Panics with everything written when none does within [`WITHIN`].
    fn wait_for(&self, from: usize, text: &str) -> usize {
        let deadline = Instant::now() + WITHIN;
        loop {
            {
                let lines = self.0.lock().unwrap();
                if let Some(i) = lines.iter().skip(from).position(|l| l.contains(text)) {
                    return from + i + 1;
                }
                if Instant::now() > deadline {
                    panic!(
                        "`glovebox dev` did not print `{text}` within {WITHIN:?}; it printed:\n{}",
                        lines.join("\n")
                    );
                }
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// The lines from `from` to `to`.
    fn between(&self, from: usize, to: usize) -> Vec<String> {
        self.0.lock().unwrap()[from..to].to_vec()
    }
}

/// `glovebox dev` on `config`, its stderr collected.
fn start(config: &Path) -> (Server, Stderr) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_glovebox"))
        .env_remove("GLOVEBOX_CONFIG")
        .env_remove("RUST_LOG")
        .arg("--config")
        .arg(config)
        .arg("dev")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start glovebox dev");
    let stderr = Stderr::default();
    let pipe = child.stderr.take().unwrap();
    let lines = stderr.clone();
    std::thread::spawn(move || {
        for line in BufReader::new(pipe).lines() {
            let Ok(line) = line else { break };
            lines.0.lock().unwrap().push(line);
        }
    });
    let mut server = Server::of(child);
    server.handshake();
    (server, stderr)
}

/// The names `tools/list` gives.
fn tool_names(server: &mut Server, id: u64) -> Vec<String> {
    let listed = server.request(id, "tools/list", json!({}));
    listed["result"]["tools"]
        .as_array()
        .unwrap_or_else(|| panic!("no tool list: {listed}"))
        .iter()
        .map(|t| t["name"].as_str().unwrap().to_string())
        .collect()
}

#[test]
fn an_edited_plugin_is_rebuilt_and_served_and_a_broken_one_keeps_the_last_good_serving() {
    let dir = tempfile::tempdir().unwrap();
    let config = site(dir.path());
    let plugin = dir.path().join("plugin");
    let (mut server, stderr) = start(&config);
    // Built at start, then watched.
    let mut seen = stderr.wait_for(0, "built `dev`");
    seen = stderr.wait_for(seen, "watching");
    let echoed = server.ok(1, "dev.echo", json!({"message": "first"}));
    assert_eq!(echoed["message"], "first");

    // The author edits the source: rebuilt, reloaded, the diff printed,
    // the new tools served on the same connection.
    std::fs::write(plugin.join("src/tool.txt"), "text\n").unwrap();
    let start = seen;
    seen = stderr.wait_for(seen, "reloaded: 4 tools");
    seen = stderr.wait_for(seen, "- dev.echo");
    let printed = stderr.between(start, seen);
    for tool in [
        "+ dev.upper",
        "+ dev.lower",
        "+ dev.reverse",
        "+ dev.word-count",
    ] {
        assert!(
            printed.iter().any(|l| l.trim() == tool),
            "`{tool}` not printed: {printed:#?}"
        );
    }
    assert!(
        printed
            .iter()
            .any(|l| l.contains("building `dev`: sh build.sh"))
    );
    let upper = server.ok(2, "dev.upper", json!({"text": "second"}));
    assert_eq!(upper["text"], "SECOND");
    let names = tool_names(&mut server, 3);
    assert!(names.contains(&"dev.upper".to_string()), "{names:?}");
    assert!(!names.contains(&"dev.echo".to_string()), "{names:?}");

    // A build that fails: its error is shown, the last good build serves.
    std::fs::write(plugin.join("src/tool.txt"), "nothing\n").unwrap();
    seen = stderr.wait_for(seen, "the build of `dev` failed");
    seen = stderr.wait_for(seen, "| build.sh: error: no component called `nothing`");
    let upper = server.ok(4, "dev.upper", json!({"text": "third"}));
    assert_eq!(upper["text"], "THIRD");

    // The manifest changes (what the operator says of a tool): reloaded,
    // the change named.
    std::fs::write(
        plugin.join("dev.toml"),
        manifest("[tools.upper]\ncost = 0.5\n"),
    )
    .unwrap();
    seen = stderr.wait_for(seen, "~ dev.upper: cost");

    // A build that succeeds but writes a component that does not load:
    // the error is shown, the last good component serves.
    std::fs::write(plugin.join("src/tool.txt"), "truncated\n").unwrap();
    seen = stderr.wait_for(seen, "built `dev`");
    let failed = stderr.wait_for(seen, "not reloaded");
    let line = &stderr.between(failed - 1, failed)[0];
    assert!(line.contains("plugin/dev.toml"), "{line}");
    assert!(
        line.contains("the last good plugins keep serving"),
        "{line}"
    );
    let upper = server.ok(5, "dev.upper", json!({"text": "fourth"}));
    assert_eq!(upper["text"], "FOURTH");
    assert!(tool_names(&mut server, 6).contains(&"dev.upper".to_string()));

    // Fixed (the override of `upper` goes first: echo has no such tool,
    // and the load says so): served again.
    std::fs::write(plugin.join("dev.toml"), manifest("")).unwrap();
    seen = stderr.wait_for(failed, "not reloaded");
    std::fs::write(plugin.join("src/tool.txt"), "echo\n").unwrap();
    seen = stderr.wait_for(seen, "+ dev.echo");
    stderr.wait_for(seen - 1, "- dev.upper");
    let echoed = server.ok(7, "dev.echo", json!({"message": "last"}));
    assert_eq!(echoed["message"], "last");
}
