//! Budgets and circuit breakers: hard caps on what a session may spend.
//!
//! Four caps, each optional:
//!
//! | cap     | what counts against it                                                   |
//! |---------|--------------------------------------------------------------------------|
//! | `cost`  | the estimated cost of the session's calls that ran (each tool's `cost` from its manifest) plus the model cost the brain reported (`usage_reported`) |
//! | `calls` | the session's calls that ran (`call_started`): calls refused by a hook or by the budget do not count |
//! | `wall`  | the time since the session started (paused time included)                |
//! | `tokens` | the model tokens (in plus out) the brain reported (`usage_reported`): a report that takes the session past it pauses the session, and no call runs once it is reached |
//!
//! A parent session's cost, calls and tokens also count what it carved out of them
//! for its children (`child_spawned`): the children's caps plus the
//! parent's own use stay within the parent's cap (see `session/family.rs`).
//!
//! Where caps come from: the config's `[budgets.role.<role>]` applies to each
//! session of that role on its own (it is a per-session cap, not a pool shared
//! by all the role's sessions); the session's own caps are given when it
//! starts ([`StartSession::budget`]). When both set a cap, the lower one holds,
//! so whoever starts a session can only tighten the operator's caps. An
//! operator raises (or sets) a cap of one session with `glovebox session
//! budget` ([`raise`], logged as `cap_raised`); a raised cap replaces both.
//!
//! Before a call runs, the guard (in the call pipeline, under the session's
//! lock, so concurrent calls cannot slip past together) projects the session
//! past this call: its spending so far, plus the estimated cost of the calls
//! already in flight (each `call_started` records it), plus this call's; its
//! calls run or running so far plus one; its age. If a projection goes past a cap, the call is
//! denied by the hook `budget` with a reason naming the cap and the figures,
//! and alternatives; `budget_exceeded` is logged and the session pauses. At
//! `warn_at` (80% by default) of a cap, a `budget_warning` is logged, once per
//! cap (again after the cap is raised).
//!
//! Costs are kept as integer millionths ("micros") in the log so that sums are
//! exact; the config, the CLI and reports use decimal units.
//!
//! [`StartSession::budget`]: crate::session::StartSession::budget

use serde::{Deserialize, Serialize};

use crate::ceilings;
use crate::manifest::BudgetsConfig;
use crate::session::{Event, EventKind, SessionError, SessionState, SessionStatus, Sessions};

// The caps and the cost conversion are value types of the config: they live in
// `glovebox-manifest` (the bottom crate) and are re-exported here, at their old paths.
pub use glovebox_manifest::{BudgetCaps, Cap, to_micros, units};
// The budget part of a session's state is held by the state: it lives below the
// sessions and is re-exported here, at its old path.
pub use crate::values::BudgetState;

/// The name of the "hook" that denies calls past a cap.
pub const BUDGET_HOOK: &str = "budget";

/// How much of each cap a session has used.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Used {
    pub cost_micros: u64,
    pub calls: u64,
    pub wall_ms: u64,
    pub tokens: u64,
}

impl Used {
    /// The session's own spending plus, for cost and calls, what it
    /// carved out for its children.
    pub fn of(state: &SessionState, now_ms: u64) -> Used {
        let c = &state.counters;
        Used {
            cost_micros: c
                .cost_micros
                .saturating_add(c.model_cost_micros)
                .saturating_add(state.carved(Cap::Cost)),
            calls: c.calls_run.saturating_add(state.carved(Cap::Calls)),
            wall_ms: now_ms.saturating_sub(state.header.created_at_ms),
            tokens: c
                .tokens_in
                .saturating_add(c.tokens_out)
                .saturating_add(state.carved(Cap::Tokens)),
        }
    }

    /// [`Used::of`] plus the estimated cost of the calls in flight: what
    /// the session has spent or committed. (Calls in flight are in `calls`
    /// already: a call counts from its `call_started`.)
    pub fn committed(state: &SessionState, now_ms: u64) -> Used {
        let mut used = Used::of(state, now_ms);
        used.cost_micros = used.cost_micros.saturating_add(in_flight_cost(state));
        used
    }

    pub fn get(&self, cap: Cap) -> u64 {
        match cap {
            Cap::Cost => self.cost_micros,
            Cap::Calls => self.calls,
            Cap::Wall => self.wall_ms,
            Cap::Tokens => self.tokens,
        }
    }
}

/// The estimated cost of the calls `state` has in flight (each started
/// call's `cost_micros`), in micros.
pub fn in_flight_cost(state: &SessionState) -> u64 {
    state
        .in_flight
        .values()
        .map(|c| c.cost_micros)
        .fold(0u64, u64::saturating_add)
}

/// One cap in force on a session, and where it comes from.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Limit {
    pub cap: Cap,
    pub limit: u64,
    /// `session`, `role <role>` or `operator`.
    pub source: String,
}

/// The caps in force on `state` under `config`: an operator's raise, else the
/// lower of the session's own cap and its role's.
pub fn effective(state: &SessionState, config: &BudgetsConfig) -> Vec<Limit> {
    let role = config.roles.get(&state.header.role);
    let b = &state.budget;
    Cap::ALL
        .into_iter()
        .filter_map(|cap| {
            if let Some(limit) = b.raised.get(cap) {
                return Some(Limit {
                    cap,
                    limit,
                    source: "operator".into(),
                });
            }
            let own = b.caps.get(cap).map(|l| (l, "session".to_string()));
            let by_role = role
                .and_then(|r| r.get(cap))
                .map(|l| (l, format!("role {}", state.header.role)));
            let (limit, source) = match (own, by_role) {
                (Some(a), Some(b)) => {
                    if b.0 < a.0 {
                        b
                    } else {
                        a
                    }
                }
                (a, b) => a.or(b)?,
            };
            Some(Limit { cap, limit, source })
        })
        .collect()
}

/// A call the budget refuses: which cap, and the figures.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Breach {
    pub cap: Cap,
    pub limit: u64,
    pub source: String,
    /// Used before this call (cost and calls: spent and in flight).
    pub used: u64,
    /// What the session would reach with this call.
    pub projected: u64,
}

impl Breach {
    /// Why the call is refused, with the figures.
    pub fn reason(&self, session: &SessionState) -> String {
        let cap = self.cap;
        let from = &self.source;
        match cap {
            Cap::Cost => format!(
                "budget exceeded: session {} has a cost cap of {} ({from}); it has spent or committed {}, and this call (estimated {}) would take it to {}",
                session.label(),
                cap.show(self.limit),
                cap.show(self.used),
                cap.show(self.projected - self.used),
                cap.show(self.projected)
            ),
            Cap::Calls => format!(
                "budget exceeded: session {} has a cap of {} calls ({from}); {} ran, are running or are carved for its children, and this call would be call {}",
                session.label(),
                self.limit,
                self.used,
                self.projected
            ),
            Cap::Wall => format!(
                "budget exceeded: session {} has a wall-time cap of {} ({from}); it has been running for {}",
                session.label(),
                cap.show(self.limit),
                cap.show(self.used)
            ),
            Cap::Tokens => format!(
                "budget exceeded: session {} has a cap of {} model tokens ({from}); it has used {} (reported, or carved for its children)",
                session.label(),
                self.limit,
                self.used
            ),
        }
    }

    /// What the agent can do instead.
    pub fn alternatives(&self, session: &SessionState) -> Vec<String> {
        let id = &session.header.id;
        let flag = match self.cap {
            Cap::Cost => "--cost <higher>",
            Cap::Calls => "--calls <higher>",
            Cap::Wall => "--wall <longer>",
            Cap::Tokens => "--tokens <higher>",
        };
        vec![
            format!(
                "ask an operator to raise the {} cap: `glovebox session budget {id} {flag}` (the session resumes once it is within its caps)",
                self.cap
            ),
            format!(
                "hand off the remaining work to another session or role: `glovebox session handoff {id} --kind continuation ...` and start a fresh session with its own budget"
            ),
            "narrow the work: finish what is essential with fewer or cheaper calls once the cap is raised, and end the session".to_string(),
        ]
    }

    /// The denial a call past the cap gets, as the hook `budget` would give
    /// it (the host makes the call's error of it).
    pub fn denial(&self, session: &SessionState) -> Denial {
        Denial {
            hook: BUDGET_HOOK.to_string(),
            pattern: format!("budget:{}", self.cap),
            reason: self.reason(session),
            alternatives: self.alternatives(session),
        }
    }
}

/// Why a call past a cap is refused, in the words of a hook's denial: the
/// `call_decided` record and the call's error are made of it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Denial {
    /// [`BUDGET_HOOK`].
    pub hook: String,
    /// `budget:<cap>`.
    pub pattern: String,
    pub reason: String,
    pub alternatives: Vec<String>,
}

/// Whether a call of estimated cost `call_cost` (micros) may run in `state`
/// now: its spending, the estimated cost of its calls in flight and what it
/// carved for its children, plus this call, within each cap.
pub fn check_call(
    state: &SessionState,
    config: &BudgetsConfig,
    now_ms: u64,
    call_cost: u64,
) -> Option<Breach> {
    let used = Used::committed(state, now_ms);
    effective(state, config).into_iter().find_map(|l| {
        let (before, projected) = match l.cap {
            Cap::Cost => (used.cost_micros, used.cost_micros.saturating_add(call_cost)),
            // Calls in flight count from their `call_started` (in
            // `calls_run`) already.
            Cap::Calls => (used.calls, used.calls.saturating_add(1)),
            // Time already spent, tokens already used: at the cap, no
            // more calls.
            Cap::Wall => (used.wall_ms, used.wall_ms.saturating_add(1)),
            Cap::Tokens => (used.tokens, used.tokens.saturating_add(1)),
        };
        (projected > l.limit).then_some(Breach {
            cap: l.cap,
            limit: l.limit,
            source: l.source,
            used: before,
            projected,
        })
    })
}

/// The `budget_warning`s due for `state` having used `used`.
pub fn warnings(state: &SessionState, config: &BudgetsConfig, used: &Used) -> Vec<EventKind> {
    effective(state, config)
        .into_iter()
        .filter(|l| !state.budget.warned.contains(&l.cap))
        .filter_map(|l| {
            let value = used.get(l.cap);
            let threshold = (l.limit as f64) * config.warn_at;
            (l.limit > 0 && value as f64 >= threshold).then(|| EventKind::BudgetWarning {
                cap: l.cap,
                used: value,
                limit: l.limit,
                percent: value.saturating_mul(100) / l.limit,
            })
        })
        .collect()
}

/// Logs the warnings due now for session `id` (at most once per cap).
pub fn upkeep(
    sessions: &Sessions,
    config: &BudgetsConfig,
    id: &str,
) -> Result<Vec<Event>, SessionError> {
    sessions
        .append_with(id, |state, now| {
            let due = if state.header.status.is_live() {
                warnings(state, config, &Used::of(state, now))
            } else {
                Vec::new()
            };
            (due, ())
        })
        .map(|(events, ())| events)
}

/// What the brain reports of its own usage (the model Glovebox cannot see).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct UsageReport {
    #[serde(default)]
    pub tokens_in: u64,
    #[serde(default)]
    pub tokens_out: u64,
    /// Model cost in decimal units.
    #[serde(default)]
    pub cost: f64,
    #[serde(default)]
    pub model: Option<String>,
    /// The brain's context now, in tokens, and its window (both, or
    /// neither): the detector's `context` rule flags a session at
    /// `[detector] context_fraction` of it.
    #[serde(default)]
    pub context_tokens: Option<u64>,
    #[serde(default)]
    pub context_limit: Option<u64>,
}

/// Logs a usage report into session `id_or_name`; its model cost counts
/// toward the cost cap. A report that takes the session past its cost cap
/// logs `budget_exceeded` and pauses an active session. It counts toward
/// the ceilings across sessions of its principal, project and role too
/// (cost and tokens): one it takes to its limit logs `ceiling_reached` and
/// pauses the session (and, the period's first time, the scope's other
/// active sessions).
pub fn report_usage(
    sessions: &Sessions,
    config: &BudgetsConfig,
    id_or_name: &str,
    report: &UsageReport,
) -> Result<Vec<Event>, SessionError> {
    let cost_micros = checked_cost(report)?;
    let kind = EventKind::UsageReported {
        tokens_in: report.tokens_in,
        tokens_out: report.tokens_out,
        cost_micros,
        model: report.model.clone(),
        context_tokens: report.context_tokens,
        context_limit: report.context_limit,
    };
    let tokens = report.tokens_in.saturating_add(report.tokens_out);
    let (events, charged) = sessions.append_with(id_or_name, |state, now| {
        // A report the session's log has no room for is refused before
        // it is charged (`quotas.session_events`, `session_bytes`).
        if let Err(e) = sessions.check_log_room(state, &kind) {
            return (Vec::new(), Err(e));
        }
        // The spend happened: it is charged to the ceilings across sessions
        // before it is logged (a crash between them over-counts), and a
        // ceiling it reaches pauses the session as a cap would.
        let scopes = ceilings::scopes_of(state);
        let charged = match sessions
            .tallies()
            .charge_usage(&scopes, cost_micros, tokens, now)
        {
            Ok(charged) => charged,
            Err(e) => return (Vec::new(), Err(e.into())),
        };
        let mut events = vec![kind];
        let mut used = Used::of(state, now);
        used.cost_micros = used.cost_micros.saturating_add(cost_micros);
        used.tokens = used.tokens.saturating_add(tokens);
        events.extend(warnings(state, config, &used));
        events.extend(charged.crossed.iter().map(ceilings::warning_event));
        let active = state.header.status == SessionStatus::Active;
        if active {
            events.extend(over_model_cap(state, config, &used));
        }
        if let Some(breach) = &charged.reached {
            // Logged whatever the session's status (it is what notifies);
            // only an active session can pause.
            events.push(ceilings::reached_event(breach, None, breach.first));
            let paused = events.iter().any(|e| matches!(e, EventKind::Paused { .. }));
            if active && !paused {
                events.push(ceilings::paused_event(breach));
            }
        }
        (events, Ok(charged))
    })?;
    let charged = charged?;
    // The period's first report at a ceiling pauses the scope's other
    // sessions too, as the host.
    if let Some(breach) = charged.reached.filter(|b| b.first)
        && let Some(event) = events.first()
    {
        let except = event.session.clone();
        crate::session::actor::scoped(crate::session::actor::HOST, || {
            ceilings::pause_scope(sessions, &breach, &except)
        })?;
    }
    // A report of the context is judged at once (the `context` rule), as
    // a call is after it ends.
    if report.context_tokens.is_some()
        && let Some(event) = events.first()
    {
        let detector = &sessions.config.detector;
        if detector.enabled {
            crate::detect::flags(sessions, detector, &event.session)?;
        }
    }
    Ok(events)
}

/// A usage report's checks (a model name, a context given whole and in its
/// window), and its cost in micros.
fn checked_cost(report: &UsageReport) -> Result<u64, SessionError> {
    let cost_micros = to_micros(report.cost)
        .map_err(|e| SessionError::InvalidInput(format!("bad usage report: {e}")))?;
    if let Some(model) = &report.model
        && (model.len() > 256 || model.chars().any(char::is_control))
    {
        return Err(SessionError::InvalidInput(
            "bad usage report: the model name must be at most 256 characters, none a control character".into(),
        ));
    }
    match (report.context_tokens, report.context_limit) {
        (Some(_), None) | (None, Some(_)) => {
            return Err(SessionError::InvalidInput(
                "bad usage report: give `context_tokens` and `context_limit` together (the tokens in the context now, and the window's size)".into(),
            ));
        }
        (Some(tokens), Some(limit)) if limit == 0 || tokens > limit.saturating_mul(2) => {
            return Err(SessionError::InvalidInput(format!(
                "bad usage report: a context of {tokens} tokens in a window of {limit}: `context_limit` is the window's size in tokens, above 0"
            )));
        }
        _ => {}
    }
    Ok(cost_micros)
}

/// The events of a session whose model cost or tokens, `used` with the
/// report counted, are past a cap: the cap's and the pause's; none when
/// no model cap is passed.
fn over_model_cap(state: &SessionState, config: &BudgetsConfig, used: &Used) -> Vec<EventKind> {
    let over = effective(state, config)
        .into_iter()
        .find(|l| matches!(l.cap, Cap::Cost | Cap::Tokens) && used.get(l.cap) > l.limit);
    let Some(l) = over else {
        return Vec::new();
    };
    let what = match l.cap {
        Cap::Tokens => "model tokens",
        _ => "model cost",
    };
    let reason = format!(
        "budget exceeded: the {what} reported take session {} to {}, past its {} cap of {} ({})",
        state.label(),
        l.cap.show(used.get(l.cap)),
        l.cap,
        l.cap.show(l.limit),
        l.source
    );
    vec![
        EventKind::BudgetExceeded {
            cap: l.cap,
            used: used.get(l.cap),
            limit: l.limit,
            call_id: None,
        },
        EventKind::Paused { reason, by: None },
    ]
}

/// What [`raise`] did.
#[derive(Clone, Debug, Serialize)]
pub struct Raised {
    pub events: Vec<Event>,
    /// The session was paused by its budget and is within its caps again: resumed.
    pub resumed: bool,
    /// Caps the session is still past (it stays paused).
    pub still_past: Vec<Cap>,
    pub state: SessionState,
}

/// An operator sets new caps on one session (`cap_raised`, one per cap). A
/// session the budget paused resumes if it is within all its caps again.
pub fn raise(
    sessions: &Sessions,
    config: &BudgetsConfig,
    id_or_name: &str,
    caps: &BudgetCaps,
) -> Result<Raised, SessionError> {
    if caps.is_empty() {
        return Err(SessionError::InvalidInput(
            "give at least one cap to set: --cost, --calls, --wall or --tokens".into(),
        ));
    }
    let (events, still_past) = sessions.append_with(id_or_name, |state, now| {
        let before = effective(state, config);
        let mut events = Vec::new();
        let mut after = state.clone();
        for cap in Cap::ALL {
            if let Some(to) = caps.get(cap) {
                events.push(EventKind::CapRaised {
                    cap,
                    from: before.iter().find(|l| l.cap == cap).map(|l| l.limit),
                    to,
                });
                after.budget.raised.set(cap, Some(to));
            }
        }
        let used = Used::of(state, now);
        let still_past: Vec<Cap> = effective(&after, config)
            .into_iter()
            .filter(|l| match l.cap {
                Cap::Cost => used.cost_micros > l.limit,
                Cap::Calls | Cap::Wall | Cap::Tokens => used.get(l.cap) >= l.limit,
            })
            .map(|l| l.cap)
            .collect();
        if state.header.status == SessionStatus::Paused
            && state.budget.exceeded.is_some()
            && still_past.is_empty()
        {
            events.push(EventKind::Resumed);
        }
        (events, still_past)
    })?;
    let resumed = events.iter().any(|e| matches!(e.kind, EventKind::Resumed));
    Ok(Raised {
        events,
        resumed,
        still_past,
        state: sessions.show(id_or_name)?,
    })
}

/// A session's budget as reported by `glovebox session budget`.
#[derive(Clone, Debug, Serialize)]
pub struct Status {
    pub session: String,
    pub name: Option<String>,
    pub role: String,
    pub status: SessionStatus,
    pub limits: Vec<LimitStatus>,
    pub warned: Vec<Cap>,
    pub exceeded: Option<Cap>,
    pub tool_cost: f64,
    pub model_cost: f64,
    pub tokens_in: u64,
    pub tokens_out: u64,
}

/// One cap's limit and use.
#[derive(Clone, Debug, Serialize)]
pub struct LimitStatus {
    pub cap: Cap,
    pub limit: u64,
    pub used: u64,
    pub source: String,
    /// The limit and use as people read them.
    pub shown: String,
}

/// The budget of session `id_or_name`: caps in force, use, warnings.
pub fn status(
    sessions: &Sessions,
    config: &BudgetsConfig,
    id_or_name: &str,
) -> Result<Status, SessionError> {
    let state = sessions.show(id_or_name)?;
    let now = sessions.clock_ms().max(state.header.updated_at_ms);
    let used = Used::of(&state, now);
    let limits = effective(&state, config)
        .into_iter()
        .map(|l| {
            let u = used.get(l.cap);
            LimitStatus {
                shown: format!("{} of {}", l.cap.show(u), l.cap.show(l.limit)),
                cap: l.cap,
                limit: l.limit,
                used: u,
                source: l.source,
            }
        })
        .collect();
    let c = &state.counters;
    Ok(Status {
        session: state.header.id.clone(),
        name: state.header.name.clone(),
        role: state.header.role.to_string(),
        status: state.header.status,
        limits,
        warned: state.budget.warned.clone(),
        exceeded: state.budget.exceeded,
        tool_cost: units(c.cost_micros),
        model_cost: units(c.model_cost_micros),
        tokens_in: c.tokens_in,
        tokens_out: c.tokens_out,
    })
}
