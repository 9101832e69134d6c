//! The sessions' slots: each session's lock and cached state, kept for at
//! most `[storage] session_cache` sessions, the least recently used going
//! first.
//!
//! Why: a slot is made for every session the host touches, and a host that
//! serves for months touches every session ever started (an agent that
//! starts and ends short sessions in a loop makes thousands an hour). Kept
//! for ever, they are memory that only grows (threat 49). An evicted slot
//! costs only a load the next time its session is used: the newest valid
//! checkpoint plus the events after it.
//!
//! What is never evicted: a slot in use, i.e. one somebody holds besides
//! the cache (a writer appending, a reader loading: its lock must stay the
//! session's one lock, or two writers could each take "the" lock of one
//! session), and one whose session has calls in flight in this process
//! (the call pipeline and the lease renewal look at them; see `lease.rs`).
//! Such slots move to the back instead, so the cache may hold more than its
//! size while many are in use, never fewer than it needs.
//!
//! An evicted slot takes nothing with it that the store does not hold: the
//! state is the fold of the log, the store's generation is checked at each
//! load, the calls owed an ending (`store.rs`) and the leases held
//! (`lease.rs`) are kept apart from the slots.

use std::sync::{Arc, Mutex, MutexGuard};

use hashlink::LinkedHashMap;

use super::state::SessionState;

/// One session's lock and cached state (`None` until loaded, or after a failure
/// that may have left the cache behind the log).
#[derive(Default)]
pub(crate) struct Slot {
    pub(crate) state: Option<SessionState>,
    /// The store's generation when `state` was loaded: a reopened store (see
    /// `glovebox_store::Reopening`) may hold less than was cached.
    pub(crate) generation: u64,
}

/// Slots by session id, least recently used first.
pub(crate) struct Slots {
    map: Mutex<LinkedHashMap<String, Arc<Mutex<Slot>>>>,
    size: usize,
}

impl Slots {
    /// A cache of at most `size` idle slots (at least 1).
    pub(crate) fn new(size: usize) -> Slots {
        Slots {
            map: Mutex::new(LinkedHashMap::new()),
            size: size.max(1),
        }
    }

    /// The slot of session `id`, made if it has none; it is the most
    /// recently used now, and others may be evicted to make room.
    /// `driven_here`: whether calls in flight in a session are this
    /// process's (false for a session another host drives, whose cached
    /// calls in flight say nothing of this one).
    pub(crate) fn get_or_make(
        &self,
        id: &str,
        driven_here: &dyn Fn(&str) -> bool,
    ) -> Arc<Mutex<Slot>> {
        let mut map = lock(&self.map);
        if let Some(slot) = map.to_back(id) {
            return slot.clone();
        }
        let slot = Arc::new(Mutex::new(Slot::default()));
        map.insert(id.to_string(), slot.clone());
        self.evict(&mut map, driven_here);
        slot
    }

    /// The slot of session `id` if it has one (this makes none and does
    /// not count as a use).
    pub(crate) fn existing(&self, id: &str) -> Option<Arc<Mutex<Slot>>> {
        lock(&self.map).get(id).cloned()
    }

    /// Whether session `id` has a slot.
    pub(crate) fn contains(&self, id: &str) -> bool {
        lock(&self.map).contains_key(id)
    }

    /// How many slots there are (idle ones at most the cache's size).
    pub(crate) fn len(&self) -> usize {
        lock(&self.map).len()
    }

    /// Evicts idle slots, least recently used first, until at most `size`
    /// remain or every remaining one is in use. A slot in use that is met
    /// on the way goes to the back (it is being used), so the next
    /// eviction does not walk past it again.
    fn evict(
        &self,
        map: &mut LinkedHashMap<String, Arc<Mutex<Slot>>>,
        driven_here: &dyn Fn(&str) -> bool,
    ) {
        let mut busy = Vec::new();
        // Each slot is looked at once at most: the busy ones go to the back.
        let slots = map.len();
        let mut looked = 0;
        while map.len() > self.size && looked < slots {
            let Some((id, slot)) = map.front() else {
                break;
            };
            looked += 1;
            if idle(slot, || driven_here(id)) {
                map.pop_front();
            } else {
                let id = id.clone();
                busy.push(id.clone());
                map.to_back(&id);
            }
        }
        if !busy.is_empty() {
            tracing::debug!(
                in_use = busy.len(),
                cached = map.len(),
                size = self.size,
                "session cache: slots in use are kept past the cache size"
            );
        }
    }
}

/// Whether `slot` may be evicted: nobody but the cache holds it, nobody
/// has it locked, and its session has no call in flight here.
fn idle(slot: &Arc<Mutex<Slot>>, driven_here: impl FnOnce() -> bool) -> bool {
    // The cache's lock is held, and every other holder got its clone under
    // it: a count of one cannot become two while we look.
    if Arc::strong_count(slot) > 1 {
        return false;
    }
    match slot.try_lock() {
        Ok(slot) => {
            slot.state
                .as_ref()
                .is_none_or(|state| state.in_flight.is_empty())
                || !driven_here()
        }
        Err(_) => false,
    }
}

/// Locks `slot`; a slot poisoned by a panic mid-append drops its cache, since
/// it may no longer match the log.
pub(crate) fn lock_slot(slot: &Mutex<Slot>) -> MutexGuard<'_, Slot> {
    match slot.lock() {
        Ok(guard) => guard,
        Err(poisoned) => {
            let mut guard = poisoned.into_inner();
            guard.state = None;
            slot.clear_poison();
            guard
        }
    }
}

/// Locks a mutex whose data stays consistent even if a holder panicked.
pub(crate) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn slot(slots: &Slots, id: &str) -> Arc<Mutex<Slot>> {
        slots.get_or_make(id, &|_| true)
    }

    #[test]
    fn the_least_recently_used_idle_slot_goes_first() {
        let slots = Slots::new(2);
        slot(&slots, "a");
        slot(&slots, "b");
        slot(&slots, "a");
        slot(&slots, "c");
        assert!(slots.contains("a") && slots.contains("c"));
        assert!(!slots.contains("b"), "b was the least recently used");
        assert_eq!(slots.len(), 2);
    }

    #[test]
    fn a_slot_in_use_is_never_evicted() {
        let slots = Slots::new(1);
        let held = slot(&slots, "a");
        let locked = slot(&slots, "b");
        let guard = locked.lock().unwrap();
        slot(&slots, "c");
        assert!(slots.contains("a"), "held by a caller");
        assert!(slots.contains("b"), "locked by a writer");
        assert_eq!(slots.len(), 3, "kept past the size while in use");
        drop(guard);
        drop(locked);
        drop(held);
        slot(&slots, "d");
        assert_eq!(slots.len(), 1, "once free, the others go");
        // The same lock for a session as long as anyone holds it.
        let first = slot(&slots, "d");
        assert!(Arc::ptr_eq(&first, &slot(&slots, "d")));
    }
}
