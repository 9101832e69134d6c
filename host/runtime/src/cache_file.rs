//! The host's own cache files (compiled components, pre-initialised
//! snapshots): each written whole or not at all, in a directory only this
//! user reads, beside a record of its SHA-256 that a later read checks.
//!
//! Why a module of its own: the compile cache (`runtime/compiled.rs`) and
//! the snapshot cache (`preinit.rs`) both write this way; kept in either,
//! the runtime's modules import each other in a circle.

use std::path::Path;

/// `bytes`' SHA-256 as 64 lowercase hex digits.
pub(crate) fn sha256_hex(bytes: &[u8]) -> String {
    use sha2::Digest;
    hex::encode(sha2::Sha256::digest(bytes))
}

/// Writes `bytes` to `path` through a 0600 temporary file in a 0700 directory
/// (`what` names the directory in an error).
pub(crate) fn write_atomically(path: &Path, bytes: &[u8], what: &str) -> std::io::Result<()> {
    let dir = path.parent().unwrap_or(Path::new("."));
    crate::private_dir::ensure_private_dir(dir, what).map_err(std::io::Error::other)?;
    let mut tmp = tempfile::NamedTempFile::new_in(dir)?;
    std::io::Write::write_all(&mut tmp, bytes)?;
    tmp.as_file().sync_all()?;
    tmp.persist(path).map_err(|e| e.error)?;
    Ok(())
}
