//! Loading a tool plugin: read and pin the file, compile it (or take it from
//! the cache), check it against the `tool-plugin` world, and ask it for its tools.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::component_file::{self, ComponentFile, FileProblem};
use serde::Serialize;
use wasmtime::component::Component;
use wasmtime::component::types::ComponentItem;

use crate::bindings::TOOL_INTERFACE;
use crate::bindings::tool::ToolPluginPre;
use crate::call::{Hands, RunLimits};
use crate::error::LoadError;
use crate::manifest::{HostConfig, HttpFields, PluginManifest};
use crate::preinit;
use crate::runtime::Runtime;
use crate::sandbox::{CallState, Grants};
use crate::signature::{Statement, plugin_signature_path};
use crate::trust;

/// A tool as the host offers it: what the plugin said, corrected by the manifest.
#[derive(Clone, Debug, Serialize)]
pub struct ToolInfo {
    /// `plugin.tool`: the name callers use.
    pub name: String,
    pub plugin: String,
    /// The tool's own name inside its plugin.
    pub tool: String,
    pub description: String,
    pub input_schema: serde_json::Value,
    /// The order in which a person approving a call sees its input's keys:
    /// the schema's `required` keys, then its other properties, as its text
    /// lists them (`glovebox_input::shown::field_order`).
    #[serde(skip)]
    pub field_order: Vec<String>,
    pub action: String,
    pub destructive: bool,
    pub idempotent: bool,
    /// Whether a call only reads (the manifest's `[tools.<tool>]
    /// read_only`; no claim is not read-only): only such tools are offered
    /// to a read-only principal or session.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub read_only: bool,
    /// Estimated cost of one call, from the manifest's cost model.
    pub cost: Option<f64>,
    /// Which input fields hold the HTTP request a call makes (the
    /// manifest's `[tools.<tool>] http`), for the hooks.
    #[serde(skip)]
    pub http: Option<HttpFields>,
}

/// A plugin ready to serve calls: compiled, linked, its tools known.
pub struct LoadedPlugin {
    pub manifest: PluginManifest,
    /// sha256 of the component file, lowercase hex.
    pub digest: String,
    pub tools: Vec<ToolInfo>,
    /// The input schema of each tool of `tools`, compiled, in the same order.
    pub validators: Vec<glovebox_input::Validator>,
    /// The component, linked and ready to instantiate.
    pub pre: ToolPluginPre<CallState>,
    /// What its instances may reach, from its manifest.
    pub grants: Grants,
    /// The id of the key whose signature `[trust]` held it to (as minisign
    /// prints it); `None` when `[trust]` does not cover it.
    pub signed_by: Option<String>,
}

impl LoadedPlugin {
    /// The limits of one call, from its manifest.
    pub fn run_limits(&self) -> RunLimits {
        RunLimits::of(&self.manifest.limits)
    }
}

/// Loads one plugin. Every failure names the plugin and what to do about it.
pub async fn load_plugin(
    runtime: &Arc<Runtime>,
    config: &HostConfig,
    manifest: PluginManifest,
) -> Result<LoadedPlugin, LoadError> {
    let name = manifest.name.clone();
    let path = manifest.component.clone();
    let ComponentFile { bytes, digest } = component_file::read(
        &path,
        config.runtime.max_component_bytes,
        manifest.sha256.as_deref(),
    )
    .map_err(|problem| load_error(&name, &path, problem))?;
    let signed_by = check_signature(&manifest, &digest)?;
    let limits = RunLimits::of(&manifest.limits);

    let wasm = if preinit::wanted(&bytes) {
        preinit::snapshot(runtime, &name, &bytes, &digest, &limits).await?
    } else {
        bytes
    };
    let component = runtime
        .compile(&name, wasm)
        .await
        .map_err(|e| LoadError::Invalid {
            plugin: name.clone(),
            path: path.clone(),
            message: e.to_string(),
        })?;

    check_tool_exports(runtime, &name, &component)?;
    let instance_pre = runtime
        .linker()
        .instantiate_pre(&component)
        .map_err(|e| import_error(&name, &component, runtime, &e))?;
    let pre = ToolPluginPre::new(instance_pre).map_err(|e| LoadError::MissingExport {
        plugin: name.clone(),
        interface: TOOL_INTERFACE.to_string(),
        function: format!("{e:#}"),
    })?;

    let specs = list_tools(runtime, &name, &pre, &limits).await?;
    let (tools, validators) = apply_manifest(&manifest, specs)?;
    let grants = Grants::from_manifest(&manifest, &config.secrets);
    Ok(LoadedPlugin {
        manifest,
        digest,
        tools,
        validators,
        pre,
        grants,
        signed_by,
    })
}

/// Holds the plugin to the keys `[trust]` gives it (`manifest.signers`):
/// its signature beside its manifest must sign its name, this component
/// (`digest`) and the manifest as read. The signer's key id, or `None` when
/// no key covers it.
fn check_signature(manifest: &PluginManifest, digest: &str) -> Result<Option<String>, LoadError> {
    let Some(signers) = &manifest.signers else {
        return Ok(None);
    };
    let untrusted = |problem| LoadError::Untrusted {
        plugin: manifest.name.clone(),
        problem: Box::new(problem),
    };
    // `[trust]` covers only plugins read from a manifest file; one built in
    // code with signers but no file has nothing a signature could cover.
    let (Some(path), Some(manifest_sha256)) = (&manifest.path, &manifest.manifest_sha256) else {
        return Err(untrusted(trust::TrustProblem::OtherSubject {
            signature: PathBuf::new(),
            signed: "nothing: the plugin has no manifest file to sign".into(),
            sign: "glovebox plugin sign MANIFEST --key SECRET_KEY_FILE".into(),
        }));
    };
    let subject = trust::Subject {
        expected: Statement::Plugin {
            name: manifest.name.clone(),
            component_sha256: digest.to_string(),
            manifest_sha256: manifest_sha256.clone(),
        },
        signature: plugin_signature_path(path),
        component: &manifest.component,
        manifest: Some(path),
    };
    trust::check(signers, &subject).map(Some).map_err(untrusted)
}

/// A component file's problem, said of plugin `name`.
fn load_error(name: &str, path: &Path, problem: FileProblem) -> LoadError {
    let (plugin, path) = (name.to_string(), path.to_path_buf());
    match problem {
        FileProblem::Read(source) => LoadError::Read {
            plugin,
            path,
            source,
        },
        FileProblem::NotAFile => LoadError::Read {
            plugin,
            path,
            source: std::io::Error::other("it is not a file"),
        },
        FileProblem::TooLarge { size, limit } => LoadError::TooLarge {
            plugin,
            path,
            size,
            limit,
        },
        FileProblem::DigestMismatch { expected, actual } => LoadError::DigestMismatch {
            plugin,
            path,
            expected,
            actual,
        },
        FileProblem::NotWasm => LoadError::NotWasm { plugin, path },
        FileProblem::CoreModule => LoadError::CoreModule { plugin, path },
    }
}

/// Checks the component exports the `tool` interface with both functions, so
/// a wrong world gets a message that says so instead of a type error.
fn check_tool_exports(
    runtime: &Runtime,
    name: &str,
    component: &Component,
) -> Result<(), LoadError> {
    let engine = runtime.engine();
    let ty = component.component_type();
    let mut found = Vec::new();
    for (export, item) in ty.exports(engine) {
        if export != TOOL_INTERFACE {
            found.push(export.to_string());
            continue;
        }
        let ComponentItem::ComponentInstance(instance) = item.ty else {
            return Err(LoadError::WrongWorld {
                plugin: name.to_string(),
                world: "tool-plugin",
                expected: format!("{TOOL_INTERFACE} (as an instance)"),
                found: vec![export.to_string()],
            });
        };
        let funcs: Vec<&str> = instance.exports(engine).map(|(n, _)| n).collect();
        for function in ["list-tools", "call"] {
            if !funcs.contains(&function) {
                return Err(LoadError::MissingExport {
                    plugin: name.to_string(),
                    interface: TOOL_INTERFACE.to_string(),
                    function: function.to_string(),
                });
            }
        }
        return Ok(());
    }
    Err(LoadError::WrongWorld {
        plugin: name.to_string(),
        world: "tool-plugin",
        expected: TOOL_INTERFACE.to_string(),
        found,
    })
}

/// Names the import the linker could not satisfy.
fn import_error(
    name: &str,
    component: &Component,
    runtime: &Runtime,
    err: &wasmtime::Error,
) -> LoadError {
    let message = format!("{err:#}");
    let engine = runtime.engine();
    let import = component
        .component_type()
        .imports(engine)
        .map(|(n, _)| n.to_string())
        .find(|n| message.contains(n.as_str()))
        .unwrap_or(message);
    LoadError::ForbiddenImport {
        plugin: name.to_string(),
        world: "tool",
        import,
    }
}

async fn list_tools(
    runtime: &Runtime,
    name: &str,
    pre: &ToolPluginPre<CallState>,
    limits: &RunLimits,
) -> Result<Vec<crate::bindings::tool::glovebox::plugin::types::ToolSpec>, LoadError> {
    let instantiate_err = |message: String| LoadError::Instantiate {
        plugin: name.to_string(),
        message,
    };
    // Listing tools needs no capability at all.
    let mut hands = Hands::new(runtime, &Grants::none(), None, limits)
        .map_err(|e| instantiate_err(format!("{e:#}")))?;
    let result = hands
        .run(pre, limits.deadline, async |plugin, store| {
            plugin.glovebox_plugin_tool().call_list_tools(store).await
        })
        .await;
    result.map_err(|ended| {
        instantiate_err(ended.at_load("instantiating it and listing its tools", limits))
    })
}

fn apply_manifest(
    manifest: &PluginManifest,
    specs: Vec<crate::bindings::tool::glovebox::plugin::types::ToolSpec>,
) -> Result<(Vec<ToolInfo>, Vec<glovebox_input::Validator>), LoadError> {
    let plugin = &manifest.name;
    let bad = |tool: &str, message: String| LoadError::BadToolSpec {
        plugin: plugin.clone(),
        tool: tool.to_string(),
        message,
    };
    let offered: Vec<String> = specs.iter().map(|s| s.name.clone()).collect();
    if let Some(unknown) = manifest.tools.keys().find(|k| !offered.contains(k)) {
        return Err(LoadError::UnknownOverride {
            plugin: plugin.clone(),
            tool: unknown.clone(),
            offered,
        });
    }
    let mut tools = Vec::new();
    let mut validators = Vec::new();
    for spec in specs {
        if !valid_tool_name(&spec.name) {
            return Err(bad(
                &spec.name,
                "tool names use lowercase letters, digits, `-`, `_` and `.`, starting with a letter".into(),
            ));
        }
        if tools.iter().any(|t: &ToolInfo| t.tool == spec.name) {
            return Err(bad(&spec.name, "the plugin lists this tool twice".into()));
        }
        let (schema, validator) = glovebox_input::compile_schema(&spec.input_schema)
            .map_err(|e| bad(&spec.name, e.to_string()))?;
        let over = manifest.tools.get(&spec.name);
        let action = over.and_then(|o| o.action.clone()).unwrap_or(spec.action);
        if !valid_action(&action) {
            return Err(bad(
                &spec.name,
                format!(
                    "action `{action}` is not a colon path like `execute:file:read`; override it with `[tools.{}] action = ...`",
                    spec.name
                ),
            ));
        }
        let destructive = over.and_then(|o| o.destructive).unwrap_or(spec.destructive);
        let read_only = over.and_then(|o| o.read_only).unwrap_or(false);
        if read_only && destructive {
            return Err(bad(
                &spec.name,
                format!(
                    "the manifest marks it `read_only` but the plugin says it is destructive; drop `[tools.{name}] read_only`, or set `[tools.{name}] destructive = false` if it truly changes nothing",
                    name = spec.name
                ),
            ));
        }
        tools.push(ToolInfo {
            name: format!("{plugin}.{}", spec.name),
            plugin: plugin.clone(),
            tool: spec.name,
            description: spec.description,
            input_schema: schema,
            field_order: glovebox_input::shown::field_order(&spec.input_schema),
            action,
            destructive,
            idempotent: over.and_then(|o| o.idempotent).unwrap_or(spec.idempotent),
            read_only,
            cost: over.and_then(|o| o.cost),
            http: over.and_then(|o| o.http.clone()),
        });
        validators.push(validator);
    }
    Ok((tools, validators))
}

fn valid_tool_name(name: &str) -> bool {
    let mut chars = name.chars();
    matches!(chars.next(), Some(c) if c.is_ascii_lowercase())
        && chars
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || matches!(c, '-' | '_' | '.'))
}

fn valid_action(action: &str) -> bool {
    !action.is_empty()
        && action.split(':').all(|seg| {
            !seg.is_empty()
                && seg.chars().all(|c| {
                    c.is_ascii_lowercase() || c.is_ascii_digit() || matches!(c, '-' | '_' | '*')
                })
        })
}
