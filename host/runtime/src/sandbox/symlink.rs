//! Symlinks a guest creates in a read-write grant (or its scratch directory).
//!
//! The sandbox never follows a link out of a preopen (cap-std resolves every path
//! inside it), but a link the guest leaves behind stays on the host's disk, where
//! the operator's editor, backup or build tool follows it with the host's rights.
//! So `symlink-at` creates a link only if it points strictly below the directory
//! that holds it: a relative target whose components, read in order, never climb
//! above that directory (`a/../b` is fine, `../b` and `a/../..` are not) and do not
//! end at it (`.`, `a/..`). wasmtime-wasi already refuses absolute targets.
//!
//! Why "below its own directory" and not "inside the grant": whether a target
//! stays inside depends on what its components are when the link is followed,
//! and the guest can change them afterwards (a directory `d` created to pass a
//! check on `d/../x`, then replaced by a link `d -> sub/..`). With every link a
//! guest makes pointing below itself, each component of a path adds at least one
//! level when it is resolved, so a `..` can never climb above where the target
//! started: links made under this rule cannot be combined into one that leaves
//! the grant. Links that were already in a granted directory are the operator's.

use std::path::{Component, Path};

use anyhow::Result;
use wasmtime::component::{Linker, Resource};
use wasmtime_wasi::filesystem::{Descriptor, WasiFilesystemView};
use wasmtime_wasi::p2::bindings::filesystem::types::{ErrorCode, HostDescriptor};

use super::CallState;

/// The `wasi:filesystem/types` instance that `wasmtime_wasi::p2` links.
const FILESYSTEM_TYPES: &str = "wasi:filesystem/types@0.2.12";

/// Replaces `symlink-at` in `linker` (which already has WASI) with the checked one.
pub fn add_to_linker(linker: &mut Linker<CallState>) -> Result<()> {
    linker.allow_shadowing(true);
    let defined = linker.instance(FILESYSTEM_TYPES).and_then(|mut types| {
        types.func_wrap_async(
            "[method]descriptor.symlink-at",
            |mut store, (fd, target, link): (Resource<Descriptor>, String, String)| {
                Box::new(async move {
                    if !points_below(&target) {
                        tracing::info!(%target, %link, "guest symlink refused: it would point outside the directory that holds it");
                        return Ok((Err(ErrorCode::NotPermitted),));
                    }
                    // A new entry: it takes a block of the call's write budget.
                    let budget = store.data().writes.clone();
                    let mut view = store.data_mut().filesystem();
                    let made = HostDescriptor::symlink_at(&mut view, fd, target, link);
                    Ok((super::quota::new_entry(&budget, made).await?,))
                })
            },
        )
    });
    linker.allow_shadowing(false);
    defined.map_err(anyhow::Error::from)
}

/// Whether a link whose target is `target` points strictly below the directory
/// that holds it (see the module docs).
pub fn points_below(target: &str) -> bool {
    let mut depth: usize = 0;
    for component in Path::new(target).components() {
        match component {
            Component::Normal(_) => depth += 1,
            Component::CurDir => {}
            Component::ParentDir => match depth.checked_sub(1) {
                Some(up) => depth = up,
                None => return false,
            },
            Component::RootDir | Component::Prefix(_) => return false,
        }
    }
    depth > 0
}

#[cfg(test)]
mod tests {
    use super::points_below;

    #[test]
    fn links_point_strictly_below_their_directory() {
        for ok in ["a", "a/b", "./a", "a/../b", "a/b/../../c", "a//b/"] {
            assert!(points_below(ok), "{ok} should be allowed");
        }
        for refused in [
            "",
            ".",
            "..",
            "../a",
            "a/../..",
            "a/..",
            "a/../../a",
            "/etc/passwd",
            "./..",
        ] {
            assert!(!points_below(refused), "{refused} should be refused");
        }
    }
}
