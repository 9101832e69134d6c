//! What a hook can reach: clocks and random numbers, nothing else.
//!
//! A hook's store holds no `WasiCtx` at all, so there is no filesystem, network,
//! environment or stdio to grant by mistake; its linker defines only the clock
//! and random interfaces, and `wasi:io/poll` because `wasi:clocks/monotonic-clock`
//! hands out pollables (a hook can wait on a timer, within its deadline, and on
//! nothing else: no stream is ever created in its store).

use anyhow::Context;
use wasmtime::Engine;
use wasmtime::component::{Component, HasData, Linker, ResourceTable};
use wasmtime_wasi::clocks::{WasiClocks, WasiClocksCtx, WasiClocksCtxView};
use wasmtime_wasi::p2::bindings::{clocks, io, random};
use wasmtime_wasi::random::{WasiRandom, WasiRandomCtx};

use crate::sandbox::limiter::CallLimiter;

/// The data of one hook evaluation's store. Built fresh for every evaluation.
pub(crate) struct HookState {
    clocks: WasiClocksCtx,
    random: WasiRandomCtx,
    table: ResourceTable,
    pub(crate) limiter: CallLimiter,
}

impl HookState {
    pub fn new(memory_cap: u64) -> HookState {
        HookState {
            clocks: WasiClocksCtx::default(),
            random: WasiRandomCtx::default(),
            table: crate::sandbox::bounds::table(),
            limiter: CallLimiter::new(memory_cap),
        }
    }
}

/// `wasi:io/poll` works on the store's resource table alone.
struct PollTable;

impl HasData for PollTable {
    type Data<'a> = &'a mut ResourceTable;
}

fn clock_view(s: &mut HookState) -> WasiClocksCtxView<'_> {
    WasiClocksCtxView {
        ctx: &mut s.clocks,
        table: &mut s.table,
    }
}

/// The linker every hook is instantiated with.
pub(crate) fn hook_linker(engine: &Engine) -> anyhow::Result<Linker<HookState>> {
    let mut linker = Linker::new(engine);
    let l = &mut linker;
    (|| -> wasmtime::Result<()> {
        clocks::wall_clock::add_to_linker::<HookState, WasiClocks>(l, clock_view)?;
        clocks::monotonic_clock::add_to_linker::<HookState, WasiClocks>(l, clock_view)?;
        random::random::add_to_linker::<HookState, WasiRandom>(l, |s| &mut s.random)?;
        random::insecure::add_to_linker::<HookState, WasiRandom>(l, |s| &mut s.random)?;
        random::insecure_seed::add_to_linker::<HookState, WasiRandom>(l, |s| &mut s.random)?;
        io::poll::add_to_linker::<HookState, PollTable>(l, |s| &mut s.table)?;
        Ok(())
    })()
    .map_err(anyhow::Error::from)
    .context("cannot link clocks and random for hooks")?;
    Ok(linker)
}

/// Interfaces a hook may import, without their `@version`. `glovebox:plugin/types`
/// holds only types, so importing it grants nothing.
const ALLOWED_IMPORTS: [&str; 7] = [
    "wasi:clocks/wall-clock",
    "wasi:clocks/monotonic-clock",
    "wasi:random/random",
    "wasi:random/insecure",
    "wasi:random/insecure-seed",
    "wasi:io/poll",
    "glovebox:plugin/types",
];

/// The imports of `component` a hook may not have, the most telling first: the
/// filesystem, network, environment and stdio before the rest, and `wasi:io`
/// (only plumbing for those) last; otherwise in the component's order.
pub(crate) fn forbidden_imports(engine: &Engine, component: &Component) -> Vec<String> {
    let mut forbidden: Vec<String> = component
        .component_type()
        .imports(engine)
        .map(|(name, _)| name)
        .filter(|name| !import_allowed(name))
        .map(str::to_string)
        .collect();
    forbidden.sort_by_key(|name| telling_rank(name));
    forbidden
}

fn telling_rank(import: &str) -> u8 {
    const RANKS: [&str; 5] = [
        "wasi:filesystem/",
        "wasi:sockets/",
        "wasi:http/",
        "wasi:cli/environment",
        "wasi:cli/",
    ];
    match RANKS.iter().position(|prefix| import.starts_with(prefix)) {
        Some(rank) => rank as u8,
        None if import.starts_with("wasi:io/") => 7,
        None => 6,
    }
}

fn import_allowed(name: &str) -> bool {
    let interface = name
        .split_once('@')
        .map_or(name, |(interface, _)| interface);
    ALLOWED_IMPORTS.contains(&interface)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_clocks_random_and_poll_are_allowed_at_any_version() {
        for ok in [
            "wasi:clocks/wall-clock@0.2.0",
            "wasi:clocks/monotonic-clock@0.2.6",
            "wasi:random/random@0.2.3",
            "wasi:random/insecure@0.2.6",
            "wasi:random/insecure-seed@0.2.6",
            "wasi:io/poll@0.2.6",
            "glovebox:plugin/types@0.1.0",
            "wasi:clocks/wall-clock",
        ] {
            assert!(import_allowed(ok), "{ok}");
        }
        for refused in [
            "wasi:filesystem/types@0.2.6",
            "wasi:filesystem/preopens@0.2.6",
            "wasi:sockets/tcp@0.2.6",
            "wasi:http/outgoing-handler@0.2.6",
            "wasi:cli/environment@0.2.6",
            "wasi:cli/stdout@0.2.6",
            "wasi:cli/exit@0.2.6",
            "wasi:io/streams@0.2.6",
            "wasi:io/error@0.2.6",
            "wasi:clocks/timezone@0.2.6",
            "glovebox:plugin/tool@0.1.0",
            "wasi:clocks/wall-clock-extra@0.2.6",
            "host-fn",
        ] {
            assert!(!import_allowed(refused), "{refused}");
        }
    }

    #[test]
    fn the_most_telling_import_comes_first() {
        let mut imports = [
            "wasi:io/error@0.2.6",
            "wasi:cli/stdout@0.2.6",
            "wasi:cli/environment@0.2.6",
            "my:own/thing",
            "wasi:http/types@0.2.6",
            "wasi:sockets/tcp@0.2.6",
            "wasi:filesystem/preopens@0.2.6",
            "wasi:filesystem/types@0.2.6",
        ];
        imports.sort_by_key(|name| telling_rank(name));
        assert_eq!(
            imports,
            [
                "wasi:filesystem/preopens@0.2.6",
                "wasi:filesystem/types@0.2.6",
                "wasi:sockets/tcp@0.2.6",
                "wasi:http/types@0.2.6",
                "wasi:cli/environment@0.2.6",
                "wasi:cli/stdout@0.2.6",
                "my:own/thing",
                "wasi:io/error@0.2.6",
            ]
        );
    }

    #[test]
    fn the_hook_linker_links() {
        let engine = Engine::default();
        hook_linker(&engine).unwrap();
    }
}
