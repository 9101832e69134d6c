//! One hook function in a store: limits armed, the instance run under its
//! deadline, every way it can fail turned into a [`Fault`] that denies. A
//! fresh store per run ([`run_hook`]), or a kept one (`kept.rs`) armed anew
//! for each.

use std::any::Any;
use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use wasmtime::{Engine, Store};

use super::sandbox::HookState;
use super::world::{HookInstance, HookPre};
use crate::call::{Ended, panic_message};
use crate::manifest::format_size;
use crate::runtime::deadline_ticks;

/// The most a hook may hand the host in one go (its triggers, or its decision):
/// far more than a valid answer needs (a 4 KiB reason and 32 alternatives of
/// 1 KiB), so only a runaway answer hits it, before the host allocates it.
pub const MAX_ANSWER_BYTES: u64 = 1024 * 1024;

/// What one run of a hook may use.
#[derive(Clone, Debug)]
pub(crate) struct HookLimits {
    pub deadline: Duration,
    pub memory: u64,
    pub fuel: Option<u64>,
    /// Whether the engine meters fuel (then a hook without a `fuel` limit
    /// still needs fuel to run at all).
    pub engine_fuel: bool,
}

/// Whether `engine` meters fuel. Asked once per hook at load: the refusal is
/// an error value, too costly to make on every evaluation.
pub(crate) fn engine_meters_fuel(engine: &Engine) -> bool {
    Store::new(engine, ()).set_fuel(0).is_ok()
}

/// Why a hook run produced no answer: how its store's run ended (the same
/// [`Ended`] as a tool's), or a failure around it.
#[derive(Debug)]
pub(crate) enum Fault {
    Ended(Ended),
    /// The store or the instance could not be set up.
    Start(String),
    /// The host panicked while running the hook.
    Panic(String),
}

impl Fault {
    /// What happened, as the predicate of a sentence about the hook
    /// ("hook `x` {this}").
    pub fn describe(&self, limits: &HookLimits) -> String {
        match self {
            Fault::Ended(Ended::Timeout) => format!("timed out after {:?}", limits.deadline),
            Fault::Ended(Ended::Memory) => format!(
                "exceeded its memory limit of {} (raise `memory` in its `[[hook]]` entry if this is expected)",
                format_size(limits.memory)
            ),
            Fault::Ended(Ended::StackOverflow) => {
                "overflowed its stack (unbounded recursion?)".to_string()
            }
            Fault::Ended(Ended::Fuel) => format!(
                "ran out of fuel ({} units; raise `fuel` in its `[[hook]]` entry if this is expected)",
                limits.fuel.unwrap_or(0)
            ),
            Fault::Ended(Ended::DataLimit) => format!(
                "gave a malformed answer (more than {} of data)",
                format_size(MAX_ANSWER_BYTES)
            ),
            Fault::Ended(Ended::Bound(bound)) => format!(
                "asked the host to hold more than {} {}",
                bound.limit(),
                bound.what()
            ),
            Fault::Ended(Ended::Trap(message)) => format!("crashed: {message}"),
            Fault::Start(message) => format!("could not be started: {message}"),
            Fault::Panic(message) => format!("made the host panic: {message}"),
        }
    }
}

/// Instantiates the hook in a fresh store and runs `f` on it, all under the
/// deadline: the epoch stops a guest that computes, the timer one that waits.
/// The store is dropped afterwards, whatever happened; a panic while running is
/// caught and reported as a [`Fault`].
pub(crate) async fn run_hook<R>(
    engine: &Engine,
    pre: &HookPre,
    limits: &HookLimits,
    f: impl AsyncFnOnce(&HookInstance, &mut Store<HookState>) -> wasmtime::Result<R>,
) -> Result<R, Fault> {
    let mut store = hook_store(engine, limits);
    arm(&mut store, limits)?;
    guarded(&mut store, limits.deadline, async |store| {
        let plugin = pre.instantiate(&mut *store).await?;
        f(&plugin, store).await
    })
    .await
}

/// A store for a hook's runs under `limits`: its memory cap, and a trap
/// when the epoch passes its deadline ([`arm`] sets one per run).
pub(crate) fn hook_store(engine: &Engine, limits: &HookLimits) -> Store<HookState> {
    let mut store = Store::new(engine, HookState::new(limits.memory));
    store.limiter(|s| &mut s.limiter);
    store.epoch_deadline_trap();
    store
}

/// Arms `store` for one run: its deadline counted from now, the most it may
/// hand the host, and its fuel.
pub(crate) fn arm(store: &mut Store<HookState>, limits: &HookLimits) -> Result<(), Fault> {
    store.set_epoch_deadline(deadline_ticks(limits.deadline));
    store.set_hostcall_fuel(usize::try_from(MAX_ANSWER_BYTES).unwrap_or(usize::MAX));
    match limits.fuel {
        Some(fuel) => store.set_fuel(fuel).map_err(|_| {
            Fault::Start(
                "its `fuel` limit cannot be enforced: fuel metering is off in the engine (build it from a config that lists this hook)".to_string(),
            )
        })?,
        None if limits.engine_fuel => {
            let _ = store.set_fuel(u64::MAX);
        }
        None => {}
    }
    Ok(())
}

/// Runs `work` on `store` within `time` (the timer stops a guest that
/// waits; the epoch deadline [`arm`] set, one that computes), a panic in
/// host glue caught, a trap classified.
pub(crate) async fn guarded<R>(
    store: &mut Store<HookState>,
    time: Duration,
    work: impl AsyncFnOnce(&mut Store<HookState>) -> wasmtime::Result<R>,
) -> Result<R, Fault> {
    let outcome = {
        let store = &mut *store;
        CatchUnwind(Box::pin(tokio::time::timeout(time, work(store)))).await
    };
    match outcome {
        Ok(Ok(Ok(r))) => Ok(r),
        Ok(Ok(Err(e))) => Err(classify(store, &e)),
        Ok(Err(_elapsed)) => Err(Fault::Ended(Ended::Timeout)),
        Err(panic) => Err(Fault::Panic(panic_message(panic.as_ref()))),
    }
}

fn classify(store: &Store<HookState>, err: &wasmtime::Error) -> Fault {
    Fault::Ended(crate::call::classify(err, store.data().limiter.exceeded()))
}

/// Polls a future, turning a panic while polling into an `Err`, so a panic in
/// host glue ends one hook run (as a deny), not the call's task.
struct CatchUnwind<F>(Pin<Box<F>>);

impl<F: Future> Future for CatchUnwind<F> {
    type Output = Result<F::Output, Box<dyn Any + Send>>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let inner = self.0.as_mut();
        match std::panic::catch_unwind(AssertUnwindSafe(|| inner.poll(cx))) {
            Ok(Poll::Ready(value)) => Poll::Ready(Ok(value)),
            Ok(Poll::Pending) => Poll::Pending,
            Err(panic) => Poll::Ready(Err(panic)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_panic_while_polling_becomes_an_error() {
        let caught = CatchUnwind(Box::pin(async {
            tokio::task::yield_now().await;
            if std::hint::black_box(true) {
                panic!("boom in glue");
            }
            7
        }))
        .await;
        let panic = caught.unwrap_err();
        assert_eq!(panic_message(panic.as_ref()), "boom in glue");
        let fine = CatchUnwind(Box::pin(async { 7 })).await;
        assert_eq!(fine.unwrap(), 7);
    }

    #[test]
    fn faults_read_as_sentences_about_the_hook() {
        let limits = HookLimits {
            deadline: Duration::from_millis(100),
            memory: 16 << 20,
            fuel: Some(1000),
            engine_fuel: true,
        };
        assert_eq!(
            Fault::Ended(Ended::Timeout).describe(&limits),
            "timed out after 100ms"
        );
        assert!(
            Fault::Ended(Ended::Memory)
                .describe(&limits)
                .starts_with("exceeded its memory limit of 16 MiB")
        );
        assert!(
            Fault::Ended(Ended::Fuel)
                .describe(&limits)
                .starts_with("ran out of fuel (1000 units")
        );
        assert_eq!(
            Fault::Ended(Ended::DataLimit).describe(&limits),
            "gave a malformed answer (more than 1 MiB of data)"
        );
    }
}
