//! Calls in flight when the host stopped become interrupted on recovery.

use super::*;

#[test]
fn recover_interrupts_calls_in_flight_and_reports_how_to_rerun_them() {
    let env = Env::new();
    let s = env.start("busy", Role::Workagent);
    env.call(&s.header.id, "done", "ok");
    env.request(&s.header.id, "running");
    env.begin(&s.header.id, "running", true, "key-42");
    env.request(&s.header.id, "unsafe");
    env.begin(&s.header.id, "unsafe", false, "key-43");
    env.request(&s.header.id, "queued");
    let other = env.start("idle", Role::Workagent);

    // The host dies: a new one starts on the same data dir.
    let env = env.reopen(SessionsConfig::default());
    let recovery = env.sessions.recover().unwrap();
    assert!(recovery.refused.is_empty());
    let mut calls = recovery.interrupted.clone();
    calls.sort_by(|a, b| a.call_id.cmp(&b.call_id));
    let summary: Vec<(&str, bool, bool, Option<&str>)> = calls
        .iter()
        .map(|c| {
            (
                c.call_id.as_str(),
                c.started,
                c.idempotent,
                c.idempotency_key.as_deref(),
            )
        })
        .collect();
    assert_eq!(
        summary,
        [
            ("queued", false, false, None),
            ("running", true, true, Some("key-42")),
            ("unsafe", true, false, Some("key-43"))
        ]
    );
    assert!(
        calls
            .iter()
            .all(|c| c.session == s.header.id && c.session_name.as_deref() == Some("busy"))
    );

    let resumed = env.sessions.resume("busy").unwrap();
    assert!(resumed.state.in_flight.is_empty());
    assert_eq!(resumed.interrupted_calls.len(), 3);
    assert_eq!(
        (
            resumed.state.counters.totals.calls,
            resumed.state.counters.totals.failures
        ),
        (4, 3)
    );

    // Re-running the idempotent call under its key settles it.
    env.request(&s.header.id, "running-again");
    env.begin(&s.header.id, "running-again", true, "key-42");
    let state = env.sessions.show("busy").unwrap();
    let left: Vec<&str> = state
        .interrupted
        .iter()
        .map(|c| c.call_id.as_str())
        .collect();
    assert_eq!(left, ["queued", "unsafe"]);

    // Recovering again finds only the call started since.
    let env = env.reopen(SessionsConfig::default());
    let again = env.sessions.recover().unwrap();
    assert_eq!(again.interrupted.len(), 1);
    assert_eq!(
        env.sessions.show(&other.header.id).unwrap().header.status,
        SessionStatus::Created
    );
}

#[test]
fn recover_skips_a_damaged_session_and_recovers_the_others() {
    let env = Env::new();
    let hurt = env.start("hurt", Role::Workagent);
    env.request(&hurt.header.id, "c1");
    let fine = env.start("fine", Role::Workagent);
    env.request(&fine.header.id, "c2");
    let garbled = env.start("garbled", Role::Workagent);
    env.request(&garbled.header.id, "c3");
    let env = env.offline(SessionsConfig::default(), |dir| {
        with_raw_streams(dir, |streams| {
            // Garbage where the record of event 2 was: the storage cannot decode it.
            streams
                .insert(sled_raw::record_key(&hurt.header.id, 2), &b"{not json"[..])
                .unwrap();
            // A record that decodes, holding garbage for event 2.
            edit_raw_event(streams, &garbled.header.id, 2, |_| b"{not json".to_vec());
        })
    });
    let recovery = env.sessions.recover().unwrap();
    assert_eq!(recovery.interrupted.len(), 1);
    assert_eq!(recovery.interrupted[0].call_id, "c2");
    let mut refused: Vec<(&str, u64)> = recovery
        .refused
        .iter()
        .map(|e| match e {
            SessionError::Tampered { session, seq, .. } => (session.as_str(), *seq),
            other => panic!("expected Tampered, got {other:?}"),
        })
        .collect();
    refused.sort();
    let label = |name: &str, id: &str| format!("`{name}` ({id})");
    let (hurt_label, garbled_label) = (
        label("hurt", &hurt.header.id),
        label("garbled", &garbled.header.id),
    );
    let mut expected = vec![(hurt_label.as_str(), 2), (garbled_label.as_str(), 2)];
    expected.sort();
    assert_eq!(refused, expected);
}

#[test]
fn recover_repairs_an_index_that_fell_behind_the_log() {
    let env = Env::new();
    let s = env.start("lagging", Role::Workagent);
    env.sessions.end("lagging", EndOutcome::Completed).unwrap();
    // As if the host died between the end record and the index updates.
    let mut stale = SessionInfo::from(&env.sessions.show(&s.header.id).unwrap());
    stale.header.status = SessionStatus::Active;
    env.store
        .put(
            "sessions",
            &s.header.id,
            &serde_json::to_vec(&stale).unwrap(),
        )
        .unwrap();
    env.store
        .put("session_names", "local/lagging", s.header.id.as_bytes())
        .unwrap();
    let live = format!("local/{}", s.header.id);
    env.store.put("sessions_live", &live, b"").unwrap();

    let env = env.reopen(SessionsConfig::default());
    env.sessions.recover().unwrap();
    let listed = env
        .sessions
        .list(&SessionFilter::default(), &Default::default())
        .unwrap()
        .items;
    assert_eq!(listed[0].header.status, SessionStatus::Completed);
    assert_eq!(
        env.store.get("session_names", "local/lagging").unwrap(),
        None
    );
    assert_eq!(env.store.get("sessions_live", &live).unwrap(), None);
}
