//! What `glovebox dev` watches, read from the config: the config file, each
//! plugin's manifest, the sources its `[build] watch` names (or, for a
//! plugin without `[build]`, its component), and the hooks' components; and
//! what a change of one path calls for.

use std::collections::BTreeMap;
use std::path::{Component, Path, PathBuf};

use globset::{GlobBuilder, GlobSet, GlobSetBuilder};
use glovebox::HostConfig;
use glovebox::manifest::PluginBuild;

/// How a directory is watched.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Depth {
    /// Its entries only.
    Entries,
    /// Everything below it.
    Tree,
}

/// What a change of a path calls for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) enum Change {
    /// Load the config again (the config, a manifest or a hook changed).
    Reload,
    /// Build this plugin (by name), then load the config again.
    Build(String),
    /// A plugin's component changed: load the config again if it is not
    /// the one served.
    Component(PathBuf),
}

/// One plugin, as watched.
pub(super) struct Plugin {
    pub(super) name: String,
    pub(super) component: PathBuf,
    pub(super) build: Option<(PluginBuild, GlobSet)>,
}

/// Everything watched, from one reading of the config.
pub(super) struct Targets {
    config: PathBuf,
    manifests: Vec<PathBuf>,
    hooks: Vec<PathBuf>,
    pub(super) plugins: Vec<Plugin>,
}

impl Targets {
    /// What `config` (read from `path`) asks to watch.
    pub(super) fn of(path: &Path, config: &HostConfig) -> Targets {
        let plugins = config
            .plugins
            .iter()
            .map(|m| Plugin {
                name: m.name.clone(),
                component: canonical(&m.component),
                build: m.build.as_ref().map(|b| (b.clone(), globs(b))),
            })
            .collect();
        Targets {
            config: canonical(path),
            manifests: config
                .plugins
                .iter()
                .filter_map(|m| m.path.as_deref().map(canonical))
                .collect(),
            hooks: config
                .hooks
                .iter()
                .map(|h| canonical(&h.component))
                .collect(),
            plugins,
        }
    }

    /// The directories to watch and how. A directory, not a file: editors
    /// save by writing a new file and renaming it over the old one.
    pub(super) fn roots(&self) -> BTreeMap<PathBuf, Depth> {
        let mut roots = BTreeMap::new();
        let mut add = |dir: PathBuf, depth: Depth| {
            let at = roots.entry(dir).or_insert(depth);
            if depth == Depth::Tree {
                *at = Depth::Tree;
            }
        };
        let files = std::iter::once(&self.config)
            .chain(&self.manifests)
            .chain(&self.hooks)
            .chain(self.plugins.iter().map(|p| &p.component));
        for file in files {
            if let Some(dir) = file.parent() {
                add(dir.to_path_buf(), Depth::Entries);
            }
        }
        for (build, _) in self.plugins.iter().filter_map(|p| p.build.as_ref()) {
            for pattern in &build.watch {
                let (prefix, whole) = literal_prefix(pattern);
                if whole {
                    // A file named outright: its directory's entries.
                    let file = build.dir.join(&prefix);
                    if let Some(dir) = file.parent() {
                        add(dir.to_path_buf(), Depth::Entries);
                    }
                } else {
                    add(build.dir.join(&prefix), Depth::Tree);
                }
            }
        }
        roots
    }

    /// What a change of `path` calls for, if anything.
    pub(super) fn change(&self, path: &Path) -> Option<Change> {
        if path == self.config || self.manifests.iter().any(|m| m == path) {
            return Some(Change::Reload);
        }
        if self.hooks.iter().any(|h| h == path) {
            return Some(Change::Reload);
        }
        for plugin in &self.plugins {
            if path == plugin.component {
                return Some(Change::Component(path.to_path_buf()));
            }
            if let Some((build, globs)) = &plugin.build
                && let Ok(relative) = path.strip_prefix(&build.dir)
                && !never_a_source(relative)
                && globs.is_match(relative)
            {
                return Some(Change::Build(plugin.name.clone()));
            }
        }
        None
    }

    /// The plugin called `name`.
    pub(super) fn plugin(&self, name: &str) -> Option<&Plugin> {
        self.plugins.iter().find(|p| p.name == name)
    }
}

/// `build.watch` compiled; `*` stays within a name, `**` crosses directories.
/// The manifest checked each pattern, so one that does not compile is skipped.
fn globs(build: &PluginBuild) -> GlobSet {
    let mut set = GlobSetBuilder::new();
    for pattern in &build.watch {
        if let Ok(glob) = GlobBuilder::new(pattern).literal_separator(true).build() {
            set.add(glob);
        }
    }
    set.build().unwrap_or_else(|_| GlobSet::empty())
}

/// The leading path of `pattern` that has no glob character, and whether
/// that is the whole pattern (a file named outright).
fn literal_prefix(pattern: &str) -> (PathBuf, bool) {
    let mut prefix = PathBuf::new();
    for part in Path::new(pattern).components() {
        let text = part.as_os_str().to_string_lossy();
        if text.contains(['*', '?', '[', '{']) {
            return (prefix, false);
        }
        prefix.push(part);
    }
    (prefix, true)
}

/// What is never a source, whatever the patterns say: build output
/// (`target/`), hidden files and directories (`.git`), editors' backups and
/// swap files. So a build never calls for itself.
fn never_a_source(relative: &Path) -> bool {
    let name = relative
        .file_name()
        .map(|n| n.to_string_lossy())
        .unwrap_or_default();
    relative.components().any(|c| match c {
        Component::Normal(part) => {
            let part = part.to_string_lossy();
            part == "target" || part.starts_with('.')
        }
        _ => false,
    }) || name.ends_with('~')
        || name.ends_with(".swp")
        || name.ends_with(".swx")
}

/// `path` with its links resolved when it exists (the watcher reports
/// resolved paths), as it is otherwise.
fn canonical(path: &Path) -> PathBuf {
    std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf())
}
