//! Reading the chain key (`[storage] chain_key_file`; `log verify --key`).
//!
//! The key is what stops someone who can write the data dir from re-sealing
//! an altered log (see the ledger's `session::chain`), so the file must be
//! as private as an SSH key: a regular file, the user's own, readable and
//! writable by nobody else (0600), and long enough (32 bytes) that it cannot
//! be guessed. A key that fails any of this is refused with the fix, never
//! used (and never silently replaced by the plain chain).

use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::Path;
use std::sync::Arc;

use anyhow::bail;

use crate::manifest::HostConfig;
use crate::session::ChainKey;

/// The chain key `config` names (`[storage] chain_key_file`), checked;
/// none when it names none.
pub fn chain_key_of(config: &HostConfig) -> anyhow::Result<Option<Arc<ChainKey>>> {
    config
        .storage
        .chain_key_file
        .as_deref()
        .map(read_chain_key)
        .transpose()
}

/// The chain key in `path`, checked.
pub fn read_chain_key(path: &Path) -> anyhow::Result<Arc<ChainKey>> {
    let shown = path.display();
    let make = format!("head -c 32 /dev/urandom > {shown} && chmod 600 {shown}");
    let meta = match std::fs::metadata(path) {
        Ok(meta) => meta,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => bail!(
            "the chain key file `{shown}` does not exist: make one with `{make}` (outside the data dir, and keep a copy: keyed logs verify only with it)"
        ),
        Err(e) => bail!("cannot read the chain key file `{shown}`: {e}"),
    };
    if !meta.is_file() {
        bail!(
            "the chain key file `{shown}` is not a regular file: point `chain_key_file` at the key itself (make one with `{make}`)"
        );
    }
    let me = rustix::process::geteuid().as_raw();
    if meta.uid() != me {
        bail!(
            "the chain key file `{shown}` is owned by uid {}, not by the user running glovebox (uid {me}): the key must be your own; copy it to a file of yours with mode 0600",
            meta.uid()
        );
    }
    let mode = meta.permissions().mode() & 0o777;
    if mode & 0o077 != 0 {
        bail!(
            "the chain key file `{shown}` can be read or written by its group or by others (mode {mode:o}): run `chmod 600 {shown}`"
        );
    }
    let bytes = std::fs::read(path)
        .map_err(|e| anyhow::anyhow!("cannot read the chain key file `{shown}`: {e}"))?;
    Ok(Arc::new(ChainKey::new(bytes, shown.to_string())?))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(dir: &Path, bytes: &[u8], mode: u32) -> std::path::PathBuf {
        let path = dir.join("chain.key");
        std::fs::write(&path, bytes).unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(mode)).unwrap();
        path
    }

    #[test]
    fn threat_26_a_private_key_of_32_bytes_is_read() {
        let dir = tempfile::tempdir().unwrap();
        let key = read_chain_key(&write(dir.path(), &[7; 32], 0o600)).unwrap();
        assert_eq!(key.id().len(), 16);
    }

    #[test]
    fn threat_26_a_bad_key_file_is_refused_naming_it_and_the_fix() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("chain.key");
        let shown = path.display().to_string();
        let missing = read_chain_key(&path).unwrap_err().to_string();
        assert!(
            missing.contains(&format!("`{shown}` does not exist"))
                && missing.contains("head -c 32 /dev/urandom"),
            "{missing}"
        );
        write(dir.path(), &[7; 32], 0o640);
        let open = read_chain_key(&path).unwrap_err().to_string();
        assert!(
            open.contains("mode 640") && open.contains(&format!("chmod 600 {shown}")),
            "{open}"
        );
        write(dir.path(), &[7; 16], 0o600);
        let short = read_chain_key(&path).unwrap_err().to_string();
        assert!(
            short.contains("holds 16 bytes") && short.contains("head -c 32 /dev/urandom"),
            "{short}"
        );
        let not_file = read_chain_key(dir.path()).unwrap_err().to_string();
        assert!(not_file.contains("not a regular file"), "{not_file}");
    }
}
