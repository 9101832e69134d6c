//! `glovebox plugin keygen` and `glovebox plugin sign`: a minisign key pair,
//! and a signature of a plugin (its name, component and manifest) or of a
//! hook's component, written beside it for `[trust]` to check at load
//! (docs/operators/trust.md). Also what `glovebox plugin check` says of a
//! plugin's signature.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, Result, bail};
use glovebox::manifest::ManifestIdentity;
use glovebox::signature::{self, Signature, Statement};

/// `glovebox plugin keygen PATH`: writes `PATH.pub` and `PATH.key`
/// (owner-only), refusing to overwrite either.
pub fn keygen(path: &Path) -> Result<ExitCode> {
    let pair = signature::keygen().map_err(|e| anyhow::anyhow!("cannot make a key pair: {e}"))?;
    let public = with_extension(path, "pub");
    let secret = with_extension(path, "key");
    for file in [&public, &secret] {
        if file.exists() {
            bail!(
                "`{}` exists: keygen never overwrites a key; choose another name, or remove it if it is no longer needed",
                file.display()
            );
        }
    }
    crate::new_file::create(&secret, &pair.secret_file, true)?;
    crate::new_file::create(&public, &pair.public_file, false)?;
    out!("key id:     {}", pair.key_id);
    out!("public key: {} (share it)", public.display());
    out!(
        "secret key: {} (keep it secret: owner-only, unencrypted)",
        secret.display()
    );
    out!();
    out!("trust it in glovebox.toml:");
    out!("  [trust]");
    out!("  keys = [\"{}\"]", pair.public_key);
    Ok(ExitCode::SUCCESS)
}

/// `glovebox plugin sign PATH --key SECRET_KEY_FILE`: a plugin manifest
/// (`.toml`) is signed with its component and name into `PATH.sig` (a
/// component named `oci://…` as the config's lock pins it); any other file
/// is signed as a hook's component into `PATH.sig`.
pub fn sign(config: &Path, path: &Path, key: &Path) -> Result<ExitCode> {
    let (statement, target) = if path.extension().is_some_and(|e| e == "toml") {
        // A component from a registry is signed as pinned and cached: pull
        // it first (`glovebox plugin pull`, or `plugin check`).
        let store = crate::oci::store(config).ok();
        let identity = ManifestIdentity::read_in(path, store.as_ref())?;
        let statement = Statement::Plugin {
            name: identity.name,
            component_sha256: file_sha256(&identity.component)?,
            manifest_sha256: identity.manifest_sha256,
        };
        (statement, signature::plugin_signature_path(path))
    } else {
        let statement = Statement::Hook {
            component_sha256: file_sha256(path)?,
        };
        (statement, signature::hook_signature_path(path))
    };
    let secret = std::fs::read_to_string(key)
        .with_context(|| format!("cannot read the secret key `{}`", key.display()))?;
    let (text, key_id) = signature::sign(&statement, &secret, None).map_err(|e| {
        anyhow::anyhow!(
            "cannot sign with `{}`: {e}; give the secret key file `glovebox plugin keygen` or `minisign -G` wrote",
            key.display()
        )
    })?;
    std::fs::write(&target, text)
        .with_context(|| format!("cannot write the signature `{}`", target.display()))?;
    out!("signed:    {}", target.display());
    out!("key id:    {key_id}");
    out!("statement: {statement}");
    Ok(ExitCode::SUCCESS)
}

/// A line for `glovebox plugin check` about the signature beside the
/// plugin's `manifest` when `[trust]` did not hold it to one (`keys`: the
/// keys the config would trust for it, if any): who signed and whether it
/// still matches; `None` when there is no signature.
pub fn unchecked_signature(
    manifest: &Path,
    name: &str,
    component_digest: &str,
    manifest_digest: &str,
) -> Option<String> {
    let path = signature::plugin_signature_path(manifest);
    let text = std::fs::read_to_string(&path).ok()?;
    let read = match Signature::parse(&text) {
        Ok(read) => read,
        Err(e) => return Some(format!("`{}` cannot be read: {e}", path.display())),
    };
    let matches = match &read.statement {
        Some(Statement::Plugin {
            name: signed,
            component_sha256,
            manifest_sha256,
        }) => {
            if signed != name {
                format!("it signs plugin `{signed}`, not this one")
            } else if component_sha256 != component_digest {
                "its component changed since it was signed".to_string()
            } else if manifest_sha256 != manifest_digest {
                "its manifest changed since it was signed".to_string()
            } else {
                "it signs this component and manifest".to_string()
            }
        }
        _ => "it signs no tool plugin".to_string(),
    };
    Some(format!(
        "by key {} ({matches}; not checked: no `[trust]` in the config covers this plugin)",
        read.key_id
    ))
}

fn file_sha256(path: &Path) -> Result<String> {
    let bytes = std::fs::read(path).with_context(|| format!("cannot read `{}`", path.display()))?;
    Ok(signature::sha256_hex(&bytes))
}

fn with_extension(path: &Path, extension: &str) -> PathBuf {
    let mut name = path.as_os_str().to_owned();
    name.push(".");
    name.push(extension);
    PathBuf::from(name)
}
