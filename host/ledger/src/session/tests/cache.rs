//! The session cache (`slots.rs`): at most `session_cache` idle sessions
//! keep their state in memory; an evicted one loads again from the store
//! as it was; a session in use, or with a call in flight here, stays.

use std::collections::HashSet;

use super::*;

fn small_cache(size: usize) -> SessionsConfig {
    SessionsConfig {
        session_cache: size,
        ..SessionsConfig::default()
    }
}

/// Why: a slot was kept for every session ever touched, so an agent that
/// starts and ends short sessions in a loop grew the host without end.
#[test]
fn threat_49_idle_sessions_past_the_cache_size_are_evicted_and_load_again_whole() {
    let env = Env::with_config(small_cache(4));
    let agent = workagent("a");
    let mut first = None;
    for i in 0..40 {
        let s = env
            .sessions
            .scope(&agent)
            .start(
                start_request(&format!("s{i}"), Role::Workagent),
                &HashSet::new(),
            )
            .unwrap();
        env.note(&s.header.id, "working");
        let ended = env
            .sessions
            .scope(&agent)
            .end(&s.header.id, EndOutcome::Exit)
            .unwrap();
        first.get_or_insert(ended);
        assert!(
            env.sessions.cached_sessions() <= 4,
            "at most the cache's size"
        );
    }
    let first = first.unwrap();
    assert!(!env.sessions.slots.contains(&first.header.id), "evicted");
    // Loaded again from the store: the same state, and its log goes on.
    assert_eq!(env.sessions.show(&first.header.id).unwrap(), first);
    env.note(&first.header.id, "after the eviction");
    assert!(env.sessions.verify(&first.header.id).unwrap().ok);
    assert_eq!(env.sessions.cached_sessions(), 4);
}

/// Why: the call pipeline and the lease renewal look at the calls in
/// flight in the cached state; evicting it mid-call would lose sight of them.
#[test]
fn threat_49_a_session_with_a_call_in_flight_or_held_by_a_writer_is_never_evicted() {
    let env = Env::with_config(small_cache(2));
    let busy = env.start("busy", Role::Workagent);
    env.request("busy", "c-1");
    let held = env.start("held", Role::Workagent);
    let slot = env.sessions.slot(&held.header.id);
    let guard = super::super::slots::lock_slot(&slot);
    for i in 0..10 {
        let s = env.start(&format!("idle{i}"), Role::Workagent);
        env.sessions.end(&s.header.id, EndOutcome::Exit).unwrap();
    }
    assert!(
        env.sessions.slots.contains(&busy.header.id),
        "a call in flight"
    );
    assert!(
        env.sessions.slots.contains(&held.header.id),
        "held by a writer"
    );
    assert!(env.sessions.cached_sessions() <= 4, "the idle ones went");
    drop(guard);
    drop(slot);
    env.begin("busy", "c-1", true, "key-1");
    env.sessions
        .append(
            "busy",
            EventKind::CallInterrupted {
                call_id: "c-1".into(),
                reason: "test".into(),
            },
        )
        .unwrap();
    for i in 0..4 {
        env.start(&format!("more{i}"), Role::Workagent);
    }
    assert!(
        !env.sessions.slots.contains(&busy.header.id),
        "idle once its call ended"
    );
    assert!(
        !env.sessions.slots.contains(&held.header.id),
        "idle once let go"
    );
}
