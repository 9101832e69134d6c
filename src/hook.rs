//! `glovebox hook test`: one decision of one permission hook, dry-run, for
//! hook authors. The hook is loaded exactly as a host loads it (the same
//! checks, the same sandbox, the same limits) and judges one request; nothing
//! else runs and nothing is logged.
//!
//! Exit codes, as `glovebox call` would end: 0 the hook allows (or is not
//! consulted: its triggers do not cover the action), 3 it denies, 9 it asks
//! for a human; 2 it cannot be loaded or the request is malformed.

use crate::exit::Exit;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, Result, bail};
use clap::Subcommand;
use glovebox::hooks::{DecisionKind, HookHttp, HookRequest, HookStatus};
use glovebox::manifest::HookConfig;
use glovebox::{Host, HostConfig};
use serde::Deserialize;
use serde_json::{Value, json};

#[derive(Subcommand)]
pub enum HookCommand {
    /// Dry-run one decision: load HOOK as a host would and judge one request.
    Test {
        /// A hook of the config (by name), or a hook component file (`.wasm`).
        hook: String,
        /// The call to judge, as JSON: `action` (required), `tool`, `role`,
        /// `input` (a JSON value or text), `destructive`, `estimated_cost`,
        /// `tags`, `session`, `call_id`, and for a 0.2.0 hook `principal`,
        /// `project` and `http` (`method`, `url`, `scheme`, `host`, `path`).
        #[arg(long)]
        request: String,
        /// The hook's settings, as JSON (default: the config's `[hook.settings]`
        /// for a hook of the config, `{}` for a file).
        #[arg(long)]
        settings: Option<String>,
        /// Print the decision as JSON.
        #[arg(long)]
        json: bool,
    },
}

/// What `--request` may say; everything but the action has a default.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RequestArg {
    action: String,
    #[serde(default = "default_tool")]
    tool: String,
    #[serde(default = "default_role")]
    role: String,
    #[serde(default)]
    input: Option<Value>,
    #[serde(default)]
    destructive: bool,
    #[serde(default)]
    estimated_cost: f64,
    #[serde(default)]
    tags: Vec<String>,
    #[serde(default)]
    principal: String,
    #[serde(default)]
    project: Option<String>,
    #[serde(default)]
    http: Option<HookHttp>,
    #[serde(default = "default_session")]
    session: String,
    #[serde(default = "default_call")]
    call_id: String,
}

fn default_tool() -> String {
    "test.tool".into()
}
fn default_role() -> String {
    "workagent".into()
}
fn default_session() -> String {
    "s-hook-test".into()
}
fn default_call() -> String {
    "c-hook-test".into()
}

pub async fn run(config: &Path, command: HookCommand) -> Result<ExitCode> {
    let HookCommand::Test {
        hook,
        request,
        settings,
        json,
    } = command;
    let arg: RequestArg = serde_json::from_str(&request).with_context(|| {
        "`--request` is not a request: give a JSON object with at least `action`, e.g. '{\"action\": \"write:files\", \"destructive\": true}'"
    })?;
    let input = match arg.input {
        None => "{}".to_string(),
        Some(Value::String(text)) => text,
        Some(other) => other.to_string(),
    };
    let request = HookRequest {
        call_id: arg.call_id,
        tool: arg.tool,
        action: arg.action,
        role: arg.role,
        session: arg.session,
        input,
        estimated_cost: arg.estimated_cost,
        destructive: arg.destructive,
        tags: arg.tags,
        principal: arg.principal,
        project: arg.project,
        http: arg.http,
    };
    let mut hook = find_hook(config, &hook)?;
    if let Some(settings) = settings {
        hook.settings = serde_json::from_str(&settings)
            .context("`--settings` is not JSON: give the hook's settings as a JSON object")?;
        if !hook.settings.is_object() {
            bail!("`--settings` must be a JSON object (the hook's `[hook.settings]` table)");
        }
    }
    let host = load(config, hook).await?;
    let info = host.hooks().hooks().into_iter().next().expect("one hook");
    if let HookStatus::Broken(reason) = &info.status {
        eprintln!("error: hook `{}` cannot be loaded: {reason}", info.name);
        return Ok(Exit::Usage.into());
    }
    let outcome = host.hooks().evaluate(&request).await;
    let Some(decision) = outcome.decisions.first() else {
        if json {
            out!(
                "{}",
                serde_json::to_string_pretty(&json!({
                    "hook": info.name, "triggers": info.triggers, "consulted": false,
                }))?
            );
        } else {
            out!(
                "hook `{}` is not consulted for action `{}`: none of its triggers ({}) covers it",
                info.name,
                request.action,
                info.triggers.join(", ")
            );
        }
        return Ok(ExitCode::SUCCESS);
    };
    if json {
        out!(
            "{}",
            serde_json::to_string_pretty(&json!({
                "hook": info.name, "triggers": info.triggers, "consulted": true,
                "decision": decision,
            }))?
        );
    } else {
        let word = match decision.decision {
            DecisionKind::Allow => "allow",
            DecisionKind::Deny => "deny",
            DecisionKind::Ask => "ask",
        };
        out!(
            "hook `{}` (trigger `{}`): {word} in {:.2} ms",
            info.name,
            decision.pattern,
            decision.took.as_secs_f64() * 1e3
        );
        if let Some(reason) = &decision.reason {
            out!("  reason: {reason}");
        }
        for alternative in &decision.alternatives {
            out!("  instead: {alternative}");
        }
    }
    Ok(match decision.decision {
        DecisionKind::Allow => ExitCode::SUCCESS,
        DecisionKind::Deny => Exit::Denied.into(),
        DecisionKind::Ask => Exit::AwaitingApproval.into(),
    })
}

/// The hook `name` of the config, or the component file `name`: the
/// config's hook of that component when it has one (its name, settings and
/// signers), else a hook named for the file and held to the config's
/// `[trust]` as a hook of that name would be.
fn find_hook(config: &Path, name: &str) -> Result<HookConfig> {
    let looks_like_file = name.ends_with(".wasm") || name.contains('/');
    if !looks_like_file {
        let loaded = HostConfig::load(config).with_context(|| {
            format!("`{name}` is not a file, so it names a hook of the config, which does not load")
        })?;
        return loaded
            .hooks
            .iter()
            .find(|h| h.name == name)
            .cloned()
            .with_context(|| {
                let names: Vec<&str> = loaded.hooks.iter().map(|h| h.name.as_str()).collect();
                format!(
                    "the config `{}` has no hook `{name}` (its hooks: {}); or give a component file",
                    config.display(),
                    if names.is_empty() { "none".to_string() } else { names.join(", ") }
                )
            });
    }
    let path = std::path::absolute(name).with_context(|| format!("cannot resolve `{name}`"))?;
    if !path.exists() {
        bail!(
            "`{name}` does not exist: give a hook component (.wasm) or the name of a hook of the config"
        );
    }
    let stem = path
        .file_stem()
        .and_then(|s| s.to_str())
        .map(|s| {
            s.chars()
                .map(|c| {
                    if c.is_ascii_alphanumeric() {
                        c.to_ascii_lowercase()
                    } else {
                        '-'
                    }
                })
                .collect::<String>()
        })
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| "hook".into());
    let mut hook = HookConfig::new(stem, path);
    if let Ok(loaded) = HostConfig::load(config) {
        let canonical = std::fs::canonicalize(&hook.component).ok();
        if let Some(configured) = loaded
            .hooks
            .iter()
            .find(|h| std::fs::canonicalize(&h.component).ok() == canonical)
        {
            return Ok(configured.clone());
        }
        hook.signers = loaded.trust.as_ref().and_then(|t| t.for_hook(&hook.name));
    }
    Ok(hook)
}

/// A host with no tools and `hook` alone, loaded as any host loads its hooks
/// (with the config's data dir and compile cache when there is a config).
pub async fn load(config: &Path, hook: HookConfig) -> Result<Host> {
    let data_dir = match HostConfig::load(config) {
        Ok(c) => c.data_dir,
        Err(_) => crate::cache_dir::user_cache_dir()?,
    };
    let mut host_config = HostConfig::from_plugins(data_dir, Vec::new());
    host_config.hooks = vec![hook];
    host_config.hooks_explicitly_none = false;
    Host::load(host_config).await
}

/// The hook component file at `path`, checked as `plugin check` does.
pub async fn check(config: &Path, path: &Path) -> Result<ExitCode> {
    let hook = find_hook(config, &path.display().to_string())?;
    let component: PathBuf = hook.component.clone();
    let signed = hook.signers.is_some();
    let host = load(config, hook).await?;
    let info = host.hooks().hooks().into_iter().next().expect("one hook");
    match &info.status {
        HookStatus::Broken(reason) => {
            eprintln!(
                "error: `{}` is not a valid permission hook: {reason}",
                component.display()
            );
            Ok(Exit::Usage.into())
        }
        HookStatus::Ready => {
            let digest = glovebox::session::digest(&std::fs::read(&component)?);
            out!("ok: `{}` is a valid permission hook", info.name);
            out!("component: {}", component.display());
            out!("sha256:    {digest}");
            out!("triggers:  {}", info.triggers.join(", "));
            if signed {
                out!("signed:    by a key `[trust]` lists for this hook");
            }
            Ok(ExitCode::SUCCESS)
        }
    }
}
