//! Files the command line makes that must not exist yet (a principal's
//! token file, a signing key pair): created in one step that fails when the
//! file is there, never overwriting, and owner-only from their creation when
//! they hold a secret (no window in which another user could read them).

use std::io::Write as _;
use std::path::Path;

use anyhow::{Context, Result};

/// Creates `path` with `text`; refuses when it exists. `owner_only`: mode
/// 0600 from the start (on Unix).
pub fn create(path: &Path, text: &str, owner_only: bool) -> Result<()> {
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    if owner_only {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(0o600);
    }
    let mut file = options
        .open(path)
        .with_context(|| format!("cannot create `{}`", path.display()))?;
    file.write_all(text.as_bytes())
        .with_context(|| format!("cannot write `{}`", path.display()))?;
    Ok(())
}
