//! Resolving the paths an operator writes, relative to the file that contains them.

use std::path::{Component, Path, PathBuf};

use super::ConfigError;
use super::source::{self, Source};

pub(super) fn read_source(path: &Path, file: String) -> Result<Source, ConfigError> {
    match std::fs::read_to_string(path) {
        Ok(text) => Source::parse(file, text),
        Err(error) => Err(ConfigError::Read { file, error }),
    }
}

pub(super) fn canonical(path: &Path, shown: &str) -> Result<PathBuf, ConfigError> {
    std::fs::canonicalize(path).map_err(|error| ConfigError::Read {
        file: shown.to_owned(),
        error,
    })
}

pub(super) fn parent_dir(abs_file: &Path) -> PathBuf {
    abs_file
        .parent()
        .map_or_else(|| PathBuf::from("/"), Path::to_path_buf)
}

/// A directory that need not exist yet (`data_dir`, `cache_dir`): absolute, normalized.
pub(super) fn resolve_dir(
    src: &Source,
    base: &Path,
    key: &str,
    text: &str,
) -> Result<PathBuf, ConfigError> {
    if text.trim().is_empty() {
        return Err(src.invalid(
            key,
            format!("`{key}` is empty"),
            source::hint_for("data_dir"),
        ));
    }
    Ok(normalize(&base.join(text)))
}

pub(super) fn resolve_component(
    src: &Source,
    dir: &Path,
    text: &str,
) -> Result<PathBuf, ConfigError> {
    let joined = dir.join(text);
    let at = normalize(&joined);
    let at = at.display();
    let not_found = |problem: String| {
        src.invalid(
            "component",
            problem,
            format!(
                "build the plugin or fix the path; relative paths are resolved from the directory of `{}`",
                src.file
            ),
        )
    };
    if text.trim().is_empty() {
        return Err(src.invalid(
            "component",
            "the component path is empty",
            source::hint_for("component"),
        ));
    }
    if !joined.exists() {
        return Err(not_found(format!("component `{text}` not found at `{at}`")));
    }
    if !joined.is_file() {
        return Err(not_found(format!(
            "component `{text}` at `{at}` is not a file"
        )));
    }
    std::fs::canonicalize(&joined)
        .map_err(|_| not_found(format!("component `{text}` at `{at}` cannot be resolved")))
}

/// The component an `oci://` reference in `src`'s `key` resolves to through
/// `store` (the config's lock and cache): its pin and its cached file.
pub(super) fn resolve_oci_component(
    src: &Source,
    key: &str,
    text: &str,
    store: Option<&crate::ComponentStore>,
) -> Result<(crate::LockedComponent, PathBuf), ConfigError> {
    let reference = crate::OciReference::parse(text.trim()).map_err(|problem| {
        src.invalid(
            key,
            problem,
            "write `oci://REGISTRY/NAME:TAG` or `oci://REGISTRY/NAME@sha256:DIGEST`",
        )
    })?;
    let Some(store) = store else {
        return Err(src.invalid(
            key,
            format!("component `{reference}` is in a registry, and this manifest was read without a config"),
            "load it through the config that lists it (`--config glovebox.toml`): the config's `glovebox.lock` and cache dir hold what was pulled",
        ));
    };
    let lock = crate::OciLock::read(&store.lock)?;
    store
        .resolve(&lock, &reference)
        .map_err(|(problem, fix)| src.invalid(key, problem, fix))
}

pub(super) fn resolve_grant_dir(
    src: &Source,
    dir: &Path,
    key: &str,
    text: &str,
) -> Result<PathBuf, ConfigError> {
    let joined = dir.join(text);
    let at = normalize(&joined);
    let at = at.display();
    let fail = |problem: String, fix: &str| {
        src.invalid(
            key,
            problem,
            format!(
                "{fix}; relative paths are resolved from the directory of `{}`",
                src.file
            ),
        )
    };
    if text.trim().is_empty() {
        return Err(src.invalid(key, "the host directory is empty", source::hint_for("host")));
    }
    if !joined.exists() {
        return Err(fail(
            format!("directory `{text}` not found at `{at}`"),
            "create it or fix the path",
        ));
    }
    if !joined.is_dir() {
        return Err(fail(
            format!("`{text}` at `{at}` is not a directory"),
            "grant a directory, not a file",
        ));
    }
    std::fs::canonicalize(&joined).map_err(|_| {
        fail(
            format!("directory `{text}` at `{at}` cannot be resolved"),
            "check its permissions",
        )
    })
}

/// How to name `abs` in a message: relative to the config as the operator named it, when
/// `abs` lies under the config's directory.
pub(super) fn show_beside(display_dir: &Path, abs_dir: &Path, abs: &Path) -> String {
    match abs.strip_prefix(abs_dir) {
        Ok(rest) => normalize(&display_dir.join(rest)).display().to_string(),
        Err(_) => abs.display().to_string(),
    }
}

/// Removes `.` and folds `..` into the component before it, without touching the disk.
pub(super) fn normalize(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for component in path.components() {
        match component {
            Component::CurDir => {}
            Component::ParentDir => match out.components().next_back() {
                Some(Component::Normal(_)) => {
                    out.pop();
                }
                Some(Component::RootDir | Component::Prefix(_)) => {}
                _ => out.push(".."),
            },
            other => out.push(other.as_os_str()),
        }
    }
    if out.as_os_str().is_empty() {
        out.push(".");
    }
    out
}
