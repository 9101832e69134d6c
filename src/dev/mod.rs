//! `glovebox dev`: `glovebox serve` for a plugin's author. The same server
//! (`serve.rs`), with an inner loop beside it that watches the config, the
//! manifests and the plugins' sources, and on a change rebuilds the plugin
//! (its manifest's `[build]`), loads the config again as a reload does and
//! prints what changed in the tool list; a build or a load that fails
//! leaves the last good plugins serving.
//!
//! One concept per file: what is watched and what a change calls for
//! (`targets.rs`), the file watcher (`watch.rs`), a build (`build.rs`), the
//! tool list's changes (`diff.rs`), and the loop that ties them (`inner_loop.rs`).

mod build;
mod diff;
mod inner_loop;
mod targets;
mod watch;

use std::path::Path;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::Result;
use clap::Args;

/// `glovebox dev`: `serve`'s options, and how quiet the files must be
/// before a change is acted on.
#[derive(Args)]
pub struct DevArgs {
    #[command(flatten)]
    serve: crate::serve::ServeArgs,
    /// How long the watched files must be quiet before a change is acted
    /// on: an editor's burst of writes, or a checkout, is one change.
    #[arg(long, value_name = "DURATION", value_parser = humantime::parse_duration, default_value = "200ms")]
    debounce: Duration,
}

/// Builds every plugin that has a `[build]` once (a plugin whose component
/// does not exist yet must build: there is nothing else to serve), then
/// serves as `glovebox serve` does, with the inner loop beside the server.
pub async fn run(config: &Path, args: DevArgs) -> Result<ExitCode> {
    inner_loop::build_all(config).await?;
    let config = config.to_path_buf();
    let debounce = args.debounce;
    crate::serve::serve_with(&config.clone(), args.serve, move |gateway| {
        Some(glovebox::tasks::owned(inner_loop::run(
            config, gateway, debounce,
        )))
    })
    .await
}

/// Prints a line of the inner loop to stderr (stdout is MCP over stdio).
fn say(line: std::fmt::Arguments<'_>) {
    eprintln!("glovebox dev: {line}");
}
