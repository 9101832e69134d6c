//! A ceiling passed, in words: the reason a call or a new session is
//! refused, and what to do instead (the `budget` hook's denial is made of
//! them: see `crate::ceilings`).

use serde::Serialize;

use crate::manifest::{Measure, Period, Scope, Window};

/// A ceiling a call (or a usage report, or a new session) passes.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Breach {
    pub scope: Scope,
    pub period: Period,
    /// The period it is counted over, and when it ends.
    pub window: Window,
    pub measure: Measure,
    pub limit: u64,
    /// The limit is an operator's raise for this period, not the config's.
    pub raised: bool,
    /// What the scope's sessions used (and, for calls in flight, committed)
    /// before this call.
    pub used: u64,
    /// What they would reach with it.
    pub projected: u64,
    /// This refusal is the period's first at this ceiling: it is the one
    /// that notifies and pauses the scope's other sessions.
    pub first: bool,
}

impl Breach {
    /// `budgets.principal.alice.day.cost`.
    pub fn key(&self) -> String {
        format!("{}.{}", self.scope.key(self.period), self.measure)
    }

    /// The pattern of the `budget` hook's denial: `ceiling:principal:day:cost`.
    pub fn pattern(&self) -> String {
        format!(
            "ceiling:{}:{}:{}",
            self.scope.kind, self.period, self.measure
        )
    }

    /// `the daily cost ceiling of principal `alice``.
    pub fn ceiling(&self) -> String {
        format!(
            "the {} {} ceiling of {}",
            self.period.adjective(),
            self.measure,
            self.scope
        )
    }

    /// Where the limit comes from, with its key.
    fn source(&self) -> String {
        if self.raised {
            format!(
                "raised by an operator for this {}; `{}` in the config",
                self.period,
                self.key()
            )
        } else {
            format!("`{}`", self.key())
        }
    }

    /// The figures: the ceiling, the use, and when the period ends.
    fn figures(&self) -> String {
        let (m, period) = (self.measure, &self.window.id);
        let used = match m {
            Measure::Cost => format!(
                "its sessions spent or committed {} in {} {period}",
                m.show(self.used),
                self.period
            ),
            Measure::Calls => format!(
                "its sessions ran or are running {} in {} {period}",
                m.show(self.used),
                self.period
            ),
            Measure::Tokens => format!(
                "its sessions reported {} in {} {period}",
                m.show(self.used),
                self.period
            ),
        };
        format!(
            "{} is {} ({}); {used}",
            self.ceiling(),
            m.show(self.limit),
            self.source()
        )
    }

    /// What happened, with the figures and when the period ends.
    pub fn summary(&self) -> String {
        format!(
            "spend ceiling reached: {}; the {} ends {}",
            self.figures(),
            self.period,
            self.window.ends()
        )
    }

    /// Why a call is refused.
    pub fn reason(&self) -> String {
        let m = self.measure;
        let this = match m {
            Measure::Cost if self.projected > self.used => format!(
                ", and this call (estimated {}) would take it to {}",
                m.show(self.projected - self.used),
                m.show(self.projected)
            ),
            Measure::Calls if self.used < self.limit => {
                format!(", and this call would be call {}", self.projected)
            }
            _ => String::new(),
        };
        format!(
            "spend ceiling reached: {}{this}; no call of its sessions runs until the {} ends ({}) or an operator raises the ceiling",
            self.figures(),
            self.period,
            self.window.ends()
        )
    }

    /// Why a new session is refused.
    pub fn start_reason(&self) -> String {
        format!(
            "spend ceiling reached: {}; no new session of {} starts until the {} ends ({}) or an operator raises the ceiling: `{}`",
            self.figures(),
            self.scope,
            self.period,
            self.window.ends(),
            self.raise_command()
        )
    }

    /// The command that raises this ceiling for the current period.
    pub fn raise_command(&self) -> String {
        format!(
            "glovebox budget raise {} {} --period {} --{} <higher>",
            self.scope.kind, self.scope.name, self.period, self.measure
        )
    }

    /// What the agent can do instead.
    pub fn alternatives(&self, session: &str) -> Vec<String> {
        vec![
            format!(
                "ask an operator to raise the ceiling for this {}: `{}` (the sessions the ceiling paused resume)",
                self.period,
                self.raise_command()
            ),
            format!(
                "wait for the {} to end ({}): the tally starts afresh then, and an operator lifts the pause (`glovebox budget lift {} {}`)",
                self.period,
                self.window.ends(),
                self.scope.kind,
                self.scope.name
            ),
            format!(
                "hand off the remaining work so it can carry on later: `glovebox session handoff {session} --kind continuation ...`"
            ),
        ]
    }
}
