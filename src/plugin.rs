//! `glovebox plugin ...` and `glovebox tools`: what a plugin offers. The
//! subcommands of `plugin` are declared here and each runs where its work
//! lives: `check` and `accept` here, `test` in `plugin_test.rs`, `keygen`
//! and `sign` in `signing.rs`, `push` and `pull` in `oci.rs`.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, Result, bail};
use clap::Subcommand;
use glovebox::{Host, HostConfig, Limits, PluginManifest};

#[derive(Subcommand)]
pub enum PluginCommand {
    /// Validate a plugin (a manifest `.toml` or a component `.wasm`) and list its
    /// tools; a permission-hook component is validated as a hook.
    Check {
        /// A plugin manifest or a component file.
        path: PathBuf,
    },
    /// Accept the text (names, descriptions, schemas) of a plugin's tools as
    /// it is now: tools held because it changed, or because it carries text
    /// aimed at the model, are served again. Read `glovebox doctor` first.
    Accept {
        /// The plugin's name, as its manifest says.
        plugin: String,
    },
    /// Run a file of cases (a tool, its input, the output fragment or error
    /// kind expected) against a plugin in the real host: one line per case
    /// and a summary; exits 1 when a case fails.
    Test {
        /// A plugin manifest or a component file.
        path: PathBuf,
        /// The case file: TOML, or JSON when its name ends in `.json`.
        #[arg(long)]
        cases: PathBuf,
        /// Print one JSON object per case instead.
        #[arg(long)]
        json: bool,
    },
    /// Make a minisign key pair for signing plugins: `PATH.pub` (what
    /// `[trust]` lists) and `PATH.key` (secret, owner-only).
    Keygen {
        /// Where to write the keys, without extension.
        path: PathBuf,
    },
    /// Sign a plugin (its manifest `.toml`: its name, component and manifest)
    /// or a hook's component (`.wasm`), into `PATH.sig` beside it.
    Sign {
        /// A plugin manifest, or a hook's component file.
        path: PathBuf,
        /// The secret key file (`glovebox plugin keygen`, or `minisign -G`).
        #[arg(long)]
        key: PathBuf,
    },
    /// Push a plugin's component (of its manifest `.toml`, or a `.wasm`
    /// file) to an OCI registry as a Wasm artifact, under a tag; prints the
    /// digest that names it for good.
    Push {
        /// A plugin manifest or a component file.
        path: PathBuf,
        /// Where: `oci://REGISTRY/NAME:TAG`. Registries on this machine are
        /// reached over HTTP, others over HTTPS; credentials from
        /// `GLOVEBOX_REGISTRY_USERNAME` and `GLOVEBOX_REGISTRY_PASSWORD`.
        target: String,
        /// Print the digests as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Pull every `oci://` component the config's plugins name into the
    /// cache and pin each in `glovebox.lock` beside the config (the server
    /// does this at start and reload, for what is not pinned yet).
    Pull {
        /// Resolve the tags again and move their pins to what they name now.
        #[arg(long)]
        update: bool,
        /// Print what was pinned as JSON.
        #[arg(long)]
        json: bool,
    },
}

/// Runs `glovebox plugin COMMAND` with the config at `config`.
pub async fn run(config: &Path, command: PluginCommand) -> Result<ExitCode> {
    match command {
        PluginCommand::Check { path } => check(config, &path).await,
        PluginCommand::Accept { plugin } => accept(config, plugin).await,
        PluginCommand::Test { path, cases, json } => {
            crate::plugin_test::run(&path, &cases, json).await
        }
        PluginCommand::Keygen { path } => crate::signing::keygen(&path),
        PluginCommand::Sign { path, key } => crate::signing::sign(config, &path, &key),
        PluginCommand::Push { path, target, json } => {
            crate::oci::push(config, &path, &target, json).await
        }
        PluginCommand::Pull { update, json } => crate::oci::pull(config, update, json),
    }
}

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
                if found.iter().any(|f| glovebox::hooks::is_hook_interface(f))
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
