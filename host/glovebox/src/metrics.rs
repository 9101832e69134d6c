//! What a running host counts, in Prometheus' text format (`/metrics`).
//!
//! Two kinds of figures: what the pipeline records as calls go by (calls by
//! tool and outcome, their latency, each hook's decisions and latency, the
//! time the ledger takes to write a call's records), kept in
//! `prometheus-client` families; and what the ledger holds now (sessions by
//! status, pending approvals, jobs by status, active blocker flags, calls in
//! flight, the notification outbox), read when scraped. The families are
//! registered once, here, so their names and help texts are in one place.

use std::time::Duration;

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::Registry;

use crate::call::CallReport;
use crate::session::EventKind;

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ToolOutcome {
    tool: String,
    outcome: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ToolLabel {
    tool: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct HookDecision {
    hook: String,
    decision: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct HookLabel {
    hook: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct Pool {
    /// `calls` or `hooks`.
    pool: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct Status {
    status: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct Target {
    target: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct Flag {
    rule: String,
    severity: String,
}

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

/// The host's metrics.
pub struct Metrics {
    registry: Registry,
    calls: Family<ToolOutcome, Counter>,
    call_seconds: Family<ToolLabel, Histogram>,
    hook_decisions: Family<HookDecision, Counter>,
    hook_seconds: Family<HookLabel, Histogram>,
    ledger_seconds: Histogram,
    sessions: Family<Status, Gauge>,
    jobs: Family<Status, Gauge>,
    approvals_pending: Gauge,
    flags: Family<Flag, Gauge>,
    calls_in_flight: Gauge,
    call_slots: Gauge,
    memory_reserved: Gauge,
    memory_budget: Gauge,
    admission_queue: Family<Pool, Gauge>,
    admission_wait_seconds: Family<Pool, Histogram>,
    outbox_depth: Gauge,
    outbox_dropped: Family<Target, Counter>,
    commit_batches: Histogram,
}

/// The content type of [`Metrics::encode`]'s text, for every listener that serves it.
pub const CONTENT_TYPE: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

/// `family` set to `counts` alone: a gauge per status, none for a status
/// that is no longer counted.
fn set_by_status(family: &Family<Status, Gauge>, counts: &[(String, i64)]) {
    family.clear();
    for (status, n) in counts {
        family
            .get_or_create(&Status {
                status: status.clone(),
            })
            .set(*n);
    }
}

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
    pub fn new() -> Metrics {
        let mut registry = Registry::with_prefix("glovebox");
        let calls = Family::<ToolOutcome, Counter>::default();
        registry.register(
            "calls",
            "Tool calls that reached the pipeline's judge, by tool and outcome (`ok` or the error kind)",
            calls.clone(),
        );
        let call_seconds = Family::<ToolLabel, Histogram>::new_with_constructor(seconds);
        registry.register(
            "call_duration_seconds",
            "Wall time of the calls that ran, instantiation included, by tool",
            call_seconds.clone(),
        );
        let hook_decisions = Family::<HookDecision, Counter>::default();
        registry.register(
            "hook_decisions",
            "Permission hooks' decisions, by hook and decision (allow, deny, ask)",
            hook_decisions.clone(),
        );
        let hook_seconds = Family::<HookLabel, Histogram>::new_with_constructor(seconds);
        registry.register(
            "hook_duration_seconds",
            "Time a hook took to decide, instantiation included, by hook",
            hook_seconds.clone(),
        );
        let ledger_seconds = seconds();
        registry.register(
            "log_append_duration_seconds",
            "Time the ledger took to write one call's records before it ran (the durable write-ahead batch)",
            ledger_seconds.clone(),
        );
        let sessions = Family::<Status, Gauge>::default();
        registry.register("sessions", "Sessions by status", sessions.clone());
        let jobs = Family::<Status, Gauge>::default();
        registry.register("jobs", "Background jobs by status", jobs.clone());
        let approvals_pending = Gauge::default();
        registry.register(
            "approvals_pending",
            "Calls waiting for a human's approval",
            approvals_pending.clone(),
        );
        let flags = Family::<Flag, Gauge>::default();
        registry.register(
            "flags",
            "Active blocker flags on live sessions, by rule and severity",
            flags.clone(),
        );
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
        let commit_batches = Histogram::new(exponential_buckets(1.0, 2.0, 9));
        registry.register(
            "group_commit_batch_writers",
            "Writes each flush of the store made durable at once (group commit; the embedded stores only)",
            commit_batches.clone(),
        );
        let outbox_depth = Gauge::default();
        registry.register(
            "notify_outbox_depth",
            "Notifications waiting in the outbox to be delivered",
            outbox_depth.clone(),
        );
        let outbox_dropped = Family::<Target, Counter>::default();
        registry.register(
            "notify_dropped",
            "Notifications dropped, oldest first, because their target's outbox held `quotas.outbox_per_target` (counted in the store)",
            outbox_dropped.clone(),
        );
        Metrics {
            registry,
            calls,
            call_seconds,
            hook_decisions,
            hook_seconds,
            ledger_seconds,
            sessions,
            jobs,
            approvals_pending,
            flags,
            calls_in_flight,
            call_slots,
            memory_reserved,
            memory_budget,
            admission_queue,
            admission_wait_seconds,
            outbox_depth,
            outbox_dropped,
            commit_batches,
        }
    }

    /// What the store tells of each group-commit flush.
    pub(crate) fn flush_observer(&self) -> crate::storage::FlushObserver {
        let batches = self.commit_batches.clone();
        std::sync::Arc::new(move |writers| batches.observe(writers as f64))
    }

    /// Where the host reports each admission's wait.
    pub(crate) fn admission_wait_observer(&self) -> crate::admission::WaitObserver {
        let waits = self.admission_wait_seconds.clone();
        std::sync::Arc::new(move |pool, waited| {
            waits
                .get_or_create(&Pool {
                    pool: pool.to_string(),
                })
                .observe(waited.as_secs_f64());
        })
    }

    /// A call's report.
    pub(crate) fn call(&self, report: &CallReport) {
        let outcome = match &report.outcome {
            Ok(_) => "ok".to_string(),
            Err(e) => e.kind().to_string(),
        };
        self.calls
            .get_or_create(&ToolOutcome {
                tool: report.tool.clone(),
                outcome,
            })
            .inc();
        if report.metering.wall > Duration::ZERO {
            self.call_seconds
                .get_or_create(&ToolLabel {
                    tool: report.tool.clone(),
                })
                .observe(report.metering.wall.as_secs_f64());
        }
    }

    /// The hooks' decisions on a call (its `call_decided` events).
    pub(crate) fn decisions(&self, decisions: &[EventKind]) {
        for d in decisions {
            if let EventKind::CallDecided {
                hook,
                decision,
                took_ms,
                ..
            } = d
            {
                self.hook_decisions
                    .get_or_create(&HookDecision {
                        hook: hook.clone(),
                        decision: decision.clone(),
                    })
                    .inc();
                self.hook_seconds
                    .get_or_create(&HookLabel { hook: hook.clone() })
                    .observe(*took_ms as f64 / 1000.0);
            }
        }
    }

    /// The ledger's write of one call's records before it ran.
    pub(crate) fn ledger_write(&self, took: Duration) {
        self.ledger_seconds.observe(took.as_secs_f64());
    }

    /// The text a scrape gets: the counters, and the gauges set from `now`.
    pub fn encode(&self, now: &Snapshot) -> String {
        set_by_status(&self.sessions, &now.sessions_by_status);
        set_by_status(&self.jobs, &now.jobs_by_status);
        self.flags.clear();
        for ((rule, severity), n) in &now.flags {
            self.flags
                .get_or_create(&Flag {
                    rule: rule.clone(),
                    severity: severity.clone(),
                })
                .set(*n);
        }
        self.approvals_pending.set(now.approvals_pending);
        self.calls_in_flight.set(now.admission.calls_in_flight);
        self.call_slots.set(now.admission.call_slots);
        self.memory_reserved
            .set(now.admission.memory_reserved_bytes);
        self.memory_budget.set(now.admission.memory_budget_bytes);
        for (pool, waiting) in [
            ("calls", now.admission.calls_waiting),
            ("hooks", now.admission.hooks_waiting),
        ] {
            self.admission_queue
                .get_or_create(&Pool {
                    pool: pool.to_string(),
                })
                .set(waiting);
        }
        self.outbox_depth.set(now.outbox_depth);
        for (target, total) in &now.outbox_dropped {
            let counter = self.outbox_dropped.get_or_create(&Target {
                target: target.clone(),
            });
            // The store counts; the counter catches up.
            counter.inc_by(total.saturating_sub(counter.get()));
        }
        let mut text = String::new();
        // Writing into a String cannot fail.
        let _ = prometheus_client::encoding::text::encode(&mut text, &self.registry);
        text
    }
}
