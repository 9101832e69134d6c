//! `glovebox rescue report`: the figures of the rescues opened in the last
//! days, added up one rescue at a time (a report reads the rescues of its
//! days a page at a time and holds none of them).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::{Outcome, Rescue};

/// `glovebox rescue report`: the rescues opened in the last `days` days.
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RescueReport {
    pub days: u64,
    pub since_ms: u64,
    pub rescues: usize,
    pub open: usize,
    pub resolved: usize,
    pub re_escalated: usize,
    pub abandoned: usize,
    /// Mean of detection → diagnosis over the diagnosed rescues.
    pub mean_time_to_diagnose_ms: Option<u64>,
    /// Mean of detection → resolution over the resolved rescues.
    pub mean_time_to_unblock_ms: Option<u64>,
    /// Closed rescues (any outcome) that proposed no lesson: knowledge the
    /// fleet did not keep.
    pub closed_without_enrichment: usize,
    /// Their share of the closed rescues (0 to 1; none when none closed).
    pub share_closed_without_enrichment: Option<f64>,
    /// Memory entries the rescues proposed (context index entries before
    /// the memory bank).
    pub context_updates: usize,
    /// Rescues by root-cause category (`undiagnosed` for those without a diagnosis).
    pub by_category: BTreeMap<String, usize>,
}

/// A report being added up.
#[derive(Clone, Debug)]
pub struct Tally {
    report: RescueReport,
    unblock_sum: u64,
    unblocked: u64,
    diagnose_sum: u64,
    diagnosed: u64,
}

impl Tally {
    pub fn new(days: u64, since_ms: u64) -> Tally {
        Tally {
            report: RescueReport {
                days,
                since_ms,
                rescues: 0,
                open: 0,
                resolved: 0,
                re_escalated: 0,
                abandoned: 0,
                mean_time_to_diagnose_ms: None,
                mean_time_to_unblock_ms: None,
                closed_without_enrichment: 0,
                share_closed_without_enrichment: None,
                context_updates: 0,
                by_category: BTreeMap::new(),
            },
            unblock_sum: 0,
            unblocked: 0,
            diagnose_sum: 0,
            diagnosed: 0,
        }
    }

    pub fn add(&mut self, r: &Rescue) {
        let report = &mut self.report;
        report.rescues += 1;
        match r.outcome {
            None => report.open += 1,
            Some(Outcome::Resolved) => report.resolved += 1,
            Some(Outcome::ReEscalated) => report.re_escalated += 1,
            Some(Outcome::Abandoned) => report.abandoned += 1,
        }
        if let Some(ms) = r.time_to_unblock_ms() {
            self.unblock_sum = self.unblock_sum.saturating_add(ms);
            self.unblocked += 1;
        }
        if let Some(d) = &r.diagnosis {
            self.diagnose_sum = self
                .diagnose_sum
                .saturating_add(d.at_ms.saturating_sub(r.detected_at_ms));
            self.diagnosed += 1;
        }
        if r.outcome.is_some() && r.context_updates.is_empty() {
            report.closed_without_enrichment += 1;
        }
        report.context_updates += r.context_updates.len();
        let key = r
            .diagnosis
            .as_ref()
            .map(|d| d.category.as_str())
            .unwrap_or("undiagnosed");
        *report.by_category.entry(key.to_string()).or_insert(0) += 1;
    }

    pub fn finish(mut self) -> RescueReport {
        self.report.mean_time_to_unblock_ms =
            (self.unblocked > 0).then(|| self.unblock_sum / self.unblocked);
        self.report.mean_time_to_diagnose_ms =
            (self.diagnosed > 0).then(|| self.diagnose_sum / self.diagnosed);
        let closed = self.report.rescues - self.report.open;
        self.report.share_closed_without_enrichment =
            (closed > 0).then(|| self.report.closed_without_enrichment as f64 / closed as f64);
        self.report
    }
}

/// The report's figures over `rescues`.
pub fn report_of(rescues: &[Rescue], days: u64, since_ms: u64) -> RescueReport {
    let mut tally = Tally::new(days, since_ms);
    for r in rescues {
        tally.add(r);
    }
    tally.finish()
}
