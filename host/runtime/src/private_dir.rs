//! The host's own directories (data dir, compile cache, snapshots) are private to
//! the user it runs as: created 0700, and refused when another user owns them or
//! group or others may write them (either could swap the code the host runs or
//! rewrite its logs).

use std::os::unix::fs::{DirBuilderExt, MetadataExt, PermissionsExt};
use std::path::Path;

use anyhow::{Result, bail};

/// Creates `dir` (and missing parents) with mode 0700, or checks the existing one.
/// `what` names it in errors ("the data dir").
pub fn ensure_private_dir(dir: &Path, what: &str) -> Result<()> {
    if !dir.exists() {
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(dir)
            .map_err(|e| {
                anyhow::anyhow!(
                    "cannot create {what} `{}`: {e}: check the permissions of its parent",
                    dir.display()
                )
            })?;
    }
    let meta = std::fs::metadata(dir)
        .map_err(|e| anyhow::anyhow!("cannot read {what} `{}`: {e}", dir.display()))?;
    if !meta.is_dir() {
        bail!(
            "{what} `{}` is not a directory: move the file away or point the config elsewhere",
            dir.display()
        );
    }
    let me = rustix::process::geteuid().as_raw();
    if meta.uid() != me {
        bail!(
            "{what} `{}` is owned by uid {}, not by the user running glovebox (uid {me}): use a directory of your own (`data_dir`, `runtime.cache_dir` in the config)",
            dir.display(),
            meta.uid()
        );
    }
    let mode = meta.permissions().mode() & 0o777;
    if mode & 0o022 != 0 {
        bail!(
            "{what} `{}` is writable by its group or by others (mode {mode:o}): run `chmod 700 {}`",
            dir.display(),
            dir.display()
        );
    }
    Ok(())
}

/// Opens `path` for a new file only its owner may read or write (0600).
pub fn private_file_options() -> std::fs::OpenOptions {
    use std::os::unix::fs::OpenOptionsExt;
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create(true).truncate(true).mode(0o600);
    options
}
