//! `glovebox plugin push` and `glovebox plugin pull`: components through an
//! OCI registry (docs/plugin-authors.md, "Shipping through a registry"), and
//! the store (`glovebox.lock` and the cache) a command finds them in.

use std::path::Path;
use std::process::ExitCode;

use anyhow::{Context, Result};
use glovebox::HostConfig;
use glovebox::manifest::{ComponentStore, ManifestIdentity, OciComponents, OciReference};

/// `glovebox plugin push PATH oci://REGISTRY/NAME:TAG`: the component of a
/// plugin manifest (`.toml`) or a component file, pushed as a Wasm
/// artifact titled with the plugin's name.
pub async fn push(config: &Path, path: &Path, target: &str, json: bool) -> Result<ExitCode> {
    let reference = OciReference::parse(target)
        .map_err(|problem| anyhow::anyhow!("{problem}: push to `oci://REGISTRY/NAME:TAG`"))?;
    let (component, title) = if path.extension().is_some_and(|e| e == "toml") {
        let store = store(config)?;
        let identity = ManifestIdentity::read_in(path, Some(&store))?;
        (identity.component, identity.name)
    } else {
        let title = path
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default();
        (path.to_path_buf(), title)
    };
    let pushed = glovebox::oci::push(&component, &reference, &title).await?;
    let by_digest = format!(
        "oci://{}/{}@{}",
        reference.registry, reference.repository, pushed.manifest
    );
    if json {
        out!(
            "{}",
            serde_json::json!({
                "reference": reference.text,
                "by_digest": by_digest,
                "manifest": pushed.manifest,
                "component": pushed.component,
                "size": pushed.size,
            })
        );
    } else {
        out!("pushed:    {reference} ({title})");
        out!("manifest:  {}", pushed.manifest);
        out!("component: {} ({} bytes)", pushed.component, pushed.size);
        out!();
        out!("name it in a plugin's manifest, by tag (pinned at the first pull) or for good:");
        out!("  component = \"{reference}\"");
        out!("  component = \"{by_digest}\"");
    }
    Ok(ExitCode::SUCCESS)
}

/// `glovebox plugin pull [--update]`: every `oci://` component the config's
/// plugins name, pinned in `glovebox.lock` and cached; `--update` resolves
/// the tags again and moves their pins.
pub fn pull(config: &Path, update: bool, json: bool) -> Result<ExitCode> {
    let components = HostConfig::oci_components(config)?;
    if components.references.is_empty() {
        if json {
            out!("[]");
        } else {
            out!(
                "`{}` names no `oci://` component: nothing to pull",
                config.display()
            );
        }
        return Ok(ExitCode::SUCCESS);
    }
    let lock = components.store.lock.clone();
    let pulled = glovebox::pull_components(components, update)?;
    if json {
        let rows: Vec<_> = pulled
            .iter()
            .map(|p| {
                serde_json::json!({
                    "reference": p.pin.reference,
                    "manifest": p.pin.manifest,
                    "component": p.pin.component,
                    "size": p.pin.size,
                    "fetched": p.fetched,
                    "moved_from": p.moved_from.as_ref().map(|m| &m.manifest),
                })
            })
            .collect();
        out!("{}", serde_json::Value::Array(rows));
        return Ok(ExitCode::SUCCESS);
    }
    for p in &pulled {
        let how = if p.fetched {
            format!("fetched, {} bytes", p.pin.size)
        } else {
            "cached".to_owned()
        };
        out!("{} → {} ({how})", p.pin.reference, p.pin.component);
        if let Some(old) = &p.moved_from {
            out!(
                "  moved from {} (component {})",
                old.manifest,
                old.component
            );
        }
    }
    out!("pinned in {}", lock.display());
    Ok(ExitCode::SUCCESS)
}

/// The store a command outside a config's load finds registry components
/// in: the config's (`glovebox.lock` beside it, its cache dir), or, when
/// there is no config, a lock beside where it would be and the user's
/// cache.
pub fn store(config: &Path) -> Result<ComponentStore> {
    if let Ok(components) = HostConfig::oci_components(config) {
        return Ok(components.store);
    }
    let config = std::path::absolute(config)
        .with_context(|| format!("cannot resolve `{}`", config.display()))?;
    Ok(ComponentStore::new(
        &config,
        &crate::cache_dir::user_cache_dir()?,
    ))
}

/// Pulls the component of the manifest at `manifest` when it names one in a
/// registry, into the store of `config`: that store, or `None` when the
/// component is a file.
pub async fn pull_for_manifest(config: &Path, manifest: &Path) -> Result<Option<ComponentStore>> {
    let Some(reference) = glovebox::PluginManifest::oci_reference(manifest)? else {
        return Ok(None);
    };
    let components = match HostConfig::oci_components(config) {
        Ok(of_config) => OciComponents {
            references: vec![reference],
            ..of_config
        },
        Err(_) => OciComponents {
            store: store(config)?,
            references: vec![reference],
            max_component_bytes: glovebox::manifest::RuntimeConfig::default().max_component_bytes,
        },
    };
    glovebox::oci::pull(&components, false).await?;
    Ok(Some(components.store))
}
