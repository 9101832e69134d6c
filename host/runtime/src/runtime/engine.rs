//! The one wasmtime [`Engine`] of a host: async, epoch-interrupted, pooled, with
//! compiled components cached on disk (in `<cache_dir>/compiled`, see `compiled.rs`).

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use std::time::Duration;

use anyhow::{Context, Result};
use wasmtime::{Config, Enabled, Engine, InstanceAllocationStrategy, PoolingAllocationConfig};

use crate::manifest::HostConfig;

/// How often the epoch advances. Deadlines are rounded up to whole ticks, so a
/// call is stopped at most one tick after its deadline.
pub const EPOCH_TICK: Duration = Duration::from_millis(5);

/// Bytes of each freed memory slot kept mapped for the next instance. With
/// `PAGEMAP_SCAN` (Linux 6.7+) only the pages the last instance wrote are reset
/// (copied back from the snapshot or zeroed), so an interpreter's large
/// pre-initialized heap stays mapped between calls instead of being faulted in
/// again page by page.
const KEEP_RESIDENT: usize = 32 * 1024 * 1024;
/// The same for table slots.
const TABLE_KEEP_RESIDENT: usize = 2 * 1024 * 1024;
/// The same for the async stacks calls run on.
const STACK_KEEP_RESIDENT: usize = 1024 * 1024;

/// Instances the pool keeps beyond the call slots, for permission hooks: the
/// host admits at most this many hook runs at once (its hook admission), so
/// hooks and calls together never exhaust the pool.
pub const HOOK_INSTANCES: u32 = 8;

/// Builds the engine for a host config.
///
/// Engine-wide choices (fuel metering, the pool's sizes, the wasm stack) come
/// from the config; per-call limits are enforced per store.
pub fn build_engine(config: &HostConfig, cache_dir: &Path) -> Result<Engine> {
    let mut cfg = Config::new();
    cfg.wasm_component_model(true);
    cfg.epoch_interruption(true);
    cfg.consume_fuel(fuel_wanted(config));
    let stack = usize::try_from(config.defaults.max_wasm_stack).unwrap_or(usize::MAX);
    cfg.max_wasm_stack(stack);
    // The async fiber stack must hold the wasm stack plus room for host frames.
    cfg.async_stack_size(stack + 1024 * 1024);
    // Memories are reserved up front by the pool; growing never moves them.
    cfg.memory_may_move(false);

    let max_memory = usize::try_from(config.runtime.max_memory_per_instance).unwrap_or(usize::MAX);
    // Room for the calls, the hook runs admitted at once, and the instances
    // kept for hooks that reuse them (`hooks/kept.rs`).
    let kept =
        config.hooks.iter().filter(|h| h.reuse > 1).count() as u32 * crate::hooks::KEPT_PER_HOOK;
    let slots = config.runtime.max_concurrent_calls + HOOK_INSTANCES + kept;
    let mut pool = PoolingAllocationConfig::new();
    pool.total_component_instances(slots)
        .total_core_instances(slots * 16)
        .total_memories(slots * 4)
        .total_tables(slots * 8)
        .total_stacks(slots)
        .max_core_instances_per_component(64)
        .max_memories_per_component(8)
        .max_tables_per_component(16)
        .max_memory_size(max_memory)
        .table_elements(200_000)
        .max_core_instance_size(4 * 1024 * 1024)
        .max_component_instance_size(1024 * 1024)
        // Keep some freed slots warm so a fresh instance reuses already
        // mapped pages instead of faulting them in again.
        .max_unused_warm_slots(slots.min(32))
        // Reset, rather than decommit, the first pages of a freed slot: the
        // next fresh instance finds them mapped (measured in benches/calls.rs).
        .linear_memory_keep_resident(KEEP_RESIDENT)
        .table_keep_resident(TABLE_KEEP_RESIDENT)
        .async_stack_keep_resident(STACK_KEEP_RESIDENT)
        .pagemap_scan(Enabled::Auto);
    cfg.allocation_strategy(InstanceAllocationStrategy::Pooling(pool));

    // Compiled components are cached by the host itself, verified before reuse
    // (`compiled.rs`), in a directory of their own beside the snapshots
    // (`<cache_dir>/preinit`, see `preinit.rs`).
    crate::private_dir::ensure_private_dir(&compiled_dir(cache_dir), "the compile cache")?;

    Engine::new(&cfg)
        .map_err(anyhow::Error::from)
        .context("cannot create the wasmtime engine")
}

/// Where compiled components are kept under the compile cache `cache_dir`.
pub fn compiled_dir(cache_dir: &Path) -> PathBuf {
    cache_dir.join("compiled")
}

/// Whether any plugin or hook meters fuel: then the engine consumes fuel, and
/// every store that sets no limit gets an unlimited amount.
pub fn fuel_wanted(config: &HostConfig) -> bool {
    config.plugins.iter().any(|p| p.limits.fuel.is_some())
        || config.hooks.iter().any(|h| h.fuel.is_some())
}

/// Advances the engine's epoch every [`EPOCH_TICK`] until dropped.
pub struct EpochTicker {
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl EpochTicker {
    pub fn start(engine: &Engine) -> Result<EpochTicker> {
        let stop = Arc::new(AtomicBool::new(false));
        // A weak handle: the ticker must not keep the engine alive.
        let weak = engine.weak();
        let flag = stop.clone();
        let thread = std::thread::Builder::new()
            .name("glovebox-epoch".into())
            .spawn(move || {
                while !flag.load(Ordering::Relaxed) {
                    std::thread::sleep(EPOCH_TICK);
                    match weak.upgrade() {
                        Some(engine) => engine.increment_epoch(),
                        None => break,
                    }
                }
            })
            .context("cannot start the epoch ticker thread")?;
        Ok(EpochTicker {
            stop,
            thread: Some(thread),
        })
    }
}

impl Drop for EpochTicker {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// Epoch ticks that cover `deadline`, rounded up, at least one.
pub fn deadline_ticks(deadline: Duration) -> u64 {
    let tick = EPOCH_TICK.as_nanos();
    let ticks = deadline.as_nanos().div_ceil(tick);
    u64::try_from(ticks).unwrap_or(u64::MAX).max(1)
}
