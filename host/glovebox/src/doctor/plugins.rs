//! The checks of the plugins and hooks in the config: digest pins and
//! directories several plugins may write.

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;

use super::findings::{Culprit, CulpritKind, Finding, Rule, Severity, quoted};
use crate::host::Host;
use crate::manifest::{Access, HostConfig};

/// Tools held until an operator accepts their text (`crate::tool_text`):
/// what changed and what in it looks aimed at the model.
pub(super) fn held_tools(host: &Host) -> Vec<Finding> {
    let mut findings = Vec::new();
    for (tool, hold) in host.held().iter() {
        let plugin = tool.split_once('.').map_or(tool.as_str(), |(p, _)| p);
        let manifest = host
            .plugin_named(plugin)
            .and_then(|p| p.manifest.path.clone());
        let (change, found) = match hold {
            crate::tool_text::Hold::Changed { diff, findings, .. } => {
                (format!("; what changed:\n{diff}"), findings.as_slice())
            }
            crate::tool_text::Hold::Flagged { findings, .. } => {
                (String::new(), findings.as_slice())
            }
            crate::tool_text::Hold::Unreadable { .. } => (String::new(), &[][..]),
        };
        let found: String = found
            .iter()
            .map(|f| format!("\n  {} in {}: {}", f.rule, f.place, f.text))
            .collect();
        findings.push(Finding::new(
            Rule::HeldToolText,
            Severity::Warning,
            Culprit {
                kind: CulpritKind::Tool,
                name: tool.clone(),
                id: None,
                file: manifest,
            },
            format!("{}{change}{found}", hold.reason(tool)),
            format!(
                "read the change; if the plugin's new text is what you meant to serve, `glovebox plugin accept {plugin}`; if not, put back the component you reviewed (and pin its `sha256`)"
            ),
        ));
    }
    findings
}

/// Plugins and hooks whose component is not pinned by `sha256`.
pub(super) fn unpinned(host: &Host) -> Vec<Finding> {
    let config = host.config();
    let mut findings = Vec::new();
    for plugin in host.plugins() {
        let m = &plugin.manifest;
        if m.sha256.is_some() {
            continue;
        }
        let file = m.path.clone().unwrap_or_else(|| config.path.clone());
        findings.push(Finding::new(
            Rule::UnpinnedDigest,
            Severity::Warning,
            Culprit {
                kind: CulpritKind::Plugin,
                name: m.name.clone(),
                id: None,
                file: Some(file.clone()),
            },
            format!(
                "plugin `{}` runs whatever component is at `{}`: its manifest pins no digest, so a replaced file would be loaded without a word",
                m.name,
                m.component.display()
            ),
            format!(
                "pin the component you reviewed: add `sha256 = \"{}\"` to `{}`",
                plugin.digest,
                file.display()
            ),
        ));
    }
    let infos = host.hooks().hooks();
    for hook in &config.hooks {
        if hook.sha256.is_some() {
            continue;
        }
        let digest = infos
            .iter()
            .find(|i| i.name == hook.name)
            .and_then(|i| i.digest.clone())
            .or_else(|| {
                std::fs::read(&hook.component)
                    .ok()
                    .map(|b| crate::session::digest(&b))
            });
        findings.push(Finding::new(
            Rule::UnpinnedDigest,
            Severity::Warning,
            Culprit {
                kind: CulpritKind::Hook,
                name: hook.name.clone(),
                id: None,
                file: Some(config.path.clone()),
            },
            format!(
                "hook `{}` runs whatever component is at `{}`: no digest is pinned, so a replaced file would judge calls without a word",
                hook.name,
                hook.component.display()
            ),
            format!(
                "pin the component you reviewed: add {} to its `[[hook]]` table in `{}`",
                match digest {
                    Some(d) => format!("`sha256 = \"{d}\"`"),
                    None => "`sha256 = \"<its sha-256>\"`".to_string(),
                },
                config.path.display()
            ),
        ));
    }
    findings
}

/// Directories two or more plugins may write (the same directory, or one
/// inside the other), compared by canonical path.
pub(super) fn shared_writable_dirs(config: &HostConfig) -> Vec<Finding> {
    let mut writable: Vec<(PathBuf, &str, PathBuf)> = Vec::new();
    for m in &config.plugins {
        // A grant per caller writes below its template's base (`work/` of
        // `work/{project}`): another plugin writing there could plant a link
        // where a caller's directory goes.
        let per_caller = m.per_caller.iter().map(|g| (&g.host.base, g.access));
        for (host, access) in m.fs.iter().map(|g| (&g.host, g.access)).chain(per_caller) {
            if access != Access::ReadWrite {
                continue;
            }
            let canonical = std::fs::canonicalize(host).unwrap_or(host.clone());
            let file = m.path.clone().unwrap_or_else(|| config.path.clone());
            writable.push((canonical, m.name.as_str(), file));
        }
    }
    // Each directory with the plugins that write it or a directory around or inside it.
    let mut shared: BTreeMap<PathBuf, BTreeMap<&str, PathBuf>> = BTreeMap::new();
    for (i, (a, plugin_a, file_a)) in writable.iter().enumerate() {
        for (b, plugin_b, file_b) in &writable[i + 1..] {
            if plugin_a == plugin_b || !(a.starts_with(b) || b.starts_with(a)) {
                continue;
            }
            // Named by the outer directory of the two.
            let dir = if a.starts_with(b) { b } else { a };
            let entry = shared.entry(dir.clone()).or_default();
            entry.insert(plugin_a, file_a.clone());
            entry.insert(plugin_b, file_b.clone());
        }
    }
    shared
        .into_iter()
        .map(|(dir, plugins)| {
            let names: Vec<String> = plugins.keys().map(|p| p.to_string()).collect();
            let files: Vec<String> = plugins
                .values()
                .map(|f| format!("`{}`", f.display()))
                .collect::<BTreeSet<_>>()
                .into_iter()
                .collect();
            Finding::new(
                Rule::SharedWritableDir,
                Severity::Warning,
                Culprit {
                    kind: CulpritKind::Directory,
                    name: dir.display().to_string(),
                    id: None,
                    file: None,
                },
                format!(
                    "directory `{}` is granted read-write to {} plugins ({}): each can overwrite or plant what the others read and run",
                    dir.display(),
                    names.len(),
                    quoted(&names)
                ),
                format!(
                    "give each plugin its own writable directory (or `access = \"read-only\"` where it only reads) in {}",
                    files.join(", ")
                ),
            )
        })
        .collect()
}
