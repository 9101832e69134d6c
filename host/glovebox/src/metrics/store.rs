//! The figures of what the store writes and holds: the writers each
//! group-commit flush made durable, and the notification outbox (its depth
//! now, and what it dropped per target).

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::Registry;

use super::Snapshot;

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct Target {
    target: String,
}

/// The store's and the outbox's figures.
pub(super) struct Store {
    commit_batches: Histogram,
    outbox_depth: Gauge,
    outbox_dropped: Family<Target, Counter>,
}

impl Store {
    /// The store's and the outbox's families, registered in `registry`.
    pub(super) fn register(registry: &mut Registry) -> Store {
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
        Store {
            commit_batches,
            outbox_depth,
            outbox_dropped,
        }
    }

    /// What the store tells of each group-commit flush.
    pub(super) fn flush_observer(&self) -> crate::storage::FlushObserver {
        let batches = self.commit_batches.clone();
        std::sync::Arc::new(move |writers| batches.observe(writers as f64))
    }

    /// The outbox's figures set from `now`.
    pub(super) fn set(&self, now: &Snapshot) {
        self.outbox_depth.set(now.outbox_depth);
        for (target, total) in &now.outbox_dropped {
            let counter = self.outbox_dropped.get_or_create(&Target {
                target: target.clone(),
            });
            // The store counts; the counter catches up.
            counter.inc_by(total.saturating_sub(counter.get()));
        }
    }
}
