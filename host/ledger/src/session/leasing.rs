//! Taking, renewing and releasing the session leases of a store several
//! hosts share: the [`Sessions`]' side of `lease.rs`, which says why and
//! when.

use std::time::Duration;

use super::error::SessionError;
use super::kind::EventKind;
use super::lease::{LEASES_BUCKET, Lease};
use super::slots::{Slot, lock};
use super::store::Sessions;
use crate::storage::Swap;

/// Lease takes retried when another host wrote the lease between our read
/// and our compare-and-set.
const TAKE_RETRIES: usize = 5;

/// What taking a lease found.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Taken {
    /// This process's already: renewed.
    Renewed,
    /// Free (never taken, released, or unreadable): another host may have
    /// appended since this one last held it.
    Fresh,
    /// Another process held it and it expired: the calls it left are owed an ending.
    Over(Lease),
}

impl Sessions {
    /// Makes sure this process holds session `id`'s lease before an append
    /// (a no-op without leases, and while a held lease is in its first two
    /// thirds). Taking over an expired lease marks the calls its holder
    /// left in flight interrupted first. The caller holds the session's slot.
    pub(crate) fn ensure_lease(&self, slot: &mut Slot, id: &str) -> Result<(), SessionError> {
        let Some(leases) = &self.leases else {
            return Ok(());
        };
        let now = self.now();
        if let Some(h) = lock(&leases.held).get_mut(id)
            && now.saturating_add(leases.ttl_ms() / 3) < h.expires_at_ms
        {
            h.used_at_ms = now;
            return Ok(());
        }
        match self.take_lease(id)? {
            Taken::Renewed => Ok(()),
            Taken::Fresh => {
                // Another host may have appended while this one did not
                // hold the lease: what is cached may be behind the log.
                slot.state = None;
                Ok(())
            }
            Taken::Over(previous) => {
                // The other host appended to the log: read it again.
                slot.state = None;
                self.interrupt_left_calls(slot, id, &previous)
            }
        }
    }

    /// Takes session `id`'s lease for this process (or renews it), unless
    /// another process holds it and it has not expired.
    pub(crate) fn take_lease(&self, id: &str) -> Result<Taken, SessionError> {
        let Some(leases) = &self.leases else {
            return Ok(Taken::Renewed);
        };
        for _ in 0..TAKE_RETRIES {
            let now = self.now();
            let stored = self.storage.get(LEASES_BUCKET, id)?;
            let previous = stored.as_deref().and_then(|bytes| {
                serde_json::from_slice::<Lease>(bytes)
                    .inspect_err(|e| {
                        tracing::warn!(session = %id, error = %e, "a stored lease does not decode: taken as expired");
                    })
                    .ok()
            });
            if let Some(lease) = &previous
                && lease.holder != leases.holder
                && lease.expires_at_ms > now
            {
                return Err(SessionError::Leased {
                    session: self.label_of(id),
                    node: lease.node.clone(),
                    addr: lease.addr.clone(),
                    wait_ms: lease.expires_at_ms - now,
                });
            }
            let mine = leases.mine_from(now);
            if self.storage.put_if(
                LEASES_BUCKET,
                id,
                Swap::new(stored.as_deref(), Some(&mine.bytes)),
            )? {
                lock(&leases.held).insert(id.to_string(), mine);
                return Ok(match previous {
                    Some(lease) if lease.holder != leases.holder => {
                        tracing::warn!(session = %id, node = %lease.node, "took over the session's lease, which expired");
                        Taken::Over(lease)
                    }
                    Some(_) => Taken::Renewed,
                    None => Taken::Fresh,
                });
            }
            // Another host wrote the lease since our read: look again.
        }
        Err(SessionError::Storage(crate::storage::StorageError::Io(
            format!(
                "the lease of session {} kept changing under {TAKE_RETRIES} attempts to take it: another host is taking it too; try again",
                self.label_of(id)
            ),
        )))
    }

    /// Marks the calls `previous`'s holder left in flight in session `id`
    /// as interrupted (the caller holds the slot, and now the lease).
    fn interrupt_left_calls(
        &self,
        slot: &mut Slot,
        id: &str,
        previous: &Lease,
    ) -> Result<(), SessionError> {
        let state = self.loaded(slot, id)?;
        let mut kinds: Vec<EventKind> = Vec::new();
        for (call_id, call) in &state.in_flight {
            let when = if call.started_at_ms.is_some() {
                "while the call was running"
            } else {
                "before the call ran"
            };
            kinds.push(EventKind::CallInterrupted {
                call_id: call_id.clone(),
                reason: format!(
                    "node `{}` stopped driving the session (its lease expired) {when}",
                    previous.node
                ),
            });
        }
        for kind in kinds {
            self.append_locked(slot, id, kind)?;
        }
        Ok(())
    }

    /// Renews every lease this process holds, and releases the ones idle
    /// for a TTL (no append, no call of this process in flight). A lease
    /// found changed was taken over by another host (this one stalled past
    /// its expiry): it is dropped, and logged. Returns how many are held
    /// now. The host runs it every third of the TTL.
    pub fn renew_leases(&self) -> usize {
        let Some(leases) = &self.leases else {
            return 0;
        };
        let ids: Vec<String> = lock(&leases.held).keys().cloned().collect();
        for id in ids {
            let now = self.now();
            let Some((expected, used_at_ms)) = lock(&leases.held)
                .get(&id)
                .map(|h| (h.bytes.clone(), h.used_at_ms))
            else {
                continue;
            };
            if now.saturating_sub(used_at_ms) >= leases.ttl_ms() && self.idle_here(&id) {
                self.release_lease(&id);
                continue;
            }
            let renewed = leases.mine_from(now);
            match self.storage.put_if(
                LEASES_BUCKET,
                &id,
                Swap::new(Some(&expected), Some(&renewed.bytes)),
            ) {
                // Renewed: its last use stays as it was.
                Ok(true) => {
                    if let Some(h) = lock(&leases.held).get_mut(&id) {
                        h.bytes = renewed.bytes;
                        h.expires_at_ms = renewed.expires_at_ms;
                    }
                }
                Ok(false) => {
                    lock(&leases.held).remove(&id);
                    tracing::warn!(session = %id, "lost the session's lease: another host took it over after it expired; this host no longer drives the session");
                }
                // Kept: the next pass tries again, and the lease is good
                // until it expires.
                Err(e) => {
                    tracing::warn!(session = %id, error = %e, "could not renew the session's lease");
                }
            }
        }
        lock(&leases.held).len()
    }

    /// Whether session `id` has no call of this process in flight (a slot
    /// in use counts as busy). A session with no slot has none: the cache
    /// never evicts a slot whose session has calls in flight (`slots.rs`).
    fn idle_here(&self, id: &str) -> bool {
        let Some(slot) = self.existing_slot(id) else {
            return true;
        };
        match slot.try_lock() {
            Ok(slot) => slot
                .state
                .as_ref()
                .is_none_or(|state| state.in_flight.is_empty()),
            Err(_) => false,
        }
    }

    /// Releases session `id`'s lease if this process holds it (a
    /// compare-and-set: a lease another host took over is left alone).
    /// Failures are logged: the lease then expires by itself.
    pub fn release_lease(&self, id: &str) {
        let Some(leases) = &self.leases else {
            return;
        };
        let Some(held) = lock(&leases.held).remove(id) else {
            return;
        };
        if let Err(e) = self
            .storage
            .put_if(LEASES_BUCKET, id, Swap::new(Some(&held.bytes), None))
        {
            tracing::warn!(session = %id, error = %e, "could not release the session's lease: it expires by itself");
        }
    }

    /// Releases every lease this process holds (a clean shutdown).
    pub fn release_leases(&self) {
        let Some(leases) = &self.leases else {
            return;
        };
        let ids: Vec<String> = lock(&leases.held).keys().cloned().collect();
        for id in ids {
            self.release_lease(&id);
        }
    }

    /// The lease of session `id_or_name` as stored, if any (`None` too
    /// without leases).
    pub fn lease_of(&self, id_or_name: &str) -> Result<Option<Lease>, SessionError> {
        if self.leases.is_none() {
            return Ok(None);
        }
        let id = self.resolve(id_or_name)?;
        Ok(self
            .storage
            .get(LEASES_BUCKET, &id)?
            .and_then(|bytes| serde_json::from_slice(&bytes).ok()))
    }

    /// The period of the renewal task: a third of the TTL (`None` without
    /// leases).
    pub fn lease_renewal_period(&self) -> Option<Duration> {
        self.leases.as_ref().map(|l| l.config.ttl / 3)
    }

    /// How long a lease lasts without a renewal (`None` without leases).
    pub fn lease_ttl(&self) -> Option<Duration> {
        self.leases.as_ref().map(|l| l.config.ttl)
    }

    /// This process's name in leases and job records: `node/holder` on a
    /// shared store, `None` without leases.
    pub fn lease_holder(&self) -> Option<String> {
        self.leases
            .as_ref()
            .map(|l| format!("{}/{}", l.config.node, l.holder))
    }

    /// Recovery of one session with calls in flight, on a shared store:
    /// `Ok(None)` when another live process holds its lease (the calls are
    /// its own, left alone); else the lease is taken for the recovery and
    /// the previous holder returned, if one expired.
    pub(crate) fn lease_for_recovery(&self, id: &str) -> Result<Option<Taken>, SessionError> {
        match self.take_lease(id) {
            Ok(taken) => Ok(Some(taken)),
            Err(SessionError::Leased { .. }) => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// Whether another process holds session `id`'s lease and it has not
    /// expired (always `false` without leases).
    pub fn leased_elsewhere(&self, id: &str) -> Result<bool, SessionError> {
        let Some(leases) = &self.leases else {
            return Ok(false);
        };
        let now = self.now();
        Ok(self
            .storage
            .get(LEASES_BUCKET, id)?
            .and_then(|bytes| serde_json::from_slice::<Lease>(&bytes).ok())
            .is_some_and(|l| l.holder != leases.holder && l.expires_at_ms > now))
    }

    /// Whether this process drives session `id`: always on a store one
    /// process holds, else while it holds the session's lease.
    pub(crate) fn drives(&self, id: &str) -> bool {
        self.leases
            .as_ref()
            .is_none_or(|l| lock(&l.held).contains_key(id))
    }

    /// Whether this process holds leases at all (a shared store).
    pub(crate) fn leased(&self) -> bool {
        self.leases.is_some()
    }

    /// Drops every lease this process holds at `Drop` (see [`Sessions`]).
    pub(crate) fn release_on_drop(&self) {
        if self
            .leases
            .as_ref()
            .is_some_and(|l| !lock(&l.held).is_empty())
        {
            self.release_leases();
        }
    }

    #[cfg(test)]
    pub(crate) fn holds_lease(&self, id: &str) -> bool {
        self.leases
            .as_ref()
            .is_some_and(|l| lock(&l.held).contains_key(id))
    }
}
