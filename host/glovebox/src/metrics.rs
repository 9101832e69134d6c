//! What a running host counts, in Prometheus' text format (`/metrics`).
//!
//! Two kinds of figures: what the pipeline records as calls go by (calls by
//! tool and outcome, their latency, each hook's decisions and latency, the
//! time the ledger takes to write a call's records), kept in
//! `prometheus-client` families; and what the ledger holds now (sessions by
//! status, pending approvals, jobs by status, active blocker flags, calls in
//! flight, the notification outbox), read when scraped. The families are
//! registered once, in one registry made here, each by the module of its
//! kind of figures (`metrics/`: the pipeline's, the ledger's, admission
//! control's, the store's), so their names and help texts are in one place.

use std::time::Duration;

use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::Registry;

use crate::call::CallReport;
use crate::session::EventKind;

mod admission;
mod ledger;
mod pipeline;
mod store;

/// What the ledger holds now, for the gauges read at each scrape.
#[derive(Debug, Default)]
pub struct Snapshot {
    pub sessions_by_status: Vec<(String, i64)>,
    pub jobs_by_status: Vec<(String, i64)>,
    pub approvals_pending: i64,
    pub flags: Vec<((String, String), i64)>,
    pub outbox_depth: i64,
    /// Notifications dropped per target in all (counted in the store): its
    /// outbox was full (`quotas.outbox_per_target`).
    pub outbox_dropped: Vec<(String, u64)>,
    pub admission: Admission,
}

/// Admission control now: the host's, read at each scrape. A call that finds
/// no slot or not enough of the memory budget waits in a bounded queue, fair
/// between principals (`runtime.admission_wait`, `runtime.admission_queue`),
/// and is refused as `busy` (counted in `glovebox_calls`) past them; hook
/// runs wait for hook slots the same way.
#[derive(Debug, Default)]
pub struct Admission {
    pub calls_in_flight: i64,
    pub call_slots: i64,
    pub memory_reserved_bytes: i64,
    pub memory_budget_bytes: i64,
    /// Calls waiting for a slot (or room in the memory budget).
    pub calls_waiting: i64,
    /// Hook runs waiting for a hook slot.
    pub hooks_waiting: i64,
}

/// The host's metrics: the registry, and its families by what they count.
pub struct Metrics {
    registry: Registry,
    pipeline: pipeline::Pipeline,
    ledger: ledger::Ledger,
    admission: admission::Admissions,
    store: store::Store,
}

/// The content type of [`Metrics::encode`]'s text, for every listener that serves it.
pub const CONTENT_TYPE: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

/// Latency buckets from 50 µs to about 27 s.
fn seconds() -> Histogram {
    Histogram::new(exponential_buckets(0.000_05, 3.0, 13))
}

impl Default for Metrics {
    fn default() -> Self {
        Metrics::new()
    }
}

impl Metrics {
    /// The families, registered in this order: the pipeline's, the
    /// ledger's, admission control's, the store's and the outbox's.
    pub fn new() -> Metrics {
        let mut registry = Registry::with_prefix("glovebox");
        let pipeline = pipeline::Pipeline::register(&mut registry);
        let ledger = ledger::Ledger::register(&mut registry);
        let admission = admission::Admissions::register(&mut registry);
        let store = store::Store::register(&mut registry);
        Metrics {
            registry,
            pipeline,
            ledger,
            admission,
            store,
        }
    }

    /// What the store tells of each group-commit flush.
    pub(crate) fn flush_observer(&self) -> crate::storage::FlushObserver {
        self.store.flush_observer()
    }

    /// Where the host reports each admission's wait.
    pub(crate) fn admission_wait_observer(&self) -> crate::admission::WaitObserver {
        self.admission.wait_observer()
    }

    /// A call's report.
    pub(crate) fn call(&self, report: &CallReport) {
        self.pipeline.call(report);
    }

    /// The hooks' decisions on a call (its `call_decided` events).
    pub(crate) fn decisions(&self, decisions: &[EventKind]) {
        self.pipeline.decisions(decisions);
    }

    /// The ledger's write of one call's records before it ran.
    pub(crate) fn ledger_write(&self, took: Duration) {
        self.pipeline.ledger_write(took);
    }

    /// The text a scrape gets: the counters, and the gauges set from `now`.
    pub fn encode(&self, now: &Snapshot) -> String {
        self.ledger.set(now);
        self.admission.set(&now.admission);
        self.store.set(now);
        let mut text = String::new();
        // Writing into a String cannot fail.
        let _ = prometheus_client::encoding::text::encode(&mut text, &self.registry);
        text
    }
}

#[cfg(test)]
mod tests;
