//! Components from an OCI registry: `component = "oci://registry/name:tag"`
//! (or `@sha256:…`) in a plugin's manifest.
//!
//! Three things live here, none of which reaches the network: the reference
//! as the operator writes it ([`OciReference`]), the lock file that pins each
//! reference to the digests it resolved to once (`glovebox.lock` beside the
//! config, [`OciLock`]), and the cache that holds the pulled bytes under their
//! own digest ([`ComponentStore`]). Pulling is `glovebox-oci`'s job; the
//! loader here only finds what was pulled, so a config loads the same with
//! the registry up or down, and the component it loads is the one the lock
//! names: the lock's component digest becomes the plugin's `sha256` pin, held
//! by the runtime as every pin is.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::ConfigError;

/// How a component reference from a registry starts.
pub const OCI_SCHEME: &str = "oci://";

/// The lock file's name, beside the config.
pub const LOCK_FILE: &str = "glovebox.lock";

/// What the lock file says of itself, at its top.
const LOCK_HEADER: &str = "\
# glovebox.lock: written by glovebox, read at every load. Each `oci://`
# component is pinned to the OCI manifest and the component digest it
# resolved to the first time; a tag that moves in the registry changes
# nothing until `glovebox plugin pull --update`. Keep it beside the config
# (commit it with the config) so every host loads the same bytes.
";

/// `oci://registry[:port]/repository[:tag][@sha256:hex]`, checked for shape
/// when the manifest loads. The registry is always explicit: no default
/// registry is guessed for a bare name.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OciReference {
    /// The reference as written, the scheme included: the lock's key.
    pub text: String,
    /// `host[:port]`.
    pub registry: String,
    /// `path/to/name`, lowercase.
    pub repository: String,
    /// The tag, if one is named.
    pub tag: Option<String>,
    /// `sha256:<64 hex>`, if a digest is named.
    pub digest: Option<String>,
}

impl OciReference {
    /// Whether `text` names a registry component rather than a file.
    pub fn is_oci(text: &str) -> bool {
        text.trim_start().starts_with(OCI_SCHEME)
    }

    /// Parses `text`; the error says what is wrong with it, for a message
    /// that names the key and the fix.
    pub fn parse(text: &str) -> Result<OciReference, ReferenceError> {
        let rest = text
            .strip_prefix(OCI_SCHEME)
            .ok_or_else(|| ReferenceError::NoScheme { text: text.into() })?;
        let (rest, digest) = match rest.split_once('@') {
            Some((rest, digest)) => (rest, Some(parse_digest(digest)?)),
            None => (rest, None),
        };
        let (registry, path) = rest
            .split_once('/')
            .ok_or_else(|| ReferenceError::NoRepository { text: text.into() })?;
        if registry.is_empty()
            || !registry
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | ':' | '[' | ']'))
        {
            return Err(ReferenceError::Registry { text: text.into() });
        }
        // A tag follows the last path segment's `:`; a port is before the first `/`.
        let (repository, tag) = match path.rsplit_once(':') {
            Some((repo, tag)) if !tag.contains('/') => (repo, Some(tag)),
            _ => (path, None),
        };
        let segment_ok = |s: &str| {
            !s.is_empty()
                && s.chars().all(|c| {
                    c.is_ascii_lowercase() || c.is_ascii_digit() || matches!(c, '.' | '_' | '-')
                })
                && s.starts_with(|c: char| c.is_ascii_alphanumeric())
        };
        if !repository.split('/').all(segment_ok) {
            return Err(ReferenceError::Repository {
                repository: repository.into(),
                text: text.into(),
            });
        }
        if let Some(tag) = tag
            && (tag.is_empty()
                || tag.len() > 128
                || !tag
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'))
                || tag.starts_with(['.', '-']))
        {
            return Err(ReferenceError::Tag {
                tag: tag.into(),
                text: text.into(),
            });
        }
        if tag.is_none() && digest.is_none() {
            return Err(ReferenceError::Unpinned { text: text.into() });
        }
        Ok(OciReference {
            text: text.to_owned(),
            registry: registry.to_owned(),
            repository: repository.to_owned(),
            tag: tag.map(str::to_owned),
            digest,
        })
    }

    /// `registry/repository[:tag][@digest]`: the reference as OCI clients
    /// write it, without the scheme.
    pub fn image(&self) -> String {
        let mut out = format!("{}/{}", self.registry, self.repository);
        if let Some(tag) = &self.tag {
            out.push(':');
            out.push_str(tag);
        }
        if let Some(digest) = &self.digest {
            out.push('@');
            out.push_str(digest);
        }
        out
    }

    /// Whether the registry is on this machine (`localhost`, `127.0.0.0/8`,
    /// `[::1]`): the only registries reached over plain HTTP.
    pub fn is_loopback(&self) -> bool {
        let host = match self.registry.strip_prefix('[') {
            Some(v6) => v6.split(']').next().unwrap_or(v6),
            None => self.registry.split(':').next().unwrap_or(&self.registry),
        };
        host == "localhost"
            || host == "::1"
            || host
                .parse::<std::net::Ipv4Addr>()
                .is_ok_and(|ip| ip.is_loopback())
    }
}

impl std::fmt::Display for OciReference {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.text)
    }
}

/// Why a text is not an `oci://` reference; each names the text, and the
/// message where it is shown names the key and the fix.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ReferenceError {
    /// Not `oci://…`.
    #[error("`{text}` does not start with `{scheme}`", scheme = OCI_SCHEME)]
    NoScheme { text: String },
    /// A registry and nothing after it.
    #[error("`{text}` names no repository after the registry")]
    NoRepository { text: String },
    /// No host (and port) before the first `/`.
    #[error("`{text}` has no valid registry host before the first `/`")]
    Registry { text: String },
    /// A repository segment OCI does not allow.
    #[error(
        "`{repository}` in `{text}` is not a repository name (lowercase letters, digits, `.`, `_`, `-`, segments separated by `/`)"
    )]
    Repository { repository: String, text: String },
    /// A tag OCI does not allow.
    #[error("`{tag}` in `{text}` is not a tag (letters, digits, `.`, `_`, `-`, at most 128)")]
    Tag { tag: String, text: String },
    /// Neither a tag nor a digest: nothing to pin.
    #[error(
        "`{text}` names neither a tag nor a digest: add `:TAG` (pinned in `{lock}` when first pulled) or `@sha256:…`",
        lock = LOCK_FILE
    )]
    Unpinned { text: String },
    /// A digest of another algorithm, or no digest at all.
    #[error("`{text}` is not a digest: write `@sha256:` and 64 hex digits")]
    NotADigest { text: String },
    /// `sha256:` without 64 hex digits.
    #[error("`{text}` is not a sha256 digest: write `@sha256:` and 64 hex digits")]
    Digest { text: String },
}

fn parse_digest(text: &str) -> Result<String, ReferenceError> {
    let hex = text
        .strip_prefix("sha256:")
        .ok_or_else(|| ReferenceError::NotADigest { text: text.into() })?;
    if hex.len() != 64 || !hex.chars().all(|c| c.is_ascii_hexdigit()) {
        return Err(ReferenceError::Digest { text: text.into() });
    }
    Ok(format!("sha256:{}", hex.to_ascii_lowercase()))
}

/// One pinned reference in the lock file.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LockedComponent {
    /// The reference as the manifest writes it (`oci://…`).
    pub reference: String,
    /// The digest of the OCI manifest the reference resolved to
    /// (`sha256:…`): what `@sha256:` names in a reference.
    pub manifest: String,
    /// The digest of the component itself (its one `application/wasm`
    /// layer, `sha256:…`): the plugin's pin.
    pub component: String,
    /// The component's size in bytes.
    pub size: u64,
}

impl LockedComponent {
    /// The component digest's hex, as a manifest's `sha256` pin writes it.
    pub fn component_hex(&self) -> &str {
        self.component
            .strip_prefix("sha256:")
            .unwrap_or(&self.component)
    }
}

/// `glovebox.lock`: every `oci://` reference pinned so far.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OciLock {
    /// The pins, one per reference text.
    #[serde(default, rename = "component")]
    pub components: Vec<LockedComponent>,
}

impl OciLock {
    /// Reads the lock at `path`; a lock that does not exist is empty.
    pub fn read(path: &Path) -> Result<OciLock, ConfigError> {
        let text = match std::fs::read_to_string(path) {
            Ok(text) => text,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(OciLock::default()),
            Err(error) => {
                return Err(ConfigError::Read {
                    file: path.display().to_string(),
                    error,
                });
            }
        };
        let src = crate::source::Source::parse(path.display().to_string(), text)?;
        let lock: OciLock = src.deserialize()?;
        for (i, entry) in lock.components.iter().enumerate() {
            let key = format!("component[{i}]");
            let bad = |what: &str, problem: ReferenceError| {
                src.invalid(
                    &format!("{key}.{what}"),
                    problem,
                    format!(
                        "the lock is written by glovebox: remove this entry (or the file) and run `glovebox plugin pull` to pin `{}` again",
                        entry.reference
                    ),
                )
            };
            OciReference::parse(&entry.reference).map_err(|p| bad("reference", p))?;
            parse_digest(&entry.manifest).map_err(|p| bad("manifest", p))?;
            parse_digest(&entry.component).map_err(|p| bad("component", p))?;
        }
        Ok(lock)
    }

    /// The pin of `reference`, if it has one.
    pub fn get(&self, reference: &str) -> Option<&LockedComponent> {
        self.components.iter().find(|c| c.reference == reference)
    }

    /// Pins `entry`, replacing the reference's earlier pin; the entries stay
    /// sorted by reference, so the file diffs well.
    pub fn pin(&mut self, entry: LockedComponent) {
        self.components.retain(|c| c.reference != entry.reference);
        self.components.push(entry);
        self.components
            .sort_by(|a, b| a.reference.cmp(&b.reference));
    }

    /// Writes the lock to `path` whole or not at all (a temporary file
    /// beside it, renamed over it).
    pub fn write(&self, path: &Path) -> std::io::Result<()> {
        let body = toml::to_string(self).map_err(std::io::Error::other)?;
        let dir = path.parent().unwrap_or(Path::new("."));
        let tmp = dir.join(format!(".{LOCK_FILE}.{}.tmp", std::process::id()));
        std::fs::write(&tmp, format!("{LOCK_HEADER}\n{body}"))?;
        std::fs::rename(&tmp, path).inspect_err(|_| {
            let _ = std::fs::remove_file(&tmp);
        })
    }
}

/// Where a config's registry components are pinned and kept: the lock file
/// beside the config, and the pulled components under the cache dir, each
/// named by its own digest.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ComponentStore {
    /// `glovebox.lock` beside the config.
    pub lock: PathBuf,
    /// `<cache_dir>/oci`.
    pub dir: PathBuf,
}

impl ComponentStore {
    /// The store of the config at `config` whose cache dir is `cache_dir`.
    pub fn new(config: &Path, cache_dir: &Path) -> ComponentStore {
        let beside = config.parent().unwrap_or(Path::new("."));
        ComponentStore {
            lock: beside.join(LOCK_FILE),
            dir: cache_dir.join("oci"),
        }
    }

    /// Where the component of digest `sha256:<hex>` is kept once pulled.
    pub fn component_path(&self, digest: &str) -> PathBuf {
        let hex = digest.strip_prefix("sha256:").unwrap_or(digest);
        self.dir.join("sha256").join(format!("{hex}.wasm"))
    }

    /// The pulled component `reference` resolves to, by the lock: its pin
    /// and its file. The error is the problem and its fix.
    pub fn resolve(
        &self,
        lock: &OciLock,
        reference: &OciReference,
    ) -> Result<(LockedComponent, PathBuf), (String, String)> {
        let Some(pin) = lock.get(&reference.text) else {
            return Err((
                format!(
                    "component `{reference}` is not pinned in `{}` yet",
                    self.lock.display()
                ),
                "run `glovebox plugin pull` (or start the server, which pulls it) with the registry reachable".to_owned(),
            ));
        };
        if let Some(digest) = &reference.digest
            && *digest != pin.manifest
        {
            return Err((
                format!(
                    "`{}` pins `{reference}` to manifest `{}`, not the digest the reference names",
                    self.lock.display(),
                    pin.manifest
                ),
                "run `glovebox plugin pull --update` to pin it again".to_owned(),
            ));
        }
        let path = self.component_path(&pin.component);
        if !path.is_file() {
            return Err((
                format!(
                    "component `{reference}` ({}) is not in the cache `{}`",
                    pin.component,
                    self.dir.display()
                ),
                "run `glovebox plugin pull` (or start the server, which pulls it) with the registry reachable".to_owned(),
            ));
        }
        Ok((pin.clone(), path))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const D: &str = "sha256:1111111111111111111111111111111111111111111111111111111111111111";

    #[test]
    fn references_parse_with_port_path_tag_and_digest() {
        let r = OciReference::parse("oci://127.0.0.1:5000/tools/echo:1.0").unwrap();
        assert_eq!(r.registry, "127.0.0.1:5000");
        assert_eq!(r.repository, "tools/echo");
        assert_eq!(r.tag.as_deref(), Some("1.0"));
        assert_eq!(r.digest, None);
        assert_eq!(r.image(), "127.0.0.1:5000/tools/echo:1.0");
        assert!(r.is_loopback());

        let text = format!("oci://ghcr.io/acme/echo@{D}");
        let r = OciReference::parse(&text).unwrap();
        assert_eq!(r.tag, None);
        assert_eq!(r.digest.as_deref(), Some(D));
        assert!(!r.is_loopback());
        assert!(
            OciReference::parse("oci://[::1]:5000/a:b")
                .unwrap()
                .is_loopback()
        );
    }

    #[test]
    fn bad_references_say_what_is_wrong() {
        for (text, says) in [
            ("oci://registry", "no repository"),
            ("oci:///name:1", "no valid registry"),
            ("oci://reg/Name:1", "not a repository name"),
            ("oci://reg/name", "neither a tag nor a digest"),
            ("oci://reg/name:", "not a tag"),
            ("oci://reg/name@sha256:12", "64 hex digits"),
            ("oci://reg/name@md5:12", "is not a digest"),
        ] {
            let problem = OciReference::parse(text).unwrap_err();
            assert!(problem.to_string().contains(says), "{text}: {problem}");
        }
    }

    #[test]
    fn the_lock_round_trips_sorted_and_one_pin_per_reference() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(LOCK_FILE);
        assert_eq!(OciLock::read(&path).unwrap(), OciLock::default());
        let mut lock = OciLock::default();
        let entry = |reference: &str, size| LockedComponent {
            reference: reference.to_owned(),
            manifest: D.to_owned(),
            component: D.to_owned(),
            size,
        };
        lock.pin(entry("oci://r/b:1", 1));
        lock.pin(entry("oci://r/a:1", 2));
        lock.pin(entry("oci://r/b:1", 3));
        lock.write(&path).unwrap();
        let read = OciLock::read(&path).unwrap();
        assert_eq!(read, lock);
        assert_eq!(read.components.len(), 2);
        assert_eq!(read.components[0].reference, "oci://r/a:1");
        assert_eq!(read.get("oci://r/b:1").unwrap().size, 3);
    }

    /// A config listing a plugin whose component is `oci://r.example/x:1`,
    /// with its manifest's extra lines `extra`; the lock and cache are
    /// filled when `pinned`.
    fn site(extra: &str, pinned: bool) -> (tempfile::TempDir, PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        let config = dir.path().join("glovebox.toml");
        std::fs::write(
            &config,
            "data_dir = \"data\"\nhooks = \"none\"\n[[plugin]]\nmanifest = \"x.toml\"\n",
        )
        .unwrap();
        std::fs::write(
            dir.path().join("x.toml"),
            format!("name = \"x\"\ncomponent = \"oci://r.example/x:1\"\n{extra}"),
        )
        .unwrap();
        if pinned {
            let store = ComponentStore::new(&config, &dir.path().join("data/cache"));
            let mut lock = OciLock::default();
            lock.pin(LockedComponent {
                reference: "oci://r.example/x:1".to_owned(),
                manifest: D.to_owned(),
                component: D.to_owned(),
                size: 4,
            });
            lock.write(&store.lock).unwrap();
            let file = store.component_path(D);
            std::fs::create_dir_all(file.parent().unwrap()).unwrap();
            std::fs::write(file, b"wasm").unwrap();
        }
        (dir, config)
    }

    #[test]
    fn a_pinned_and_cached_component_loads_pinned_by_its_digest() {
        let (dir, config) = site("", true);
        let host = crate::HostConfig::load(&config).unwrap();
        let plugin = &host.plugins[0];
        assert_eq!(plugin.sha256.as_deref(), Some(&D["sha256:".len()..]));
        assert_eq!(
            plugin.component,
            dir.path()
                .canonicalize()
                .unwrap()
                .join("data/cache/oci/sha256")
                .join(format!("{}.wasm", &D["sha256:".len()..]))
        );
        assert_eq!(plugin.oci.as_ref().unwrap().manifest, D);
        // What a pull reads before the load.
        let found = crate::HostConfig::oci_components(&config).unwrap();
        assert_eq!(found.store, host.component_store());
        assert_eq!(found.references.len(), 1);
        assert_eq!(found.references[0].text, "oci://r.example/x:1");
    }

    #[test]
    fn a_manifest_pin_other_than_the_lock_is_refused() {
        let other = "2".repeat(64);
        let (_dir, config) = site(&format!("sha256 = \"{other}\"\n"), true);
        let error = crate::HostConfig::load(&config).unwrap_err().to_string();
        assert!(error.contains(&other), "{error}");
        assert!(error.contains("remove `sha256`"), "{error}");
    }

    #[test]
    fn a_registry_component_with_a_build_is_refused() {
        let (_dir, config) = site("[build]\ncommand = \"make\"\n", true);
        let error = crate::HostConfig::load(&config).unwrap_err().to_string();
        assert!(error.contains("nothing here builds it"), "{error}");
        assert!(error.contains("remove `[build]`"), "{error}");
    }

    #[test]
    fn a_component_pinned_but_not_cached_says_to_pull() {
        let (dir, config) = site("", true);
        std::fs::remove_dir_all(dir.path().join("data/cache/oci")).unwrap();
        let error = crate::HostConfig::load(&config).unwrap_err().to_string();
        assert!(error.contains("is not in the cache"), "{error}");
        assert!(error.contains("glovebox plugin pull"), "{error}");
    }

    #[test]
    fn a_damaged_lock_names_the_entry_and_the_fix() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(LOCK_FILE);
        std::fs::write(
            &path,
            format!(
                "[[component]]\nreference = \"oci://r/a:1\"\nmanifest = \"sha256:zz\"\ncomponent = \"{D}\"\nsize = 1\n"
            ),
        )
        .unwrap();
        let error = OciLock::read(&path).unwrap_err().to_string();
        assert!(error.contains("component[0].manifest"), "{error}");
        assert!(error.contains("glovebox plugin pull"), "{error}");
    }
}
