//! Instances of a hook kept across evaluations, for a hook whose `[[hook]]`
//! sets `reuse` above 1.
//!
//! Why: a hook's decision is well under a microsecond, but a fresh instance
//! for it costs several (a store set up, the component instantiated, and,
//! most of all, the instance's memory and tables reset when the store is
//! dropped); three hooks tripled the cost of a trivial call. A hook reaches
//! only clocks and random, so an operator may declare one pure (`reuse`:
//! nothing it keeps between evaluations changes a decision) and have its
//! instances serve several evaluations.
//!
//! What still holds: an instance serves one principal only (the one it first
//! judged), so nothing one principal's calls leave in a hook's memory reaches
//! another's decisions; each evaluation is armed anew (deadline, fuel, answer
//! budget) under the same memory cap; an instance that faults (traps, times
//! out, runs out of memory or fuel, panics the host) is dropped, never used
//! again, and the call is denied as ever; an instance is dropped after
//! `reuse` evaluations; and at most [`KEPT_PER_HOOK`] instances wait per
//! hook, the oldest dropped first (the engine's pool holds room for them
//! beside the calls and the hook runs it admits). A hook that is not pure
//! after all can make `policy replay` disagree with what it decided: `reuse`
//! is the operator's statement that it is.

use std::collections::VecDeque;
use std::sync::{Mutex, PoisonError};
use std::time::Instant;

use wasmtime::{Engine, Store};

use super::run::{Fault, HookLimits, arm, guarded, hook_store};
use super::sandbox::HookState;
use super::world::{HookInstance, HookPre};

/// Instances that wait per hook with `reuse` above 1. The engine's pool
/// keeps this many instances per such hook beside the others.
pub const KEPT_PER_HOOK: u32 = 4;

/// The instances of one hook waiting for their next evaluation.
pub(crate) struct Kept {
    /// Evaluations one instance may serve.
    reuse: u32,
    idle: Mutex<VecDeque<Instance>>,
}

/// One kept instance, its store, whom it serves and how often it has.
struct Instance {
    principal: String,
    store: Store<HookState>,
    instance: HookInstance,
    uses: u32,
}

impl Kept {
    /// The kept instances of a hook whose instances may serve `reuse`
    /// evaluations; `None` when each evaluation gets a fresh one.
    pub fn new(reuse: u32) -> Option<Kept> {
        (reuse > 1).then(|| Kept {
            reuse,
            idle: Mutex::new(VecDeque::new()),
        })
    }

    /// Runs `f` for a call of `principal` on an instance kept for that
    /// principal, or on a new one (then kept, when `f` ends without a
    /// fault): all of it within `limits`, the deadline counting any
    /// instantiation.
    pub async fn run<R>(
        &self,
        engine: &Engine,
        pre: &HookPre,
        limits: &HookLimits,
        principal: &str,
        f: impl AsyncFnOnce(&HookInstance, &mut Store<HookState>) -> wasmtime::Result<R>,
    ) -> Result<R, Fault> {
        let started = Instant::now();
        let mut kept = match self.take(principal) {
            Some(mut kept) => {
                arm(&mut kept.store, limits)?;
                kept
            }
            None => {
                let mut store = hook_store(engine, limits);
                arm(&mut store, limits)?;
                let instance = guarded(&mut store, limits.deadline, async |s| {
                    pre.instantiate(s).await
                })
                .await?;
                Instance {
                    principal: principal.to_string(),
                    store,
                    instance,
                    uses: 0,
                }
            }
        };
        let left = limits.deadline.saturating_sub(started.elapsed());
        let Instance {
            store, instance, ..
        } = &mut kept;
        // A fault drops the instance with `kept`: it is never entered again.
        let answer = guarded(store, left, async |s| f(instance, s).await).await?;
        kept.uses += 1;
        self.give_back(kept);
        Ok(answer)
    }

    /// A waiting instance that serves `principal`, if there is one.
    fn take(&self, principal: &str) -> Option<Instance> {
        let mut idle = self.idle.lock().unwrap_or_else(PoisonError::into_inner);
        let at = idle.iter().rposition(|i| i.principal == principal)?;
        idle.remove(at)
    }

    /// Puts `kept` back to wait, unless it has served its evaluations; the
    /// oldest waiting instance goes when more than [`KEPT_PER_HOOK`] wait.
    /// What goes is dropped outside the lock (dropping a store resets its
    /// instance's memory).
    fn give_back(&self, kept: Instance) {
        if kept.uses >= self.reuse {
            return;
        }
        let dropped = {
            let mut idle = self.idle.lock().unwrap_or_else(PoisonError::into_inner);
            idle.push_back(kept);
            (idle.len() > KEPT_PER_HOOK as usize)
                .then(|| idle.pop_front())
                .flatten()
        };
        drop(dropped);
    }
}
