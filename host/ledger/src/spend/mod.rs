//! Spend tallies across sessions, in the store: what every session of a
//! principal, a project and a role spent together this day, week and
//! month, against the ceilings the config sets (`[budgets.principal.NAME.day]`
//! and the like), and the events and bytes an agent principal added to its
//! sessions' logs today (`[quotas] principal_events_per_day`,
//! `principal_bytes_per_day`).
//!
//! Why in the store: a session's own caps are folded from its own log, so
//! a new session starts from zero, and a ceiling must hold across sessions,
//! across restarts, and across the hosts sharing a NATS store. So each
//! scope has one record (see [`tally`]) in bucket `spend_tallies`, key
//! `<kind>/<name>`, holding its day, week and month; every change to it is
//! a compare-and-set over the value this process last saw
//! ([`Storage::put_if_unsynced`]), so of two hosts charging the last call
//! under a ceiling, one wins and the other reads again and is refused.
//!
//! What counts is what the per-session budget counts, fed from the same
//! events: a call that runs (`call_started`) adds one call and its tool's
//! estimated cost; a usage report (`usage_reported`) adds the model cost
//! and the tokens (in and out).
//!
//! When: a call is charged at admission, under its session's lock, before
//! its `call_started` is appended (the call pipeline's record stage), and
//! only if every ceiling of its principal, project and role has room for
//! it ([`Tallies::admit_call`]); the settle corrects nothing, since what a
//! call that ran counts is its estimate (its `call_finished` carries the
//! same figure). A crash between the charge and the append leaves the call
//! counted though it never ran: the tallies may over-count the calls in
//! flight at a crash, never under-count. The same holds for a record that
//! failed: its charge is not given back, since the write may have reached
//! the log. A usage report is charged before it is appended, for the same
//! reason.
//!
//! Cost on the call path: one compare-and-set per scope with ceilings (none
//! when no ceiling is configured), and no read: this process keeps the
//! last value it saw of each tally it charges, and reads again only when
//! the compare fails (another host wrote). On the embedded stores the write
//! is not flushed on its own: the call's record, appended durably right
//! after it, makes it durable (one flush for both). On NATS it is one
//! round trip per scope.
//!
//! Events and bytes are counted on every append an agent causes in its own
//! sessions (see `events.rs`), batched in this process and written with the
//! next charge of the principal's tally, or once a batch is large or old
//! enough.
//!
//! The embedded backends hold one process per data dir, so the compare
//! never fails there; it is what keeps the tallies whole on NATS.

mod breach;
mod events;
pub mod tally;
#[cfg(test)]
mod tests;

use std::collections::{BTreeSet, HashMap};
use std::sync::{Arc, Mutex, MutexGuard, RwLock};

use crate::manifest::{
    Ceilings, HostConfig, Measure, Period, PeriodCeilings, PrincipalKind, QuotasConfig, Scope,
};
use crate::storage::{Storage, StorageError, Swap};

pub use breach::Breach;
pub use events::{BATCH_BYTES, BATCH_EVENTS, BATCH_MS, OverQuota};
pub use tally::{BUCKET, Delta, Spent, Tally};

/// Compare-and-set rounds a charge tries before giving up.
const TRIES: usize = 32;

/// What the tallies are checked against: the ceilings, the warning
/// threshold, the per-principal daily quotas, and who is an operator (not
/// held to those quotas). Taken from the host's config at open and at every
/// reload.
#[derive(Clone, Debug)]
pub struct SpendConfig {
    pub ceilings: Ceilings,
    /// `[budgets] warn_at`.
    pub warn_at: f64,
    pub quotas: QuotasConfig,
    /// The declared operators' names.
    pub operators: BTreeSet<String>,
}

impl Default for SpendConfig {
    fn default() -> Self {
        SpendConfig {
            ceilings: Ceilings::default(),
            warn_at: 0.8,
            quotas: QuotasConfig::default(),
            operators: BTreeSet::new(),
        }
    }
}

impl SpendConfig {
    pub fn of(config: &HostConfig) -> SpendConfig {
        SpendConfig {
            ceilings: config.budgets.ceilings.clone(),
            warn_at: config.budgets.warn_at,
            quotas: config.quotas.clone(),
            operators: config
                .principals
                .iter()
                .filter(|p| p.principal.kind == PrincipalKind::Operator)
                .map(|p| p.principal.name.clone())
                .collect(),
        }
    }

    /// Whether the principal `name` is an agent (held to the per-principal
    /// quotas): not a declared operator, nor the operator at the command
    /// line (`cli:<uid>`), nor the host itself.
    pub fn is_agent(&self, name: &str) -> bool {
        // `host`: the actor of the host's own events (`session::actor::HOST`).
        !self.operators.contains(name) && !name.starts_with("cli:") && name != "host"
    }
}

/// A ceiling's warning threshold crossed by a charge: what the
/// `ceiling_warning` event says.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Crossed {
    pub scope: Scope,
    pub period: Period,
    pub period_id: String,
    pub measure: Measure,
    pub used: u64,
    pub limit: u64,
}

/// What [`Tallies::admit_call`] decided.
#[derive(Debug)]
pub enum Admission {
    /// The call is charged to every scope with ceilings: it runs. The
    /// warning thresholds it crossed, each once per ceiling and period.
    Run(Vec<Crossed>),
    /// A ceiling has no room for it: nothing was charged.
    Refused(Breach),
}

/// What a usage report did to the tallies.
#[derive(Debug, Default)]
pub struct Charged {
    pub crossed: Vec<Crossed>,
    /// A ceiling the report took the scope to or past.
    pub reached: Option<Breach>,
}

/// One scope's tally as this process last saw it.
#[derive(Default)]
struct Cell {
    /// The store's generation when `stored` was read; `None`: read again.
    generation: Option<u64>,
    /// The bytes the store holds (as last read or written here).
    stored: Option<Vec<u8>>,
    tally: Tally,
    /// Events and bytes counted here and not yet written (see `events.rs`).
    pending: Delta,
    pending_since_ms: u64,
}

/// The tallies of one store, and what this process knows of them.
pub struct Tallies {
    storage: Arc<dyn Storage>,
    config: RwLock<Arc<SpendConfig>>,
    cells: Mutex<HashMap<String, Arc<Mutex<Cell>>>>,
}

impl std::fmt::Debug for Tallies {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Tallies").finish_non_exhaustive()
    }
}

/// The key of `scope`'s tally.
fn key_of(scope: &Scope) -> String {
    format!("{}/{}", scope.kind, scope.name)
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

impl Tallies {
    pub fn new(storage: Arc<dyn Storage>) -> Tallies {
        Tallies {
            storage,
            config: RwLock::new(Arc::new(SpendConfig::default())),
            cells: Mutex::new(HashMap::new()),
        }
    }

    /// Checks against `config` from now on (at open, and at each reload).
    pub fn configure(&self, config: SpendConfig) {
        *self
            .config
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = Arc::new(config);
    }

    pub fn config(&self) -> Arc<SpendConfig> {
        self.config
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone()
    }

    fn cell(&self, key: &str) -> Arc<Mutex<Cell>> {
        lock(&self.cells)
            .entry(key.to_string())
            .or_default()
            .clone()
    }

    /// Reads `key` into `cell` unless what it holds is current.
    fn load(&self, cell: &mut Cell, key: &str) -> Result<(), StorageError> {
        let generation = self.storage.generation();
        if cell.generation == Some(generation) {
            return Ok(());
        }
        let stored = self.storage.get(BUCKET, key)?;
        cell.tally = decode(key, stored.as_deref())?;
        cell.stored = stored;
        cell.generation = Some(generation);
        Ok(())
    }

    /// The tally of `cell` as of `now_ms` (periods rolled), read if needed.
    fn view(&self, cell: &mut Cell, key: &str, now_ms: u64) -> Result<Tally, StorageError> {
        self.load(cell, key)?;
        let mut tally = cell.tally.clone();
        tally.roll(now_ms);
        Ok(tally)
    }

    /// Writes `next` over what `cell` last saw; `false` (and `cell` marked
    /// to be read again) when another writer got there first.
    fn store(&self, cell: &mut Cell, key: &str, next: Tally) -> Result<bool, StorageError> {
        let bytes = encode(&next)?;
        let swap = Swap::new(cell.stored.as_deref(), Some(&bytes));
        if self.storage.put_if_unsynced(BUCKET, key, swap)? {
            cell.stored = Some(bytes);
            cell.tally = next;
            Ok(true)
        } else {
            cell.generation = None;
            Ok(false)
        }
    }

    /// Changes `key`'s tally with `change` (given it as of `now_ms`) until
    /// the compare-and-set holds; returns what `change` returned last.
    fn update<R>(
        &self,
        cell: &mut Cell,
        key: &str,
        now_ms: u64,
        mut change: impl FnMut(&mut Tally) -> R,
    ) -> Result<R, StorageError> {
        for _ in 0..TRIES {
            let mut next = self.view(cell, key, now_ms)?;
            let out = change(&mut next);
            if self.store(cell, key, next)? {
                return Ok(out);
            }
        }
        Err(contended(key))
    }

    /// The scopes among `scopes` with ceilings, each with its key and
    /// ceilings, in key order (the order their cells are locked in).
    fn ceiled(
        &self,
        config: &SpendConfig,
        scopes: &[Scope],
    ) -> Vec<(Scope, String, PeriodCeilings)> {
        let mut out: Vec<_> = scopes
            .iter()
            .filter_map(|s| {
                let ceilings = config.ceilings.of(s)?;
                Some((s.clone(), key_of(s), ceilings.clone()))
            })
            .collect();
        out.sort_by(|a, b| a.1.cmp(&b.1));
        out.dedup_by(|a, b| a.1 == b.1);
        out
    }

    /// Admits a call of estimated cost `cost_micros` for the sessions of
    /// `scopes` (a session's principal, project and role) at `now_ms`: if
    /// every ceiling of every scope has room for it, it is charged to each
    /// (and the events batched for the principal are written with it);
    /// else nothing is charged, and the first ceiling it would pass is the
    /// refusal (marked reached for the period, so no new session starts).
    pub fn admit_call(
        &self,
        scopes: &[Scope],
        cost_micros: u64,
        now_ms: u64,
    ) -> Result<Admission, StorageError> {
        let config = self.config();
        let ceiled = self.ceiled(&config, scopes);
        if ceiled.is_empty() {
            return Ok(Admission::Run(Vec::new()));
        }
        let delta = Delta {
            calls: 1,
            cost_micros,
            ..Delta::default()
        };
        let cells: Vec<Arc<Mutex<Cell>>> =
            ceiled.iter().map(|(_, key, _)| self.cell(key)).collect();
        let mut guards: Vec<MutexGuard<'_, Cell>> = cells.iter().map(|c| lock(c)).collect();
        // Looked at first, all of them: a refusal charges nothing.
        for (i, (scope, key, ceilings)) in ceiled.iter().enumerate() {
            let tally = self.view(&mut guards[i], key, now_ms)?;
            if let Some(passed) = tally.passes(ceilings, &delta) {
                let breach = self.refuse(&mut guards[i], scope, key, passed, &delta, now_ms)?;
                return Ok(Admission::Refused(breach));
            }
        }
        let mut crossed = Vec::new();
        for i in 0..ceiled.len() {
            let (scope, key, ceilings) = &ceiled[i];
            let charged = self.charge_one(&mut guards[i], scope, key, ceilings, &delta, now_ms)?;
            match charged {
                Ok(mut warned) => crossed.append(&mut warned),
                Err(passed) => {
                    // Another host spent meanwhile: give back what this
                    // call was charged so far, and refuse it.
                    for (j, (_, key, _)) in ceiled.iter().enumerate().take(i) {
                        self.update(&mut guards[j], key, now_ms, |t| t.sub(&delta))?;
                    }
                    let breach = self.refuse(&mut guards[i], scope, key, passed, &delta, now_ms)?;
                    return Ok(Admission::Refused(breach));
                }
            }
        }
        Ok(Admission::Run(crossed))
    }

    /// Charges `delta` to one scope if its ceilings still have room (the
    /// tally read again when another host wrote it): the warnings it
    /// crossed, or the ceiling it would pass.
    #[allow(clippy::type_complexity)]
    fn charge_one(
        &self,
        cell: &mut Cell,
        scope: &Scope,
        key: &str,
        ceilings: &PeriodCeilings,
        delta: &Delta,
        now_ms: u64,
    ) -> Result<Result<Vec<Crossed>, (Period, Measure, u64, u64)>, StorageError> {
        let warn_at = self.config().warn_at;
        for _ in 0..TRIES {
            let mut next = self.view(cell, key, now_ms)?;
            if let Some(passed) = next.passes(ceilings, delta) {
                return Ok(Err(passed));
            }
            next.add(delta);
            let pending = std::mem::take(&mut cell.pending);
            next.add(&pending);
            let crossed = warnings(&mut next, scope, ceilings, warn_at);
            if self.store(cell, key, next)? {
                cell.pending_since_ms = now_ms;
                return Ok(Ok(crossed));
            }
            cell.pending = pending;
        }
        Err(contended(key))
    }

    /// Marks the ceiling `passed` reached for its period (once), and says
    /// why the call is refused.
    fn refuse(
        &self,
        cell: &mut Cell,
        scope: &Scope,
        key: &str,
        passed: (Period, Measure, u64, u64),
        delta: &Delta,
        now_ms: u64,
    ) -> Result<Breach, StorageError> {
        let (period, measure, limit, _) = passed;
        let first = self.update(cell, key, now_ms, |t| {
            let spent = t.get_mut(period);
            if spent.was_reached(measure, limit) {
                return false;
            }
            spent.reached.insert(measure, limit);
            true
        })?;
        Ok(breach_of(&cell.tally, scope, passed, delta, first, now_ms))
    }

    /// Charges a usage report (model cost and tokens) to the scopes with
    /// ceilings. The spend happened already, so it is never refused; a
    /// ceiling it reaches or passes is returned (marked reached, `first` if
    /// no call was refused at it this period yet).
    pub fn charge_usage(
        &self,
        scopes: &[Scope],
        cost_micros: u64,
        tokens: u64,
        now_ms: u64,
    ) -> Result<Charged, StorageError> {
        let config = self.config();
        let delta = Delta {
            cost_micros,
            tokens,
            ..Delta::default()
        };
        let mut out = Charged::default();
        if delta.is_zero() {
            return Ok(out);
        }
        for (scope, key, ceilings) in self.ceiled(&config, scopes) {
            let cell = self.cell(&key);
            let mut cell = lock(&cell);
            let (crossed, reached) = self.update(&mut cell, &key, now_ms, |t| {
                t.add(&delta);
                let crossed = warnings(t, &scope, &ceilings, config.warn_at);
                let reached = t
                    .at_ceiling(&ceilings)
                    .map(|(period, measure, limit, used)| {
                        let spent = t.get_mut(period);
                        let first = !spent.was_reached(measure, limit);
                        spent.reached.insert(measure, limit);
                        (period, measure, limit, used, first)
                    });
                (crossed, reached)
            })?;
            out.crossed.extend(crossed);
            if let (None, Some((period, measure, limit, used, first))) = (&out.reached, reached) {
                let passed = (period, measure, limit, used);
                let none = Delta::default();
                out.reached = Some(breach_of(&cell.tally, &scope, passed, &none, first, now_ms));
            }
        }
        Ok(out)
    }

    /// The first ceiling among `scopes` at which a new session is refused:
    /// used up, or a call was refused at it this period. Read from the
    /// store, so a ceiling another host reached counts.
    pub fn at_ceiling(
        &self,
        scopes: &[Scope],
        now_ms: u64,
    ) -> Result<Option<Breach>, StorageError> {
        let config = self.config();
        for (scope, key, ceilings) in self.ceiled(&config, scopes) {
            let cell = self.cell(&key);
            let mut cell = lock(&cell);
            cell.generation = None;
            let tally = self.view(&mut cell, &key, now_ms)?;
            if let Some(passed) = tally.at_ceiling(&ceilings) {
                let none = Delta::default();
                return Ok(Some(breach_of(
                    &tally, &scope, passed, &none, false, now_ms,
                )));
            }
        }
        Ok(None)
    }

    /// `scope`'s tally as of `now_ms`, read from the store.
    pub fn read(&self, scope: &Scope, now_ms: u64) -> Result<Tally, StorageError> {
        let key = key_of(scope);
        let cell = self.cell(&key);
        let mut cell = lock(&cell);
        cell.generation = None;
        let mut tally = self.view(&mut cell, &key, now_ms)?;
        tally.add(&cell.pending);
        Ok(tally)
    }

    /// An operator raises (or sets) `scope`'s ceilings for the current
    /// `period`: each given figure replaces the config's until the period
    /// ends. Returns the tally after.
    pub fn raise(
        &self,
        scope: &Scope,
        period: Period,
        to: &crate::manifest::CeilingLimits,
        now_ms: u64,
    ) -> Result<Tally, StorageError> {
        let key = key_of(scope);
        let cell = self.cell(&key);
        let mut cell = lock(&cell);
        self.update(&mut cell, &key, now_ms, |t| {
            let spent = t.get_mut(period);
            for measure in Measure::ALL {
                if let Some(value) = to.get(measure) {
                    spent.raised.set(measure, Some(value));
                }
            }
            t.clone()
        })
    }
}

/// The refusal at the ceiling `passed` of `scope`, whose tally is `tally`.
fn breach_of(
    tally: &Tally,
    scope: &Scope,
    passed: (Period, Measure, u64, u64),
    delta: &Delta,
    first: bool,
    now_ms: u64,
) -> Breach {
    let (period, measure, limit, used) = passed;
    let mut tally = tally.clone();
    tally.roll(now_ms);
    Breach {
        scope: scope.clone(),
        period,
        window: period.window(now_ms),
        measure,
        limit,
        raised: tally.get(period).raised.get(measure).is_some(),
        used,
        projected: used.saturating_add(delta.get(measure)),
        first,
    }
}

/// The warning thresholds of `ceilings` that `tally` (charged already)
/// crossed and had not warned of at this ceiling: marked warned, and
/// returned.
fn warnings(
    tally: &mut Tally,
    scope: &Scope,
    ceilings: &PeriodCeilings,
    warn_at: f64,
) -> Vec<Crossed> {
    let mut out = Vec::new();
    for period in Period::ALL {
        let spent = tally.get_mut(period);
        for measure in Measure::ALL {
            let Some(limit) = spent.limit(ceilings.get(period), measure) else {
                continue;
            };
            let used = spent.get(measure);
            let due = limit > 0 && used as f64 >= limit as f64 * warn_at;
            if due && spent.warned.get(&measure).is_none_or(|at| *at < limit) {
                spent.warned.insert(measure, limit);
                out.push(Crossed {
                    scope: scope.clone(),
                    period,
                    period_id: spent.period.clone(),
                    measure,
                    used,
                    limit,
                });
            }
        }
    }
    out
}

fn contended(key: &str) -> StorageError {
    StorageError::Io(format!(
        "the spend tally `{key}` changed under {TRIES} charges in a row: the hosts sharing the store keep charging it; try again"
    ))
}

fn decode(key: &str, bytes: Option<&[u8]>) -> Result<Tally, StorageError> {
    match bytes {
        None => Ok(Tally::default()),
        Some(bytes) => serde_json::from_slice(bytes).map_err(|e| {
            StorageError::Corrupt(format!(
                "the spend tally `{key}` in bucket `{BUCKET}` does not decode ({e}); no call of its scope is admitted until it is removed or restored from a backup"
            ))
        }),
    }
}

fn encode(tally: &Tally) -> Result<Vec<u8>, StorageError> {
    serde_json::to_vec(tally)
        .map_err(|e| StorageError::Io(format!("cannot encode a spend tally: {e}")))
}
