//! The gauges of what the ledger holds now, set at each scrape: sessions
//! by status, background jobs by status, pending approvals, and the active
//! blocker flags.

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;

use super::Snapshot;

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct Status {
    status: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct Flag {
    rule: String,
    severity: String,
}

/// The ledger's gauges.
pub(super) struct Ledger {
    sessions: Family<Status, Gauge>,
    jobs: Family<Status, Gauge>,
    approvals_pending: Gauge,
    flags: Family<Flag, Gauge>,
}

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

impl Ledger {
    /// The ledger's families, registered in `registry`.
    pub(super) fn register(registry: &mut Registry) -> Ledger {
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
        Ledger {
            sessions,
            jobs,
            approvals_pending,
            flags,
        }
    }

    /// The gauges set from `now`.
    pub(super) fn set(&self, now: &Snapshot) {
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
    }
}
