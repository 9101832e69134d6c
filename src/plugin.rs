//! `glovebox plugin check` and `glovebox tools`: what a plugin offers.

use std::path::Path;
use std::process::ExitCode;

use anyhow::{Context, Result, bail};
use glovebox::{Host, HostConfig, Limits, PluginManifest};

/// Checks a plugin (a manifest or a bare component) by loading it as the host
/// would, and lists its tools; a permission-hook component is checked as a
/// hook (its triggers).
pub async fn check(config: &Path, path: &Path) -> Result<ExitCode> {
    // Use the configured data dir (and its compile cache) when there is a config.
    let (data_dir, defaults, trust) = match HostConfig::load(config) {
        Ok(c) => (c.data_dir, c.defaults, c.trust),
        Err(_) => (crate::cache_dir::user_cache_dir()?, Limits::default(), None),
    };
    let is_manifest = path.extension().is_some_and(|e| e == "toml");
    let manifest = if is_manifest {
        // A component named `oci://…` is pulled into the config's store first.
        let mut manifest = match crate::oci::pull_for_manifest(config, path).await? {
            Some(store) => PluginManifest::load_in(path, &defaults, &store)?,
            None => PluginManifest::load(path, &defaults)?,
        };
        // Held to the config's `[trust]` as the host would hold it.
        manifest.signers = trust.as_ref().and_then(|t| t.for_plugin(&manifest.name));
        manifest
    } else {
        if !path.exists() {
            bail!(
                "`{}` does not exist: give a plugin manifest (.toml) or a component (.wasm)",
                path.display()
            );
        }
        let absolute = std::path::absolute(path)
            .with_context(|| format!("cannot resolve `{}`", path.display()))?;
        PluginManifest::for_component(absolute, &defaults)
    };
    let component = manifest.component.clone();
    let host = match Host::load(HostConfig::from_plugins(data_dir, vec![manifest])).await {
        Ok(host) => host,
        // One loader for both kinds: a component of the hook world is checked
        // as a hook.
        Err(e) if is_hook(&e) && !is_manifest => {
            return crate::hook::check(config, &component).await;
        }
        Err(e) => return Err(e),
    };
    let plugin = &host.plugins()[0];
    out!(
        "ok: plugin `{}` is a valid tool plugin",
        plugin.manifest.name
    );
    match &plugin.manifest.oci {
        Some(pin) => out!(
            "component: {} ({}, cached at {})",
            pin.reference,
            pin.manifest,
            plugin.manifest.component.display()
        ),
        None => out!("component: {}", plugin.manifest.component.display()),
    }
    out!("sha256:    {}", plugin.digest);
    if let Some(key) = &plugin.signed_by {
        out!("signed:    by key {key} (trusted by `[trust]` for this plugin)");
    } else if let (Some(path), Some(manifest_digest)) =
        (&plugin.manifest.path, &plugin.manifest.manifest_sha256)
        && let Some(said) = crate::signing::unchecked_signature(
            path,
            &plugin.manifest.name,
            &plugin.digest,
            manifest_digest,
        )
    {
        out!("signed:    {said}");
    }
    out!();
    for tool in &plugin.tools {
        out!("{}", tool.name);
        out!("  {}", tool.description);
        out!(
            "  action: {}  destructive: {}  idempotent: {}",
            tool.action,
            tool.destructive,
            tool.idempotent
        );
        out!(
            "  input schema: {}",
            serde_json::to_string(&tool.input_schema)?
        );
    }
    Ok(ExitCode::SUCCESS)
}

/// The load failed because the component is of the hook world, not the tool world.
fn is_hook(e: &anyhow::Error) -> bool {
    e.chain().any(|c| {
        matches!(
            c.downcast_ref::<glovebox::LoadError>(),
            Some(glovebox::LoadError::WrongWorld { found, .. })
                if found.iter().any(|f| f == glovebox::hooks::HOOK_INTERFACE)
        )
    })
}

pub async fn tools(config: &Path, json: bool) -> Result<ExitCode> {
    let host = Host::from_config_file(config).await?;
    print_tools(&host, json)?;
    Ok(ExitCode::SUCCESS)
}

fn print_tools(host: &Host, json: bool) -> Result<()> {
    let tools = host.tools();
    if json {
        out!("{}", serde_json::to_string_pretty(&tools)?);
        return Ok(());
    }
    if tools.is_empty() {
        out!(
            "no tools: add a `[[plugin]]` to {}",
            host.config().path.display()
        );
    }
    let width = tools.iter().map(|t| t.name.len()).max().unwrap_or(0);
    for t in tools {
        let mut flags = Vec::new();
        if t.destructive {
            flags.push("destructive");
        }
        if t.idempotent {
            flags.push("idempotent");
        }
        out!(
            "{:width$}  {:28}  {:24}  {}",
            t.name,
            t.action,
            flags.join(","),
            t.description
        );
    }
    Ok(())
}

/// `glovebox plugin accept`: the operation `plugins.accept` (on the running
/// server when one holds the data dir), each tool with what changed printed
/// as JSON.
pub async fn accept(config: &Path, plugin: String) -> Result<ExitCode> {
    use glovebox::operations::{AcceptPlugin, AcceptPluginArgs};
    match crate::operate::run::<AcceptPlugin>(config, AcceptPluginArgs { plugin }).await? {
        Ok(accepted) => {
            crate::output::print_json(&accepted)?;
            Ok(ExitCode::SUCCESS)
        }
        Err(e) => Ok(crate::operation_refused(&e)),
    }
}
