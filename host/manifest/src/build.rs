//! A plugin manifest's `[build]`: how `glovebox dev` remakes the component
//! when the plugin's sources change. Read and checked here, with the rest
//! of the manifest, so a bad pattern is refused when the manifest loads,
//! not when the first file changes; only `glovebox dev` runs the command
//! (`glovebox serve` never builds anything).

use std::path::{Component, Path};

use serde::Deserialize;

use super::paths::{canonical, normalize, parent_dir, read_source};
use super::source::Source;
use super::{ListedBuild, PluginBuild};

/// The sources watched when `[build]` names none: the layout of a Rust,
/// Python or JavaScript plugin project.
pub const DEFAULT_WATCH: &str = "src/**";

/// `[build]`: how `glovebox dev` rebuilds the component.
#[derive(Deserialize)]
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub(super) struct RawBuild {
    /// The shell command (`sh -c`) that writes the component, run in the
    /// manifest's directory, e.g. `"cargo build --release --target wasm32-wasip2"`.
    command: String,
    /// The sources whose change calls for a build: glob patterns relative
    /// to the manifest's directory (`*` within a name, `**` across
    /// directories). The component itself, `target/` and hidden files never
    /// call for one.
    #[cfg_attr(feature = "schemars", schemars(extend("default" = ["src/**"])))]
    watch: Option<Vec<String>>,
}

/// Only what a build needs of a manifest, for a manifest that may not load
/// as a whole (its component not built yet): the other keys are not read.
#[derive(Deserialize)]
struct RawManifestBuild {
    name: String,
    component: String,
    build: Option<RawBuild>,
}

/// The `[build]` of the manifest at `path` (shown in messages as `shown`),
/// with the plugin's name and the component it writes, which need not
/// exist; `None` for a manifest without `[build]`. Only a file that is not
/// TOML, lacks `name` or `component`, or has a bad `[build]` fails.
pub(super) fn listed_build(
    path: &Path,
    shown: String,
) -> Result<Option<ListedBuild>, super::ConfigError> {
    let src = read_source(path, shown)?;
    let raw: RawManifestBuild = src.deserialize()?;
    let manifest = canonical(path, &src.file)?;
    let dir = parent_dir(&manifest);
    let Some(build) = plugin_build(&src, &dir, raw.build.as_ref())? else {
        return Ok(None);
    };
    Ok(Some(ListedBuild {
        plugin: raw.name,
        component: normalize(&dir.join(&raw.component)),
        manifest,
        build,
    }))
}

/// `[build]` checked: a command, and patterns that stay inside `dir`.
pub(super) fn plugin_build(
    src: &Source,
    dir: &Path,
    raw: Option<&RawBuild>,
) -> Result<Option<PluginBuild>, super::ConfigError> {
    let Some(raw) = raw else {
        return Ok(None);
    };
    if raw.command.trim().is_empty() {
        return Err(src.invalid(
            "build.command",
            "the build command is empty",
            "write the shell command that writes the component, e.g. `command = \"cargo build --release --target wasm32-wasip2\"`, or remove `[build]`",
        ));
    }
    let watch = match &raw.watch {
        None => vec![DEFAULT_WATCH.to_owned()],
        Some(watch) if watch.is_empty() => {
            return Err(src.invalid(
                "build.watch",
                "no source is watched, so no change would ever rebuild the plugin",
                format!(
                    "list the sources the build reads, e.g. `watch = [\"src/**\", \"Cargo.toml\"]`, or remove the key for the default `{DEFAULT_WATCH}`"
                ),
            ));
        }
        Some(watch) => watch.clone(),
    };
    for (i, pattern) in watch.iter().enumerate() {
        if let Some(problem) = pattern_problem(pattern) {
            return Err(src.invalid(
                &format!("build.watch[{i}]"),
                format!("`{}` {problem}", pattern.escape_debug()),
                "write a pattern relative to the manifest's directory, e.g. `\"src/**\"` or `\"Cargo.toml\"`",
            ));
        }
    }
    Ok(Some(PluginBuild {
        command: raw.command.clone(),
        watch,
        dir: dir.to_path_buf(),
    }))
}

/// Why `pattern` cannot be watched, if it cannot.
fn pattern_problem(pattern: &str) -> Option<String> {
    if pattern.trim().is_empty() {
        return Some("is empty".to_owned());
    }
    let path = Path::new(pattern);
    if path.is_absolute() {
        return Some("is absolute".to_owned());
    }
    if path.components().any(|c| c == Component::ParentDir) {
        return Some("contains `..`, which leaves the manifest's directory".to_owned());
    }
    globset::Glob::new(pattern)
        .err()
        .map(|e| format!("is not a glob pattern: {}", e.kind()))
}
