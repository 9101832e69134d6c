//! Where `plugin check` and `hook check` keep their compile cache when no
//! config names a data dir. Its own module: both commands use it, and each
//! of them already calls the other for a component of the other world.

use std::path::PathBuf;

use anyhow::{Result, bail};

/// Where `plugin check` keeps its compile cache when there is no config:
/// `$XDG_CACHE_HOME/glovebox`, else `~/.cache/glovebox`.
pub fn user_cache_dir() -> Result<PathBuf> {
    let base = std::env::var_os("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .filter(|p| p.is_absolute())
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache")));
    match base {
        Some(base) => Ok(base.join("glovebox")),
        // Never a shared temp dir: another user could plant compiled code there.
        None => bail!(
            "no config, and neither `XDG_CACHE_HOME` nor `HOME` is set, so there is no private place for the compile cache: set one of them, or pass `--config` with a `data_dir`"
        ),
    }
}
