//! The compliance score's history: one record per UTC day in the store's
//! `compliance` bucket (key `YYYY-MM-DD`), written by the sweep
//! ([`record_today`]) the first time it runs on a day, so the dashboard can
//! show the score's trend. Writing is idempotent per day (the record is
//! put only where none is: a restarted host, a second sweep the same day,
//! two hosts on one store write it once) and bounded (the records older
//! than [`KEPT_DAYS`] days are removed as each new one is written). It goes
//! through the storage trait, so it is the same on every backend.

use std::collections::BTreeMap;
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use super::score::{Score, score};
use crate::billing::{day_of, format_day, parse_date};
use crate::gateway::Gateway;
use crate::session::SessionError;
use crate::storage::{Storage, StorageError, Swap};
use crate::tasks::ledger_work;

/// The bucket of the daily records.
pub const BUCKET: &str = "compliance";
/// The days of records kept (today's included); older ones are removed.
pub const KEPT_DAYS: i64 = 90;
/// The days the dashboard's trend shows.
pub const TREND_DAYS: i64 = 30;

/// One day's compliance score, as the sweep recorded it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct DailyScore {
    /// The UTC day, `YYYY-MM-DD`.
    pub day: String,
    /// When it was recorded (Unix ms, by the ledger's clock).
    pub at_ms: u64,
    #[serde(flatten)]
    pub score: Score,
    /// The findings by rule (`unnamed_session`: 3, ...).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub rules: BTreeMap<String, u64>,
}

/// The daily records of one store.
#[derive(Clone)]
pub struct ComplianceRecords(pub Arc<dyn Storage>);

impl ComplianceRecords {
    /// The record of `day` (`YYYY-MM-DD`), if one was written.
    pub fn get(&self, day: &str) -> Result<Option<DailyScore>, StorageError> {
        Ok(self
            .0
            .get(BUCKET, day)?
            .and_then(|bytes| serde_json::from_slice(&bytes).ok()))
    }

    /// The records of the `days` days up to and including `today`
    /// (`YYYY-MM-DD`), oldest first; days with no record are left out.
    pub fn recent(&self, today: &str, days: i64) -> Result<Vec<DailyScore>, StorageError> {
        let Ok(last) = parse_date(today) else {
            return Ok(Vec::new());
        };
        let first = format_day(last - days + 1);
        Ok(self
            .0
            .scan(BUCKET, "")?
            .into_iter()
            .filter(|(day, _)| day.as_str() >= first.as_str() && day.as_str() <= today)
            .filter_map(|(_, bytes)| serde_json::from_slice(&bytes).ok())
            .collect())
    }

    /// Writes `record` unless its day has one already: whether it wrote.
    /// Then removes the records more than [`KEPT_DAYS`] days older than it.
    pub fn record(&self, record: &DailyScore) -> Result<bool, StorageError> {
        let bytes = serde_json::to_vec(record)
            .map_err(|e| StorageError::Io(format!("cannot encode a compliance record: {e}")))?;
        let written = self
            .0
            .put_if(BUCKET, &record.day, Swap::new(None, Some(&bytes)))?;
        if let Ok(day) = parse_date(&record.day) {
            self.prune(&format_day(day - KEPT_DAYS + 1))?;
        }
        Ok(written)
    }

    /// Removes the records of the days before `first` (`YYYY-MM-DD`).
    fn prune(&self, first: &str) -> Result<(), StorageError> {
        for (day, _) in self.0.scan(BUCKET, "")? {
            if day.as_str() >= first {
                break;
            }
            self.0.delete(BUCKET, &day)?;
        }
        Ok(())
    }
}

/// Records today's compliance score (by the ledger's clock) unless a
/// record of today is there already: the sweep's daily entry point. Runs
/// `glovebox doctor`'s checks only when it writes. Returns the record it
/// wrote, if it wrote one.
pub async fn record_today(gateway: &Gateway) -> Result<Option<DailyScore>, SessionError> {
    let records = ComplianceRecords(gateway.ledger().storage.clone());
    let now = gateway.sessions().clock_ms();
    let today = day_of(now);
    let seen = records.clone();
    let day = today.clone();
    if ledger_work(move || Ok(seen.get(&day)?)).await?.is_some() {
        return Ok(None);
    }
    let findings = super::check(gateway).await?;
    let mut rules = BTreeMap::new();
    for f in &findings {
        *rules.entry(f.rule.as_str().to_string()).or_insert(0) += 1;
    }
    let record = DailyScore {
        day: today,
        at_ms: now,
        score: score(&findings),
        rules,
    };
    let written = record.clone();
    let wrote = ledger_work(move || Ok(records.record(&written)?)).await?;
    Ok(wrote.then_some(record))
}

/// The records of the last [`TREND_DAYS`] days, today's included, oldest
/// first: what the dashboard's trend shows.
pub fn trend(gateway: &Gateway) -> Result<Vec<DailyScore>, StorageError> {
    let today = day_of(gateway.sessions().clock_ms());
    ComplianceRecords(gateway.ledger().storage.clone()).recent(&today, TREND_DAYS)
}
