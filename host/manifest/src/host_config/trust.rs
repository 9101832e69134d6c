//! `[trust]`: the minisign public keys whose signatures a plugin or a hook
//! must carry to be loaded. Here the table as written, its keys read and
//! checked (each a minisign public key, inline or in a `.pub` file), and the
//! keys each plugin and hook of the config is held to. The signatures
//! themselves are checked by the runtime when it loads a component
//! (`host/runtime/src/trust.rs`); with no `[trust]` nothing is asked of them.

use std::collections::BTreeMap;
use std::path::Path;

use serde::Deserialize;

use crate::source::Source;
use crate::{ConfigError, HookConfig, PluginManifest};

/// `[trust]`: whose signatures plugins and hooks must carry.
#[derive(Deserialize)]
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub(crate) struct RawTrust {
    /// Minisign public keys trusted for every plugin and hook: the key
    /// itself (`"RWQ..."`, the second line of a minisign `.pub` file) or the
    /// path of a `.pub` file (from the config's directory).
    #[serde(default)]
    #[cfg_attr(feature = "schemars", schemars(extend("default" = [])))]
    keys: Vec<String>,
    /// Whether every plugin and hook must be signed: a plugin or hook no key
    /// covers is then a config error. `false`: those not covered load
    /// unsigned (the covered ones must still be signed).
    #[cfg_attr(feature = "schemars", schemars(extend("default" = true)))]
    required: Option<bool>,
    /// The keys of one plugin, by its manifest's name: they replace `keys`
    /// for it.
    #[serde(default)]
    #[cfg_attr(feature = "schemars", schemars(extend("x-key" = "<plugin>")))]
    plugins: BTreeMap<String, RawTrustKeys>,
    /// The keys of one hook, by its `[[hook]] name`: they replace `keys`
    /// for it.
    #[serde(default)]
    #[cfg_attr(feature = "schemars", schemars(extend("x-key" = "<hook>")))]
    hooks: BTreeMap<String, RawTrustKeys>,
}

/// `[trust.plugins.<plugin>]`, `[trust.hooks.<hook>]`: one plugin's or
/// hook's keys.
#[derive(Deserialize)]
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub(crate) struct RawTrustKeys {
    /// Minisign public keys, inline or `.pub` files, as in `trust.keys`.
    keys: Vec<String>,
}

/// A minisign public key `[trust]` lists.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TrustedKey {
    /// The key's id as minisign prints it (16 uppercase hex digits).
    pub id: String,
    /// The key, base64 (the second line of its `.pub` file).
    pub public_key: String,
}

/// `[trust]`, read: the keys trusted for all, for one plugin, for one hook.
#[derive(Clone, Debug, PartialEq)]
pub struct TrustPolicy {
    /// Keys trusted for every plugin and hook without keys of its own.
    pub keys: Vec<TrustedKey>,
    /// Whether every plugin and hook must be covered by a key.
    pub required: bool,
    /// Keys of one plugin, replacing `keys` for it.
    pub plugins: BTreeMap<String, Vec<TrustedKey>>,
    /// Keys of one hook, replacing `keys` for it.
    pub hooks: BTreeMap<String, Vec<TrustedKey>>,
}

impl TrustPolicy {
    /// The keys one of which must have signed plugin `name`; `None`: it may
    /// load unsigned.
    pub fn for_plugin(&self, name: &str) -> Option<Vec<TrustedKey>> {
        self.covering(self.plugins.get(name))
    }

    /// The keys one of which must have signed hook `name`; `None`: it may
    /// load unsigned.
    pub fn for_hook(&self, name: &str) -> Option<Vec<TrustedKey>> {
        self.covering(self.hooks.get(name))
    }

    fn covering(&self, own: Option<&Vec<TrustedKey>>) -> Option<Vec<TrustedKey>> {
        match own {
            Some(keys) => Some(keys.clone()),
            None if !self.keys.is_empty() => Some(self.keys.clone()),
            None => None,
        }
    }
}

const KEY_HINT: &str = "write a minisign public key (`RWQ...`, the second line of the signer's `.pub` file) or the path of that `.pub` file; `glovebox plugin keygen NAME` makes a key pair";

/// Reads `[trust]` (keys files from the config's directory `dir`) and holds
/// every plugin and hook to the keys that cover it: with `required` (the
/// default) one that no key covers is refused, and a `[trust.plugins]` or
/// `[trust.hooks]` entry must name a plugin or hook of the config.
pub(super) fn validate_trust(
    src: &Source,
    dir: &Path,
    raw: Option<&RawTrust>,
    plugins: &mut [PluginManifest],
    hooks: &mut [HookConfig],
) -> Result<Option<TrustPolicy>, ConfigError> {
    let Some(raw) = raw else {
        return Ok(None);
    };
    let keys = read_keys(src, dir, "trust.keys", &raw.keys)?;
    let plugin_names: Vec<&str> = plugins.iter().map(|p| p.name.as_str()).collect();
    let hook_names: Vec<&str> = hooks.iter().map(|h| h.name.as_str()).collect();
    let policy = TrustPolicy {
        keys,
        required: raw.required.unwrap_or(true),
        plugins: named_keys(src, dir, "plugins", &raw.plugins, &plugin_names)?,
        hooks: named_keys(src, dir, "hooks", &raw.hooks, &hook_names)?,
    };
    if policy.keys.is_empty() && policy.plugins.is_empty() && policy.hooks.is_empty() {
        return Err(src.invalid(
            "trust",
            "`[trust]` lists no key, so no plugin or hook could be signed by a trusted one",
            "list keys in `trust.keys` (for all) or `[trust.plugins.<plugin>] keys` (for one), or remove `[trust]`",
        ));
    }
    for plugin in plugins.iter_mut() {
        plugin.signers = policy.for_plugin(&plugin.name);
        if plugin.signers.is_none() && policy.required {
            return Err(src.invalid(
                "trust",
                format!(
                    "no key of `[trust]` covers plugin `{}`, and `[trust]` requires every plugin to be signed",
                    plugin.name
                ),
                format!(
                    "add `[trust.plugins.{}] keys = [...]` with its signer's key, list that key in `trust.keys`, or set `trust.required = false` to let it load unsigned",
                    plugin.name
                ),
            ));
        }
    }
    for hook in hooks.iter_mut() {
        hook.signers = policy.for_hook(&hook.name);
        if hook.signers.is_none() && policy.required {
            return Err(src.invalid(
                "trust",
                format!(
                    "no key of `[trust]` covers hook `{}`, and `[trust]` requires every hook to be signed",
                    hook.name
                ),
                format!(
                    "add `[trust.hooks.{}] keys = [...]` with its signer's key, list that key in `trust.keys`, or set `trust.required = false` to let it load unsigned",
                    hook.name
                ),
            ));
        }
    }
    Ok(Some(policy))
}

/// The keys `[trust.<kind>.<name>]` lists for each plugin or hook (`kind`
/// is `plugins` or `hooks`), each name one of this config's (`names`).
fn named_keys(
    src: &Source,
    dir: &Path,
    kind: &str,
    entries: &BTreeMap<String, RawTrustKeys>,
    names: &[&str],
) -> Result<BTreeMap<String, Vec<TrustedKey>>, ConfigError> {
    let mut into = BTreeMap::new();
    for (name, entry) in entries {
        let key = format!("trust.{kind}.{name}");
        if !names.contains(&name.as_str()) {
            let what = if kind == "plugins" { "plugin" } else { "hook" };
            return Err(src.invalid(
                &key,
                format!(
                    "`[trust.{kind}.{name}]` names no {what} of this config (its {kind}: {})",
                    if names.is_empty() {
                        "none".to_string()
                    } else {
                        names.join(", ")
                    }
                ),
                format!(
                    "name the {what} as its {}, or remove the table",
                    if kind == "plugins" {
                        "manifest's `name`"
                    } else {
                        "`[[hook]] name`"
                    }
                ),
            ));
        }
        if entry.keys.is_empty() {
            return Err(src.invalid(
                &format!("{key}.keys"),
                "the list of keys is empty, so nothing could sign it",
                KEY_HINT,
            ));
        }
        let read = read_keys(src, dir, &format!("{key}.keys"), &entry.keys)?;
        into.insert(name.clone(), read);
    }
    Ok(into)
}

/// Each of `texts` as a key: inline, or a `.pub` file from `dir`; the same
/// key twice is refused (a typo of a second key, most likely).
fn read_keys(
    src: &Source,
    dir: &Path,
    key: &str,
    texts: &[String],
) -> Result<Vec<TrustedKey>, ConfigError> {
    let mut keys: Vec<TrustedKey> = Vec::new();
    for (i, text) in texts.iter().enumerate() {
        let at = format!("{key}[{i}]");
        let read = read_key(dir, text).map_err(|problem| src.invalid(&at, problem, KEY_HINT))?;
        if let Some(first) = keys.iter().position(|k| k.public_key == read.public_key) {
            return Err(src.invalid(
                &at,
                format!("key {} is listed twice (also `{key}[{first}]`)", read.id),
                "list each key once",
            ));
        }
        keys.push(read);
    }
    Ok(keys)
}

/// One key as written: a minisign public key in base64, or a file holding
/// one (minisign's `.pub`: a comment line, then the key).
fn read_key(dir: &Path, text: &str) -> Result<TrustedKey, String> {
    let text = text.trim();
    if text.is_empty() {
        return Err("the key is empty".to_string());
    }
    if let Ok(key) = minisign::PublicKey::from_base64(text) {
        return Ok(trusted(&key));
    }
    let path = dir.join(text);
    let file = std::fs::read_to_string(&path).map_err(|e| {
        format!(
            "`{text}` is neither a minisign public key nor a readable file (`{}`: {e})",
            path.display()
        )
    })?;
    let line = file
        .lines()
        .map(str::trim)
        .find(|l| !l.is_empty() && !l.starts_with("untrusted comment:"))
        .unwrap_or("");
    minisign::PublicKey::from_base64(line)
        .map(|key| trusted(&key))
        .map_err(|_| {
            format!(
                "`{}` holds no minisign public key (a `untrusted comment:` line, then the key in base64)",
                path.display()
            )
        })
}

/// The key as the config keeps it: its id as minisign prints it, and its base64.
fn trusted(key: &minisign::PublicKey) -> TrustedKey {
    TrustedKey {
        id: key_id(key.keynum()),
        public_key: key.to_base64(),
    }
}

/// A key id as minisign prints it: the 8 bytes of its key number, little
/// endian, as 16 uppercase hex digits.
pub fn key_id(keynum: &[u8]) -> String {
    keynum.iter().rev().map(|b| format!("{b:02X}")).collect()
}
