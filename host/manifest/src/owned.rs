//! Glovebox's own files, and the rule that no grant reaches them.
//!
//! A guest that could write the data dir could rewrite its own session log; one that
//! could write the compile cache or a snapshot could change the code the host runs;
//! one that could write the config, a manifest, a component or a hook could grant
//! itself anything. So no `[[fs]]` grant (read-only ones included: the log holds
//! other sessions' data) and no scratch dir may overlap them. Nor the chain key
//! (`[storage] chain_key_file`): a guest that could read it could re-seal a log. Nor
//! any other file that holds a secret the config names ([`SecretFile`]: a principal's
//! `credential_file`, a notify target's or a webhook trigger's `secret_file`, NATS
//! `creds`): a guest that could write a principal's credential file would be that
//! principal (an operator, say) after the next reload, and one that could read a
//! webhook's secret could forge its deliveries. The default data dir
//! lives outside the config's directory, so granting the project that holds
//! `glovebox.toml`'s neighbours is safe by default.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

use super::paths::normalize;
use super::{ConfigError, HostConfig};

/// Why no default data dir can be chosen: the config names none and the
/// environment names no absolute state or home dir (the caller says which
/// to set).
#[derive(thiserror::Error, Debug, Clone, Copy, PartialEq, Eq)]
#[error(
    "no `data_dir` is set, and neither `XDG_STATE_HOME` nor `HOME` is an absolute path in the environment"
)]
pub(super) struct NoStateDir;

/// Where the data dir of the config at `config` (canonical) goes when it names none:
/// `$XDG_STATE_HOME/glovebox/<dir>-<hash>`, else `$HOME/.local/state/glovebox/<dir>-<hash>`,
/// where `<dir>` is the name of the config's directory and `<hash>` 12 hex digits of the
/// SHA-256 of the config's path (two projects never share a data dir). `Err` names what
/// to set when neither variable is usable (never a shared temp dir).
pub(super) fn default_data_dir(
    config: &Path,
    env: impl Fn(&str) -> Option<OsString>,
) -> Result<PathBuf, NoStateDir> {
    let absolute = |var: &str| env(var).map(PathBuf::from).filter(|p| p.is_absolute());
    let state = match (absolute("XDG_STATE_HOME"), absolute("HOME")) {
        (Some(state), _) => state,
        (None, Some(home)) => home.join(".local").join("state"),
        (None, None) => return Err(NoStateDir),
    };
    let dir_name: String = config
        .parent()
        .and_then(Path::file_name)
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '_'
            }
        })
        .take(48)
        .collect();
    let dir_name = if dir_name.is_empty() {
        "root".to_owned()
    } else {
        dir_name
    };
    let digest = Sha256::digest(config.as_os_str().as_encoded_bytes());
    let short = hex::encode(&digest[..6]);
    Ok(state.join("glovebox").join(format!("{dir_name}-{short}")))
}

/// The path as the disk has it: the longest existing ancestor canonicalized, the rest
/// (not created yet) appended. Both sides of every comparison go through it.
pub(super) fn canonical_lenient(path: &Path) -> PathBuf {
    let path = normalize(&std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf()));
    let mut rest = Vec::new();
    let mut at = path.as_path();
    loop {
        if let Ok(real) = std::fs::canonicalize(at) {
            return rest.iter().rev().fold(real, |p: PathBuf, c| p.join(c));
        }
        match (at.parent(), at.file_name()) {
            (Some(parent), Some(name)) => {
                rest.push(name.to_owned());
                at = parent;
            }
            _ => return path,
        }
    }
}

/// One thing Glovebox owns: what it is, where, and whether it is a directory (a
/// grant may neither contain nor lie inside a directory; it can only contain a file).
pub struct OwnedPath {
    pub what: String,
    pub path: PathBuf,
    pub is_dir: bool,
    /// How to resolve a grant that reaches it.
    pub fix: String,
}

/// A file holding a secret, named by the config (threat 56): no grant may reach it.
#[derive(Clone, Debug, PartialEq)]
pub struct SecretFile {
    /// What it is: ``the credential file of principal `ops` ``.
    pub what: String,
    /// The config key that names it: `principal[0].credential_file`.
    pub key: String,
    /// Where it is (resolved from the config file's directory).
    pub path: PathBuf,
}

/// A config entry that may name a secret file (threat 56): what
/// [`SecretFile::named_by`] needs to find it and say whose it is.
pub(crate) trait NamesSecretFile {
    /// The entries' table, the key that names the file, and what an entry
    /// is: `["notify", "secret_file", "notify target"]`.
    const KEYS: [&'static str; 3];
    /// The entry's name, if it has one, and the file it names, if any.
    fn named_file(&self) -> (Option<&str>, Option<&String>);
}

impl SecretFile {
    /// The files the `[[table]]` entries name in their file key, resolved
    /// from the config's directory `dir`, each
    /// ``the {key in words} of {what an entry is} `{name}` `` (`?` for an
    /// entry with no name).
    pub(super) fn named_by<T: NamesSecretFile>(dir: &Path, entries: &[T]) -> Vec<SecretFile> {
        let [table, field, whose] = T::KEYS;
        entries
            .iter()
            .enumerate()
            .filter_map(|(i, entry)| {
                let (name, file) = entry.named_file();
                Some(SecretFile {
                    path: dir.join(file?),
                    what: format!(
                        "the {} of {whose} `{}`",
                        field.replace('_', " "),
                        name.unwrap_or("?")
                    ),
                    key: format!("{table}[{i}].{field}"),
                })
            })
            .collect()
    }
}

/// The fix for a grant over Glovebox's own files (not a secret).
const OWN_FILES_FIX: &str = "grant a directory that holds none of Glovebox's own files, or move them: `data_dir` and `runtime.cache_dir` in glovebox.toml, the config, manifests and components elsewhere";

impl HostConfig {
    /// Everything Glovebox owns (canonical paths): the data dir, the compile cache and
    /// its snapshots, the chain key file and every other secret file the config names,
    /// the config file and its directory, every manifest, component and hook file.
    pub fn owned_paths(&self) -> Vec<OwnedPath> {
        let mut owned = Vec::new();
        for secret in self.secret_files() {
            owned.push(OwnedPath {
                fix: format!(
                    "move the file out of every granted directory (e.g. to `$HOME/.config/glovebox/`, mode 0600) and point `{}` at it, or grant a directory that does not hold it",
                    secret.key
                ),
                what: secret.what,
                path: canonical_lenient(&secret.path),
                is_dir: false,
            });
        }
        let mut add = |what: String, path: &Path, is_dir: bool| {
            owned.push(OwnedPath {
                what,
                path: canonical_lenient(path),
                is_dir,
                fix: OWN_FILES_FIX.to_owned(),
            });
        };
        add("the data dir".into(), &self.data_dir, true);
        add("the compile cache".into(), &self.cache_dir(), true);
        add(
            "the pre-initialization snapshots".into(),
            &self.cache_dir().join("preinit"),
            true,
        );
        add(
            "the compile cache's digest records".into(),
            &self.digests_dir(),
            true,
        );
        if !self.path.as_os_str().is_empty() {
            add("the config file".into(), &self.path, false);
            if let Some(dir) = self.path.parent() {
                add("the config file's directory".into(), dir, true);
            }
        }
        // A plugin that could write the key set could mint tokens.
        if let Some(oauth) = &self.oauth
            && let super::JwksSource::File(jwks) = &oauth.jwks
        {
            add("the OAuth key set file".into(), jwks, false);
        }
        for plugin in &self.plugins {
            if let Some(manifest) = &plugin.path {
                add(
                    format!("the manifest of plugin `{}`", plugin.name),
                    manifest,
                    false,
                );
            }
            add(
                format!("the component of plugin `{}`", plugin.name),
                &plugin.component,
                false,
            );
        }
        for hook in &self.hooks {
            add(
                format!("the component of hook `{}`", hook.name),
                &hook.component,
                false,
            );
        }
        owned
    }

    /// Refuses any `[[fs]]` grant, and any scratch dir, that equals, contains or lies
    /// inside what Glovebox owns ([`HostConfig::owned_paths`]). The config file's
    /// directory may hold granted directories (`examples/workspace` beside
    /// `examples/glovebox.toml`), as long as they hold none of Glovebox's files: a
    /// grant may not equal or contain it.
    pub fn check_grants(&self) -> Result<(), ConfigError> {
        let owned = self.owned_paths();
        let scratch = canonical_lenient(&self.scratch_dir());
        for plugin in &self.plugins {
            let file = plugin
                .path
                .as_deref()
                .map(|p| p.display().to_string())
                .unwrap_or_else(|| format!("plugin `{}`", plugin.name));
            let grants = plugin
                .fs
                .iter()
                .enumerate()
                .map(|(i, g)| (format!("fs[{i}].host"), canonical_lenient(&g.host)));
            // A directory per caller lies below its template's base: what
            // the base may not reach, none of them reaches.
            let per_caller = plugin.per_caller.iter().map(|g| {
                (
                    format!("fs[{}].host", g.index),
                    canonical_lenient(&g.host.base),
                )
            });
            let scratch = plugin
                .scratch
                .is_some()
                .then(|| ("scratch".to_owned(), scratch.clone()));
            for (key, granted) in grants.chain(per_caller).chain(scratch) {
                // The most telling conflict first: `is`, then `lies inside`, then `contains`.
                let conflict = owned
                    .iter()
                    .filter_map(|own| relation(&key, &granted, own).map(|r| (r, own)))
                    .min_by_key(|(r, _)| *r);
                let Some((relation, own)) = conflict else {
                    continue;
                };
                let what = if key == "scratch" {
                    format!("the scratch dirs `{}`", granted.display())
                } else {
                    format!("granted directory `{}`", granted.display())
                };
                return Err(ConfigError::Invalid {
                    file,
                    key,
                    line: None,
                    problem: format!(
                        "{what} {} {} `{}`, which no plugin may reach",
                        relation.as_str(),
                        own.what,
                        own.path.display()
                    ),
                    hint: own.fix.clone(),
                });
            }
        }
        Ok(())
    }
}

impl HostConfig {
    /// Every file holding a secret the config names: the chain key, the NATS
    /// credentials, and the principals', notify targets' and triggers' files
    /// (`secret_files`, gathered at load).
    pub fn secret_files(&self) -> Vec<SecretFile> {
        let mut files = Vec::new();
        if let Some(key) = &self.storage.chain_key_file {
            files.push(SecretFile {
                what: "the chain key file".into(),
                key: "storage.chain_key_file".into(),
                path: key.clone(),
            });
        }
        if let Some(creds) = self.storage.nats.as_ref().and_then(|n| n.creds.as_ref()) {
            files.push(SecretFile {
                what: "the NATS credentials file".into(),
                key: "storage.creds".into(),
                path: creds.clone(),
            });
        }
        files.extend(self.secret_files.iter().cloned());
        files
    }
}

#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Relation {
    Is,
    LiesInside,
    Contains,
}

impl Relation {
    fn as_str(self) -> &'static str {
        match self {
            Relation::Is => "is",
            Relation::LiesInside => "lies inside",
            Relation::Contains => "contains",
        }
    }
}

/// How the grant at `granted` (under `key`) overlaps `own`, if it does.
fn relation(key: &str, granted: &Path, own: &OwnedPath) -> Option<Relation> {
    // The scratch dirs are part of the data dir by design.
    if key == "scratch" && own.what == "the data dir" {
        return None;
    }
    if granted == own.path {
        Some(Relation::Is)
    } else if own.path.starts_with(granted) {
        Some(Relation::Contains)
    } else if granted.starts_with(&own.path)
        && own.is_dir
        && own.what != "the config file's directory"
    {
        Some(Relation::LiesInside)
    } else {
        None
    }
}
