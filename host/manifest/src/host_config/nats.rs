//! The keys of `[storage]` that only `backend = "nats"` reads: where the
//! NATS servers are, how the host logs in, and how its streams, buckets and
//! leases are named and kept.

use std::path::{Path, PathBuf};

use crate::source::Source;
use crate::units::Millis;
use crate::{ConfigError, NatsStorage, StorageBackend};

use super::storage::RawStorage;

/// The keys of `[storage]` that only `backend = "nats"` reads.
pub(super) fn validate_nats(
    src: &Source,
    raw: &RawStorage,
    dir: &Path,
    backend: StorageBackend,
) -> Result<Option<NatsStorage>, ConfigError> {
    if backend != StorageBackend::Nats {
        refuse_nats_keys(src, raw, backend)?;
        return Ok(None);
    }
    let url = nats_url(src, raw)?;
    let creds = nats_login(src, raw, dir)?;
    let prefix = nats_prefix(src, raw)?;
    let replicas = nats_replicas(src, raw)?;
    let node = nats_node(src, raw)?;
    let advertise = nats_advertise(src, raw)?;
    let lease_ttl = nats_lease_ttl(src, raw)?;
    Ok(Some(NatsStorage {
        url,
        creds,
        user: raw.user.clone(),
        password: raw.password.clone(),
        prefix,
        replicas,
        node,
        advertise,
        lease_ttl,
    }))
}

/// With another backend, no key of the nats backend is set.
fn refuse_nats_keys(
    src: &Source,
    raw: &RawStorage,
    backend: StorageBackend,
) -> Result<(), ConfigError> {
    let nats_keys = [
        ("url", raw.url.is_some()),
        ("creds", raw.creds.is_some()),
        ("user", raw.user.is_some()),
        ("password", raw.password.is_some()),
        ("prefix", raw.prefix.is_some()),
        ("replicas", raw.replicas.is_some()),
        ("node", raw.node.is_some()),
        ("advertise", raw.advertise.is_some()),
        ("lease_ttl", raw.lease_ttl.is_some()),
    ];
    if let Some((key, _)) = nats_keys.iter().find(|(_, set)| *set) {
        return Err(src.invalid(
            &format!("storage.{key}"),
            format!("`{key}` is a setting of the nats backend, and the backend is {backend}"),
            format!("remove `{key}`, or set `backend = \"nats\"`"),
        ));
    }
    Ok(())
}

/// `url`: one or more comma-separated `nats://` or `tls://` URLs.
fn nats_url(src: &Source, raw: &RawStorage) -> Result<String, ConfigError> {
    let url = raw.url.as_deref().unwrap_or_default().trim();
    if url.is_empty() {
        return Err(src.invalid(
            "storage.url",
            "`backend = \"nats\"` needs the NATS server's URL",
            "set `url = \"nats://host:4222\"` in `[storage]` (several servers: comma-separated; `tls://` for TLS)",
        ));
    }
    for one in url.split(',').map(str::trim) {
        if !(one.starts_with("nats://") || one.starts_with("tls://"))
            || one.contains(char::is_whitespace)
        {
            return Err(src.invalid(
                "storage.url",
                format!("`{one}` is not a NATS URL"),
                "write `nats://host:4222`, or `tls://host:4222` for TLS; several servers comma-separated",
            ));
        }
    }
    Ok(url.to_string())
}

/// How the host logs in: a `creds` file (found, from the config's
/// directory `dir`), or `user` with `password`, not both.
fn nats_login(src: &Source, raw: &RawStorage, dir: &Path) -> Result<Option<PathBuf>, ConfigError> {
    let creds = match raw.creds.as_deref() {
        None => None,
        Some(text) => {
            let path = dir.join(text);
            if !path.is_file() {
                return Err(src.invalid(
                    "storage.creds",
                    format!("credentials file `{text}` not found"),
                    "point `creds` at the `.creds` file `nsc` wrote for this host's NATS user (relative paths are resolved from the config file's directory)",
                ));
            }
            Some(path)
        }
    };
    match (&raw.user, &raw.password, &creds) {
        (Some(_), _, Some(_)) | (_, Some(_), Some(_)) => {
            let key = if raw.user.is_some() {
                "user"
            } else {
                "password"
            };
            return Err(src.invalid(
                &format!("storage.{key}"),
                "`creds` and `user`/`password` are two ways to log in; give one",
                format!("remove `{key}`, or `creds`"),
            ));
        }
        (Some(_), None, None) => {
            return Err(src.invalid(
                "storage.user",
                "`user` needs a `password`",
                "add `password`, or log in with a `creds` file",
            ));
        }
        (None, Some(_), None) => {
            return Err(src.invalid(
                "storage.password",
                "`password` needs a `user`",
                "add `user`, or log in with a `creds` file",
            ));
        }
        _ => {}
    }
    Ok(creds)
}

/// `prefix`: what starts every stream and bucket name.
fn nats_prefix(src: &Source, raw: &RawStorage) -> Result<String, ConfigError> {
    let prefix = raw.prefix.clone().unwrap_or_else(|| "glovebox".to_string());
    if prefix.is_empty()
        || prefix.len() > 32
        || !prefix
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-')
    {
        return Err(src.invalid(
            "storage.prefix",
            format!("`{prefix}` cannot start NATS stream and bucket names"),
            "use 1 to 32 letters, digits and `-` (no `_` or `.`), one prefix per deployment",
        ));
    }
    Ok(prefix)
}

/// `replicas`: 1 to 5 JetStream replicas.
fn nats_replicas(src: &Source, raw: &RawStorage) -> Result<u8, ConfigError> {
    Ok(match raw.replicas {
        None => 1,
        Some(n) => match u8::try_from(n) {
            Ok(n @ 1..=5) => n,
            _ => {
                return Err(src.invalid(
                    "storage.replicas",
                    format!("{n} is not a number of JetStream replicas"),
                    "write 1 (one NATS server) or 3 (a three-node cluster); JetStream keeps 1 to 5",
                ));
            }
        },
    })
}

/// `node`: this host's id, a plain name.
fn nats_node(src: &Source, raw: &RawStorage) -> Result<Option<String>, ConfigError> {
    Ok(match raw.node.as_deref().map(str::trim) {
        None => None,
        Some(node) if crate::source::is_plain_name(node) => Some(node.to_string()),
        Some(node) => {
            return Err(src.invalid(
                "storage.node",
                format!("`{node}` is not a node id"),
                "use 1 to 64 letters, digits, `-`, `_` and `.`, one per host (e.g. its host name), or remove `node` to use the id kept in the data dir",
            ));
        }
    })
}

/// `advertise`: the http(s) URL clients reach this host's MCP server at.
fn nats_advertise(src: &Source, raw: &RawStorage) -> Result<Option<String>, ConfigError> {
    Ok(match raw.advertise.as_deref().map(str::trim) {
        None => None,
        Some(url)
            if (url.starts_with("http://") || url.starts_with("https://"))
                && !url.contains(char::is_whitespace) =>
        {
            Some(url.to_string())
        }
        Some(url) => {
            return Err(src.invalid(
                "storage.advertise",
                format!("`{url}` is not an http(s) URL"),
                "write the URL clients reach this host's MCP server at, e.g. `https://host-a.example:8443/mcp`",
            ));
        }
    })
}

/// `lease_ttl`: 1s to 1h.
fn nats_lease_ttl(src: &Source, raw: &RawStorage) -> Result<std::time::Duration, ConfigError> {
    Ok(match raw.lease_ttl {
        None => NatsStorage::DEFAULT_LEASE_TTL,
        Some(Millis(ttl))
            if (std::time::Duration::from_secs(1)..=std::time::Duration::from_secs(3600))
                .contains(&ttl) =>
        {
            ttl
        }
        Some(Millis(ttl)) => {
            return Err(src.invalid(
                "storage.lease_ttl",
                format!("{ttl:?} is not a lease TTL"),
                "write 1s to 1h (default 15s): how long other hosts wait before taking over the sessions of a host that died",
            ));
        }
    })
}
