//! The tool names a config writes, checked against the tools its components
//! have, once they are loaded: a required gate's tool (`[[completion]]`),
//! an OAuth tool scope (`[auth.oauth.tool_scopes]`) and every pattern of a
//! `[[toolset]]`.
//!
//! Why at load and not when a call comes: each of these is a rule about
//! tools, and a name that matches none is a rule that does nothing (a gate
//! that can never pass, a scope that protects nothing, a toolset offering
//! less than the operator meant). Only the components say which tools they
//! have, so the manifest crate cannot check it; the host refuses the config
//! here, before it serves anything, naming the key and the tools there are.

use std::collections::BTreeMap;
use std::sync::Arc;

use crate::manifest::HostConfig;
use crate::plugin::LoadedPlugin;

/// Where each loaded tool is: its plugin's and its own index, by name.
pub(crate) type ToolIndex = BTreeMap<String, (usize, usize)>;

/// Every tool name of `config` names one of `plugins`' tools (`index`).
pub(crate) fn check(
    config: &HostConfig,
    plugins: &[Arc<LoadedPlugin>],
    index: &ToolIndex,
) -> anyhow::Result<()> {
    check_gates(config, index)?;
    check_tool_scopes(config, plugins, index)?;
    check_toolsets(config, plugins, index)
}

/// A required gate that names no tool could never pass.
fn check_gates(config: &HostConfig, index: &ToolIndex) -> anyhow::Result<()> {
    for (i, rule) in config.completion.iter().enumerate() {
        rule.completion
            .check(|tool| index.contains_key(tool))
            .map_err(|e| anyhow::anyhow!("`{}`: completion[{i}].{e}", config.path.display()))?;
    }
    Ok(())
}

/// A tool scope that names no tool would protect nothing: a typo must not
/// leave a tool open to tokens the operator meant to keep out.
fn check_tool_scopes(
    config: &HostConfig,
    plugins: &[Arc<LoadedPlugin>],
    index: &ToolIndex,
) -> anyhow::Result<()> {
    let Some(oauth) = &config.oauth else {
        return Ok(());
    };
    for key in oauth.tool_scopes.keys() {
        if !names_a_tool(key, plugins, index) {
            anyhow::bail!(
                "`{}`: `auth.oauth.tool_scopes.{key}` names no configured tool, so it would protect nothing: spell the tool as `tools/list` shows it (`plugin.tool`, or `plugin.*`), or remove the entry; the tools are {}",
                config.path.display(),
                tool_list(index)
            );
        }
    }
    Ok(())
}

/// Every pattern of every `[[toolset]]` names a loaded tool: a typo must
/// not leave a toolset offering less than the operator meant, unnoticed.
fn check_toolsets(
    config: &HostConfig,
    plugins: &[Arc<LoadedPlugin>],
    index: &ToolIndex,
) -> anyhow::Result<()> {
    for (i, set) in config.toolsets.sets.iter().enumerate() {
        for pattern in &set.tools {
            if !names_a_tool(pattern, plugins, index) {
                anyhow::bail!(
                    "`{}`: `toolset[{i}].tools` (toolset `{}`) names `{pattern}`, which is no configured tool, so the toolset would not offer what it says: spell the tool as `tools/list` shows it (`plugin.tool`, or `plugin.*`), or remove it; the tools are {}",
                    config.path.display(),
                    set.name,
                    tool_list(index)
                );
            }
        }
    }
    Ok(())
}

/// Whether tool pattern `pattern` (`plugin.tool`, or `plugin.*`) names a
/// configured tool: a loaded plugin's, or one of `index`.
fn names_a_tool(pattern: &str, plugins: &[Arc<LoadedPlugin>], index: &ToolIndex) -> bool {
    match pattern.strip_suffix(".*") {
        Some(plugin) => plugins.iter().any(|p| p.manifest.name == plugin),
        None => index.contains_key(pattern),
    }
}

/// The loaded tools, for an error that names the ones there are.
fn tool_list(index: &ToolIndex) -> String {
    index.keys().cloned().collect::<Vec<_>>().join(", ")
}
