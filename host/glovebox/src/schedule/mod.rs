//! `[[schedule]]`: the host starts work by itself on cron expressions.
//!
//! The scheduler is one task ([`start`]) that looks at
//! the schedules of the config in force every [`TICK`] and runs each one
//! whose next fire time has come, once, in config order, as the
//! schedule's own principal (see [`run`]). What it handled is kept in the
//! store ([`records`]), so a host that was down knows which fires it
//! missed: with `catch_up = true` (the default) a schedule that missed one
//! or more runs once at start, however many it missed; with `false` the
//! missed fires are recorded as skipped. A fire that comes while an
//! earlier run is still going is handled when that run ends, once.
//!
//! Time comes from a [`Clock`], the ledger's own by default, so a test can
//! drive minutes or hours of cron time in milliseconds.

pub mod records;
pub mod run;

use std::sync::Arc;
use std::time::Duration;

use serde::Serialize;

use crate::gateway::Gateway;
use crate::manifest::ScheduleConfig;
use crate::tasks;
use records::{FireRecord, Records};
pub use run::RunOutcome;

/// How often the scheduler looks at the clock. Cron's finest step is a second.
pub const TICK: Duration = Duration::from_secs(1);

pub use crate::clock::Clock;

/// A schedule as `glovebox schedule list` shows it.
#[derive(Clone, Debug, Serialize)]
pub struct ScheduleStatus {
    pub name: String,
    pub cron: String,
    pub action: String,
    pub catch_up: bool,
    /// The next fire time after now (unix millis).
    pub next_fire_ms: Option<u64>,
    #[serde(flatten)]
    pub record: FireRecord,
}

/// The schedules of a gateway, on a clock.
#[derive(Clone)]
pub struct Scheduler {
    gateway: Gateway,
    clock: Clock,
    /// When this scheduler started: fires due before it were missed while
    /// the host was down.
    started_ms: u64,
}

impl Scheduler {
    /// The scheduler of `gateway` on its ledger's clock.
    pub fn of(gateway: &Gateway) -> Scheduler {
        let sessions = gateway.sessions().clone();
        Scheduler::new(gateway.clone(), Arc::new(move || sessions.clock_ms()))
    }

    pub fn new(gateway: Gateway, clock: Clock) -> Scheduler {
        let started_ms = clock();
        Scheduler {
            gateway,
            clock,
            started_ms,
        }
    }

    fn records(&self) -> Records {
        Records(self.gateway.ledger().storage.clone())
    }

    /// One look at the clock: runs every schedule that is due. Returns the
    /// runs, by schedule name.
    pub async fn tick(&self) -> Vec<(String, RunOutcome)> {
        let schedules = self.gateway.host().config().schedules.clone();
        let mut ran = Vec::new();
        for schedule in &schedules {
            match self.due(schedule).await {
                Ok(Some(cause)) => {
                    let outcome = self.fire(schedule, &cause).await;
                    ran.push((schedule.name.clone(), outcome));
                }
                Ok(None) => {}
                Err(e) => {
                    tracing::warn!(schedule = %schedule.name, error = %e, "schedule: its record cannot be read or written; it does not run until it can");
                }
            }
        }
        ran
    }

    /// Why `schedule` runs now, if it does; the fire is recorded as handled.
    async fn due(
        &self,
        schedule: &ScheduleConfig,
    ) -> Result<Option<String>, crate::storage::StorageError> {
        let now = (self.clock)();
        let key = records::key("schedule", &schedule.name);
        let records = self.records();
        let (started, schedule) = (self.started_ms, schedule.clone());
        tasks::blocking(
            move || {
                let Some(mut record) = records.get(&key)? else {
                    // First sight: armed now; nothing before now was due.
                    let record = FireRecord {
                        armed_at_ms: now,
                        ..FireRecord::default()
                    };
                    records.put(&key, &record)?;
                    return Ok(None);
                };
                let since = record.last_due_ms.unwrap_or(record.armed_at_ms);
                let Some(due) = schedule.cron.last_between(since, now) else {
                    return Ok(None);
                };
                let missed = due < started;
                record.last_due_ms = Some(due);
                if missed && !schedule.catch_up {
                    record.last_outcome = Some(format!(
                        "skipped the fire of {} missed while the host was down (`catch_up = false`)",
                        show_ms(due)
                    ));
                    records.put(&key, &record)?;
                    return Ok(None);
                }
                records.put(&key, &record)?;
                Ok(Some(if missed {
                    format!(
                        "the fire of {} (`{}`), missed while the host was down, caught up",
                        show_ms(due),
                        schedule.cron.as_str()
                    )
                } else {
                    format!("the fire of {} (`{}`)", show_ms(due), schedule.cron.as_str())
                }))
            },
            crate::storage::StorageError::Io,
        )
        .await
    }

    /// Runs `schedule` now and records the outcome.
    pub async fn fire(&self, schedule: &ScheduleConfig, cause: &str) -> RunOutcome {
        let principal = schedule.run.principal("schedule", &schedule.name);
        let started = (self.clock)();
        let outcome = run::run_action(&self.gateway, &principal, &schedule.run, cause).await;
        record_run(
            &self.records(),
            &records::key("schedule", &schedule.name),
            started,
            &outcome,
            0,
        )
        .await;
        outcome
    }

    /// Every schedule of the config with its record and next fire time.
    pub async fn status(&self) -> Result<Vec<ScheduleStatus>, crate::storage::StorageError> {
        let now = (self.clock)();
        let schedules = self.gateway.host().config().schedules.clone();
        let records = self.records();
        tasks::blocking(
            move || {
                schedules
                    .iter()
                    .map(|s| {
                        let record = records
                            .get(&records::key("schedule", &s.name))?
                            .unwrap_or_default();
                        Ok(ScheduleStatus {
                            name: s.name.clone(),
                            cron: s.cron.as_str().to_string(),
                            action: s.run.action.as_str().to_string(),
                            catch_up: s.catch_up,
                            next_fire_ms: s.cron.next_after(now),
                            record,
                        })
                    })
                    .collect()
            },
            crate::storage::StorageError::Io,
        )
        .await
    }
}

/// Records that a run started at `started` ended with `outcome`.
/// `folded`: events a trigger's cooldown folded into this run.
pub(crate) async fn record_run(
    records: &Records,
    key: &str,
    started: u64,
    outcome: &RunOutcome,
    folded: u64,
) {
    let (records, owned_key, outcome) = (records.clone(), key.to_string(), outcome.clone());
    let written = tasks::blocking(
        move || {
            let key = owned_key;
            let mut record = records.get(&key)?.unwrap_or(FireRecord {
                armed_at_ms: started,
                ..FireRecord::default()
            });
            record.last_run_at_ms = Some(started);
            record.last_outcome = Some(outcome.summary.clone());
            record.last_ok = Some(outcome.ok);
            record.runs += 1;
            record.folded += folded;
            records.put(&key, &record)
        },
        crate::storage::StorageError::Io,
    )
    .await;
    if let Err(e) = written {
        tracing::warn!(record = %key, error = %e, "schedule: could not record a run");
    }
}

/// A unix-millis time as RFC 3339 (UTC), for notes and listings.
pub fn show_ms(ms: u64) -> String {
    humantime::format_rfc3339_seconds(std::time::UNIX_EPOCH + Duration::from_millis(ms)).to_string()
}

/// Starts the scheduler of `gateway`: a look every [`TICK`] at the
/// schedules of the config in force (a reload's changes count from the next
/// look). `None` while the config has no schedule at start. It stops when
/// the handle is dropped.
pub fn start(gateway: &Gateway) -> Option<tasks::Owned<()>> {
    let count = gateway.host().config().schedules.len();
    if count == 0 {
        return None;
    }
    tracing::info!(schedules = count, "the scheduler runs");
    Some(Scheduler::of(gateway).start(TICK))
}

impl Scheduler {
    /// Ticks every `every` in a task of its own until the handle is dropped.
    pub fn start(self, every: Duration) -> tasks::Owned<()> {
        tasks::every(every, move || {
            let scheduler = self.clone();
            async move {
                scheduler.tick().await;
            }
        })
    }
}
