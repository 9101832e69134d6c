//! How a command reaches the data dir: through the running server when it
//! runs inside it (forwarded on the control socket, `control/`), else by
//! opening the config's store here. Either way the same handler runs, and
//! asks this module for the gateway, the jobs runner, the config, the
//! ledger and who is acting.

use std::path::Path;
use std::sync::Arc;

use anyhow::Result;
use glovebox::{Durable, Gateway, HostConfig, Jobs, JobsConfig, Principal, Sessions};

use crate::served::SERVED;

/// The server's gateway when this command runs inside it.
pub fn served() -> Option<Gateway> {
    SERVED.try_with(|s| s.gateway.clone()).ok()
}

/// The gateway: the running server's, or the config's opened here.
pub async fn gateway(config: &Path) -> Result<Gateway> {
    match served() {
        Some(gateway) => Ok(gateway),
        None => Gateway::open(config).await,
    }
}

/// The jobs runner: the running server's (it already runs the data dir's
/// jobs), or one started here on the config's gateway.
pub async fn jobs(config: &Path) -> Result<Arc<Jobs>> {
    jobs_for(config, true).await
}

/// [`jobs`], for work that runs a tool (`tools`) or not: one opened here
/// for work that runs none does without the config's plugins
/// (`Gateway::open_without_tools`), so one that cannot load does not stop it.
pub async fn jobs_for(config: &Path, tools: bool) -> Result<Arc<Jobs>> {
    if let Ok(jobs) = SERVED.try_with(|s| s.jobs.clone()) {
        return Ok(jobs);
    }
    let gateway = match tools {
        true => Gateway::open(config).await?,
        false => Gateway::open_without_tools(config).await?,
    };
    Ok(Jobs::new(gateway, JobsConfig::default()))
}

/// The config: the running server's (what it serves now), or the file's.
pub fn config(path: &Path) -> Result<HostConfig> {
    match served() {
        Some(gateway) => Ok(gateway.host().config().clone()),
        None => glovebox::load_config_blocking(path),
    }
}

/// Who is acting at the command line: the socket's peer inside the server,
/// this process's user otherwise.
pub fn operator() -> Principal {
    SERVED
        .try_with(|s| s.operator.clone())
        .unwrap_or_else(|_| glovebox::cli_operator())
}

/// The data dir's sessions (see [`open_durable`]).
pub(crate) fn sessions(config: &Path) -> Result<Arc<Sessions>> {
    Ok(open_durable(config)?.sessions.clone())
}

/// The data dir's ledger: the running server's (`control/`), or opened
/// here with what recovery found printed.
pub(crate) fn open_durable(config: &Path) -> Result<Arc<Durable>> {
    if let Some(gateway) = served() {
        return Ok(gateway.ledger().clone());
    }
    let config = glovebox::load_config_blocking(config)?;
    let durable = glovebox::open_sessions(&config)?;
    let recovery = &durable.recovery;
    for call in &recovery.interrupted {
        err!(
            "note: call `{}` of `{}` in session `{}` was running when the host stopped: now interrupted{}",
            call.call_id,
            call.tool,
            call.session_name.as_deref().unwrap_or(&call.session),
            if call.idempotent {
                " (idempotent: `glovebox session rerun` re-runs it)"
            } else {
                ""
            }
        );
    }
    for refused in &recovery.refused {
        err!("warning: {refused}");
    }
    Ok(Arc::new(durable))
}
