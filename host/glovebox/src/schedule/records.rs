//! What the host remembers of each schedule and trigger between runs and
//! restarts: when it was armed, the last fire it handled, the last run's
//! outcome. One record per entry in the `schedules` bucket, under
//! `schedule/<name>` or `trigger/<name>`, so a restarted host knows which
//! fires it missed while it was down (and `glovebox schedule list` what
//! each did last).

use std::sync::Arc;

use serde::{Deserialize, Serialize};

use crate::storage::{Storage, StorageError};

pub const BUCKET: &str = "schedules";

/// One schedule's or trigger's record.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct FireRecord {
    /// When the host first saw the entry: fires before it were never due.
    pub armed_at_ms: u64,
    /// The last fire time handled (run, or skipped as missed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_due_ms: Option<u64>,
    /// When the last run started.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_run_at_ms: Option<u64>,
    /// What the last run did, for a person.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_outcome: Option<String>,
    /// Whether the last run succeeded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_ok: Option<bool>,
    /// The runs so far.
    #[serde(default)]
    pub runs: u64,
    /// Events a trigger's cooldown folded into its runs so far (each fold
    /// is one run for many events).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub folded: u64,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// The key of a schedule's (`kind = "schedule"`) or trigger's record.
pub fn key(kind: &str, name: &str) -> String {
    format!("{kind}/{name}")
}

/// The records of one store.
#[derive(Clone)]
pub struct Records(pub Arc<dyn Storage>);

impl Records {
    pub fn get(&self, key: &str) -> Result<Option<FireRecord>, StorageError> {
        Ok(self
            .0
            .get(BUCKET, key)?
            .and_then(|bytes| serde_json::from_slice(&bytes).ok()))
    }

    pub fn put(&self, key: &str, record: &FireRecord) -> Result<(), StorageError> {
        let bytes = serde_json::to_vec(record)
            .map_err(|e| StorageError::Io(format!("cannot encode a schedule record: {e}")))?;
        self.0.put(BUCKET, key, &bytes)
    }
}
