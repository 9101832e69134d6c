//! The files an operator would write for what a [`Harness`](crate::Harness)
//! was told: a plugin manifest (its `[[fs]]` grants, `env`, `[limits]`) and a
//! host config (`data_dir`, the compile cache, `[[plugin]]`, `[[hook]]`s).
//!
//! Why files and not structs: the host reads grants only through the
//! manifest crate's loader, which validates them (directories that exist,
//! guest paths, grants that do not reach the data dir, limits within the
//! host's caps). Writing TOML and loading it with that loader gives the
//! harness exactly the operator's path, so a grant that would be refused in
//! production is refused in the author's test too. Every value goes through
//! the `toml` serializer, never through string formatting.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use glovebox::manifest::Access;

use crate::limits::CallLimits;

/// What the plugin under test is.
#[derive(Clone, Debug)]
pub(crate) enum Plugin {
    /// A bare component; the harness writes its manifest.
    Component(PathBuf),
    /// An operator's manifest, used as written.
    Manifest(PathBuf),
}

/// One `[[fs]]` grant.
#[derive(Clone, Debug)]
pub(crate) struct Grant {
    pub host: PathBuf,
    pub guest: String,
    pub access: Access,
}

/// One `[[hook]]`.
#[derive(Clone, Debug)]
pub(crate) struct Hook {
    pub component: PathBuf,
    pub settings: serde_json::Value,
}

/// Everything a harness was told, to be written as config files.
#[derive(Clone, Debug)]
pub(crate) struct Setup {
    pub plugin: Plugin,
    pub grants: Vec<Grant>,
    pub env: Vec<String>,
    pub limits: CallLimits,
    pub hooks: Vec<Hook>,
    /// The settings of the component under test, when it is a hook.
    pub settings: serde_json::Value,
    pub cache_dir: Option<PathBuf>,
}

impl Setup {
    /// Whether anything but the plugin itself was said of its manifest.
    pub fn changes_manifest(&self) -> bool {
        !self.grants.is_empty() || !self.env.is_empty() || self.limits != CallLimits::default()
    }
}

/// The name a bare component's plugin (or hook) gets: its file stem, as
/// `glovebox plugin check x.wasm` names it (`tool_files.wasm` → `tool-files`).
pub(crate) fn stem_name(component: &Path) -> String {
    glovebox::PluginManifest::for_component(component.to_path_buf(), &Default::default()).name
}

/// An absolute path for `path`, from the current directory (`cargo test`
/// runs tests in the package's directory).
pub(crate) fn absolute(path: &Path) -> Result<PathBuf> {
    std::path::absolute(path).with_context(|| format!("cannot resolve `{}`", path.display()))
}

/// Writes the config files into `dir` and returns the host config's path.
/// With `as_hook`, the component under test is the first `[[hook]]` and
/// there is no plugin (a component of the hook world).
pub(crate) fn write(dir: &Path, setup: &Setup, as_hook: bool) -> Result<PathBuf> {
    let mut host = toml::Table::new();
    host.insert(
        "data_dir".into(),
        path_value(&dir.join("data"), "the data dir")?,
    );
    let mut runtime = toml::Table::new();
    if let Some(cache) = &setup.cache_dir {
        runtime.insert(
            "cache_dir".into(),
            path_value(&cache.join("cache"), "the compile cache")?,
        );
        runtime.insert(
            "digests_dir".into(),
            path_value(&cache.join("digests"), "the compile cache")?,
        );
    }
    host.insert("runtime".into(), toml::Value::Table(runtime));

    let mut hooks = Vec::new();
    let mut names = Vec::new();
    match (&setup.plugin, as_hook) {
        (Plugin::Component(component), true) => {
            names.push(stem_name(component));
            hooks.push(hook_table(
                &stem_name(component),
                &absolute(component)?,
                &setup.settings,
            )?);
        }
        (Plugin::Component(component), false) => {
            let manifest = dir.join("plugin.toml");
            std::fs::write(&manifest, manifest_text(component, setup)?)
                .with_context(|| format!("cannot write `{}`", manifest.display()))?;
            host.insert("plugin".into(), plugin_entry(&manifest)?);
        }
        (Plugin::Manifest(manifest), _) => {
            host.insert("plugin".into(), plugin_entry(&absolute(manifest)?)?);
        }
    }
    for (i, hook) in setup.hooks.iter().enumerate() {
        // Named after its file, as `glovebox hook test x.wasm` names it;
        // a name already taken gets its place in the list.
        let mut name = stem_name(&hook.component);
        if names.contains(&name) {
            name = format!("{name}-{}", i + 1);
        }
        names.push(name.clone());
        hooks.push(hook_table(
            &name,
            &absolute(&hook.component)?,
            &hook.settings,
        )?);
    }
    if hooks.is_empty() {
        host.insert("hooks".into(), "none".into());
    } else {
        host.insert("hook".into(), toml::Value::Array(hooks));
    }

    let path = dir.join("glovebox.toml");
    let text = toml::to_string(&host).context("cannot write the host config as TOML")?;
    std::fs::write(&path, text).with_context(|| format!("cannot write `{}`", path.display()))?;
    Ok(path)
}

/// The manifest of a bare component with the harness's grants.
fn manifest_text(component: &Path, setup: &Setup) -> Result<String> {
    let mut manifest = toml::Table::new();
    manifest.insert("name".into(), stem_name(component).into());
    manifest.insert(
        "component".into(),
        path_value(&absolute(component)?, "the component")?,
    );
    manifest.insert(
        "env".into(),
        toml::Value::Array(setup.env.iter().map(|v| v.clone().into()).collect()),
    );
    manifest.insert("limits".into(), toml::Value::Table(setup.limits.table()));
    let mut fs = Vec::new();
    for grant in &setup.grants {
        let mut table = toml::Table::new();
        table.insert(
            "host".into(),
            path_value(&absolute(&grant.host)?, "a granted directory")?,
        );
        table.insert("guest".into(), grant.guest.clone().into());
        let access = match grant.access {
            Access::ReadOnly => "read-only",
            Access::ReadWrite => "read-write",
        };
        table.insert("access".into(), access.into());
        fs.push(toml::Value::Table(table));
    }
    manifest.insert("fs".into(), toml::Value::Array(fs));
    toml::to_string(&manifest).context("cannot write the plugin manifest as TOML")
}

/// `[[plugin]] manifest = "…"`.
fn plugin_entry(manifest: &Path) -> Result<toml::Value> {
    let mut entry = toml::Table::new();
    entry.insert("manifest".into(), path_value(manifest, "the manifest")?);
    Ok(toml::Value::Array(vec![toml::Value::Table(entry)]))
}

/// One `[[hook]]` table.
fn hook_table(name: &str, component: &Path, settings: &serde_json::Value) -> Result<toml::Value> {
    let mut table = toml::Table::new();
    table.insert("name".into(), name.into());
    table.insert("component".into(), path_value(component, "a hook")?);
    let settings = toml::Value::try_from(settings).with_context(|| {
        format!("the settings of hook `{name}` cannot be written as TOML (no JSON `null` may be in them): {settings}")
    })?;
    table.insert("settings".into(), settings);
    Ok(toml::Value::Table(table))
}

/// A path as a TOML string; `what` names it when it is not UTF-8.
fn path_value(path: &Path, what: &str) -> Result<toml::Value> {
    let text = path.to_str().with_context(|| {
        format!(
            "the path of {what}, `{}`, is not UTF-8, which a config file cannot hold: move it",
            path.display()
        )
    })?;
    Ok(text.into())
}
