//! A log altered on disk is detected; that session refuses to resume, others work.

use super::*;

use crate::storage::sled_raw::record_key;

/// Two sessions with notes: `victim` (20 events) and `bystander` (5 events).
fn two_sessions() -> (Env, String, String) {
    let env = Env::new();
    let victim = env.start("victim", Role::Workagent).header.id;
    let bystander = env.start("bystander", Role::Workagent).header.id;
    for i in 2..=20 {
        env.note(&victim, &format!("step {i}"));
    }
    for i in 2..=5 {
        env.note(&bystander, &format!("step {i}"));
    }
    (env, victim, bystander)
}

#[test]
fn an_altered_event_is_reported_and_its_session_refuses_to_resume() {
    let (env, victim, bystander) = two_sessions();
    let env = env.offline(SessionsConfig::default(), |dir| {
        with_raw_streams(dir, |streams| {
            alter_raw_event(streams, &victim, 7, "step 7", "step 8");
        })
    });

    let report = env.sessions.verify("victim").unwrap();
    assert!(!report.ok);
    assert_eq!(report.events_checked, 6);
    assert_eq!(
        report.first_bad,
        Some((7, "its hash does not match its content".to_string()))
    );

    let err = env.sessions.resume("victim").unwrap_err();
    assert!(
        matches!(err, SessionError::Tampered { seq: 7, .. }),
        "{err}"
    );
    assert_eq!(
        err.to_string(),
        format!(
            "session `victim` ({victim}) will not resume: its log was altered at event 7: its hash does not match \
             its content; run `glovebox log verify` to see the damage and restore the data dir from a backup"
        )
    );
    // Not silently either: appends and shows refuse too.
    assert!(matches!(
        env.sessions.show("victim"),
        Err(SessionError::Tampered { .. })
    ));
    assert!(matches!(
        env.sessions
            .append("victim", EventKind::Note { text: "x".into() }),
        Err(SessionError::Tampered { .. })
    ));

    // The other session is unaffected.
    assert_eq!(
        env.sessions
            .resume("bystander")
            .unwrap()
            .state
            .header
            .status,
        SessionStatus::Active
    );
    env.note(&bystander, "still working");
    let reports = env.sessions.verify_all().unwrap();
    let bad: Vec<&str> = reports
        .iter()
        .filter(|r| !r.ok)
        .map(|r| r.session.as_str())
        .collect();
    assert_eq!(bad, [victim.as_str()]);
    assert_eq!(reports.len(), 2);
}

#[test]
fn a_removed_event_breaks_the_chain() {
    let (env, victim, _) = two_sessions();
    let env = env.offline(SessionsConfig::default(), |dir| {
        with_raw_streams(dir, |streams| {
            streams
                .remove(record_key(&victim, 5))
                .unwrap()
                .expect("event 5");
        })
    });
    let report = env.sessions.verify(&victim).unwrap();
    assert_eq!(report.first_bad, Some((5, "it is missing".to_string())));
    assert_eq!((report.events_checked, report.last_seq), (4, 20));
    let err = env.sessions.resume("victim").unwrap_err();
    assert!(
        matches!(err, SessionError::Tampered { seq: 5, .. }),
        "{err}"
    );
    assert!(matches!(
        env.sessions.events(&victim, 1, 100),
        Err(SessionError::Tampered { seq: 5, .. })
    ));
    // The events before the gap still read.
    assert_eq!(env.sessions.events(&victim, 1, 4).unwrap().len(), 4);
}

/// A damaged event is reported, not a later one: storage damage further on
/// does not hide an alteration before it.
#[test]
fn the_first_of_several_damaged_events_is_reported() {
    let (env, victim, _) = two_sessions();
    let env = env.offline(SessionsConfig::default(), |dir| {
        with_raw_streams(dir, |streams| {
            alter_raw_event(streams, &victim, 3, "step 3", "step 9");
            streams
                .remove(record_key(&victim, 5))
                .unwrap()
                .expect("event 5");
        })
    });
    let report = env.sessions.verify(&victim).unwrap();
    assert_eq!(
        report.first_bad,
        Some((3, "its hash does not match its content".to_string()))
    );
    assert_eq!(report.events_checked, 2);
    assert!(matches!(
        env.sessions.resume(&victim),
        Err(SessionError::Tampered { seq: 3, .. })
    ));
}

/// A stored record the storage cannot decode (not an event's bytes: the
/// record around them) is damage to that event.
#[test]
fn an_undecodable_record_is_reported_at_its_event() {
    let (env, victim, bystander) = two_sessions();
    let env = env.offline(SessionsConfig::default(), |dir| {
        with_raw_streams(dir, |streams| {
            streams
                .insert(record_key(&victim, 7), &b"{not a record"[..])
                .unwrap();
        })
    });
    let report = env.sessions.verify("victim").unwrap();
    assert!(!report.ok);
    assert_eq!(report.events_checked, 6);
    let (seq, reason) = report.first_bad.expect("a problem");
    assert_eq!(seq, 7);
    assert!(reason.contains("malformed"), "{reason}");

    let err = env.sessions.resume("victim").unwrap_err();
    assert!(
        matches!(err, SessionError::Tampered { seq: 7, .. }),
        "{err}"
    );
    assert!(
        err.to_string().starts_with(&format!(
            "session `victim` ({victim}) will not resume: its log was altered at event 7: the stored record"
        )),
        "{err}"
    );
    assert!(matches!(
        env.sessions
            .append("victim", EventKind::Note { text: "x".into() }),
        Err(SessionError::Tampered { seq: 7, .. })
    ));

    env.note(&bystander, "still working");
    let bad: Vec<String> = env
        .sessions
        .verify_all()
        .unwrap()
        .into_iter()
        .filter(|r| !r.ok)
        .map(|r| r.session)
        .collect();
    assert_eq!(bad, [victim]);
}

/// When the record ending the log does not decode, the storage cannot tell
/// where the log ends: the events before it are still verified.
#[test]
fn an_undecodable_last_record_is_reported_at_its_event() {
    let (env, victim, bystander) = two_sessions();
    let env = env.offline(SessionsConfig::default(), |dir| {
        with_raw_streams(dir, |streams| {
            // Too short to hold even the record's entry count.
            streams.insert(record_key(&victim, 20), &b"{"[..]).unwrap();
        })
    });
    let report = env.sessions.verify(&victim).unwrap();
    assert_eq!((report.events_checked, report.last_seq), (19, 19));
    assert_eq!(report.first_bad.map(|(seq, _)| seq), Some(20));
    assert!(matches!(
        env.sessions.resume(&victim),
        Err(SessionError::Tampered { seq: 20, .. })
    ));
    assert!(matches!(
        env.sessions
            .append(&victim, EventKind::Note { text: "x".into() }),
        Err(SessionError::Tampered { seq: 20, .. })
    ));
    assert_eq!(env.sessions.verify_all().unwrap().len(), 2);
    env.note(&bystander, "still working");
}

#[test]
fn a_cut_off_tail_is_caught_by_the_checkpoint_after_it() {
    let (env, victim, _) = two_sessions();
    env.sessions.resume(&victim).unwrap();
    env.sessions.pause(&victim, "checkpointed").unwrap();
    let last = env.sessions.show(&victim).unwrap().last_seq;
    assert_eq!(last, 22);
    // Drop the last two events, as a truncation would: the log then ends at 20.
    let env = env.offline(SessionsConfig::default(), |dir| {
        with_raw_streams(dir, |streams| {
            for seq in [22, 21] {
                streams
                    .remove(record_key(&victim, seq))
                    .unwrap()
                    .expect("the event");
            }
        })
    });
    let report = env.sessions.verify(&victim).unwrap();
    let (seq, reason) = report.first_bad.expect("a problem");
    assert_eq!(seq, 21);
    assert!(reason.contains("events were removed"), "{reason}");
    assert!(matches!(
        env.sessions.resume(&victim),
        Err(SessionError::Tampered { seq: 21, .. })
    ));
}

/// Loading reads the newest checkpoint and the tail only (so resume does not
/// grow with the log): an alteration before the checkpoint cannot change the
/// resumed state, which the checkpoint holds, and it is the full `verify`
/// that finds it.
#[test]
fn an_alteration_before_the_newest_checkpoint_is_found_by_verify() {
    let (env, victim, _) = two_sessions();
    env.sessions.resume(&victim).unwrap();
    env.sessions.pause(&victim, "checkpointed").unwrap();
    let expected = env.sessions.show(&victim).unwrap();
    let env = env.offline(SessionsConfig::default(), |dir| {
        with_raw_streams(dir, |streams| {
            alter_raw_event(streams, &victim, 3, "step 3", "step 9");
        })
    });
    let report = env.sessions.verify(&victim).unwrap();
    assert_eq!(report.first_bad.map(|(seq, _)| seq), Some(3));
    let resumed = env.sessions.resume(&victim).unwrap();
    assert_eq!(resumed.state.counters, expected.counters);
    assert_eq!(
        env.sessions.last_load_stats().unwrap().checkpoint_seq,
        Some(22)
    );
}

/// No checkpoint covers the last events (they come every 256 by default):
/// the head the session's index recorded after every append is what finds
/// the cut.
#[test]
fn threat_45_a_tail_cut_between_checkpoints_is_caught_by_the_recorded_head() {
    let (env, victim, bystander) = two_sessions();
    let last = env.sessions.show(&victim).unwrap().last_seq;
    assert_eq!(last, 20);
    assert!(
        checkpoint::list(&*env.store, &victim).unwrap().is_empty(),
        "no checkpoint: the head alone must find the cut"
    );
    let env = env.offline(SessionsConfig::default(), |dir| {
        with_raw_streams(dir, |streams| {
            for seq in [20, 19] {
                streams
                    .remove(record_key(&victim, seq))
                    .unwrap()
                    .expect("the event");
            }
        })
    });
    let report = env.sessions.verify(&victim).unwrap();
    assert!(!report.ok);
    assert_eq!(report.events_checked, 18, "the chain itself is intact");
    let (seq, reason) = report.first_bad.expect("a problem");
    assert_eq!(seq, 19);
    assert!(
        reason.contains("ends at event 18") && reason.contains("recorded at event 20"),
        "{reason}"
    );
    assert!(matches!(
        env.sessions.resume(&victim),
        Err(SessionError::Tampered { seq: 19, .. })
    ));
    // The other session reaches its head.
    let other = env.sessions.verify(&bystander).unwrap();
    assert!(other.ok, "{other:?}");
    assert_eq!(other.head_checked, Some(5));
}

/// The last event replaced by another one sealed onto the same chain (what
/// someone who can write the store, but holds no key, can forge): the chain
/// verifies, but its head is not the one that was recorded.
#[test]
fn threat_45_a_resealed_tail_differs_from_the_recorded_head() {
    let (env, victim, _) = two_sessions();
    let at_19 = env.sessions.events(&victim, 19, 1).unwrap().remove(0);
    let forged = Event::seal(
        &Chain::Plain,
        &victim,
        20,
        at_19.at_ms + 1,
        &at_19.hash,
        EventKind::Note {
            text: "nothing happened".into(),
        },
    );
    let env = env.offline(SessionsConfig::default(), |dir| {
        with_raw_streams(dir, |streams| {
            edit_raw_event(streams, &victim, 20, |_| forged.to_bytes());
        })
    });
    let report = env.sessions.verify(&victim).unwrap();
    assert!(!report.ok, "{report:?}");
    assert_eq!(report.events_checked, 20, "the forged chain links");
    let (seq, reason) = report.first_bad.expect("a problem");
    assert_eq!(seq, 20);
    assert!(reason.contains("not the one recorded"), "{reason}");
}
