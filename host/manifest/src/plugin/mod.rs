//! Plugin manifests: one tool plugin and everything the operator grants it.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Deserialize;

mod grants;

#[cfg(feature = "schemars")]
pub(crate) use grants::RawInject;
pub(crate) use grants::{RawFs, RawHttp};
use grants::{check_env, check_secrets, check_workspaces, fs_grants, http_grants, scratch_mount};

use crate::build::{RawBuild, plugin_build};
use crate::guest::{MemoryCap, normalize_sha256, valid_plugin_name};
use crate::limits::{RawLimits, apply_limits};
use crate::paths::{canonical, parent_dir, read_source, resolve_component, resolve_oci_component};
use crate::source::{self, ACTION_HINT, NAME_HINT, Source, join_key};
use crate::{
    ComponentStore, ConfigError, HttpFields, Limits, OciReference, PluginManifest, Secrets,
    ToolOverride, WorkspaceConfig,
};

/// A plugin's manifest: one file per tool plugin, named by a `[[plugin]]
/// manifest` in `glovebox.toml`.
#[derive(Deserialize)]
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub(super) struct RawManifest {
    /// The tool prefix: the plugin's tools are `name.tool` (lowercase
    /// letters, digits, `-`, `_`).
    name: String,
    /// The component file (wasm32-wasip2), or a component in an OCI
    /// registry, `oci://REGISTRY/NAME:TAG` or `oci://REGISTRY/NAME@sha256:…`,
    /// pulled once and pinned in `glovebox.lock` beside the config.
    component: String,
    /// A pin: a component that does not match is refused.
    #[cfg_attr(feature = "schemars", schemars(extend("x-default" = "none")))]
    sha256: Option<String>,
    /// This plugin's limits: `memory`, `deadline`, `output`, `stdio`, `fuel`,
    /// `write`, `stored_output`, `nested_calls`, `nested_depth` (as in `[defaults]`).
    #[serde(default)]
    #[cfg_attr(feature = "schemars", schemars(extend("x-default" = "the host's `[defaults]`", "x-one-row" = true)))]
    limits: RawLimits,
    /// A directory the plugin may see.
    #[serde(default)]
    fs: Vec<RawFs>,
    /// Host environment variables the plugin may read, by name.
    #[serde(default)]
    #[cfg_attr(feature = "schemars", schemars(extend("default" = [])))]
    env: Vec<String>,
    /// An origin the plugin may send requests to.
    #[serde(default)]
    http: Vec<RawHttp>,
    /// Where the plugin sees the calling session's scratch dir (e.g.
    /// `"/scratch"`): a read-write directory of its own per session, kept
    /// across calls, removed when the session is archived.
    #[cfg_attr(feature = "schemars", schemars(extend("x-default" = "none")))]
    scratch: Option<String>,
    /// What the operator says of a tool, by the tool's name; wins over what
    /// the plugin says of itself.
    #[serde(default)]
    #[cfg_attr(feature = "schemars", schemars(extend("x-key" = "<tool>")))]
    tools: BTreeMap<String, RawTool>,
    /// How `glovebox dev` rebuilds the component when its sources change:
    /// `command` and `watch`. Nothing but `glovebox dev` runs it.
    #[cfg_attr(feature = "schemars", schemars(extend("x-default" = "none")))]
    build: Option<RawBuild>,
}

/// `[tools.<tool>]`: what the operator says of a tool.
#[derive(Deserialize)]
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub(super) struct RawTool {
    /// The action hooks match on, as a colon path (e.g. `write:file`).
    #[cfg_attr(feature = "schemars", schemars(extend("x-default" = "the plugin's own")))]
    action: Option<String>,
    /// Whether it changes something.
    #[cfg_attr(feature = "schemars", schemars(extend("x-default" = "the plugin's own")))]
    destructive: Option<bool>,
    /// Whether running it twice is harmless (then an interrupted call may be re-run).
    #[cfg_attr(feature = "schemars", schemars(extend("x-default" = "the plugin's own")))]
    idempotent: Option<bool>,
    /// Whether a call only reads: only such tools are offered to a
    /// read-only principal or session (`read_only = true` in `glovebox.toml`
    /// or at `session_start`). Only the manifest says it (a plugin's own
    /// tool spec has no such claim); a destructive tool cannot be read-only.
    #[cfg_attr(feature = "schemars", schemars(extend("x-default" = "false")))]
    read_only: Option<bool>,
    /// Its estimated cost of one call, for hooks.
    #[cfg_attr(feature = "schemars", schemars(extend("x-default" = "the plugin's own")))]
    cost: Option<f64>,
    /// The input fields that hold the HTTP request a call makes, so that
    /// hooks see its method, host and path: `{ url = "url", method =
    /// "method" }`.
    #[cfg_attr(feature = "schemars", schemars(extend("x-default" = "none")))]
    http: Option<RawHttpFields>,
}

/// `[tools.<tool>] http`: which top-level input fields hold a call's HTTP request.
#[derive(Deserialize)]
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub(super) struct RawHttpFields {
    /// The input field holding the request's absolute URL.
    url: String,
    /// The input field holding its method.
    #[cfg_attr(feature = "schemars", schemars(extend("x-default" = "none: always the default method")))]
    method: Option<String>,
    /// The method when the input gives none.
    #[cfg_attr(feature = "schemars", schemars(extend("x-default" = "GET")))]
    default_method: Option<String>,
}

impl PluginManifest {
    /// Reads a plugin manifest; `defaults` are the host's limits that `[limits]` overrides.
    pub fn load(path: &Path, defaults: &Limits) -> Result<PluginManifest, ConfigError> {
        load_manifest(path, path.display().to_string(), defaults, None, None)
    }

    /// [`PluginManifest::load`], with a config's `store` in which an
    /// `oci://` component is found (`HostConfig::component_store`).
    pub fn load_in(
        path: &Path,
        defaults: &Limits,
        store: &ComponentStore,
    ) -> Result<PluginManifest, ConfigError> {
        load_manifest(
            path,
            path.display().to_string(),
            defaults,
            None,
            Some(store),
        )
    }

    /// The `oci://` reference the manifest at `path` names as its
    /// component, if it names one: read alone, before the manifest loads,
    /// so that it can be pulled first. A manifest that does not read says
    /// why when it loads; here it names no reference.
    pub fn oci_reference(path: &Path) -> Result<Option<OciReference>, ConfigError> {
        #[derive(Deserialize)]
        struct ComponentOnly {
            component: Option<String>,
        }
        let Ok(src) = read_source(path, path.display().to_string()) else {
            return Ok(None);
        };
        let Ok(raw) = src.deserialize::<ComponentOnly>() else {
            return Ok(None);
        };
        match raw.component.filter(|t| OciReference::is_oci(t)) {
            None => Ok(None),
            Some(text) => OciReference::parse(text.trim())
                .map(Some)
                .map_err(|problem| {
                    src.invalid(
                        "component",
                        problem,
                        "write `oci://REGISTRY/NAME:TAG` or `oci://REGISTRY/NAME@sha256:DIGEST`",
                    )
                }),
        }
    }

    /// A manifest for a bare component, with no grants at all: the name comes from the
    /// file stem (`tool_echo.wasm` → `tool-echo`). Used by `glovebox plugin check x.wasm`.
    pub fn for_component(component: PathBuf, defaults: &Limits) -> PluginManifest {
        let stem = component
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default();
        let component = std::fs::canonicalize(&component)
            .or_else(|_| std::path::absolute(&component))
            .unwrap_or(component);
        PluginManifest {
            path: None,
            name: name_from_stem(&stem),
            component,
            sha256: None,
            limits: defaults.clone(),
            fs: Vec::new(),
            workspaces: Vec::new(),
            per_caller: Vec::new(),
            env: Vec::new(),
            http: Vec::new(),
            scratch: None,
            tools: BTreeMap::new(),
            build: None,
            manifest_sha256: None,
            signers: None,
            oci: None,
        }
    }
}

/// What a signature of a plugin covers, read from its manifest without
/// checking its grants (a signer's machine may lack the directories the
/// operator's has): its name, its component file and the manifest's SHA-256.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ManifestIdentity {
    /// The plugin's name.
    pub name: String,
    /// The component file (absolute).
    pub component: PathBuf,
    /// The SHA-256 of the manifest file, lowercase hex.
    pub manifest_sha256: String,
}

impl ManifestIdentity {
    /// Reads the manifest at `path`: its keys must parse and its name and
    /// component must be valid; its grants are not checked.
    pub fn read(path: &Path) -> Result<ManifestIdentity, ConfigError> {
        ManifestIdentity::read_in(path, None)
    }

    /// [`ManifestIdentity::read`], finding an `oci://` component in `store`
    /// (a config's lock and cache).
    pub fn read_in(
        path: &Path,
        store: Option<&ComponentStore>,
    ) -> Result<ManifestIdentity, ConfigError> {
        let src = read_source(path, path.display().to_string())?;
        let raw: RawManifest = src.deserialize()?;
        let abs_path = canonical(path, &src.file)?;
        if !valid_plugin_name(&raw.name) {
            return Err(src.invalid(
                "name",
                format!("invalid plugin name `{}`", raw.name),
                NAME_HINT,
            ));
        }
        let component = if OciReference::is_oci(&raw.component) {
            resolve_oci_component(&src, "component", &raw.component, store)?.1
        } else {
            resolve_component(&src, &parent_dir(&abs_path), &raw.component)?
        };
        Ok(ManifestIdentity {
            name: raw.name,
            component,
            manifest_sha256: src.sha256(),
        })
    }
}

fn name_from_stem(stem: &str) -> String {
    let name: String = stem
        .chars()
        .map(|c| match c.to_ascii_lowercase() {
            c @ ('a'..='z' | '0'..='9' | '-') => c,
            _ => '-',
        })
        .collect();
    let name = name.trim_start_matches('-');
    if name.is_empty() {
        "plugin".to_owned()
    } else {
        name.to_owned()
    }
}

/// Reads the manifest at `path`, naming it `shown` in messages.
pub(super) fn load_manifest(
    path: &Path,
    shown: String,
    defaults: &Limits,
    host: Option<(&MemoryCap, &Secrets, &[WorkspaceConfig])>,
    store: Option<&ComponentStore>,
) -> Result<PluginManifest, ConfigError> {
    let cap = host.map(|(cap, _, _)| cap);
    let src = read_source(path, shown)?;
    let raw: RawManifest = src.deserialize()?;
    let abs_path = canonical(path, &src.file)?;
    let dir = parent_dir(&abs_path);

    let name = raw.name.clone();
    if !valid_plugin_name(&name) {
        return Err(src.invalid(
            "name",
            format!("invalid plugin name `{}`", raw.name),
            NAME_HINT,
        ));
    }

    let (component, oci) = if OciReference::is_oci(&raw.component) {
        let (pin, path) = resolve_oci_component(&src, "component", &raw.component, store)?;
        (path, Some(pin))
    } else {
        (resolve_component(&src, &dir, &raw.component)?, None)
    };

    let sha256 = match &raw.sha256 {
        None => None,
        Some(text) => Some(normalize_sha256(text).ok_or_else(|| {
            src.invalid(
                "sha256",
                format!("`{text}` is not a sha-256 digest"),
                source::hint_for("sha256"),
            )
        })?),
    };
    // A registry component is pinned by its lock: the pin the manifest
    // writes, if any, must be the same one.
    let sha256 = match (&oci, sha256) {
        (Some(pin), Some(written)) if written != pin.component_hex() => {
            return Err(src.invalid(
                "sha256",
                format!(
                    "`{written}` is not the digest of `{}`, which is pinned to `{}`",
                    pin.reference, pin.component
                ),
                "remove `sha256` (the lock pins a registry component) or name the component by that digest",
            ));
        }
        (Some(pin), _) => Some(pin.component_hex().to_owned()),
        (None, written) => written,
    };

    let limits = manifest_limits(&src, &raw, defaults, cap)?;
    let grants::FsGrants {
        fs,
        workspaces,
        per_caller,
    } = fs_grants(&src, &dir, &raw)?;
    check_env(&src, &raw)?;
    let http = http_grants(&src, &raw)?;
    if let Some((_, secrets, declared)) = host {
        check_secrets(&src, &raw, &http, secrets)?;
        check_workspaces(&src, &raw, declared)?;
    }
    let scratch = scratch_mount(&src, &raw)?;
    let tools = tool_overrides(&src, &raw)?;
    let build = plugin_build(&src, &dir, raw.build.as_ref())?;
    if let (Some(pin), Some(_)) = (&oci, &build) {
        return Err(src.invalid(
            "build",
            format!(
                "the component is `{}`, from a registry: nothing here builds it",
                pin.reference
            ),
            "remove `[build]`, or name the file the build writes as `component` (and push it with `glovebox plugin push`)",
        ));
    }

    Ok(PluginManifest {
        path: Some(abs_path),
        name,
        component,
        sha256,
        limits,
        fs,
        workspaces,
        per_caller,
        env: raw.env,
        http,
        scratch,
        tools,
        build,
        manifest_sha256: Some(src.sha256()),
        signers: None,
        oci,
    })
}

/// `[limits]` over the host's `defaults`: no wasm stack of its own, and a
/// memory the host's `cap` allows.
fn manifest_limits(
    src: &Source,
    raw: &RawManifest,
    defaults: &Limits,
    cap: Option<&MemoryCap>,
) -> Result<Limits, ConfigError> {
    let limits = apply_limits(src, "limits", &raw.limits, defaults)?;
    // wasmtime sets the wasm stack per engine, so one plugin cannot have its own:
    // refuse rather than accept a limit that would not hold.
    if raw.limits.max_wasm_stack.is_some() && limits.max_wasm_stack != defaults.max_wasm_stack {
        return Err(src.invalid(
            "limits.max_wasm_stack",
            format!(
                "a plugin cannot have its own wasm stack limit ({} bytes here, {} for the host): it is one setting for all plugins",
                limits.max_wasm_stack, defaults.max_wasm_stack
            ),
            "set `max_wasm_stack` in the `[defaults]` table of glovebox.toml instead",
        ));
    }
    // Only a memory this manifest sets is its own fault; the defaults were checked
    // against the host maximum in `glovebox.toml`.
    if let (Some(cap), Some(_)) = (cap, raw.limits.memory)
        && let Some((problem, hint)) = cap.check(limits.memory)
    {
        return Err(src.invalid("limits.memory", problem, hint));
    }
    Ok(limits)
}

/// `[tools.<tool>]`: what the manifest says of each tool (its action, a
/// non-negative cost).
fn tool_overrides(
    src: &Source,
    raw: &RawManifest,
) -> Result<BTreeMap<String, ToolOverride>, ConfigError> {
    let mut tools = BTreeMap::new();
    for (tool, over) in &raw.tools {
        let key = join_key("tools", tool);
        if tool.trim().is_empty() {
            return Err(src.invalid(&key, "the tool name is empty", source::hint_for("tools")));
        }
        if let Some(action) = &over.action
            && !valid_action(action)
        {
            return Err(src.invalid(
                &format!("{key}.action"),
                format!("invalid action `{action}`"),
                ACTION_HINT,
            ));
        }
        if let Some(cost) = over.cost
            && (!cost.is_finite() || cost < 0.0)
        {
            return Err(src.invalid(
                &format!("{key}.cost"),
                format!("cost {cost} is not a non-negative number"),
                source::hint_for("cost"),
            ));
        }
        if over.read_only == Some(true) && over.destructive == Some(true) {
            return Err(src.invalid(
                &format!("{key}.read_only"),
                "a tool that may destroy or overwrite data does not only read",
                "drop `read_only = true`, or set `destructive = false` if the tool truly changes nothing",
            ));
        }
        let http = match &over.http {
            Some(raw) => Some(http_fields(src, &format!("{key}.http"), raw)?),
            None => None,
        };
        tools.insert(
            tool.clone(),
            ToolOverride {
                action: over.action.clone(),
                destructive: over.destructive,
                idempotent: over.idempotent,
                read_only: over.read_only,
                cost: over.cost,
                http,
            },
        );
    }
    Ok(tools)
}

/// `[tools.<tool>] http` at `key`, checked: field names that are not empty,
/// a default method that is an HTTP method token.
fn http_fields(src: &Source, key: &str, raw: &RawHttpFields) -> Result<HttpFields, ConfigError> {
    for (field, name) in [("url", Some(&raw.url)), ("method", raw.method.as_ref())] {
        if name.is_some_and(|n| n.trim().is_empty()) {
            return Err(src.invalid(
                &format!("{key}.{field}"),
                "the input field's name is empty",
                "name the tool's top-level input field, e.g. `http = { url = \"url\", method = \"method\" }`",
            ));
        }
    }
    let default_method = raw.default_method.as_deref().unwrap_or("GET");
    if default_method.is_empty() || !default_method.chars().all(|c| c.is_ascii_uppercase()) {
        return Err(src.invalid(
            &format!("{key}.default_method"),
            format!("`{default_method}` is not an HTTP method"),
            "write an uppercase method such as `GET` or `POST`",
        ));
    }
    Ok(HttpFields {
        url: raw.url.clone(),
        method: raw.method.clone(),
        default_method: default_method.to_string(),
    })
}

/// Colon-separated segments of `[a-z0-9_*-]`, e.g. `execute:database:*`.
pub(super) fn valid_action(action: &str) -> bool {
    action.split(':').all(|segment| {
        !segment.is_empty()
            && segment
                .chars()
                .all(|c| matches!(c, 'a'..='z' | '0'..='9' | '_' | '-' | '*'))
    })
}
