//! Calls owed an ending: a call whose record failed with the store gave
//! up, and once the store was reopened without a restart the next load of
//! its session marks it `interrupted` if it is still in flight, as a
//! restart's recovery would. What the service keeps of them
//! ([`Owed`](super::store::Owed), in [`Sessions`]), and how they are kept
//! and settled.

use super::error::SessionError;
use super::event::Event;
use super::kind::EventKind;
use super::slots::{Slot, lock};
use super::store::{Commit, Sessions};

/// At most this many calls are kept owed; past it a failed call is left to
/// the recovery of the next start, which marks every call in flight.
const OWED_MAX: usize = 10_000;

impl Sessions {
    /// Keeps the calls of `events`, whose write failed, owed an ending
    /// (see [`Owed`](super::store::Owed)).
    pub(super) fn owe(&self, id: &str, events: &[Event]) {
        let generation = self.storage.generation();
        let mut owed = lock(&self.owed);
        let mut count: usize = owed.values().map(Vec::len).sum();
        for event in events {
            let call_id = match &event.kind {
                EventKind::CallRequested { call_id, .. }
                | EventKind::CallDecided { call_id, .. }
                | EventKind::CallStarted { call_id, .. }
                | EventKind::CallFinished { call_id, .. } => call_id,
                _ => continue,
            };
            if count >= OWED_MAX {
                tracing::warn!(session = %id, call_id = %call_id, "too many calls owed an ending; the next start's recovery ends this one");
                continue;
            }
            let calls = owed.entry(id.to_string()).or_default();
            if !calls.iter().any(|(c, _)| c == call_id) {
                calls.push((call_id.clone(), generation));
                count += 1;
            }
        }
    }

    /// Ends the calls of session `id` (just loaded into `slot`) whose record
    /// failed before the store was reopened: each still in flight in the log
    /// is marked `interrupted`, as a restart's recovery would, since the call
    /// that made it gave up when its write failed.
    pub(super) fn settle_owed(
        &self,
        slot: &mut Slot,
        id: &str,
        generation: u64,
    ) -> Result<(), SessionError> {
        let due: Vec<String> = {
            let mut owed = lock(&self.owed);
            let Some(calls) = owed.get_mut(id) else {
                return Ok(());
            };
            let (due, later): (Vec<_>, Vec<_>) =
                calls.drain(..).partition(|(_, g)| *g < generation);
            *calls = later;
            if calls.is_empty() {
                owed.remove(id);
            }
            due.into_iter().map(|(call_id, _)| call_id).collect()
        };
        for (i, call_id) in due.iter().enumerate() {
            let in_flight = slot
                .state
                .as_ref()
                .is_some_and(|state| state.in_flight.contains_key(call_id));
            if !in_flight {
                continue;
            }
            let kind = EventKind::CallInterrupted {
                call_id: call_id.clone(),
                reason: "the store failed while the call was being recorded, and the call gave up; the store was reopened without a restart".to_string(),
            };
            if let Err(e) = self.append_batch_locked(slot, id, vec![kind], Commit::Durable) {
                // Owed still: the next load after the next reopen tries again.
                let mut owed = lock(&self.owed);
                let calls = owed.entry(id.to_string()).or_default();
                calls.extend(
                    due[i..]
                        .iter()
                        .map(|c| (c.clone(), generation.saturating_sub(1))),
                );
                return Err(e);
            }
            tracing::warn!(session = %id, call_id = %call_id, "call marked interrupted: its record failed with the store, which was reopened");
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::session::Chain;
    use crate::session::GENESIS_HASH;
    use crate::storage::{Durability, SledStore};

    fn requested(n: usize) -> Vec<Event> {
        (0..n)
            .map(|i| {
                let kind = EventKind::CallRequested {
                    call_id: format!("c-{i}"),
                    tool: "echo.echo".into(),
                    input_digest: String::new(),
                    input: None,
                    job_id: None,
                    trace_id: None,
                    parent_call: None,
                };
                Event::seal(&Chain::Plain, "s-a", i as u64 + 1, 0, GENESIS_HASH, kind)
            })
            .collect()
    }

    fn owed(sessions: &Sessions) -> usize {
        lock(&sessions.owed).values().map(Vec::len).sum()
    }

    /// The cap on what is owed: at most `OWED_MAX` calls are kept owed an
    /// ending, over all sessions; a call owed twice is kept once.
    #[test]
    fn at_most_owed_max_calls_are_kept_owed_and_none_twice() {
        let dir = tempfile::tempdir().unwrap();
        let store = Arc::new(SledStore::open(dir.path(), Durability::Flush).unwrap());
        let sessions = Sessions::new(store);
        let events = requested(OWED_MAX + 5);
        sessions.owe("s-a", &events);
        assert_eq!(owed(&sessions), OWED_MAX);
        sessions.owe("s-b", &events[..1]);
        assert_eq!(owed(&sessions), OWED_MAX, "the cap holds across sessions");

        let dir = tempfile::tempdir().unwrap();
        let store = Arc::new(SledStore::open(dir.path(), Durability::Flush).unwrap());
        let sessions = Sessions::new(store);
        sessions.owe("s-a", &events[..3]);
        sessions.owe("s-a", &events[..3]);
        assert_eq!(owed(&sessions), 3);
    }
}
