//! Pre-initialization: a tool component that exports `wizer-initialize` (world
//! `preinit-tool-plugin` in `wit/plugin.wit`) is run once, with no grants at all,
//! and its initialized memory and globals are snapshotted into a new component
//! with Wizer. Every call then starts from a fresh instance of that snapshot,
//! so an interpreter builds its runtime (a JavaScript realm, imported modules)
//! once per component instead of once per call.
//!
//! The snapshot is cached under `<cache_dir>/preinit/`, keyed by the original
//! component's digest and the Wizer version; the original file stays what the
//! manifest pins and what approvals are bound to.

use crate::cache_file::{sha256_hex, write_atomically};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use wasmtime::Store;
use wasmtime::component::{Instance, Lift, WasmList};
use wasmtime_wizer::{ComponentInstanceState, Wizer};

use crate::call::{Hands, RunLimits};
use crate::error::LoadError;
use crate::runtime::Runtime;
use crate::sandbox::{CallState, Grants};

/// The export that asks for pre-initialization.
pub const INIT_EXPORT: &str = "wizer-initialize";

/// Part of the cache key: a new Wizer may snapshot differently.
const WIZER_VERSION: &str = "wasmtime-wizer-48.0.8";

/// Whether the component in `bytes` exports [`INIT_EXPORT`] at its top level.
/// Read from the binary without compiling it, and without reading the nested
/// modules (nearly all of the bytes) at all: this runs at every load. Unreadable
/// input says no (the compiler reports it properly afterwards).
pub fn wanted(bytes: &[u8]) -> bool {
    use wasmparser::{Chunk, Parser, Payload};
    let mut parser = Parser::new(0);
    let mut offset = 0;
    loop {
        let Some(rest) = bytes.get(offset..) else {
            return false;
        };
        let Ok(Chunk::Parsed { consumed, payload }) = parser.parse(rest, true) else {
            return false;
        };
        offset += consumed;
        match payload {
            // The parser skips a nested module or component; so do its bytes.
            Payload::ModuleSection {
                unchecked_range, ..
            }
            | Payload::ComponentSection {
                unchecked_range, ..
            } => offset = unchecked_range.end,
            Payload::ComponentExportSection(reader)
                if reader
                    .clone()
                    .into_iter()
                    .flatten()
                    .any(|export| export.name.name == INIT_EXPORT) =>
            {
                return true;
            }
            Payload::End(_) => return false,
            _ => {}
        }
    }
}

/// Where the snapshot of the component with `digest` is cached.
pub fn cache_path(cache_dir: &Path, digest: &str) -> PathBuf {
    cache_dir
        .join("preinit")
        .join(format!("{digest}-{WIZER_VERSION}.wasm"))
}

/// The pre-initialized form of `bytes`: from the cache, or made now and cached.
pub async fn snapshot(
    runtime: &Arc<Runtime>,
    name: &str,
    bytes: &[u8],
    digest: &str,
    limits: &RunLimits,
) -> Result<Vec<u8>, LoadError> {
    let cached = cache_path(runtime.cache_dir(), digest);
    let record = runtime.digests_dir().join(record_name(&cached));
    if let Ok(snap) = std::fs::read(&cached) {
        // Used only if it is what this host made: the digest recorded then, kept
        // in the data dir (not beside the snapshot), must match.
        let recorded = std::fs::read_to_string(&record).unwrap_or_default();
        if recorded.trim() == sha256_hex(&snap) {
            return Ok(snap);
        }
        tracing::warn!(
            plugin = %name,
            path = %cached.display(),
            record = %record.display(),
            "the cached pre-initialized component does not match the digest recorded when it was made (or none was recorded): not used; making it again"
        );
    }
    // In a task of its own, so that a panic in Wizer (it asserts on input it
    // cannot handle) fails this plugin's load instead of the host.
    let task = {
        let (runtime, name, bytes, limits) = (
            runtime.clone(),
            name.to_string(),
            bytes.to_vec(),
            limits.clone(),
        );
        tokio::spawn(async move {
            make_snapshot(&runtime, &name, &bytes, &limits, &cached, &record).await
        })
    };
    match task.await {
        Ok(result) => result,
        Err(e) => Err(LoadError::PreInit {
            plugin: name.to_string(),
            message: match e.try_into_panic() {
                Ok(panic) => format!(
                    "Wizer failed on it: {}",
                    crate::call::panic_message(&*panic)
                ),
                Err(e) => format!("the pre-initialization task failed: {e}"),
            },
        }),
    }
}

async fn make_snapshot(
    runtime: &Runtime,
    name: &str,
    bytes: &[u8],
    limits: &RunLimits,
    cached: &Path,
    record: &Path,
) -> Result<Vec<u8>, LoadError> {
    let fail = |message: String| LoadError::PreInit {
        plugin: name.to_string(),
        message,
    };
    let started = std::time::Instant::now();
    eprintln!(
        "glovebox: pre-initializing plugin `{name}` (first load only; the snapshot is cached)"
    );

    let mut wizer = Wizer::new();
    // Wizer 48 drops the init function from the core module but not from the
    // component's export of it, which leaves an invalid component: keep it. The
    // snapshot's `wizer-initialize` is never called again.
    wizer.keep_init_func(true);
    let (cx, instrumented) = wizer
        .instrument_component(bytes)
        .map_err(|e| fail(format!("Wizer cannot instrument it: {e:#}")))?;
    let component = runtime
        .compile(
            &format!("{name} (instrumented for pre-initialization)"),
            instrumented,
        )
        .await
        .map_err(|message| fail(format!("its instrumented form does not compile: {message}")))?;

    // No grants at all: initialization sees no files, no network, no env.
    let mut hands =
        Hands::new(runtime, &Grants::none(), None, limits).map_err(|e| fail(format!("{e:#}")))?;
    let linker = runtime.linker();
    let init = hands
        .run_with(limits.deadline, async |store| {
            let instance = linker.instantiate_async(&mut *store, &component).await?;
            let func = instance
                .get_typed_func::<(), ()>(&mut *store, INIT_EXPORT)
                .map_err(|e| e.context(format!("`{INIT_EXPORT}` must have type `func()`")))?;
            func.call_async(&mut *store, ()).await?;
            Ok(instance)
        })
        .await;
    let instance = match init {
        Ok(instance) => instance,
        Err(ended) => {
            // What the guest said on its way down (a panic message names the
            // broken file or field).
            let stderr = hands.stderr();
            let said = stderr.text.trim();
            let said = if said.is_empty() {
                String::new()
            } else {
                format!("; it wrote to stderr: {said}")
            };
            return Err(fail(format!(
                "{}{said}",
                ended.at_load(&format!("its `{INIT_EXPORT}`"), limits)
            )));
        }
    };

    // Wizer reads whole memories through the component ABI: not guest data
    // headed for the host's heap on the guest's initiative, so no hostcall cap.
    hands.store.set_hostcall_fuel(usize::MAX);
    let mut state = SnapshotReader {
        store: &mut hands.store,
        instance,
        error: None,
    };
    let snap = wizer
        .snapshot_component(&cx, &mut state)
        .await
        .map_err(|e| fail(format!("Wizer cannot snapshot it: {e:#}")))?;
    if let Some(e) = state.error {
        return Err(fail(format!("reading its state failed: {e}")));
    }
    // The digest first: a snapshot without its record is a miss, never a load.
    let what = "the pre-initialization snapshots";
    let written = write_atomically(record, sha256_hex(&snap).as_bytes(), what)
        .and_then(|()| write_atomically(cached, &snap, what));
    if let Err(e) = written {
        // Still usable; only the next load pays again.
        tracing::warn!(plugin = %name, error = %e, path = %cached.display(), "cannot cache the pre-initialized component");
    }
    eprintln!(
        "glovebox: pre-initialized plugin `{name}` in {:.1} s; cached in {}",
        started.elapsed().as_secs_f64(),
        cached.display()
    );
    Ok(snap)
}

/// The file in the data dir's digest records that vouches for `cached`.
fn record_name(cached: &Path) -> String {
    let file = cached.file_name().unwrap_or_default().to_string_lossy();
    format!("preinit-{file}.sha256")
}

/// Reads the instrumented instance's state for Wizer. Wizer's trait cannot
/// return errors, so the first one is kept here and checked afterwards.
struct SnapshotReader<'a> {
    store: &'a mut Store<CallState>,
    instance: Instance,
    error: Option<String>,
}

impl SnapshotReader<'_> {
    async fn call<R, R2: Default>(
        &mut self,
        instance: &str,
        func: &str,
        use_ret: impl FnOnce(&mut Store<CallState>, R) -> R2,
    ) -> R2
    where
        R: Lift + Send + Sync + 'static,
    {
        match self.try_call::<R>(instance, func).await {
            Ok(r) => use_ret(self.store, r),
            Err(e) => {
                self.error
                    .get_or_insert_with(|| format!("`{instance}#{func}`: {e:#}"));
                R2::default()
            }
        }
    }

    async fn try_call<R>(&mut self, instance: &str, func: &str) -> wasmtime::Result<R>
    where
        R: Lift + Send + Sync + 'static,
    {
        let store = &mut *self.store;
        let (_, exported) = self
            .instance
            .get_export(&mut *store, None, instance)
            .ok_or_else(|| wasmtime::format_err!("no such export"))?;
        let (_, func_index) = self
            .instance
            .get_export(&mut *store, Some(&exported), func)
            .ok_or_else(|| wasmtime::format_err!("no such function"))?;
        let typed = self
            .instance
            .get_typed_func::<(), (R,)>(&mut *store, func_index)?;
        Ok(typed.call_async(&mut *store, ()).await?.0)
    }
}

impl ComponentInstanceState for SnapshotReader<'_> {
    async fn call_func_ret_list_u8(
        &mut self,
        instance: &str,
        func: &str,
        contents: impl FnOnce(&[u8]) + Send,
    ) {
        let mut contents = Some(contents);
        let mut called = false;
        self.call(instance, func, |store, list: WasmList<u8>| {
            if let Some(f) = contents.take() {
                f(list.as_le_slice(&*store));
                called = true;
            }
        })
        .await;
        if !called && let Some(f) = contents.take() {
            f(&[]);
        }
    }

    async fn call_func_ret_s32(&mut self, instance: &str, func: &str) -> i32 {
        self.call(instance, func, |_, r: i32| r).await
    }

    async fn call_func_ret_s64(&mut self, instance: &str, func: &str) -> i64 {
        self.call(instance, func, |_, r: i64| r).await
    }

    async fn call_func_ret_f32(&mut self, instance: &str, func: &str) -> u32 {
        self.call(instance, func, |_, r: f32| r.to_bits()).await
    }

    async fn call_func_ret_f64(&mut self, instance: &str, func: &str) -> u64 {
        self.call(instance, func, |_, r: f64| r.to_bits()).await
    }
}
