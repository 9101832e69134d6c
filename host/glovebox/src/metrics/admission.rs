//! The figures of admission control: calls in flight, the call slots and
//! the memory budget and what of them is taken (gauges set at each
//! scrape), the callers waiting now, and how long each admission waited.

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::registry::Registry;

use super::{Admission, seconds};

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct Pool {
    /// `calls` or `hooks`.
    pool: String,
}

/// Admission control's gauges and waits.
pub(super) struct Admissions {
    calls_in_flight: Gauge,
    call_slots: Gauge,
    memory_reserved: Gauge,
    memory_budget: Gauge,
    admission_queue: Family<Pool, Gauge>,
    admission_wait_seconds: Family<Pool, Histogram>,
}

impl Admissions {
    /// Admission control's families, registered in `registry`.
    pub(super) fn register(registry: &mut Registry) -> Admissions {
        let calls_in_flight = Gauge::default();
        registry.register(
            "calls_in_flight",
            "Calls running now, foreground and background (admission control's slots in use)",
            calls_in_flight.clone(),
        );
        let call_slots = Gauge::default();
        registry.register(
            "admission_call_slots",
            "Calls admission control lets run at once (`runtime.max_concurrent_calls`); a call past them waits its turn, up to `runtime.admission_wait`",
            call_slots.clone(),
        );
        let memory_reserved = Gauge::default();
        registry.register(
            "admission_memory_reserved_bytes",
            "Memory the running calls reserve (each its plugin's whole cap)",
            memory_reserved.clone(),
        );
        let memory_budget = Gauge::default();
        registry.register(
            "admission_memory_budget_bytes",
            "The memory budget calls reserve from (`runtime.memory_budget`); a call that does not fit waits its turn, up to `runtime.admission_wait`",
            memory_budget.clone(),
        );
        let admission_queue = Family::<Pool, Gauge>::default();
        registry.register(
            "admission_queue_depth",
            "Calls (pool `calls`) and hook runs (pool `hooks`) waiting for a slot now; past `runtime.admission_queue` waiters a call is refused as busy",
            admission_queue.clone(),
        );
        let admission_wait_seconds = Family::<Pool, Histogram>::new_with_constructor(seconds);
        registry.register(
            "admission_wait_seconds",
            "Time each call (pool `calls`) or hook run (pool `hooks`) waited for admission, admitted or refused",
            admission_wait_seconds.clone(),
        );
        Admissions {
            calls_in_flight,
            call_slots,
            memory_reserved,
            memory_budget,
            admission_queue,
            admission_wait_seconds,
        }
    }

    /// Where the host reports each admission's wait.
    pub(super) fn wait_observer(&self) -> crate::admission::WaitObserver {
        let waits = self.admission_wait_seconds.clone();
        std::sync::Arc::new(move |pool, waited| {
            waits
                .get_or_create(&Pool {
                    pool: pool.to_string(),
                })
                .observe(waited.as_secs_f64());
        })
    }

    /// The gauges set from `now`.
    pub(super) fn set(&self, now: &Admission) {
        self.calls_in_flight.set(now.calls_in_flight);
        self.call_slots.set(now.call_slots);
        self.memory_reserved.set(now.memory_reserved_bytes);
        self.memory_budget.set(now.memory_budget_bytes);
        for (pool, waiting) in [("calls", now.calls_waiting), ("hooks", now.hooks_waiting)] {
            self.admission_queue
                .get_or_create(&Pool {
                    pool: pool.to_string(),
                })
                .set(waiting);
        }
    }
}
