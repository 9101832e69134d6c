//! The `[build]`s of the plugins a config lists, read without loading the
//! config: `glovebox dev` builds a component that does not exist yet before
//! the config loads, and the config does not load without it.

use std::path::Path;

use serde::Deserialize;

use super::RawPluginEntry;
use crate::build::listed_build;
use crate::paths::{canonical, normalize, parent_dir, read_source};
use crate::{ConfigError, HostConfig, ListedBuild};

/// Only the `[[plugin]]` list of a config; the other keys are not read.
#[derive(Deserialize)]
struct RawPluginList {
    #[serde(default)]
    plugin: Vec<RawPluginEntry>,
}

impl HostConfig {
    /// The `[build]` of each plugin the config at `path` lists that has one,
    /// in the config's order, read even when the config does not load as a
    /// whole (a component not built yet). Only what is read is checked: a
    /// config or manifest that is not TOML, a `[[plugin]]` entry or a
    /// manifest's `name`, `component` or `[build]` that is wrong, a manifest
    /// that cannot be read. [`HostConfig::load`] checks the rest.
    pub fn builds_of(path: &Path) -> Result<Vec<ListedBuild>, ConfigError> {
        let src = read_source(path, path.display().to_string())?;
        let raw: RawPluginList = src.deserialize()?;
        let dir = parent_dir(&canonical(path, &src.file)?);
        // Manifests are named in messages as `load` names them.
        let display_dir = path.parent().unwrap_or(Path::new(""));
        let mut builds = Vec::new();
        for entry in &raw.plugin {
            let relative = Path::new(&entry.manifest);
            let shown = normalize(&display_dir.join(relative)).display().to_string();
            if let Some(build) = listed_build(&dir.join(relative), shown)? {
                builds.push(build);
            }
        }
        Ok(builds)
    }
}
