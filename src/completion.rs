//! Completion conditions at the command line: `--completion` on `session
//! start` and `session spawn`, and `glovebox session verdict` (the rules are
//! the ledger's, see `glovebox_ledger::session::completion`; `session end
//! --outcome completed` runs the gates through the gateway, in
//! `sessions.rs`).

use std::path::Path;
use std::process::ExitCode;

use anyhow::{Context, Result};
use glovebox::manifest::Completion;
use glovebox::session::VerdictInput;

use crate::output::print_json;

/// `--completion JSON`: the condition, its gates checked against the tools
/// of the host (the running server's, or the config's plugins loaded here;
/// no store is opened). Absent: no condition of the session's own.
pub(crate) async fn completion_arg(config: &Path, arg: Option<&str>) -> Result<Completion> {
    let Some(text) = arg else {
        return Ok(Completion::default());
    };
    let completion: Completion = serde_json::from_str(text).context(
        "--completion: not a completion condition; write e.g. '{\"gates\": [{\"tool\": \"gate.report\", \"input\": {\"path\": \"report.txt\"}, \"expect\": {\"passed\": true}}], \"judge\": true}'",
    )?;
    if completion.gates.is_empty() {
        return Ok(completion);
    }
    let host = match crate::reach::served() {
        Some(gateway) => gateway.host(),
        None => std::sync::Arc::new(glovebox::Host::from_config_file(config).await?),
    };
    completion
        .check(|tool| host.resolve(tool).is_ok())
        .map_err(|e| anyhow::anyhow!("--completion: {e}"))?;
    Ok(completion)
}

/// `session verdict`: the operator's judge session JUDGE records a verdict
/// on WORKER's latest handoff.
pub(crate) async fn verdict(
    config: &Path,
    judge: &str,
    worker: &str,
    input: VerdictInput,
) -> Result<ExitCode> {
    let gateway = crate::reach::gateway(config).await?;
    let operator = crate::reach::operator();
    let judged = gateway.scope(&operator).verdict(judge, worker, input).await;
    match judged {
        Ok(judged) => {
            print_json(&judged)?;
            Ok(ExitCode::SUCCESS)
        }
        Err(e) => Ok(crate::session_refused(&e)),
    }
}
