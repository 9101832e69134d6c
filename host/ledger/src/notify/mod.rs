//! Notifications: what of a session's log the operator's `[[notify]]` targets
//! are told, and the persisted outbox the host's delivery worker sends from.
//!
//! The one place notifications come from is the session log: after each
//! acknowledged append, [`derive`] maps the event (with the session's state
//! just before it) to the notifications it means, and [`Outbox::enqueue`]
//! writes one entry per interested target into the store. Nothing else in
//! the host raises a notification, so every path that logs an event (a call,
//! the sweep, an operator's command, a job) notifies the same way. Enqueueing
//! never fails the append: the event is durable already, and a failed outbox
//! write is logged.
//!
//! Buckets: `notify_outbox` (entries still to deliver: key
//! `<target>/<created, 20 digits>/<session>/<seq, 20 digits>/<kind>`, so a
//! target's entries scan in the order they were raised), `notify_failed`
//! (entries that exhausted their attempts, same keys) and `notify_delivered`
//! (delivered entries, pruned after a while). Each entry's
//! [`OutboxEntry::delivery_id`] is stable for its (event, target), so a
//! receiver can drop the duplicates at-least-once delivery may bring.
//!
//! A target's outbox is bounded (threat 57): past `[quotas]
//! outbox_per_target` entries waiting for it (a receiver down while agents
//! cause events), the oldest are dropped, counted in the store
//! ([`Outbox::dropped`], the metric `glovebox_notify_dropped_total`,
//! `glovebox notify status`, the dashboard) and logged, so a dead receiver
//! never grows the store without end ([`bound`] says why the oldest). The
//! entries kept as failed are bounded the same way.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use serde::{Deserialize, Serialize};

use crate::clock::Clock;
pub use crate::manifest::{NotifyKind, NotifyTarget};
use crate::manifest::{QuotaLimit, QuotasConfig, Severity};
use crate::storage::{Storage, StorageError, Swap};

mod bound;
mod derive;
#[cfg(test)]
mod tests;

pub use bound::{DROPPED_BUCKET, Dropped};
pub use derive::{derive, test_notification};

use bound::Count;
#[cfg(test)]
use derive::approval_id;

pub const OUTBOX_BUCKET: &str = "notify_outbox";
pub const FAILED_BUCKET: &str = "notify_failed";
pub const DELIVERED_BUCKET: &str = "notify_delivered";

/// What a target is told: the same for every format.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Notification {
    /// The kind (`approval_needed`, `flag`, ...).
    pub event: String,
    /// The flag's severity (flags and stalls only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub severity: Option<Severity>,
    pub session: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_name: Option<String>,
    pub project: String,
    pub role: String,
    /// The log event it comes from.
    pub seq: u64,
    pub at_ms: u64,
    /// One line for a person.
    pub summary: String,
    /// The event's particulars (call, tool, rule, cap, job, rescue, ...).
    pub details: serde_json::Value,
    /// Targets the event itself names (a schedule's `notify`): they get it
    /// besides those whose `events` want its kind.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub to: Vec<String>,
}

/// Told of every notification an acknowledged event means, whether or not
/// a `[[notify]]` target wants it (the host's `[[trigger]]`s listen here).
/// Called after the event is durable, under the session's lock: it must
/// only hand the notification on, never block or touch the session.
pub trait NotifyObserver: std::fmt::Debug + Send + Sync {
    /// `by` is the event's principal.
    fn raised(&self, by: Option<&str>, kind: NotifyKind, notification: &Notification);
}

/// One notification for one target, as kept in the store.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct OutboxEntry {
    /// Its key in the bucket it is in.
    pub key: String,
    pub target: String,
    /// The idempotency key, the same at every attempt: `<session>.<seq>.<kind>.<target>`.
    pub delivery_id: String,
    pub notification: Notification,
    pub created_at_ms: u64,
    /// Attempts made so far.
    pub attempts: u32,
    /// Not to be tried before this.
    pub next_attempt_at_ms: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_attempt_at_ms: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_error: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub delivered_at_ms: Option<u64>,
    /// The delivery worker sending it now (an [`Outbox`]'s holder id), and
    /// until when that claim stands: see [`Outbox::claim`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub claimed_by: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub claimed_until_ms: Option<u64>,
}

/// One target's entries, by state.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct TargetStatus {
    pub target: String,
    pub url: Option<String>,
    pub pending: usize,
    pub delivered: usize,
    pub failed: usize,
    /// The last delivery, when one is kept.
    pub last_delivered_at_ms: Option<u64>,
    /// The entries that exhausted their attempts, oldest first.
    pub failed_entries: Vec<OutboxEntry>,
    /// Pending entries that failed at least once, oldest first.
    pub retrying: Vec<OutboxEntry>,
    /// Entries dropped, oldest first, because the target's outbox was full
    /// (`quotas.outbox_per_target`), in all (kept in the store).
    pub dropped: u64,
    /// The last time one was.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_dropped_at_ms: Option<u64>,
}

/// The outbox of one store and config: where notifications wait for delivery.
pub struct Outbox {
    storage: Arc<dyn Storage>,
    targets: Vec<NotifyTarget>,
    /// This outbox's id in the claims it makes: random per process, so two
    /// hosts on one shared store (or a server and a one-off command) are two
    /// claimants.
    holder: String,
    clock: Clock,
    /// `quotas.outbox_per_target`.
    cap: QuotaLimit,
    /// By bucket and target.
    counts: Mutex<HashMap<(&'static str, String), Count>>,
}

impl std::fmt::Debug for Outbox {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Outbox")
            .field("targets", &self.targets)
            .finish_non_exhaustive()
    }
}

impl OutboxEntry {
    /// An entry for `target`, not yet stored.
    pub fn new(
        target: &NotifyTarget,
        kind: &str,
        notification: Notification,
        now_ms: u64,
    ) -> OutboxEntry {
        let key = format!(
            "{}/{now_ms:020}/{}/{:020}/{kind}",
            target.name, notification.session, notification.seq
        );
        let delivery_id = format!(
            "{}.{}.{kind}.{}",
            notification.session, notification.seq, target.name
        );
        OutboxEntry {
            key,
            target: target.name.clone(),
            delivery_id,
            notification,
            created_at_ms: now_ms,
            attempts: 0,
            next_attempt_at_ms: now_ms,
            last_attempt_at_ms: None,
            last_error: None,
            delivered_at_ms: None,
            claimed_by: None,
            claimed_until_ms: None,
        }
    }
}

impl Outbox {
    pub fn new(storage: Arc<dyn Storage>, targets: Vec<NotifyTarget>) -> Outbox {
        Outbox {
            storage,
            targets,
            holder: uuid::Uuid::new_v4().simple().to_string(),
            clock: crate::clock::system(),
            cap: QuotasConfig::default().limit("outbox_per_target"),
            counts: Mutex::default(),
        }
    }

    /// Bounds each target's outbox by `cap` (`quotas.outbox_per_target`).
    pub fn with_cap(mut self, cap: QuotaLimit) -> Outbox {
        self.cap = cap;
        self
    }

    /// Replaces the clock its deliveries go by (due times, claims, pruning
    /// and signatures), for tests.
    pub fn with_clock(mut self, clock: Clock) -> Outbox {
        self.clock = clock;
        self
    }

    /// Now, in unix millis, by its clock.
    pub fn clock_ms(&self) -> u64 {
        (self.clock)()
    }

    /// Claims `entry` for one delivery attempt by this outbox, until
    /// `now_ms + for_ms`: a compare-and-set of the stored entry, so of the
    /// hosts sharing a store (`backend = "nats"`) that find one entry due,
    /// exactly one sends it, and the receiver sees one request per attempt,
    /// not one per host. `None`: the entry is gone (delivered or given up
    /// by another host), another claim on it still stands, or another host
    /// claimed it first. A claim left by a host that died lapses at its
    /// time, and the entry is sent again then (still at least once).
    /// Returns the entry as stored with the claim.
    pub fn claim(
        &self,
        entry: &OutboxEntry,
        now_ms: u64,
        for_ms: u64,
    ) -> Result<Option<OutboxEntry>, StorageError> {
        let Some(stored) = self.storage.get(OUTBOX_BUCKET, &entry.key)? else {
            return Ok(None);
        };
        let Some(mut current) = decode(&entry.key, &stored) else {
            return Ok(None);
        };
        if current
            .claimed_by
            .as_ref()
            .is_some_and(|h| *h != self.holder)
            && current.claimed_until_ms.is_some_and(|until| until > now_ms)
        {
            return Ok(None);
        }
        current.claimed_by = Some(self.holder.clone());
        current.claimed_until_ms = Some(now_ms.saturating_add(for_ms));
        let bytes = encode(&current)?;
        Ok(self
            .storage
            .put_if(
                OUTBOX_BUCKET,
                &entry.key,
                Swap::new(Some(&stored), Some(&bytes)),
            )?
            .then_some(current))
    }

    pub fn targets(&self) -> &[NotifyTarget] {
        &self.targets
    }

    pub fn target(&self, name: &str) -> Option<&NotifyTarget> {
        self.targets.iter().find(|t| t.name == name)
    }

    /// Writes an entry for each target that wants `kind`; returns how many.
    pub fn enqueue(
        &self,
        kind: NotifyKind,
        notification: &Notification,
        now_ms: u64,
    ) -> Result<usize, StorageError> {
        let mut written = 0;
        for target in &self.targets {
            if !target.wants(kind, notification.severity) && !notification.to.contains(&target.name)
            {
                continue;
            }
            let entry = OutboxEntry::new(target, kind.as_str(), notification.clone(), now_ms);
            self.put(OUTBOX_BUCKET, &entry)?;
            written += 1;
            if let Err(e) = self.bound(OUTBOX_BUCKET, &target.name) {
                tracing::warn!(target = %target.name, error = %e, "notify: cannot bound the target's outbox (tried again at the next entry)");
            }
        }
        Ok(written)
    }

    /// `target`'s entries waiting for delivery, oldest first.
    pub fn pending(&self, target: &str) -> Result<Vec<OutboxEntry>, StorageError> {
        self.entries(OUTBOX_BUCKET, target)
    }

    /// A failed attempt that will be retried: the entry with its new
    /// `attempts`, `last_error` and `next_attempt_at_ms`.
    pub fn retry_later(&self, entry: &OutboxEntry) -> Result<(), StorageError> {
        self.put(OUTBOX_BUCKET, entry)
    }

    /// The entry was delivered: it leaves the outbox.
    pub fn delivered(&self, entry: &OutboxEntry) -> Result<(), StorageError> {
        self.put(DELIVERED_BUCKET, entry)?;
        self.storage.delete(OUTBOX_BUCKET, &entry.key)?;
        self.forget(OUTBOX_BUCKET, &entry.target, 1);
        Ok(())
    }

    /// The entry exhausted its attempts: kept as failed, out of the outbox.
    pub fn failed(&self, entry: &OutboxEntry) -> Result<(), StorageError> {
        self.put(FAILED_BUCKET, entry)?;
        self.storage.delete(OUTBOX_BUCKET, &entry.key)?;
        self.forget(OUTBOX_BUCKET, &entry.target, 1);
        self.bound(FAILED_BUCKET, &entry.target)
    }

    /// Removes delivered entries delivered before `before_ms`; returns how many.
    pub fn prune_delivered(&self, before_ms: u64) -> Result<usize, StorageError> {
        let mut removed = 0;
        for item in crate::storage::pages(
            self.storage.as_ref(),
            DELIVERED_BUCKET,
            "",
            crate::storage::PAGE,
        ) {
            let (key, bytes) = item?;
            let old = decode(&key, &bytes)
                .map(|e| e.delivered_at_ms.unwrap_or(e.created_at_ms) < before_ms)
                .unwrap_or(true);
            if old {
                self.storage.delete(DELIVERED_BUCKET, &key)?;
                removed += 1;
            }
        }
        Ok(removed)
    }

    /// Every target's counts and problem entries: the configured targets in
    /// order, then any target that is no longer configured but has entries.
    pub fn status(&self) -> Result<Vec<TargetStatus>, StorageError> {
        let mut out: Vec<TargetStatus> = self
            .targets
            .iter()
            .map(|t| TargetStatus {
                target: t.name.clone(),
                url: Some(t.url.clone()),
                ..TargetStatus::default()
            })
            .collect();
        for bucket in [OUTBOX_BUCKET, DELIVERED_BUCKET, FAILED_BUCKET] {
            for item in
                crate::storage::pages(self.storage.as_ref(), bucket, "", crate::storage::PAGE)
            {
                let (key, bytes) = item?;
                let Some(entry) = decode(&key, &bytes) else {
                    continue;
                };
                let index = match out.iter().position(|s| s.target == entry.target) {
                    Some(i) => i,
                    None => {
                        out.push(TargetStatus {
                            target: entry.target.clone(),
                            ..TargetStatus::default()
                        });
                        out.len() - 1
                    }
                };
                let status = &mut out[index];
                match bucket {
                    OUTBOX_BUCKET => {
                        status.pending += 1;
                        if entry.attempts > 0 {
                            status.retrying.push(entry);
                        }
                    }
                    DELIVERED_BUCKET => {
                        status.delivered += 1;
                        status.last_delivered_at_ms =
                            status.last_delivered_at_ms.max(entry.delivered_at_ms);
                    }
                    _ => {
                        status.failed += 1;
                        status.failed_entries.push(entry);
                    }
                }
            }
        }
        for (target, count) in self.dropped()? {
            let index = match out.iter().position(|s| s.target == target) {
                Some(i) => i,
                None => {
                    out.push(TargetStatus {
                        target,
                        ..TargetStatus::default()
                    });
                    out.len() - 1
                }
            };
            out[index].dropped = count.dropped;
            out[index].last_dropped_at_ms = Some(count.last_at_ms);
        }
        Ok(out)
    }

    /// Entries waiting for delivery, over every target.
    pub fn depth(&self) -> Result<usize, StorageError> {
        let mut n = 0;
        for entry in crate::storage::pages(
            self.storage.as_ref(),
            OUTBOX_BUCKET,
            "",
            crate::storage::PAGE,
        ) {
            entry?;
            n += 1;
        }
        Ok(n)
    }

    fn entries(&self, bucket: &str, target: &str) -> Result<Vec<OutboxEntry>, StorageError> {
        let mut out = Vec::new();
        for item in crate::storage::pages(
            self.storage.as_ref(),
            bucket,
            &format!("{target}/"),
            crate::storage::PAGE,
        ) {
            let (key, bytes) = item?;
            out.extend(decode(&key, &bytes));
        }
        Ok(out)
    }

    /// Stores `entry` in `bucket`, its claim ended: every write after an
    /// attempt (retry later, delivered, failed) ends the attempt's claim.
    fn put(&self, bucket: &str, entry: &OutboxEntry) -> Result<(), StorageError> {
        let mut entry = entry.clone();
        entry.claimed_by = None;
        entry.claimed_until_ms = None;
        self.storage.put(bucket, &entry.key, &encode(&entry)?)
    }
}

fn encode(entry: &OutboxEntry) -> Result<Vec<u8>, StorageError> {
    serde_json::to_vec(entry)
        .map_err(|e| StorageError::Io(format!("cannot encode an outbox entry: {e}")))
}

/// An entry that does not decode is skipped with a warning: one damaged
/// record must not stop the others' delivery.
fn decode(key: &str, bytes: &[u8]) -> Option<OutboxEntry> {
    match serde_json::from_slice(bytes) {
        Ok(entry) => Some(entry),
        Err(e) => {
            tracing::warn!(key, error = %e, "notify: an outbox entry does not decode; skipped");
            None
        }
    }
}
