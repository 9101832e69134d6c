//! The disk watermark: new work is refused while the data dir's file system
//! has less than `storage.min_free` bytes free.
//!
//! An embedded store (sled, SQLite) that meets a full disk fails mid-write, and
//! every session of the host pays for it. Refusing new work (calls, jobs,
//! session starts) a margin before that point keeps the store's own writes
//! (the outcomes of calls already running, checkpoints) inside the margin, and
//! says why in words an operator can act on. Work already admitted finishes.
//!
//! Measured with `statvfs` on every check: about a microsecond (see the test
//! below), nothing next to a call, so nothing is cached and the host sees space
//! come back at once.

use std::path::{Path, PathBuf};

use crate::manifest::{HostConfig, approximate_size};
use crate::session::{DiskRoom, NoRoom};

/// `storage.min_free` of a data dir.
#[derive(Clone, Debug)]
pub struct Watermark {
    dir: PathBuf,
    min_free: u64,
}

impl Watermark {
    pub fn of(config: &HostConfig) -> Watermark {
        Watermark {
            dir: config.data_dir.clone(),
            min_free: config.storage.min_free,
        }
    }

    /// `Err(reason)` while the data dir's disk has less than `min_free` bytes
    /// available (or cannot be measured: the check fails closed).
    pub fn check(&self) -> Result<(), LowDisk> {
        if self.min_free == 0 {
            return Ok(());
        }
        match free_bytes(&self.dir) {
            Ok(free) if free >= self.min_free => Ok(()),
            Ok(free) => Err(LowDisk::Below {
                dir: self.dir.clone(),
                free,
                min_free: self.min_free,
            }),
            Err(error) => Err(LowDisk::Unmeasured {
                dir: self.dir.clone(),
                error,
            }),
        }
    }
}

impl DiskRoom for Watermark {
    fn check(&self) -> Result<(), NoRoom> {
        Ok(Watermark::check(self)?)
    }
}

/// Why the watermark refuses new work: the message names the data dir, the
/// free space and `storage.min_free`, and the fix.
#[derive(Debug, thiserror::Error)]
pub enum LowDisk {
    /// Less than `min_free` bytes are free.
    #[error(
        "low disk: the disk of the data dir `{}` has {} free, less than `storage.min_free` ({}): new calls, jobs and sessions are refused until there is room; free space on that disk, or lower `storage.min_free` in the host config",
        .dir.display(),
        approximate_size(*.free),
        approximate_size(*.min_free)
    )]
    Below {
        dir: PathBuf,
        free: u64,
        min_free: u64,
    },
    /// The free space cannot be measured: the check fails closed.
    #[error(
        "cannot measure the free space of the data dir `{}` ({error}), so new work is refused (`storage.min_free`): check that the directory exists and is readable, or set `storage.min_free = 0` to turn the check off",
        .dir.display()
    )]
    Unmeasured { dir: PathBuf, error: std::io::Error },
}

/// Bytes an unprivileged process may still write on the file system of `dir`,
/// or of its nearest existing ancestor: a data dir not made yet (a store on
/// NATS keeps nothing there until a scratch dir is needed) will be made there.
fn free_bytes(dir: &Path) -> std::io::Result<u64> {
    let mut at = dir;
    loop {
        match rustix::fs::statvfs(at) {
            Ok(stat) => return Ok(stat.f_bavail.saturating_mul(stat.f_frsize)),
            Err(rustix::io::Errno::NOENT) if at.parent().is_some() => {
                at = at.parent().unwrap_or(at);
            }
            Err(e) => return Err(e.into()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(dir: &Path, min_free: u64) -> Watermark {
        Watermark {
            dir: dir.to_path_buf(),
            min_free,
        }
    }

    #[test]
    fn a_watermark_above_the_free_space_refuses_and_says_why() {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR"));
        let free = free_bytes(dir).unwrap();
        assert!(free > 0);
        assert!(at(dir, 1).check().is_ok());
        assert!(at(dir, 0).check().is_ok());
        let refused = at(dir, free.saturating_mul(4).max(1 << 40))
            .check()
            .unwrap_err()
            .to_string();
        assert!(refused.contains("`storage.min_free`"), "{refused}");
        assert!(refused.contains(&dir.display().to_string()));
        // A dir not made yet is measured where it will be made.
        assert!(at(&dir.join("not-yet/made"), 1).check().is_ok());
        let refused = at(&dir.join("not-yet"), 1 << 60)
            .check()
            .unwrap_err()
            .to_string();
        assert!(refused.contains("`storage.min_free`"), "{refused}");
    }

    /// What a check costs: printed, and bounded loosely so a slow machine passes.
    #[test]
    fn a_check_costs_microseconds() {
        let mark = at(Path::new(env!("CARGO_MANIFEST_DIR")), 1);
        let n = 10_000;
        let start = std::time::Instant::now();
        for _ in 0..n {
            mark.check().unwrap();
        }
        let each = start.elapsed() / n;
        eprintln!("statvfs watermark check: {each:?} each");
        assert!(each < std::time::Duration::from_millis(1), "{each:?}");
    }
}
