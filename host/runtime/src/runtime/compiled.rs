//! The compile cache: components compiled once, and verified before every reuse
//! (threat 39).
//!
//! Compiled code is machine code the host maps and runs: a file swapped in the
//! cache would run with the host's rights, outside the sandbox. wasmtime's own
//! cache loads its files as it finds them, so the host keeps its own. Each
//! compiled component is a file `<cache_dir>/compiled/<key>.cwasm`, where the key
//! is the SHA-256 of the component's bytes and of the engine's compatibility hash
//! (wasmtime's version, target and the settings that change compiled code). When
//! the host writes one, it first records the file's SHA-256 in the data dir
//! (`<data_dir>/digests/compiled-<key>.sha256`, not beside the file). A later load
//! reads the whole file, checks it against that record and only then hands those
//! same bytes to wasmtime; a file that does not match (or has no record) is a
//! `warn`-logged cache miss, compiled again and overwritten.
//!
//! This is the workspace's one `unsafe` block: `Component::deserialize` trusts
//! its input to be what `Engine::precompile_component` wrote, and the digest
//! record is what vouches for that.

use std::hash::Hasher;
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};
use wasmtime::Engine;
use wasmtime::component::Component;

use crate::cache_file::{sha256_hex, write_atomically};

/// Where compiled components are kept, and where their digests are recorded.
#[derive(Clone, Debug)]
pub struct CompiledCache {
    /// `None`: compile every time (hosts built for one test, the hook unit tests).
    dirs: Option<(PathBuf, PathBuf)>,
}

impl CompiledCache {
    /// Compiled files in `dir`, their digests recorded in `digests`.
    pub fn new(dir: PathBuf, digests: PathBuf) -> CompiledCache {
        CompiledCache {
            dirs: Some((dir, digests)),
        }
    }

    /// No cache: every load compiles.
    pub fn none() -> CompiledCache {
        CompiledCache { dirs: None }
    }

    /// `bytes` compiled for `engine`: from the cache when a verified copy is
    /// there, else compiled now (and cached). Blocking: call it off the async
    /// threads.
    pub fn component(&self, engine: &Engine, bytes: &[u8]) -> wasmtime::Result<Component> {
        let Some((dir, digests)) = &self.dirs else {
            return Component::new(engine, bytes);
        };
        let key = key(engine, bytes);
        let file = dir.join(format!("{key}.cwasm"));
        let record = digests.join(format!("compiled-{key}.sha256"));
        if let Some(component) = reuse(engine, &file, &record) {
            return Ok(component);
        }
        let compiled = engine.precompile_component(bytes)?;
        // The digest first: a file without its record is a miss, never a load.
        let what = "the compile cache";
        let written = write_atomically(&record, sha256_hex(&compiled).as_bytes(), what)
            .and_then(|()| write_atomically(&file, &compiled, what));
        if let Err(e) = written {
            // Still usable; only the next load pays again.
            tracing::warn!(path = %file.display(), error = %format!("{e:#}"), "cannot cache a compiled component");
        }
        deserialize(engine, &compiled)
    }
}

/// The cached component in `file`, if it is there and matches `record`.
fn reuse(engine: &Engine, file: &Path, record: &Path) -> Option<Component> {
    let bytes = std::fs::read(file).ok()?;
    let recorded = std::fs::read_to_string(record).unwrap_or_default();
    if recorded.trim() != sha256_hex(&bytes) {
        tracing::warn!(
            path = %file.display(),
            record = %record.display(),
            "a compiled component in the cache does not match the digest recorded when it was written (or none was recorded): not used; compiling again"
        );
        return None;
    }
    match deserialize(engine, &bytes) {
        Ok(component) => Some(component),
        Err(e) => {
            tracing::warn!(path = %file.display(), error = %format!("{e:#}"), "a compiled component in the cache cannot be loaded: compiling again");
            None
        }
    }
}

/// `bytes` as a component of `engine`.
#[allow(unsafe_code)]
fn deserialize(engine: &Engine, bytes: &[u8]) -> wasmtime::Result<Component> {
    // SAFETY: `bytes` is the output of `engine.precompile_component`, either made
    // just now in this process or read from the cache and found equal to the
    // SHA-256 this host recorded, in its private data dir, when it wrote them;
    // they are these same bytes in memory, not the file read again. wasmtime
    // still checks their header and their engine compatibility.
    unsafe { Component::deserialize(engine, bytes) }
}

/// The cache key of `bytes` compiled by `engine`.
fn key(engine: &Engine, bytes: &[u8]) -> String {
    use std::hash::Hash;
    let mut hasher = ShaHasher(Sha256::new());
    hasher.write(bytes);
    engine.precompile_compatibility_hash().hash(&mut hasher);
    hex::encode(hasher.0.finalize())
}

/// Feeds what a `Hash` impl writes into SHA-256 (its `finish` is not used).
struct ShaHasher(Sha256);

impl Hasher for ShaHasher {
    fn write(&mut self, bytes: &[u8]) {
        self.0.update(bytes);
    }

    fn finish(&self) -> u64 {
        0
    }
}
