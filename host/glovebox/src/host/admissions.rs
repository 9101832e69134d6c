//! The host's admission control, shared across reloads: the call slots with
//! the memory budget, the hook runs' slots, and each tool's recent run time.

use std::collections::HashMap;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use crate::admission::{self, Admission, WaitObserver};
use crate::manifest::HostConfig;

/// Admission control (see [`crate::admission`]): the call slots with the
/// memory budget (in MiB, reserved per call at its plugin's memory cap), and
/// the hook runs' slots.
#[derive(Clone)]
pub(super) struct Admissions {
    pub(super) calls: Admission,
    pub(super) hooks: Admission,
    /// Where each admission's wait is reported (the gateway's metrics).
    pub(super) waits: Arc<OnceLock<WaitObserver>>,
    /// How long each tool's calls have been running, to tell the slow ones.
    pub(super) run_times: Arc<RunTimes>,
    /// Where the slow calls' guests run.
    pub(super) slow_lane: Arc<crate::tasks::SlowLane>,
}

/// Each tool's recent run time: an average weighing the last calls most
/// (each new one a quarter), so a tool that turns slow (or quick again) is
/// seen as such within a few calls. A tool not called yet counts as slow
/// until its first call ends: a burst of first calls of a tool that loops
/// must not take every slot.
#[derive(Default)]
pub(super) struct RunTimes(std::sync::Mutex<HashMap<String, Duration>>);

impl RunTimes {
    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Duration>> {
        self.0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Whether `tool`'s calls have been taking `slow` or longer (or it was
    /// not called yet).
    pub(super) fn is_slow(&self, tool: &str, slow: Duration) -> bool {
        self.lock().get(tool).is_none_or(|took| *took >= slow)
    }

    pub(super) fn record(&self, tool: &str, took: Duration) {
        let mut times = self.lock();
        match times.get_mut(tool) {
            Some(average) => *average = (*average * 3 + took) / 4,
            None => {
                times.insert(tool.to_string(), took);
            }
        }
    }
}

/// A hook run waits at least this long for a slot, whatever
/// `runtime.admission_wait` says: hooks are waited for, not failed (a hook
/// refused a slot denies its call).
pub(super) const HOOK_WAIT_FLOOR: Duration = Duration::from_secs(1);
/// And this many hook runs may wait at once, whatever `runtime.admission_queue` says.
pub(super) const HOOK_QUEUE_FLOOR: usize = 64;

impl Admissions {
    pub(super) fn new(config: &HostConfig) -> Admissions {
        let runtime = &config.runtime;
        let slots = runtime.max_concurrent_calls as usize;
        let queue = runtime.admission_queue as usize;
        let hook_slots = crate::runtime::HOOK_INSTANCES as usize;
        Admissions {
            calls: Admission::new(admission::Limits {
                slots,
                units: runtime.memory_budget / MIB,
                share: admission::Limits::share_of(slots, runtime.principal_share),
                slow_share: admission::Limits::share_of(slots, runtime.slow_share),
                queue,
            }),
            hooks: Admission::new(admission::Limits {
                slots: hook_slots,
                units: 0,
                share: admission::Limits::share_of(hook_slots, runtime.principal_share),
                // Hook runs are not told apart by speed.
                slow_share: hook_slots,
                queue: queue.max(HOOK_QUEUE_FLOOR),
            }),
            waits: Arc::default(),
            run_times: Arc::default(),
            slow_lane: Arc::default(),
        }
    }

    pub(super) fn observe(&self, pool: &'static str, waited: Duration) {
        if let Some(observe) = self.waits.get() {
            observe(pool, waited);
        }
    }
}

pub(super) const MIB: u64 = 1024 * 1024;
