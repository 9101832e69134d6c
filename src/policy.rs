//! `glovebox policy replay`: a hook chain replayed against a recorded session.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;

use anyhow::Result;
use clap::Subcommand;
use glovebox::Host;

use crate::output::print_json;

#[derive(Subcommand, serde::Serialize, serde::Deserialize)]
pub enum PolicyCommand {
    /// Evaluate the hook chain of `--config` against the calls recorded in a
    /// session and report each decision that would change. Nothing is executed.
    Replay {
        #[arg(long)]
        session: String,
        /// Read the session from this config's data dir instead of `--config`'s.
        #[arg(long)]
        store_config: Option<PathBuf>,
        #[arg(long)]
        json: bool,
    },
}

pub async fn run(config: &Path, command: PolicyCommand) -> Result<ExitCode> {
    let PolicyCommand::Replay {
        session,
        store_config,
        json,
    } = command;
    // The policy replayed is the config's as it is on disk now (the one a
    // reload would serve), against the running server's log when one holds
    // the data dir.
    let host = Host::from_config_file(config).await?;
    let durable = match (&store_config, crate::reach::served()) {
        (Some(path), _) => Arc::new(glovebox::open_sessions(
            &glovebox::load_config(path).await?,
        )?),
        (None, Some(gateway)) => gateway.ledger().clone(),
        (None, None) => Arc::new(glovebox::open_sessions(host.config())?),
    };
    let report = match glovebox::replay::replay(&host, &durable.sessions, &session).await {
        Ok(r) => r,
        Err(e) => return Ok(crate::session_refused(&e)),
    };
    if json {
        print_json(&report)?;
    } else {
        out!(
            "replayed {} calls of {}: {} decisions would change",
            report.calls,
            report.session,
            report.changes.len()
        );
        for c in &report.changes {
            out!(
                "  {} {}: {} -> {}{}",
                c.call_id,
                c.tool,
                c.recorded,
                c.replayed,
                c.hook
                    .as_ref()
                    .map(|h| format!(" (hook `{h}`: {})", c.reason.as_deref().unwrap_or("")))
                    .unwrap_or_default()
            );
        }
        for (call, why) in &report.skipped {
            out!("  skipped {call}: {why}");
        }
    }
    Ok(ExitCode::SUCCESS)
}
