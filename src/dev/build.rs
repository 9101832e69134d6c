//! A plugin's build: its manifest's `[build] command`, run by `sh -c` in
//! the manifest's directory, its output kept so a failure can show it.
//! Stdout is never inherited: over stdio it is the MCP channel.

use std::process::Stdio;
use std::time::{Duration, Instant};

use glovebox::manifest::PluginBuild;

/// The lines of a failed build's output shown.
const TAIL_LINES: usize = 20;

/// Why a build failed: its exit status (or why it could not start) and the
/// end of what it wrote.
pub(super) struct Failure {
    pub(super) why: String,
    pub(super) tail: Vec<String>,
}

/// Runs `build` to its end (it is killed if this future is dropped, when
/// the server stops); how long it took, or why it failed.
pub(super) async fn run(build: &PluginBuild) -> Result<Duration, Failure> {
    let started = Instant::now();
    let output = tokio::process::Command::new("sh")
        .arg("-c")
        .arg(&build.command)
        .current_dir(&build.dir)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .output()
        .await
        .map_err(|e| Failure {
            why: format!(
                "`sh -c {:?}` could not be started in `{}`: {e}",
                build.command,
                build.dir.display()
            ),
            tail: Vec::new(),
        })?;
    if output.status.success() {
        return Ok(started.elapsed());
    }
    // The errors are on stderr; a build that writes none gets its stdout shown.
    let shown = if output.stderr.iter().any(|b| !b.is_ascii_whitespace()) {
        &output.stderr
    } else {
        &output.stdout
    };
    Err(Failure {
        why: format!("`{}` failed ({})", build.command, output.status),
        tail: tail(&String::from_utf8_lossy(shown), TAIL_LINES),
    })
}

/// The last `n` lines of `text` that are not blank at its end.
fn tail(text: &str, n: usize) -> Vec<String> {
    let lines: Vec<&str> = text.trim_end().lines().collect();
    lines[lines.len().saturating_sub(n)..]
        .iter()
        .map(|l| l.to_string())
        .collect()
}
