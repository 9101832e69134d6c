//! The runtime a host shares between all its plugins: the engine, its epoch
//! ticker and the linker that defines what a tool plugin may import.

mod engine;

use anyhow::{Context, Result};
use wasmtime::Engine;
use wasmtime::component::Linker;

pub use engine::deadline_ticks;

use crate::manifest::HostConfig;
use crate::sandbox::CallState;

pub struct Runtime {
    engine: Engine,
    linker: Linker<CallState>,
    fuel_enabled: bool,
    // Dropped after the engine's users; stops the ticker thread.
    _ticker: engine::EpochTicker,
}

impl Runtime {
    pub fn new(config: &HostConfig) -> Result<Runtime> {
        // The compile cache needs an absolute path.
        let cache_dir = std::path::absolute(config.cache_dir())
            .context("cannot resolve the compile cache directory")?;
        let engine = engine::build_engine(config, &cache_dir)?;
        let mut linker = Linker::new(&engine);
        // WASI 0.2 and wasi:http are linked for every tool plugin; what they
        // can reach is decided per call by the plugin's grants (none by default).
        wasmtime_wasi::p2::add_to_linker_async(&mut linker)
            .map_err(anyhow::Error::from)
            .context("cannot link WASI")?;
        wasmtime_wasi_http::p2::add_only_http_to_linker_async(&mut linker)
            .map_err(anyhow::Error::from)
            .context("cannot link wasi:http")?;
        let ticker = engine::EpochTicker::start(&engine)?;
        Ok(Runtime {
            fuel_enabled: engine::fuel_wanted(config),
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
}
