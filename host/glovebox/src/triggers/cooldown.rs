//! The cooldown of event triggers (threat 57): an agent that causes events
//! in a loop (failing jobs, raising flags, completing sessions) must not
//! start a run of a trigger per event.
//!
//! A trigger fires at once on an event when it has not fired within its
//! `cooldown`; events that come within the cooldown are folded: when it
//! ends, the trigger fires once more for all of them (its cause counts them
//! and quotes the last), so the last event is never lost and a loop starts
//! at most one run per cooldown. The agent sees nothing of it: its calls
//! and the events they log are never refused or delayed by a trigger; the
//! trigger's record (`glovebox schedule list`) counts the folded events.

use std::collections::HashMap;
use std::time::Duration;

use tokio::time::Instant;

/// A fire to make now.
#[derive(Debug, PartialEq, Eq)]
pub struct Fire {
    pub cause: String,
    /// Events folded into this fire by the cooldown (0: a fire of its own).
    pub folded: u64,
}

#[derive(Default)]
struct State {
    last_fire: Option<Instant>,
    /// Events within the cooldown: how many, and the last one's cause.
    folded: u64,
    last_cause: String,
}

/// Every trigger's cooldown state, by trigger name.
#[derive(Default)]
pub struct Cooldowns {
    states: HashMap<String, State>,
}

impl Cooldowns {
    /// An event that fires trigger `name` (with `cooldown`) at `now`: the
    /// fire to make now, or `None` when the event is folded.
    pub fn offer(
        &mut self,
        name: &str,
        cooldown: Duration,
        cause: String,
        now: Instant,
    ) -> Option<Fire> {
        let state = self.states.entry(name.to_string()).or_default();
        let cooled = state
            .last_fire
            .is_none_or(|last| now.saturating_duration_since(last) >= cooldown);
        if cooled && state.folded == 0 {
            state.last_fire = Some(now);
            return Some(Fire { cause, folded: 0 });
        }
        state.folded += 1;
        state.last_cause = cause;
        None
    }

    /// When the next folded fire is due, if any; `cooldown_of` gives a
    /// trigger's cooldown (`None`: the trigger is gone).
    pub fn next_due(&self, cooldown_of: impl Fn(&str) -> Option<Duration>) -> Option<Instant> {
        self.states
            .iter()
            .filter(|(_, s)| s.folded > 0)
            .filter_map(|(name, s)| Some(s.last_fire? + cooldown_of(name).unwrap_or_default()))
            .min()
    }

    /// The folded fires due at `now`, by trigger name; a trigger that is
    /// gone (`cooldown_of` is `None`) drops its folded events.
    pub fn due(
        &mut self,
        cooldown_of: impl Fn(&str) -> Option<Duration>,
        now: Instant,
    ) -> Vec<(String, Fire)> {
        let mut fires = Vec::new();
        for (name, state) in &mut self.states {
            if state.folded == 0 {
                continue;
            }
            let Some(cooldown) = cooldown_of(name) else {
                state.folded = 0;
                continue;
            };
            if state
                .last_fire
                .is_some_and(|last| now.saturating_duration_since(last) < cooldown)
            {
                continue;
            }
            let folded = std::mem::take(&mut state.folded);
            let cause = format!(
                "{folded} events within the trigger's cooldown of {}, folded into this run; the last: {}",
                humantime::format_duration(cooldown),
                std::mem::take(&mut state.last_cause)
            );
            state.last_fire = Some(now);
            fires.push((name.clone(), Fire { cause, folded }));
        }
        fires
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn events_within_the_cooldown_fold_into_one_fire_at_its_end() {
        let minute = Duration::from_secs(60);
        let cooldown = |_: &str| Some(minute);
        let mut c = Cooldowns::default();
        let t0 = Instant::now();
        assert_eq!(
            c.offer("t", minute, "e1".into(), t0),
            Some(Fire {
                cause: "e1".into(),
                folded: 0
            })
        );
        for i in 2..=10 {
            assert_eq!(
                c.offer("t", minute, format!("e{i}"), t0 + Duration::from_secs(i)),
                None
            );
        }
        assert_eq!(c.next_due(cooldown), Some(t0 + minute));
        assert!(c.due(cooldown, t0 + Duration::from_secs(59)).is_empty());
        let fires = c.due(cooldown, t0 + minute);
        assert_eq!(fires.len(), 1);
        assert_eq!(fires[0].1.folded, 9);
        assert!(
            fires[0].1.cause.contains("the last: e10"),
            "{}",
            fires[0].1.cause
        );
        assert_eq!(c.next_due(cooldown), None);
        // An event within the cooldown after that fire folds again.
        assert_eq!(
            c.offer(
                "t",
                minute,
                "e11".into(),
                t0 + minute + Duration::from_secs(1)
            ),
            None
        );
        // A trigger without a cooldown fires on every event.
        for i in 0..3 {
            assert!(
                c.offer("free", Duration::ZERO, format!("f{i}"), t0)
                    .is_some()
            );
        }
    }
}
