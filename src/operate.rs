//! An operation of the registry run from the command line: on the running
//! server when one holds the data dir (sent over its control socket as
//! `{operation: {name, arguments}}`, so the server runs the operation and
//! none of this command's code), or here, on the data dir opened for it,
//! when none does. Either way as the operator at the command line, and
//! with the same checks as every surface (`Entry::call`: the arguments'
//! limits and shape), so a command and `glovebox operation` cannot differ.

use std::path::Path;

use anyhow::{Context, Result};
use glovebox::operations::{self, Entry, Operation, OperationError};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

/// Runs `entry` with `arguments` (a JSON object): its output as JSON, or
/// why it failed.
pub(crate) async fn call(
    config: &Path,
    entry: &Entry,
    arguments: Value,
) -> Result<Result<Value, OperationError>> {
    if let Some(answer) = crate::control::operate(config, entry.name, &arguments).await? {
        return Ok(answer);
    }
    // The jobs runner over the data dir opened here (it runs no job: only
    // `serve` and `job wait` do); without the plugins for an operation
    // that runs no tool, so that one that cannot load does not stop it.
    let jobs = crate::reach::jobs_for(config, entry.runs_tools).await?;
    let operator = crate::reach::operator();
    let scope = jobs.gateway().scope(&operator).with_jobs(&jobs);
    Ok(glovebox::tasks::acting(operator.name.clone(), entry.call(scope, arguments)).await)
}

/// Runs operation `O` with typed arguments: its typed output, for a
/// command's printer, or why it failed.
pub(crate) async fn run<O: Operation>(
    config: &Path,
    args: O::Args,
) -> Result<Result<O::Output, OperationError>>
where
    O::Args: Serialize,
    O::Output: DeserializeOwned,
{
    let entry = operations::named(O::NAME).context("an operation left out of the registry")?;
    let arguments = serde_json::to_value(args)?;
    Ok(match call(config, entry, arguments).await? {
        Ok(output) => Ok(serde_json::from_value(output)
            .with_context(|| format!("the output of `{}` does not read as its type", O::NAME))?),
        Err(e) => Err(e),
    })
}
