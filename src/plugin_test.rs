//! `glovebox plugin test PLUGIN --cases FILE`: a plugin's tests as data, for
//! authors who want no code. Each case of the file (`glovebox_test::cases`)
//! calls a tool of the plugin in the real host, as the `glovebox-test`
//! harness does for Rust tests, and its output or error is checked. One line
//! per case and a summary (or, with `--json`, one JSON object per case, for
//! a test runner in another language to read); exit 0 when every case
//! passes, 1 when one fails, 2 when the case file or the plugin is wrong.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, Result, anyhow};
use glovebox_test::cases::{CaseResult, Cases};

use crate::exit::Exit;

/// Runs the cases of `cases` on the plugin at `plugin` (a manifest or a
/// component).
pub async fn run(plugin: &Path, cases: &Path, json: bool) -> Result<ExitCode> {
    if !plugin.exists() {
        return Err(anyhow!(
            "`{}` does not exist: give a plugin manifest (.toml) or a component (.wasm)",
            plugin.display()
        ));
    }
    let loaded = Cases::load(cases)?;
    let (plugin, loaded): (PathBuf, Cases) = (plugin.to_path_buf(), loaded);
    // The harness owns its runtime, so it runs on a thread of its own, off
    // this one's.
    let results = std::thread::spawn(move || {
        let harness = loaded.harness(&plugin);
        loaded.run(&harness)
    })
    .join()
    .map_err(|_| anyhow!("the cases stopped with a panic"))?
    .context("cannot start the plugin under test")?;
    let failed = results.iter().filter(|r| !r.passed).count();
    for result in &results {
        if json {
            out!("{}", serde_json::to_string(result)?);
        } else {
            print_line(result)?;
        }
    }
    if !json {
        out!(
            "{} cases: {} passed, {failed} failed",
            results.len(),
            results.len() - failed
        );
    }
    Ok(if failed == 0 {
        ExitCode::SUCCESS
    } else {
        Exit::Failed.into()
    })
}

/// `ok   name  (1.23 ms)` or `FAIL name: why`.
fn print_line(result: &CaseResult) -> Result<()> {
    match &result.problem {
        None => out!("ok    {}  ({:.2} ms)", result.name, result.wall_ms),
        Some(problem) => out!("FAIL  {}: {problem}", result.name),
    }
    Ok(())
}
