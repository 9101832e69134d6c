//! Events and bytes per agent principal per UTC day (`[quotas]
//! principal_events_per_day`, `principal_bytes_per_day`): what one agent
//! adds to its sessions' logs, over all of them, so that an agent looping
//! notes, handoffs or calls cannot fill the store for everyone.
//!
//! Counted on every append, in the day of the principal's tally, but not
//! written on every append: this process adds them up per principal and
//! writes them with the next charge of the principal's tally (a call under
//! a ceiling), or once the batch holds [`BATCH_EVENTS`] events or
//! [`BATCH_BYTES`] bytes, or is [`BATCH_MS`] old, whichever comes first. A
//! batch is checked as it is counted: what this process has written or
//! seen plus its own batch plus the append may not pass the quota.
//!
//! How far past a quota a burst can go: with one host, nowhere (the check
//! sees everything). With several hosts sharing a NATS store, each checks
//! what it last read of the others: a host reads the tally again when its
//! own write finds it changed, which is at least once a batch, so each
//! other host can be ahead by at most one batch (plus the append that
//! filled it). A crash loses the batch it held (at most one batch per
//! crash, counted low). And the events that finish work already admitted
//! (a call's outcome, an end, a pause) are counted but never refused, so
//! what is acknowledged is never lost: a quota stops new work.

use super::{Cell, Delta, Tallies, key_of, lock};
use crate::manifest::{QuotaLimit, Scope};
use crate::storage::StorageError;

/// A batch is written once it holds this many events...
pub const BATCH_EVENTS: u64 = 64;
/// ...or this many bytes...
pub const BATCH_BYTES: u64 = 256 * 1024;
/// ...or is this old (milliseconds) at the next append.
pub const BATCH_MS: u64 = 1_000;

/// A daily quota an append would pass: nothing is written.
#[derive(Clone, Debug)]
pub struct OverQuota {
    pub limit: QuotaLimit,
    pub what: String,
}

impl Tallies {
    /// Counts `events` events of `bytes` bytes that principal `owner`
    /// causes in its own session's log at `now_ms`. `refusable`: the append
    /// starts new work, and is refused past a daily quota (nothing counted);
    /// otherwise it is counted whatever the quota. Principals that are not
    /// agents are not counted.
    pub fn count_events(
        &self,
        owner: &str,
        events: u64,
        bytes: u64,
        refusable: bool,
        now_ms: u64,
    ) -> Result<Result<(), OverQuota>, StorageError> {
        let config = self.config();
        if events == 0 || !config.is_agent(owner) {
            return Ok(Ok(()));
        }
        let key = key_of(&Scope::principal(owner));
        let cell = self.cell(&key);
        let mut cell = lock(&cell);
        let day = self.view(&mut cell, &key, now_ms)?.day;
        if refusable {
            let q = &config.quotas;
            let checks = [
                (
                    "principal_events_per_day",
                    q.principal_events_per_day,
                    day.events,
                    cell.pending.events,
                    events,
                    "events",
                ),
                (
                    "principal_bytes_per_day",
                    q.principal_bytes_per_day,
                    day.bytes,
                    cell.pending.bytes,
                    bytes,
                    "bytes",
                ),
            ];
            for (quota, value, stored, pending, adding, unit) in checks {
                let before = stored.saturating_add(pending);
                if before.saturating_add(adding) > value {
                    return Ok(Err(OverQuota {
                        limit: q.limit(quota),
                        what: format!(
                            "principal `{owner}` added {before} {unit} to its sessions' logs on {} (UTC), and this would add {adding}",
                            day.period
                        ),
                    }));
                }
            }
        }
        if cell.pending.is_zero() {
            cell.pending_since_ms = now_ms;
        }
        cell.pending.events = cell.pending.events.saturating_add(events);
        cell.pending.bytes = cell.pending.bytes.saturating_add(bytes);
        let due = cell.pending.events >= super::BATCH_EVENTS
            || cell.pending.bytes >= super::BATCH_BYTES
            || now_ms.saturating_sub(cell.pending_since_ms) >= super::BATCH_MS;
        if due {
            self.write_batch(&mut cell, &key, now_ms);
        }
        Ok(Ok(()))
    }

    /// Writes the batch `cell` holds into its tally; on a failure the
    /// batch is kept for the next try (the appends it counts are written
    /// already: failing them for it would lose nothing but the count).
    fn write_batch(&self, cell: &mut Cell, key: &str, now_ms: u64) {
        let pending = cell.pending;
        if pending.is_zero() {
            return;
        }
        match self.update(cell, key, now_ms, |t| t.add(&pending)) {
            Ok(()) => {
                cell.pending = Delta::default();
                cell.pending_since_ms = now_ms;
            }
            Err(e) => {
                tracing::warn!(tally = %key, error = %e, "could not write the batch of events and bytes counted for a principal; kept for the next try");
            }
        }
    }

    /// Writes every batch this process holds (at a clean shutdown).
    pub fn flush(&self, now_ms: u64) {
        let cells: Vec<_> = lock(&self.cells)
            .iter()
            .map(|(k, c)| (k.clone(), c.clone()))
            .collect();
        for (key, cell) in cells {
            let mut cell = lock(&cell);
            self.write_batch(&mut cell, &key, now_ms);
        }
    }
}
