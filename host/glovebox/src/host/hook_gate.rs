//! The hooks of a host: the admission of hook runs ([`HookGate`]) and the
//! chain's judgement of a call, its runs admitted first.

use std::sync::Arc;
use std::time::{Duration, Instant};

use super::Host;
use super::admissions::{Admissions, HOOK_QUEUE_FLOOR, HOOK_WAIT_FLOOR};
use crate::admission::{self, Key, Refused};
use crate::hooks::{ChainOutcome, HookChain, HookRequest};

/// Admits hook runs (see [`crate::admission`]): a hook slot for the
/// principal acting here, for a session.
#[derive(Clone)]
pub(crate) struct HookGate {
    admissions: Admissions,
    wait: Duration,
}

/// Why a hook run found no slot; its text names the config keys.
#[derive(Debug, thiserror::Error)]
pub(crate) enum NoHookSlot {
    /// As many hook runs already wait as may.
    #[error(
        "all {slots} hook slots are in use and {queue} hook runs already wait for one (`runtime.admission_queue`, at least {floor})",
        floor = HOOK_QUEUE_FLOOR
    )]
    QueueFull { slots: usize, queue: usize },
    /// No slot came free within the wait.
    #[error(
        "all {slots} hook slots stayed in use for {waited:?} (`runtime.admission_wait`, at least {floor:?}); raise `runtime.admission_wait`, or lower the load",
        floor = HOOK_WAIT_FLOOR
    )]
    TimedOut { slots: usize, waited: Duration },
}

impl HookGate {
    /// A hook slot, or why there is none.
    pub(crate) async fn admit(&self, session: &str) -> Result<admission::Permit, NoHookSlot> {
        let key = Key::new(crate::session::actor::current(), session);
        let start = Instant::now();
        let admitted = self.admissions.hooks.acquire(key, 0, self.wait).await;
        self.admissions.observe("hooks", start.elapsed());
        admitted.map_err(|refused| {
            let limits = self.admissions.hooks.limits();
            match refused {
                Refused::QueueFull(_) => NoHookSlot::QueueFull {
                    slots: limits.slots,
                    queue: limits.queue,
                },
                _ => NoHookSlot::TimedOut {
                    slots: limits.slots,
                    waited: self.wait,
                },
            }
        })
    }
}

impl Host {
    /// The admission of hook runs, to take along (the `after` notifications
    /// outlive the call).
    pub(crate) fn hook_gate(&self) -> HookGate {
        HookGate {
            admissions: self.admission.clone(),
            wait: self.config.runtime.admission_wait.max(HOOK_WAIT_FLOOR),
        }
    }

    /// The hook chain's judgement of `request`, its hooks' runs admitted
    /// first (one hook slot for the chain: its hooks run one at a time). A
    /// chain that finds no slot in time denies, saying admission was full
    /// (hooks fail closed).
    pub(crate) async fn evaluate_hooks(&self, request: &HookRequest) -> ChainOutcome {
        let Some((hook, pattern)) = self.hooks.first_to_run(&request.action) else {
            // No hook runs an instance for this call.
            return self.hooks.evaluate(request).await;
        };
        let start = Instant::now();
        match self.hook_gate().admit(&request.session).await {
            Ok(slot) => {
                let outcome = self.hooks.evaluate(request).await;
                drop(slot);
                outcome
            }
            Err(full) => {
                tracing::warn!(hook, reason = %full, "a permission hook could not run: admission was full");
                HookChain::failed_closed(
                    hook,
                    pattern,
                    format!(
                        "hook `{hook}` could not run, admission was full: {full}; the call is denied (hooks fail closed)"
                    ),
                    start.elapsed(),
                )
            }
        }
    }

    /// The hook chain every call passes.
    pub fn hooks(&self) -> &HookChain {
        &self.hooks
    }

    /// The hook chain, shared (the `after` notifications outlive the call).
    pub(crate) fn hook_chain(&self) -> Arc<HookChain> {
        self.hooks.clone()
    }
}
