//! `[[plugin]]`: the plugins a config lists, each manifest found, loaded
//! once and named uniquely.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use serde::Deserialize;

use crate::guest::MemoryCap;
use crate::paths::{canonical, normalize, show_beside};
use crate::plugin::load_manifest;
use crate::source::{self, Source};
use crate::{ComponentStore, ConfigError, Limits, PluginManifest, Secrets, WorkspaceConfig};

/// `[[plugin]]`: one tool plugin.
#[derive(Deserialize)]
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub(crate) struct RawPluginEntry {
    /// The plugin's manifest file (see "A plugin's manifest" below).
    pub(crate) manifest: String,
}

/// What the config hands each manifest it loads: its `defaults`, the memory
/// `cap`, the `secrets` and `workspaces` its grants may name and the `store` its `oci://`
/// components are pinned and cached in.
pub(super) struct Under<'a> {
    pub(super) defaults: &'a Limits,
    pub(super) cap: &'a MemoryCap<'a>,
    pub(super) secrets: &'a Secrets,
    pub(super) workspaces: &'a [WorkspaceConfig],
    pub(super) store: &'a ComponentStore,
}

/// The manifests the `[[plugin]]` entries name, loaded in order `under` the
/// config: each file found (from `dir`, the config's directory; shown in
/// messages from `display_dir`, as the operator named the config), listed
/// once, its plugin's name unique.
pub(super) fn load_plugins(
    src: &Source,
    entries: &[RawPluginEntry],
    dir: &Path,
    display_dir: &Path,
    under: &Under<'_>,
) -> Result<Vec<PluginManifest>, ConfigError> {
    let mut plugins: Vec<PluginManifest> = Vec::new();
    let mut seen: HashMap<PathBuf, usize> = HashMap::new();
    for (i, entry) in entries.iter().enumerate() {
        let key = format!("plugin[{i}].manifest");
        let relative = Path::new(&entry.manifest);
        let shown = normalize(&display_dir.join(relative));
        if entry.manifest.trim().is_empty() {
            return Err(src.invalid(
                &key,
                "the manifest path is empty",
                source::hint_for("manifest"),
            ));
        }
        if !dir.join(relative).is_file() {
            return Err(src.invalid(
                &key,
                format!("plugin manifest `{}` not found", entry.manifest),
                format!(
                    "check the path; relative paths are resolved from the directory of `{}`",
                    src.file
                ),
            ));
        }
        let manifest_path = canonical(&dir.join(relative), &shown.display().to_string())?;
        if let Some(first) = seen.insert(manifest_path.clone(), i) {
            return Err(src.invalid(
                &key,
                format!(
                    "plugin manifest `{}` is listed twice (also `plugin[{first}].manifest`)",
                    entry.manifest
                ),
                "remove one of the `[[plugin]]` entries",
            ));
        }
        let shown = shown.display().to_string();
        let plugin = load_manifest(
            &manifest_path,
            shown.clone(),
            under.defaults,
            Some((under.cap, under.secrets, under.workspaces)),
            Some(under.store),
        )?;
        if let Some(other) = plugins.iter().find(|p| p.name == plugin.name) {
            let other_file = other
                .path
                .as_deref()
                .map(|p| show_beside(display_dir, dir, p));
            return Err(src.invalid(
                &key,
                format!(
                    "plugin name `{}` is used by both `{}` and `{}`",
                    plugin.name,
                    other_file.unwrap_or_default(),
                    shown
                ),
                "give each plugin a unique `name` in its manifest",
            ));
        }
        plugins.push(plugin);
    }
    Ok(plugins)
}
