//! `glovebox session flag`: a blocker flag raised on a session by the
//! operation `sessions.flag` (on the running server when one holds the data
//! dir), its answer printed as JSON.

use std::path::Path;
use std::process::ExitCode;

use anyhow::{Context, Result};
use glovebox::operations::{self, FlagSession, Operation};
use serde_json::json;

use crate::output::print_json;

pub(crate) async fn run(
    config: &Path,
    session: String,
    reason: String,
    severity: &str,
    needs: Option<String>,
) -> Result<ExitCode> {
    let entry =
        operations::named(FlagSession::NAME).context("an operation left out of the registry")?;
    let mut args = json!({"session": session, "reason": reason, "severity": severity});
    if let Some(needs) = needs {
        args["needs"] = json!(needs);
    }
    match crate::operate::call(config, entry, args).await? {
        Ok(output) => {
            print_json(&output)?;
            Ok(ExitCode::SUCCESS)
        }
        Err(e) => Ok(crate::operation_refused(&e)),
    }
}
