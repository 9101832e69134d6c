//! The tally of one principal, project or role, as the store keeps it: what
//! its sessions spent in the current day, week and month, and which
//! warnings, refusals and raises each period has seen.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::manifest::{CeilingLimits, Measure, Period, PeriodCeilings};

/// Where the tallies live: key `<scope kind>/<name>` (`principal/alice`).
pub const BUCKET: &str = "spend_tallies";

/// What one period's sessions spent, and what happened at its ceilings.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct Spent {
    /// The period's id (`2025-06-14`, `2025-W24`, `2025-06`).
    pub period: String,
    pub cost_micros: u64,
    pub calls: u64,
    pub tokens: u64,
    /// Events an agent principal caused in its sessions' logs, and their
    /// bytes (the principal's day only: `[quotas] principal_*_per_day`).
    pub events: u64,
    pub bytes: u64,
    /// Measures whose warning went out, with the ceiling it was about: a
    /// raised ceiling warns again.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub warned: BTreeMap<Measure, u64>,
    /// Measures at whose ceiling a call was refused (or a usage report
    /// passed it), with that ceiling: no new session starts while it holds.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub reached: BTreeMap<Measure, u64>,
    /// Ceilings an operator raised for this period (`glovebox budget
    /// raise`): they replace the config's until the period ends.
    #[serde(skip_serializing_if = "CeilingLimits::is_empty")]
    pub raised: CeilingLimits,
}

impl Spent {
    pub fn get(&self, measure: Measure) -> u64 {
        match measure {
            Measure::Cost => self.cost_micros,
            Measure::Calls => self.calls,
            Measure::Tokens => self.tokens,
        }
    }

    fn add(&mut self, delta: &Delta) {
        self.cost_micros = self.cost_micros.saturating_add(delta.cost_micros);
        self.calls = self.calls.saturating_add(delta.calls);
        self.tokens = self.tokens.saturating_add(delta.tokens);
        self.events = self.events.saturating_add(delta.events);
        self.bytes = self.bytes.saturating_add(delta.bytes);
    }

    /// The ceiling in force on `measure`: the operator's raise for this
    /// period, else the config's.
    pub fn limit(&self, configured: &CeilingLimits, measure: Measure) -> Option<u64> {
        self.raised.get(measure).or(configured.get(measure))
    }

    /// Whether a call was refused at the ceiling `limit` of `measure` (or
    /// at a higher one) this period.
    pub fn was_reached(&self, measure: Measure, limit: u64) -> bool {
        self.reached.get(&measure).is_some_and(|at| limit <= *at)
    }
}

/// What one event, call or report adds to a tally.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Delta {
    pub cost_micros: u64,
    pub calls: u64,
    pub tokens: u64,
    pub events: u64,
    pub bytes: u64,
}

impl Delta {
    pub fn get(&self, measure: Measure) -> u64 {
        match measure {
            Measure::Cost => self.cost_micros,
            Measure::Calls => self.calls,
            Measure::Tokens => self.tokens,
        }
    }

    pub fn is_zero(&self) -> bool {
        *self == Delta::default()
    }
}

/// One scope's tally: its day, week and month.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct Tally {
    pub day: Spent,
    pub week: Spent,
    pub month: Spent,
}

impl Tally {
    pub fn get(&self, period: Period) -> &Spent {
        match period {
            Period::Day => &self.day,
            Period::Week => &self.week,
            Period::Month => &self.month,
        }
    }

    pub fn get_mut(&mut self, period: Period) -> &mut Spent {
        match period {
            Period::Day => &mut self.day,
            Period::Week => &mut self.week,
            Period::Month => &mut self.month,
        }
    }

    /// Starts each period that ended by `now_ms` afresh. A stored period
    /// later than now (another host's clock is ahead) is kept and counted
    /// into: the ids sort in time order, and counting into the later period
    /// can only over-count.
    pub fn roll(&mut self, now_ms: u64) {
        for period in Period::ALL {
            let id = period.window(now_ms).id;
            let spent = self.get_mut(period);
            if spent.period < id {
                *spent = Spent {
                    period: id,
                    ..Spent::default()
                };
            }
        }
    }

    /// Adds `delta` to every period.
    pub fn add(&mut self, delta: &Delta) {
        for period in Period::ALL {
            self.get_mut(period).add(delta);
        }
    }

    /// Takes `delta` back from every period (a charge given back).
    pub fn sub(&mut self, delta: &Delta) {
        for period in Period::ALL {
            let s = self.get_mut(period);
            s.cost_micros = s.cost_micros.saturating_sub(delta.cost_micros);
            s.calls = s.calls.saturating_sub(delta.calls);
            s.tokens = s.tokens.saturating_sub(delta.tokens);
            s.events = s.events.saturating_sub(delta.events);
            s.bytes = s.bytes.saturating_sub(delta.bytes);
        }
    }

    /// The first ceiling of `ceilings` that `delta` would pass, or that is
    /// reached already: `(period, measure, limit, used)`. A ceiling is
    /// passed when the use is at it already, or would go past it.
    pub fn passes(
        &self,
        ceilings: &PeriodCeilings,
        delta: &Delta,
    ) -> Option<(Period, Measure, u64, u64)> {
        self.first_ceiling(ceilings, |_, measure, limit, used| {
            used.saturating_add(delta.get(measure)) > limit
        })
    }

    /// The first ceiling of `ceilings` at which this tally stands: used up,
    /// or a call was refused at it this period.
    pub fn at_ceiling(&self, ceilings: &PeriodCeilings) -> Option<(Period, Measure, u64, u64)> {
        self.first_ceiling(ceilings, |spent, measure, limit, _| {
            spent.was_reached(measure, limit)
        })
    }

    /// The first ceiling of `ceilings`, period by period and measure by
    /// measure, that is used up or at which `stands(spent, measure, limit,
    /// used)` holds: `(period, measure, limit, used)`.
    fn first_ceiling(
        &self,
        ceilings: &PeriodCeilings,
        stands: impl Fn(&Spent, Measure, u64, u64) -> bool,
    ) -> Option<(Period, Measure, u64, u64)> {
        for period in Period::ALL {
            let spent = self.get(period);
            for measure in Measure::ALL {
                let Some(limit) = spent.limit(ceilings.get(period), measure) else {
                    continue;
                };
                let used = spent.get(measure);
                if used >= limit || stands(spent, measure, limit, used) {
                    return Some((period, measure, limit, used));
                }
            }
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const DAY_MS: u64 = 86_400_000;
    /// 2025-06-14 (a Saturday) 13:30 UTC.
    const SAT: u64 = 1_749_907_800_000;

    #[test]
    fn periods_roll_on_their_own_and_never_back() {
        let mut t = Tally::default();
        t.roll(SAT);
        t.add(&Delta {
            calls: 3,
            ..Delta::default()
        });
        // Sunday: a new day, the same week and month.
        t.roll(SAT + DAY_MS);
        assert_eq!((t.day.calls, t.week.calls, t.month.calls), (0, 3, 3));
        assert_eq!(t.day.period, "2025-06-15");
        // Monday: a new week too.
        t.roll(SAT + 2 * DAY_MS);
        assert_eq!((t.day.calls, t.week.calls, t.month.calls), (0, 0, 3));
        // A clock behind the stored periods counts into them.
        t.add(&Delta {
            calls: 1,
            ..Delta::default()
        });
        t.roll(SAT);
        assert_eq!(t.day.period, "2025-06-16");
        assert_eq!(t.day.calls, 1);
        // July: everything anew.
        t.roll(SAT + 20 * DAY_MS);
        assert_eq!(
            t.month,
            Spent {
                period: "2025-07".into(),
                ..Spent::default()
            }
        );
    }

    #[test]
    fn a_ceiling_is_passed_at_it_or_past_it_and_a_raise_replaces_it() {
        let mut ceilings = PeriodCeilings::default();
        ceilings.day.calls = Some(2);
        ceilings.week.cost_micros = Some(1_000);
        let mut t = Tally::default();
        t.roll(SAT);
        let call = |cost| Delta {
            calls: 1,
            cost_micros: cost,
            ..Delta::default()
        };
        assert_eq!(t.passes(&ceilings, &call(600)), None);
        t.add(&call(600));
        assert_eq!(
            t.passes(&ceilings, &call(600)),
            Some((Period::Week, Measure::Cost, 1_000, 600))
        );
        assert_eq!(t.passes(&ceilings, &call(400)), None);
        t.add(&call(400));
        assert_eq!(
            t.passes(&ceilings, &call(0)),
            Some((Period::Day, Measure::Calls, 2, 2))
        );
        assert!(t.at_ceiling(&ceilings).is_some());
        t.day.raised.calls = Some(10);
        assert_eq!(
            t.passes(&ceilings, &call(0)),
            Some((Period::Week, Measure::Cost, 1_000, 1_000)),
            "at the cost ceiling, even a free call is refused"
        );
        t.week.raised.cost_micros = Some(5_000);
        assert_eq!(t.passes(&ceilings, &call(0)), None);
        // A refusal at a ceiling holds until a higher one is in force.
        t.week.reached.insert(Measure::Cost, 5_000);
        assert!(t.at_ceiling(&ceilings).is_some());
        t.week.raised.cost_micros = Some(6_000);
        assert_eq!(t.at_ceiling(&ceilings), None);
    }
}
