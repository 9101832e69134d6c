//! A config file read as the host reads it: the registry components its
//! plugins name (`component = "oci://…"`) pulled first, then the file
//! loaded. Loading itself never reaches the network
//! (`glovebox_manifest::ComponentStore`); this is the one place that pulls
//! before it, so that start, reload and every command see the same pins.

use std::path::Path;

use anyhow::Result;
use glovebox_manifest::{HostConfig, OciComponents};
use glovebox_oci::Pulled;

/// Pulls what the config at `path` names from registries (nothing when its
/// components are pinned and cached already), then loads it.
pub async fn load_config(path: &Path) -> Result<HostConfig> {
    if let Some(components) = registry_components(path) {
        glovebox_oci::pull(&components, false).await?;
    }
    Ok(HostConfig::load(path)?)
}

/// [`load_config`] for a caller that is not async: the pull, when one is
/// needed, runs on a thread of its own (on its own runtime, so this may be
/// called from inside one too).
pub fn load_config_blocking(path: &Path) -> Result<HostConfig> {
    if let Some(components) = registry_components(path) {
        run_pull(components, false)?;
    }
    Ok(HostConfig::load(path)?)
}

/// Pulls `components` (every one again when `update`), on a thread of its
/// own; for `glovebox plugin pull` and callers outside a runtime.
pub fn pull_components(components: OciComponents, update: bool) -> Result<Vec<Pulled>> {
    run_pull(components, update)
}

fn run_pull(components: OciComponents, update: bool) -> Result<Vec<Pulled>> {
    std::thread::scope(|scope| {
        scope
            .spawn(|| {
                let runtime = tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()?;
                Ok(runtime.block_on(glovebox_oci::pull(&components, update))?)
            })
            .join()
            .unwrap_or_else(|_| anyhow::bail!("the pull of registry components panicked"))
    })
}

/// The registry components of the config at `path`, when it names any. A
/// config that does not read is left to `HostConfig::load`, which says why.
fn registry_components(path: &Path) -> Option<OciComponents> {
    HostConfig::oci_components(path)
        .ok()
        .filter(|c| !c.references.is_empty())
}
