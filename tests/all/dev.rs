//! `glovebox dev` over stdio, with a real MCP client: a plugin whose build
//! (a shell script, so the test needs no toolchain) writes the component
//! its source names; the test edits the source, waits for the reload and
//! calls the new tool without a restart; a failed build and a component
//! that does not load leave the last good one serving, with the error on
//! stderr; a changed manifest reloads too. A project whose component was
//! never built starts (its first build makes it), or says why it cannot;
//! `--http` serves the rebuilt plugin to an open MCP session; a hook's new
//! component or settings judge the next call without a restart.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
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
    let config = project(dir, "echo", "");
    std::fs::create_dir_all(dir.join("plugin/out")).unwrap();
    std::fs::copy(plugins::TOOL_ECHO, dir.join("plugin/out/tool.wasm")).unwrap();
    config
}

/// A config serving the plugin in `plugin/`, whose source names the
/// component `tool` and whose component was never built (no `out/`), with
/// the `[[hook]]`s `hooks` (none: `hooks = "none"`).
fn project(dir: &Path, tool: &str, hooks: &str) -> PathBuf {
    let plugin = dir.join("plugin");
    std::fs::create_dir_all(plugin.join("src")).unwrap();
    std::fs::write(plugin.join("build.sh"), build_script()).unwrap();
    std::fs::write(plugin.join("src/tool.txt"), format!("{tool}\n")).unwrap();
    std::fs::write(plugin.join("dev.toml"), manifest("")).unwrap();
    let config = dir.join("glovebox.toml");
    write_config(&config, hooks);
    config
}

/// Writes the config at `config`: the plugin in `plugin/`, then the
/// `[[hook]]`s `hooks` (none: `hooks = "none"`).
fn write_config(config: &Path, hooks: &str) {
    let none = if hooks.is_empty() {
        "hooks = \"none\"\n"
    } else {
        ""
    };
    std::fs::write(
        config,
        format!(
            "data_dir = \"data\"\n{none}[runtime]\n{}\n[[plugin]]\nmanifest = \"plugin/dev.toml\"\n{hooks}",
            crate::util::cache_keys()
        ),
    )
    .unwrap();
}

/// Puts `from` at `to` as a build would: written beside, renamed over.
fn replace(from: &str, to: &Path) {
    let part = to.with_extension("part");
    std::fs::copy(from, &part).unwrap();
    std::fs::rename(&part, to).unwrap();
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

    /// Everything written so far.
    fn all(&self) -> String {
        self.0.lock().unwrap().join("\n")
    }

    /// The lines from `from` to `to`.
    fn between(&self, from: usize, to: usize) -> Vec<String> {
        self.0.lock().unwrap()[from..to].to_vec()
    }
}

/// `glovebox dev` on `config` over stdio, its stderr collected, the MCP
/// handshake done.
fn start(config: &Path) -> (Server, Stderr) {
    let (child, stderr) = spawn(config, &[], Stdio::piped());
    let mut server = Server::of(child);
    server.handshake();
    (server, stderr)
}

/// `glovebox dev` on `config` with `args`, its stdin `stdin`, its stdout
/// piped and its stderr collected.
fn spawn(config: &Path, args: &[&str], stdin: Stdio) -> (Child, Stderr) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_glovebox"))
        .env_remove("GLOVEBOX_CONFIG")
        .env_remove("RUST_LOG")
        .arg("--config")
        .arg(config)
        .arg("dev")
        .args(args)
        .stdin(stdin)
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
    (child, stderr)
}

/// A child process killed when dropped, so a failed test leaves none.
struct Killed(Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
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

/// A fresh project, whose component was never built, cannot load until it
/// is: `glovebox dev` builds it first, then serves it. When that first
/// build fails, it stops, showing the build's output, its command and
/// what to do, and serves nothing.
#[test]
fn a_project_whose_component_was_never_built_is_built_first_or_says_why_not() {
    let dir = tempfile::tempdir().unwrap();
    let config = project(dir.path(), "nothing", "");
    let component = dir.path().join("plugin/out/tool.wasm");

    // The first build fails: no server, the reason on stderr.
    let (child, stderr) = spawn(&config, &[], Stdio::null());
    let mut child = Killed(child);
    let deadline = Instant::now() + WITHIN;
    let status = loop {
        if let Some(status) = child.0.try_wait().unwrap() {
            break status;
        }
        assert!(
            Instant::now() < deadline,
            "`glovebox dev` did not stop within {WITHIN:?}; it printed:\n{}",
            stderr.all()
        );
        std::thread::sleep(Duration::from_millis(20));
    };
    // The reader thread may still hold the last lines: wait for the error.
    stderr.wait_for(0, "error: ");
    let printed = stderr.all();
    assert_eq!(status.code(), Some(2), "{printed}");
    for part in [
        "glovebox dev: `dev` has no component yet",
        "glovebox dev: building `dev`: sh build.sh",
        "glovebox dev: the first build of `dev` failed: `sh build.sh` failed (exit status: 3)",
        "  | build.sh: error: no component called `nothing`",
        "error: `glovebox dev` cannot start: the first build of `dev` failed, so its component",
        "does not exist and the config does not load. Fix the build (its output is above; the command is `sh build.sh`, run in",
        "then start `glovebox dev` again",
    ] {
        assert!(printed.contains(part), "`{part}` not printed:\n{printed}");
    }
    assert!(!printed.contains("watching"), "{printed}");
    assert!(!component.exists());

    // Fixed: the first build makes the component, and it is served.
    std::fs::write(dir.path().join("plugin/src/tool.txt"), "echo\n").unwrap();
    let (mut server, stderr) = start(&config);
    let mut seen = stderr.wait_for(0, "`dev` has no component yet");
    seen = stderr.wait_for(seen, "built `dev`");
    seen = stderr.wait_for(seen, "watching");
    assert!(component.is_file());
    let echoed = server.ok(1, "dev.echo", json!({"message": "built first"}));
    assert_eq!(echoed["message"], "built first");
    // Built once only: the component existed by the time it was loaded.
    assert_eq!(
        stderr.all().matches("building `dev`").count(),
        1,
        "{}",
        stderr.all()
    );

    // A plugin added to the config while dev serves, never built either:
    // built first, then loaded beside the first.
    let two = dir.path().join("two");
    std::fs::create_dir_all(two.join("src")).unwrap();
    std::fs::write(two.join("build.sh"), build_script()).unwrap();
    std::fs::write(two.join("src/tool.txt"), "text\n").unwrap();
    std::fs::write(
        two.join("two.toml"),
        manifest("").replace("name = \"dev\"", "name = \"two\""),
    )
    .unwrap();
    let mut text = std::fs::read_to_string(&config).unwrap();
    text.push_str("[[plugin]]\nmanifest = \"two/two.toml\"\n");
    std::fs::write(&config, text).unwrap();
    seen = stderr.wait_for(seen, "`two` has no component yet");
    seen = stderr.wait_for(seen, "built `two`");
    seen = stderr.wait_for(seen, "reloaded: 5 tools");
    stderr.wait_for(seen, "+ two.upper");
    let upper = server.ok(2, "two.upper", json!({"text": "added"}));
    assert_eq!(upper["text"], "ADDED");
    let echoed = server.ok(3, "dev.echo", json!({"message": "still"}));
    assert_eq!(echoed["message"], "still");
}

/// `glovebox dev --http`: an MCP session over HTTP calls the plugin, the
/// author edits its source, and the same session calls the rebuilt plugin.
#[test]
fn dev_over_http_serves_the_rebuilt_plugin_to_an_open_session() {
    use crate::identity::{call, open_session};

    let dir = tempfile::tempdir().unwrap();
    let config = site(dir.path());
    let (child, stderr) = spawn(&config, &["--http", "127.0.0.1:0"], Stdio::null());
    let _child = Killed(child);
    let mut seen = stderr.wait_for(0, "glovebox: serving MCP at http://");
    let addr = stderr.between(seen - 1, seen)[0]
        .strip_prefix("glovebox: serving MCP at http://")
        .unwrap()
        .trim_end_matches("/mcp")
        .to_string();
    seen = stderr.wait_for(0, "watching");
    let session = open_session(&addr, None);
    let echoed = call(
        &addr,
        None,
        &session,
        "dev.echo",
        json!({"message": "over http"}),
    )
    .unwrap();
    assert_eq!(echoed["result"]["isError"], false, "{echoed}");
    assert_eq!(
        echoed["result"]["structuredContent"]["message"], "over http",
        "{echoed}"
    );

    std::fs::write(dir.path().join("plugin/src/tool.txt"), "text\n").unwrap();
    seen = stderr.wait_for(seen, "reloaded: 4 tools");
    stderr.wait_for(seen - 1, "+ dev.upper");
    let upper = call(
        &addr,
        None,
        &session,
        "dev.upper",
        json!({"text": "rebuilt"}),
    )
    .unwrap();
    assert_eq!(upper["result"]["isError"], false, "{upper}");
    assert_eq!(
        upper["result"]["structuredContent"]["text"], "REBUILT",
        "{upper}"
    );
    // The tool the rebuild removed is gone for the same session.
    let gone = call(
        &addr,
        None,
        &session,
        "dev.echo",
        json!({"message": "gone"}),
    );
    assert!(
        gone.as_ref()
            .is_ok_and(|g| g["error"].is_object() || g["result"]["isError"] == true),
        "the removed tool answered: {gone:?}"
    );
}

/// A hook under `glovebox dev`: a new component (built in another
/// terminal) and new settings in the config each judge the next call, with
/// no restart, and dev says what changed.
#[test]
fn a_changed_hook_judges_the_next_call_without_a_restart() {
    let dir = tempfile::tempdir().unwrap();
    let hook = |settings: &str| {
        format!("[[hook]]\nname = \"judge\"\ncomponent = \"hooks/judge.wasm\"\n{settings}")
    };
    let config = site(dir.path());
    write_config(&config, &hook(""));
    std::fs::create_dir_all(dir.path().join("hooks")).unwrap();
    let judge = dir.path().join("hooks/judge.wasm");
    // The destructive-call hook allows a call that is not destructive.
    std::fs::copy(plugins::HOOK_DESTRUCTIVE, &judge).unwrap();
    let (mut server, stderr) = start(&config);
    let mut seen = stderr.wait_for(0, "watching");
    let echoed = server.ok(1, "dev.echo", json!({"message": "allowed"}));
    assert_eq!(echoed["message"], "allowed");

    // The hook's component changes: the role allow-list, which without
    // its settings denies every call, judges the next one.
    replace(plugins::HOOK_ROLE_ALLOWLIST, &judge);
    seen = stderr.wait_for(seen, "~ hook judge: component");
    let denied = server.call(2, "dev.echo", json!({"message": "denied"}));
    assert_eq!(denied["result"]["isError"], true, "{denied}");
    let why = &denied["result"]["structuredContent"]["denied"];
    assert_eq!(why["hook"], "judge", "{denied}");
    assert!(
        why["reason"]
            .as_str()
            .is_some_and(|r| r.contains("settings key `roles` is missing")),
        "{denied}"
    );

    // Its settings change in the config: the next call is allowed...
    write_config(
        &config,
        &hook("[hook.settings.roles]\nworkagent = [\"dev.*\"]\n"),
    );
    seen = stderr.wait_for(seen, "~ hook judge: settings");
    let echoed = server.ok(3, "dev.echo", json!({"message": "allowed again"}));
    assert_eq!(echoed["message"], "allowed again");

    // ...and denied again once the role may no longer use the plugin.
    write_config(
        &config,
        &hook("[hook.settings.roles]\nworkagent = [\"other.*\"]\n"),
    );
    stderr.wait_for(seen, "~ hook judge: settings");
    let denied = server.call(4, "dev.echo", json!({"message": "denied"}));
    assert_eq!(denied["result"]["isError"], true, "{denied}");
    let why = &denied["result"]["structuredContent"]["denied"];
    assert_eq!(why["hook"], "judge", "{denied}");
    assert!(
        why["reason"]
            .as_str()
            .is_some_and(|r| r.contains("role workagent may not use dev.echo")),
        "{denied}"
    );
}
