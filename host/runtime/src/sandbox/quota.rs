//! Write quotas: how many bytes one call may add to the host's disk.
//!
//! A read-write grant or a scratch directory hands the guest the host's disk,
//! and a guest that writes without end fills it: the store (sled, SQLite) then
//! fails mid-write and every session pays. So each call gets a write budget:
//! `limits.write`, and for a call that mounts its session's scratch directory
//! no more than what is left of `runtime.scratch_quota` (measured when the call
//! starts). Every byte the guest hands to the file system is taken from it:
//! `descriptor.write`, the streams of `write-via-stream` and
//! `append-via-stream` (wrapped in [`QuotaStream`]), and the growth of a file
//! by `set-size`. Overwrites count too: the budget counts bytes written, not
//! the net growth of the disk, which keeps it simple and on the safe side.
//!
//! A write past the budget fails with `insufficient-space` (ENOSPC to the
//! guest: "disk full", which programs already handle), and the budget records
//! that it was hit, so the call ends in a typed `quota` error that names the
//! key to raise. The guest wrote exactly up to the budget, never past it.
//!
//! New directory entries count too: creating a file (`open-at` with `create`
//! on a path that did not exist), a directory, a symlink or a hard link takes
//! [`ENTRY_BYTES`] (about the block a file system gives it), so a guest that
//! makes empty files without end runs out of budget as one that writes does,
//! and the scratch measure counts each entry the same way. Deleting gives
//! nothing back within the call (the scratch measure at the next call sees it).

use std::io;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use anyhow::Result;
use bytes::Bytes;
use wasmtime::component::{Linker, LinkerInstance, Resource};
use wasmtime_wasi::filesystem::{Descriptor, WasiFilesystemView};
use wasmtime_wasi::p2::bindings::filesystem::types::{ErrorCode, HostDescriptor, PathFlags};
use wasmtime_wasi::p2::{DynOutputStream, OutputStream, Pollable, StreamError, StreamResult};

use super::CallState;

/// The `wasi:filesystem/types` instance that `wasmtime_wasi::p2` links.
const FILESYSTEM_TYPES: &str = "wasi:filesystem/types@0.2.12";

/// What one new directory entry (file, directory, link) takes from a write
/// budget and counts for in a scratch directory: a block.
pub const ENTRY_BYTES: u64 = 4096;

/// Which key bounds a call's writes: the one its quota error names.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum QuotaKey {
    /// `limits.write` in the plugin's manifest (or `[defaults]`).
    Write,
    /// `runtime.scratch_quota` in the host config: the session's scratch
    /// directory had less room left than `limits.write`.
    Scratch,
}

/// What a call that passed its write budget was held to.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct QuotaHit {
    pub key: QuotaKey,
    /// The budget the call started with, in bytes.
    pub budget: u64,
    /// For [`QuotaKey::Scratch`]: the session's quota and what its scratch
    /// directory held when the call started.
    pub scratch: Option<(u64, u64)>,
}

/// The write budget of one call, shared by the descriptors and streams it writes through.
#[derive(Debug)]
pub struct WriteBudget {
    left: AtomicU64,
    hit: AtomicBool,
    limit: QuotaHit,
}

impl WriteBudget {
    /// A budget of `limits.write` bytes, lowered to what is left of the scratch
    /// quota when `scratch` is `Some((quota, used))`.
    pub fn new(write: u64, scratch: Option<(u64, u64)>) -> Arc<WriteBudget> {
        let room = scratch.map(|(quota, used)| quota.saturating_sub(used));
        let (key, budget) = match room {
            Some(room) if room < write => (QuotaKey::Scratch, room),
            _ => (QuotaKey::Write, write),
        };
        Arc::new(WriteBudget {
            left: AtomicU64::new(budget),
            hit: AtomicBool::new(false),
            limit: QuotaHit {
                key,
                budget,
                scratch: scratch.filter(|_| key == QuotaKey::Scratch),
            },
        })
    }

    /// Bytes the call may still write.
    pub fn left(&self) -> u64 {
        self.left.load(Ordering::Acquire)
    }

    /// Takes up to `wanted` bytes and returns how many it got; getting less
    /// than asked marks the budget as hit.
    fn take_up_to(&self, wanted: u64) -> u64 {
        let mut got = 0;
        let _ = self
            .left
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |left| {
                got = left.min(wanted);
                Some(left - got)
            });
        if got < wanted {
            self.hit.store(true, Ordering::Release);
        }
        got
    }

    /// Takes exactly `wanted` bytes, or nothing (and marks the budget as hit).
    pub(crate) fn take(&self, wanted: u64) -> bool {
        let taken = self
            .left
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |left| {
                left.checked_sub(wanted)
            })
            .is_ok();
        if !taken {
            self.hit.store(true, Ordering::Release);
        }
        taken
    }

    /// Gives back bytes taken for a write that failed.
    pub(crate) fn give_back(&self, bytes: u64) {
        self.left.fetch_add(bytes, Ordering::AcqRel);
    }

    /// `Some` if a write of the call went past the budget.
    pub fn hit(&self) -> Option<QuotaHit> {
        self.hit.load(Ordering::Acquire).then(|| self.limit.clone())
    }
}

/// "No space left on device", as the guest sees a full disk.
fn no_space() -> io::Error {
    io::Error::from(rustix::io::Errno::NOSPC)
}

/// An output stream onto a file, counted against the call's budget.
pub struct QuotaStream {
    inner: DynOutputStream,
    budget: Arc<WriteBudget>,
}

#[async_trait::async_trait]
impl Pollable for QuotaStream {
    async fn ready(&mut self) {
        self.inner.ready().await
    }
}

#[async_trait::async_trait]
impl OutputStream for QuotaStream {
    fn write(&mut self, bytes: Bytes) -> StreamResult<()> {
        let len = bytes.len() as u64;
        if !self.budget.take(len) {
            return Err(StreamError::LastOperationFailed(no_space().into()));
        }
        self.inner.write(bytes).inspect_err(|_| {
            self.budget.give_back(len);
        })
    }

    fn flush(&mut self) -> StreamResult<()> {
        self.inner.flush()
    }

    /// The inner stream's permit, lowered to the budget left, so a guest
    /// that asks before it writes fills the budget exactly; with nothing
    /// left the next write fails (a permit of 0 would mean "not ready yet"
    /// and leave the guest waiting for room that never comes).
    fn check_write(&mut self) -> StreamResult<usize> {
        let permit = self.inner.check_write()?;
        match usize::try_from(self.budget.left()) {
            Ok(0) => Ok(permit),
            Ok(left) => Ok(permit.min(left)),
            Err(_) => Ok(permit),
        }
    }

    /// The file stream's own fast path for what fits, and "no space" for the
    /// rest, after writing what fits.
    async fn blocking_write_and_flush(&mut self, mut bytes: Bytes) -> StreamResult<()> {
        let wanted = bytes.len() as u64;
        let got = self.budget.take_up_to(wanted);
        let fits = bytes.split_to(usize::try_from(got).unwrap_or(bytes.len()));
        if !fits.is_empty()
            && let Err(e) = self.inner.blocking_write_and_flush(fits).await
        {
            self.budget.give_back(got);
            return Err(e);
        }
        if got < wanted {
            return Err(StreamError::LastOperationFailed(no_space().into()));
        }
        Ok(())
    }

    async fn cancel(&mut self) {
        self.inner.cancel().await
    }
}

/// Replaces the writing methods of `descriptor` in `linker` (which already has
/// WASI) with ones that count against the call's [`WriteBudget`].
pub fn add_to_linker(linker: &mut Linker<CallState>) -> Result<()> {
    linker.allow_shadowing(true);
    let defined = define(linker);
    linker.allow_shadowing(false);
    defined.map_err(anyhow::Error::from)
}

fn define(linker: &mut Linker<CallState>) -> wasmtime::Result<()> {
    let mut types = linker.instance(FILESYSTEM_TYPES)?;
    define_byte_writes(&mut types)?;
    define_new_entries(&mut types)?;
    define_stream_opens(&mut types)
}

/// `descriptor.write`, which writes what fits of the budget, and
/// `descriptor.set-size`, whose growth of the file takes from it.
fn define_byte_writes(types: &mut LinkerInstance<'_, CallState>) -> wasmtime::Result<()> {
    types.func_wrap_async(
        "[method]descriptor.write",
        |mut store, (fd, mut buf, offset): (Resource<Descriptor>, Vec<u8>, u64)| {
            Box::new(async move {
                let budget = store.data().writes.clone();
                let wanted = buf.len() as u64;
                // A partial write, as POSIX allows: what fits, then ENOSPC.
                let got = budget.take_up_to(wanted);
                if got == 0 && wanted > 0 {
                    return Ok((Err(ErrorCode::InsufficientSpace),));
                }
                buf.truncate(usize::try_from(got).unwrap_or(buf.len()));
                let mut view = store.data_mut().filesystem();
                match HostDescriptor::write(&mut view, fd, buf, offset).await {
                    Ok(n) => {
                        budget.give_back(got.saturating_sub(n));
                        Ok((Ok(n),))
                    }
                    Err(e) => {
                        budget.give_back(got);
                        Ok((Err(e.downcast()?),))
                    }
                }
            })
        },
    )?;
    types.func_wrap_async(
        "[method]descriptor.set-size",
        |mut store, (fd, size): (Resource<Descriptor>, u64)| {
            Box::new(async move {
                let budget = store.data().writes.clone();
                let mut view = store.data_mut().filesystem();
                let borrowed = Resource::<Descriptor>::new_borrow(fd.rep());
                let now = match HostDescriptor::stat(&mut view, borrowed).await {
                    Ok(stat) => stat.size,
                    Err(e) => return Ok((Err(e.downcast()?),)),
                };
                // Growth is what the file adds to the disk (or may, once filled).
                let growth = size.saturating_sub(now);
                if !budget.take(growth) {
                    return Ok((Err(ErrorCode::InsufficientSpace),));
                }
                match HostDescriptor::set_size(&mut view, fd, size).await {
                    Ok(()) => Ok((Ok(()),)),
                    Err(e) => {
                        budget.give_back(growth);
                        Ok((Err(e.downcast()?),))
                    }
                }
            })
        },
    )?;
    Ok(())
}

/// `descriptor.create-directory-at` and `descriptor.link-at`, each a new
/// directory entry ([`new_entry`]).
fn define_new_entries(types: &mut LinkerInstance<'_, CallState>) -> wasmtime::Result<()> {
    types.func_wrap_async(
        "[method]descriptor.create-directory-at",
        |mut store, (fd, path): (Resource<Descriptor>, String)| {
            Box::new(async move {
                let budget = store.data().writes.clone();
                let mut view = store.data_mut().filesystem();
                let made = HostDescriptor::create_directory_at(&mut view, fd, path);
                Ok((new_entry(&budget, made).await?,))
            })
        },
    )?;
    types.func_wrap_async(
        "[method]descriptor.link-at",
        |mut store,
         (fd, old_flags, old_path, new_dir, new_path): (
            Resource<Descriptor>,
            PathFlags,
            String,
            Resource<Descriptor>,
            String,
        )| {
            Box::new(async move {
                let budget = store.data().writes.clone();
                let mut view = store.data_mut().filesystem();
                let made =
                    HostDescriptor::link_at(&mut view, fd, old_flags, old_path, new_dir, new_path);
                Ok((new_entry(&budget, made).await?,))
            })
        },
    )?;
    Ok(())
}

/// `descriptor.write-via-stream` and `descriptor.append-via-stream`, whose
/// streams are [`counted`].
fn define_stream_opens(types: &mut LinkerInstance<'_, CallState>) -> wasmtime::Result<()> {
    types.func_wrap(
        "[method]descriptor.write-via-stream",
        |mut store, (fd, offset): (Resource<Descriptor>, u64)| {
            let mut view = store.data_mut().filesystem();
            let opened = HostDescriptor::write_via_stream(&mut view, fd, offset);
            Ok((counted(store.data_mut(), opened)?,))
        },
    )?;
    types.func_wrap(
        "[method]descriptor.append-via-stream",
        |mut store, (fd,): (Resource<Descriptor>,)| {
            let mut view = store.data_mut().filesystem();
            let opened = HostDescriptor::append_via_stream(&mut view, fd);
            Ok((counted(store.data_mut(), opened)?,))
        },
    )?;
    Ok(())
}

/// Runs `make`, which adds one directory entry, against `budget`: it takes
/// [`ENTRY_BYTES`] first (the guest gets `insufficient-space` when they are
/// not there, and `make` never runs) and gives them back if `make` fails.
pub(crate) async fn new_entry(
    budget: &WriteBudget,
    make: impl std::future::Future<Output = wasmtime_wasi::p2::FsResult<()>>,
) -> wasmtime::Result<Result<(), ErrorCode>> {
    if !budget.take(ENTRY_BYTES) {
        return Ok(Err(ErrorCode::InsufficientSpace));
    }
    match make.await {
        Ok(()) => Ok(Ok(())),
        Err(e) => {
            budget.give_back(ENTRY_BYTES);
            Ok(Err(e.downcast()?))
        }
    }
}

/// The stream wasmtime-wasi opened, replaced in the table by the same stream
/// wrapped in a [`QuotaStream`].
fn counted(
    state: &mut CallState,
    opened: wasmtime_wasi::p2::FsResult<Resource<DynOutputStream>>,
) -> wasmtime::Result<Result<Resource<DynOutputStream>, ErrorCode>> {
    let stream = match opened {
        Ok(stream) => stream,
        Err(e) => return Ok(Err(e.downcast()?)),
    };
    let inner = state.table.delete(stream)?;
    let wrapped: DynOutputStream = Box::new(QuotaStream {
        inner,
        budget: state.writes.clone(),
    });
    Ok(Ok(state.table.push(wrapped)?))
}

/// Bytes of files under `dir` (not following links), to measure what a
/// session's scratch directory holds. A file counts its length, a sparse one
/// too: what it could take once filled. The walk stops after `max_entries`
/// entries and returns `None`: a directory that large counts as full.
pub fn dir_bytes(dir: &Path, max_entries: usize) -> io::Result<Option<u64>> {
    let mut total: u64 = 0;
    let mut seen = 0usize;
    let mut pending = vec![dir.to_path_buf()];
    while let Some(next) = pending.pop() {
        let entries = match std::fs::read_dir(&next) {
            Ok(entries) => entries,
            // Removed while we walked (the guest of another call).
            Err(e) if e.kind() == io::ErrorKind::NotFound => continue,
            Err(e) => return Err(e),
        };
        for entry in entries {
            let entry = entry?;
            seen += 1;
            if seen > max_entries {
                return Ok(None);
            }
            let meta = match entry.path().symlink_metadata() {
                Ok(meta) => meta,
                Err(e) if e.kind() == io::ErrorKind::NotFound => continue,
                Err(e) => return Err(e),
            };
            // Each entry takes a block, as a new one takes from a call's budget.
            total = total.saturating_add(ENTRY_BYTES);
            if meta.is_dir() {
                pending.push(entry.path());
            } else {
                total = total.saturating_add(meta.len());
            }
        }
    }
    Ok(Some(total))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_smaller_of_the_two_limits_binds_and_is_named() {
        let b = WriteBudget::new(100, None);
        assert_eq!((b.left(), b.limit.key), (100, QuotaKey::Write));
        let b = WriteBudget::new(100, Some((1000, 950)));
        assert_eq!((b.left(), b.limit.key), (50, QuotaKey::Scratch));
        assert_eq!(b.limit.scratch, Some((1000, 950)));
        let b = WriteBudget::new(100, Some((1000, 2000)));
        assert_eq!(b.left(), 0);
        let b = WriteBudget::new(100, Some((1000, 10)));
        assert_eq!((b.left(), b.limit.key), (100, QuotaKey::Write));
    }

    #[test]
    fn taking_past_the_budget_gets_what_is_left_and_marks_the_hit() {
        let b = WriteBudget::new(10, None);
        assert!(b.take(4));
        assert!(b.hit().is_none());
        assert_eq!(b.take_up_to(4), 4);
        assert!(b.hit().is_none(), "exactly the budget is not past it");
        assert_eq!(b.take_up_to(4), 2);
        assert_eq!(b.left(), 0);
        assert_eq!(b.hit().unwrap().key, QuotaKey::Write);
        b.give_back(3);
        assert!(!b.take(4));
        assert!(b.take(3));
    }

    #[test]
    fn dir_bytes_counts_files_below_and_gives_up_on_huge_dirs() {
        let tmp = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(tmp.path().join("a/b")).unwrap();
        std::fs::write(tmp.path().join("a/b/f"), vec![1u8; 1000]).unwrap();
        std::fs::write(tmp.path().join("g"), vec![1u8; 24]).unwrap();
        #[cfg(unix)]
        std::os::unix::fs::symlink("/usr", tmp.path().join("link")).unwrap();
        // Five entries (a, a/b, a/b/f, g, link), a block each.
        assert_eq!(
            dir_bytes(tmp.path(), 100).unwrap(),
            Some(1024 + link_len() + 5 * ENTRY_BYTES)
        );
        assert_eq!(dir_bytes(tmp.path(), 2).unwrap(), None);
    }

    /// A symlink counts the length of its target path, not what it points to.
    fn link_len() -> u64 {
        if cfg!(unix) { "/usr".len() as u64 } else { 0 }
    }
}
