//! The inner loop: changed paths in, builds and reloads out. One thing at a
//! time: the changes that came in while a build ran are taken together
//! afterwards, so no plugin is ever built twice at once and a burst of
//! saves makes one build. A build that fails, or a plugin that does not
//! load, is reported and the server keeps what it served.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::time::Duration;

use glovebox::manifest::PluginBuild;
use glovebox::{Gateway, HostConfig};
use tokio::sync::mpsc;

use super::diff::Snapshot;
use super::targets::{Change, Targets};
use super::watch::Watcher;
use super::{build, say};

/// Before serving: each plugin with a `[build]` built once, so the server
/// starts with what the sources say. The builds are read from the manifests
/// without loading the config, which does not load while a component is
/// missing: a fresh project's first build makes it. A build that fails is
/// reported and the component there (if any) is served; when there is none,
/// nothing can be, and the error says what failed and what to do.
pub(super) async fn build_all(config: &Path) -> anyhow::Result<()> {
    let Ok(builds) = HostConfig::builds_of(config) else {
        // The server's own load names what is wrong.
        return Ok(());
    };
    for listed in &builds {
        let name = &listed.plugin;
        if listed.component.is_file() {
            if let Err(failure) = build_plugin(name, &listed.build).await {
                kept_serving(name, &failure);
            }
            continue;
        }
        say(format_args!(
            "`{name}` has no component yet (`{}`): its first build makes it",
            listed.component.display()
        ));
        if let Err(failure) = build_plugin(name, &listed.build).await {
            say(format_args!(
                "the first build of `{name}` failed: {}",
                failure.why
            ));
            show_tail(&failure);
            anyhow::bail!(
                "`glovebox dev` cannot start: the first build of `{name}` failed, so its component `{}` does not exist and the config does not load. Fix the build (its output is above; the command is `{}`, run in `{}`), then start `glovebox dev` again",
                listed.component.display(),
                listed.build.command,
                listed.build.dir.display()
            );
        }
        if !listed.component.is_file() {
            anyhow::bail!(
                "`glovebox dev` cannot start: the build of `{name}` (`{}`) succeeded but did not write the component `{}`: make the build write it there, or set `component` in `{}` to where the build writes it",
                listed.build.command,
                listed.component.display(),
                listed.manifest.display()
            );
        }
    }
    Ok(())
}

/// Watches what the config names until the server stops (this future is
/// dropped), acting on each change.
pub(super) async fn run(config: PathBuf, gateway: Gateway, debounce: Duration) {
    let (changed, mut changes) = mpsc::unbounded_channel();
    let mut targets = Targets::of(&config, gateway.host().config());
    let mut watcher = match Watcher::start(targets.roots(), debounce, changed.clone()) {
        Ok(w) => w,
        Err(e) => {
            say(format_args!("{e:#}: serving without watching"));
            return;
        }
    };
    say(format_args!(
        "watching `{}`, its manifests and sources ({} plugins): a change rebuilds and reloads",
        config.display(),
        targets.plugins.len()
    ));
    // The component digests last loaded or tried, by file: a component
    // rewritten with the same bytes (by the build just run) is no change.
    let mut tried = served_digests(&gateway);
    while let Some(first) = changes.recv().await {
        let mut paths = first;
        while let Ok(more) = changes.try_recv() {
            paths.extend(more);
        }
        let mut builds = BTreeSet::new();
        let mut reload = false;
        for path in &paths {
            match targets.change(path) {
                Some(Change::Reload) => reload = true,
                Some(Change::Build(name)) => {
                    builds.insert(name);
                }
                Some(Change::Component(file)) => {
                    let now = digest(&file);
                    if now.is_some() && now.as_ref() != tried.get(&file) {
                        reload = true;
                    }
                }
                None => {}
            }
        }
        for name in &builds {
            reload |= build_one(&targets, name).await;
        }
        if !reload {
            continue;
        }
        build_missing(&config).await;
        reload_and_show(&gateway).await;
        for plugin in &targets.plugins {
            if let Some(d) = digest(&plugin.component) {
                tried.insert(plugin.component.clone(), d);
            }
        }
        // The config may name other plugins, manifests or sources now.
        if let Ok(host) = HostConfig::load(&config) {
            targets = Targets::of(&config, &host);
            let roots = targets.roots();
            if roots != watcher.roots {
                match Watcher::start(roots, debounce, changed.clone()) {
                    Ok(w) => watcher = w,
                    Err(e) => say(format_args!("{e:#}: still watching what was watched")),
                }
            }
        }
    }
}

/// Builds each plugin the config names now whose component does not exist
/// (one added while serving, or whose build output was cleaned), so the
/// load that follows can take it. A build that fails is reported; the load
/// then says what is missing, and the last good plugins keep serving.
async fn build_missing(config: &Path) {
    let Ok(builds) = HostConfig::builds_of(config) else {
        // The load that follows names what is wrong.
        return;
    };
    for listed in builds.iter().filter(|l| !l.component.is_file()) {
        let name = &listed.plugin;
        say(format_args!(
            "`{name}` has no component yet (`{}`): its first build makes it",
            listed.component.display()
        ));
        if let Err(failure) = build_plugin(name, &listed.build).await {
            say(format_args!(
                "the first build of `{name}` failed: {}; the last good plugins keep serving",
                failure.why
            ));
            show_tail(&failure);
        }
    }
}

/// Builds the plugin called `name` if it has a `[build]`, reporting how it
/// went; whether it built.
async fn build_one(targets: &Targets, name: &str) -> bool {
    let Some((build, _)) = targets.plugin(name).and_then(|p| p.build.as_ref()) else {
        return false;
    };
    match build_plugin(name, build).await {
        Ok(()) => true,
        Err(failure) => {
            kept_serving(name, &failure);
            false
        }
    }
}

/// Runs `build`, the plugin `name`'s, saying that it starts and, when it
/// built, how long it took.
async fn build_plugin(name: &str, build: &PluginBuild) -> Result<(), build::Failure> {
    say(format_args!("building `{name}`: {}", build.command));
    let took = build::run(build).await?;
    say(format_args!("built `{name}` in {:.1}s", took.as_secs_f64()));
    Ok(())
}

/// Reports a failed build of `name` while its last good build serves.
fn kept_serving(name: &str, failure: &build::Failure) {
    say(format_args!(
        "the build of `{name}` failed: {}; the last good build keeps serving",
        failure.why
    ));
    show_tail(failure);
}

/// The end of a failed build's output, each line marked.
fn show_tail(failure: &build::Failure) {
    for line in &failure.tail {
        eprintln!("  | {line}");
    }
}

/// Loads the config again, as `glovebox reload` does, and prints the tool
/// list's and the hooks' changes, or why nothing was loaded.
async fn reload_and_show(gateway: &Gateway) {
    let before = Snapshot::of(&gateway.host());
    match gateway.reload().await {
        Ok(_) => {
            let host = gateway.host();
            let after = Snapshot::of(&host);
            let changes = before.changes(&after, &host);
            if changes.is_empty() {
                say(format_args!(
                    "reloaded: the tool list is unchanged ({} tools)",
                    after.len()
                ));
            } else {
                say(format_args!("reloaded: {} tools", after.len()));
            }
            for line in changes.iter().chain(&before.hook_changes(&after)) {
                eprintln!("  {line}");
            }
        }
        Err(e) => {
            say(format_args!(
                "not reloaded: {e:#}; the last good plugins keep serving"
            ));
        }
    }
}

/// The digest of each component the server serves, by file.
fn served_digests(gateway: &Gateway) -> BTreeMap<PathBuf, String> {
    gateway
        .host()
        .plugins()
        .iter()
        .map(|p| {
            let file = std::fs::canonicalize(&p.manifest.component)
                .unwrap_or_else(|_| p.manifest.component.clone());
            (file, p.digest.clone())
        })
        .collect()
}

/// The SHA-256 of `file` (hex), if it can be read.
fn digest(file: &Path) -> Option<String> {
    use sha2::{Digest, Sha256};
    let bytes = std::fs::read(file).ok()?;
    Some(hex::encode(Sha256::digest(&bytes)))
}
