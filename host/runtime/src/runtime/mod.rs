//! The runtime a host shares between all its plugins: the engine, its epoch
//! ticker and the linker that defines what a tool plugin may import.

mod compiled;
mod engine;

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use wasmtime::Engine;
use wasmtime::component::Component;
use wasmtime::component::Linker;

pub use compiled::CompiledCache;
pub use engine::{HOOK_INSTANCES, compiled_dir, deadline_ticks};

use crate::error::CompileError;
use crate::manifest::HostConfig;
use crate::private_dir::ensure_private_dir;
use crate::sandbox::CallState;
use crate::scratch::ScratchDirs;

/// A compile still running after this long is announced (a cache hit is far quicker).
const ANNOUNCE_AFTER: Duration = Duration::from_secs(1);
/// How often a long first compile reports progress.
const PROGRESS_EVERY: Duration = Duration::from_secs(5);

pub struct Runtime {
    engine: Engine,
    linker: Linker<CallState>,
    fuel_enabled: bool,
    scratch: ScratchDirs,
    cache_dir: PathBuf,
    compiled: CompiledCache,
    /// `<data_dir>/digests`: what the host made in the cache, by digest.
    digests_dir: PathBuf,
    // Dropped after the engine's users; stops the ticker thread.
    _ticker: engine::EpochTicker,
}

impl Runtime {
    pub fn new(config: &HostConfig) -> Result<Runtime> {
        // Programs build configs without a file too: the same rule as at load.
        config.check_grants()?;
        // The compile cache needs an absolute path.
        let cache_dir = std::path::absolute(config.cache_dir())
            .context("cannot resolve the compile cache directory")?;
        ensure_private_dir(&config.data_dir, "the data dir")?;
        ensure_private_dir(&cache_dir, "the compile cache")?;
        let digests_dir = std::path::absolute(config.digests_dir())
            .context("cannot resolve the digest records' directory")?;
        ensure_private_dir(&digests_dir, "the digest records")?;
        let engine = engine::build_engine(config, &cache_dir)?;
        let mut linker = Linker::new(&engine);
        // WASI 0.2 and wasi:http are linked for every tool plugin; what they
        // can reach is decided per call by the plugin's grants (none by default).
        wasmtime_wasi::p2::add_to_linker_async(&mut linker)
            .map_err(anyhow::Error::from)
            .context("cannot link WASI")?;
        // Links a guest makes must point below themselves (see `sandbox::symlink`).
        crate::sandbox::symlink::add_to_linker(&mut linker)
            .context("cannot link the checked `symlink-at`")?;
        // What a call can make the host hold is counted (see `sandbox::bounds`).
        crate::sandbox::bounds::add_to_linker(&mut linker)
            .context("cannot link the counted `open-at` and random bytes")?;
        // Writes count against the call's budget (see `sandbox::quota`).
        crate::sandbox::quota::add_to_linker(&mut linker)
            .context("cannot link the counted file writes")?;
        // Calling other tools from inside a run: refused unless the host
        // hands the call's store the session's calls (see `sandbox::tools`).
        crate::bindings::code::glovebox::plugin::tools::add_to_linker::<
            CallState,
            wasmtime::component::HasSelf<CallState>,
        >(&mut linker, |state| state)
        .map_err(anyhow::Error::from)
        .context("cannot link the `tools` import")?;
        wasmtime_wasi_http::p2::add_only_http_to_linker_async(&mut linker)
            .map_err(anyhow::Error::from)
            .context("cannot link wasi:http")?;
        let ticker = engine::EpochTicker::start(&engine)?;
        Ok(Runtime {
            fuel_enabled: engine::fuel_wanted(config),
            compiled: CompiledCache::new(engine::compiled_dir(&cache_dir), digests_dir.clone()),
            scratch: ScratchDirs::new(config.scratch_dir())
                .with_quota(config.runtime.scratch_quota),
            cache_dir,
            digests_dir,
            engine,
            linker,
            _ticker: ticker,
        })
    }

    pub fn engine(&self) -> &Engine {
        &self.engine
    }

    pub fn linker(&self) -> &Linker<CallState> {
        &self.linker
    }

    pub fn fuel_enabled(&self) -> bool {
        self.fuel_enabled
    }

    pub fn scratch(&self) -> &ScratchDirs {
        &self.scratch
    }

    /// Where the digests of what the host put in the cache are recorded (absolute),
    /// apart from the cache, which may be configured elsewhere.
    pub fn digests_dir(&self) -> &Path {
        &self.digests_dir
    }

    /// Where compiled components are cached, verified (hooks compile through it too).
    pub fn compiled(&self) -> &CompiledCache {
        &self.compiled
    }

    /// The compile cache (absolute).
    pub fn cache_dir(&self) -> &Path {
        &self.cache_dir
    }

    /// Compiles `bytes` (or takes the compiled form from the cache) off the async
    /// threads. A compile that is still running after a second is a first compile
    /// (a cache hit takes milliseconds, even for CPython): it is announced on stderr,
    /// with its progress, and where it was cached once done. `name` is shown to the
    /// user.
    pub async fn compile(
        &self,
        name: &str,
        bytes: Vec<u8>,
    ) -> std::result::Result<Component, CompileError> {
        let size = bytes.len() as f64 / 1e6;
        let (engine, cache) = (self.engine.clone(), self.compiled.clone());
        let mut job = tokio::task::spawn_blocking(move || cache.component(&engine, &bytes));
        let started = Instant::now();
        let mut ticker =
            tokio::time::interval_at(tokio::time::Instant::now() + ANNOUNCE_AFTER, PROGRESS_EVERY);
        let mut announced = false;
        let compiled = loop {
            tokio::select! {
                done = &mut job => break done,
                _ = ticker.tick() => {
                    if announced {
                        eprintln!(
                            "glovebox: still compiling `{name}`: {} s",
                            started.elapsed().as_secs()
                        );
                    } else {
                        announced = true;
                        eprintln!(
                            "glovebox: compiling `{name}` ({size:.1} MB): it is not in the compile cache yet; later loads take it from there"
                        );
                    }
                }
            }
        };
        let component = compiled
            .map_err(CompileError::Crashed)?
            .map_err(CompileError::Rejected)?;
        if announced {
            eprintln!(
                "glovebox: compiled `{name}` in {:.1} s; cached in {}",
                started.elapsed().as_secs_f64(),
                self.cache_dir.display()
            );
        }
        Ok(component)
    }
}
