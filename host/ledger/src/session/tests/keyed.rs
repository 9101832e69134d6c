//! The keyed chain (`[storage] chain_key_file`): a log sealed with
//! HMAC-SHA256 under a key outside the data dir cannot be re-sealed by
//! someone who can write the store but not read the key; the mode is per
//! session, so plain logs still load, and a keyed one never loads as plain.

use super::*;

use crate::storage::sled_raw::record_key;

fn key(byte: u8) -> Arc<ChainKey> {
    Arc::new(ChainKey::new(vec![byte; 32], format!("/keys/chain-{byte}.key")).unwrap())
}

fn keyed(key: &Arc<ChainKey>) -> SessionsConfig {
    SessionsConfig {
        chain_key: Some(key.clone()),
        ..SessionsConfig::default()
    }
}

/// A keyed session `victim` with 20 events: notes and calls.
fn keyed_session(key: &Arc<ChainKey>) -> (Env, String) {
    let env = Env::with_config(keyed(key));
    let victim = env.start("victim", Role::Workagent).header.id;
    for i in 0..3 {
        env.call(&victim, &format!("c{i}"), "ok");
    }
    while env.sessions.show(&victim).unwrap().last_seq < 20 {
        env.note(&victim, "step");
    }
    (env, victim)
}

/// Events `from..` of `events` rebuilt by `edit` and re-sealed on `chain`
/// (what someone who knows the algorithm but not the key can do).
fn reseal(
    events: &[Event],
    from: u64,
    chain: &Chain,
    mut edit: impl FnMut(&mut Event),
) -> Vec<Event> {
    let mut prev = events[usize::try_from(from).unwrap() - 2].hash.clone();
    let mut out = Vec::new();
    for event in &events[usize::try_from(from).unwrap() - 1..] {
        let mut event = event.clone();
        edit(&mut event);
        event.prev_hash = prev;
        event.hash = event.compute_hash(chain);
        prev = event.hash.clone();
        out.push(event);
    }
    out
}

/// Writes `forged` over the stored events, and the index entry's head over
/// to the last of them (without a MAC: that needs the key).
fn write_forgery(env: Env, config: SessionsConfig, id: &str, forged: &[Event]) -> Env {
    let mut info = env.sessions.get_info(id).unwrap().expect("an index entry");
    let last = forged.last().expect("forged events");
    info.head_seq = last.seq;
    info.head_hash = last.hash.clone();
    info.head_mac = String::new();
    env.store
        .put(
            info::SESSIONS_BUCKET,
            id,
            &serde_json::to_vec(&info).unwrap(),
        )
        .unwrap();
    env.offline(config, |dir| {
        with_raw_streams(dir, |streams| {
            for event in forged {
                edit_raw_event(streams, id, event.seq, |_| event.to_bytes());
            }
        })
    })
}

#[test]
fn threat_26_a_keyed_chain_verifies_and_says_its_key() {
    let key = key(1);
    let (env, victim) = keyed_session(&key);
    let first = env.sessions.events(&victim, 1, 1).unwrap().remove(0);
    let recorded = first.keyed_chain().expect("event 1 records the mode");
    assert_eq!(recorded.key_id, key.id());
    assert_eq!(recorded.key_file, "/keys/chain-1.key");
    assert!(
        !first.to_bytes().windows(32).any(|w| w == [1u8; 32]),
        "never the key"
    );
    assert!(
        first
            .check_link(&victim, 1, GENESIS_HASH, &Chain::Plain)
            .is_err(),
        "not a SHA-256 chain"
    );

    let report = env.sessions.verify(&victim).unwrap();
    assert!(report.ok, "{report:?}");
    assert_eq!(report.events_checked, 20);
    assert_eq!(report.head_checked, Some(20));
    assert_eq!(report.mode(), format!("keyed (key id {})", key.id()));

    // It loads again from its log and from a (keyed) checkpoint.
    let env = env.reopen(SessionsConfig {
        checkpoint_every: 4,
        ..keyed(&key)
    });
    assert_eq!(
        env.sessions.resume("victim").unwrap().state.header.status,
        SessionStatus::Active
    );
    for _ in 0..5 {
        env.note(&victim, "more");
    }
    let (_, stats) = env.sessions.reload(&victim, true).unwrap();
    assert!(
        stats.checkpoint_seq.is_some_and(|seq| seq > 20),
        "{stats:?}"
    );
    assert!(stats.checkpoints_rejected.is_empty(), "{stats:?}");
    assert!(env.sessions.verify(&victim).unwrap().ok);
}

/// The attacker alters event 7 and re-seals it and every event after it
/// with SHA-256, and moves the index's head along: the keyed check finds
/// event 7.
#[test]
fn threat_26_an_altered_event_resealed_with_plain_sha256_is_caught_in_keyed_mode() {
    let key = key(1);
    let (env, victim) = keyed_session(&key);
    let events = env.sessions.events(&victim, 1, usize::MAX).unwrap();
    let forged = reseal(&events, 7, &Chain::Plain, |e| {
        if e.seq == 7 {
            e.kind = EventKind::Note {
                text: "nothing happened".into(),
            };
        }
    });
    let env = write_forgery(env, keyed(&key), &victim, &forged);

    let report = env.sessions.verify(&victim).unwrap();
    assert!(!report.ok);
    assert_eq!(report.events_checked, 6);
    let (seq, reason) = report.first_bad.clone().expect("a problem");
    assert_eq!(seq, 7);
    assert!(reason.contains("re-sealed without the key"), "{reason}");
    assert!(matches!(
        env.sessions.resume(&victim),
        Err(SessionError::Tampered { seq: 7, .. })
    ));
}

/// Cutting the tail keeps a valid chain prefix; moving the index's head
/// back with it needs a MAC the attacker cannot make.
#[test]
fn threat_45_a_cut_tail_with_its_head_moved_back_is_caught_in_keyed_mode() {
    let key = key(1);
    let (env, victim) = keyed_session(&key);
    let mut info = env.sessions.get_info(&victim).unwrap().unwrap();
    let at_18 = env.sessions.events(&victim, 18, 1).unwrap().remove(0);
    info.head_seq = 18;
    info.head_hash = at_18.hash;
    env.store
        .put(
            info::SESSIONS_BUCKET,
            &victim,
            &serde_json::to_vec(&info).unwrap(),
        )
        .unwrap();
    let env = env.offline(keyed(&key), |dir| {
        with_raw_streams(dir, |streams| {
            for seq in [20, 19] {
                streams.remove(record_key(&victim, seq)).unwrap();
            }
        })
    });
    let report = env.sessions.verify(&victim).unwrap();
    assert!(!report.ok);
    assert_eq!(report.events_checked, 18, "the chain prefix is intact");
    let (_, reason) = report.first_bad.expect("a problem");
    assert!(reason.contains("no valid MAC"), "{reason}");
    assert!(matches!(
        env.sessions.resume(&victim),
        Err(SessionError::Tampered { .. })
    ));
}

/// The whole log re-sealed as plain, its first event rewritten to say so:
/// its id still says it was started keyed.
#[test]
fn threat_26_a_keyed_log_resealed_whole_as_plain_is_caught() {
    let key = key(1);
    let (env, victim) = keyed_session(&key);
    let events = env.sessions.events(&victim, 1, usize::MAX).unwrap();
    let mut forged = Vec::new();
    let mut prev = GENESIS_HASH.to_string();
    for event in &events {
        let mut event = event.clone();
        if let EventKind::SessionStarted { keyed, .. } = &mut event.kind {
            *keyed = None;
        }
        event.prev_hash = prev;
        event.hash = event.compute_hash(&Chain::Plain);
        prev = event.hash.clone();
        forged.push(event);
    }
    let env = write_forgery(env, keyed(&key), &victim, &forged);
    let report = env.sessions.verify(&victim).unwrap();
    let (seq, reason) = report.first_bad.expect("a problem");
    assert_eq!(seq, 1);
    assert!(reason.contains("started keyed"), "{reason}");
    assert!(matches!(
        env.sessions.resume(&victim),
        Err(SessionError::Tampered { seq: 1, .. })
    ));
}

#[test]
fn threat_26_a_wrong_key_is_caught() {
    let (env, victim) = keyed_session(&key(1));
    let env = env.reopen(keyed(&key(2)));
    let err = env.sessions.verify(&victim).unwrap_err();
    let text = err.to_string();
    assert!(matches!(err, SessionError::KeyRequired(_)), "{text}");
    assert!(
        text.contains(key(1).id())
            && text.contains(key(2).id())
            && text.contains("/keys/chain-1.key")
            && text.contains("chain_key_file"),
        "{text}"
    );
    assert!(matches!(
        env.sessions.resume(&victim),
        Err(SessionError::KeyRequired(_))
    ));
    assert!(matches!(
        env.sessions
            .append(&victim, EventKind::Note { text: "x".into() }),
        Err(SessionError::KeyRequired(_))
    ));
}

#[test]
fn threat_26_a_keyed_session_without_the_key_refuses_naming_the_key_file() {
    let (env, victim) = keyed_session(&key(1));
    let env = env.reopen(SessionsConfig::default());
    let err = env.sessions.resume(&victim).unwrap_err();
    assert!(matches!(err, SessionError::KeyRequired(_)), "{err}");
    assert_eq!(
        err.to_string(),
        format!(
            "session `victim` ({victim}) is keyed (key id {}): its log verifies only with its key, and no \
             `[storage] chain_key_file` is configured; set `chain_key_file = \"/keys/chain-1.key\"` in \
             `[storage]` again (the key file it started with)",
            key(1).id()
        )
    );
    assert!(matches!(
        env.sessions.verify(&victim),
        Err(SessionError::KeyRequired(_))
    ));
    // Put back, it verifies again: nothing was downgraded meanwhile.
    let env = env.reopen(keyed(&key(1)));
    assert!(env.sessions.verify(&victim).unwrap().ok);
}

#[test]
fn threat_26_plain_sessions_still_verify_with_a_key_configured() {
    let env = Env::new();
    let old = env.start("old", Role::Workagent).header.id;
    env.call(&old, "c1", "ok");
    let key = key(1);
    let env = env.reopen(keyed(&key));
    let report = env.sessions.verify(&old).unwrap();
    assert!(report.ok, "{report:?}");
    assert_eq!(report.mode(), "plain");
    // It stays plain as it grows; new sessions are keyed.
    env.note(&old, "after the key");
    let report = env.sessions.verify(&old).unwrap();
    assert!(report.ok && report.key_id.is_none(), "{report:?}");
    let new = env.start("new", Role::Workagent).header.id;
    assert_eq!(
        env.sessions.verify(&new).unwrap().key_id.as_deref(),
        Some(key.id())
    );
    let all = env.sessions.verify_all().unwrap();
    assert!(all.iter().all(|r| r.ok), "{all:?}");
}

/// A checkpoint rewritten with a valid checksum but no MAC does not count.
#[test]
fn threat_26_a_checkpoint_forged_without_the_key_is_rejected() {
    let key = key(1);
    let (env, victim) = keyed_session(&key);
    let mut state = env.sessions.show(&victim).unwrap();
    state.counters.totals.calls = 0;
    env.store
        .put(
            checkpoint::BUCKET,
            &checkpoint::key(&victim, state.last_seq),
            &checkpoint::encode(&state, &Chain::Plain),
        )
        .unwrap();
    let env = env.reopen(keyed(&key));
    let (loaded, stats) = env.sessions.reload(&victim, true).unwrap();
    assert_eq!(stats.checkpoint_seq, None, "{stats:?}");
    assert!(
        stats.checkpoints_rejected[0].1.contains("no MAC"),
        "{stats:?}"
    );
    assert_eq!(loaded.counters.totals.calls, 3);
}

#[test]
fn threat_45_a_keyed_export_verifies_offline_with_its_key_only() {
    let key = key(1);
    let (env, victim) = keyed_session(&key);
    let events = env.sessions.events(&victim, 1, usize::MAX).unwrap();
    let lines = || {
        events
            .iter()
            .map(|e| String::from_utf8(e.to_bytes()).unwrap())
    };
    let head = Some((20, events[19].hash.clone()));

    let report = verify_export(lines(), head.clone(), Some(&key)).unwrap();
    assert!(report.ok, "{report:?}");
    assert_eq!(report.key_id.as_deref(), Some(key.id()));

    let err = verify_export(lines(), head.clone(), None)
        .unwrap_err()
        .to_string();
    assert!(err.contains("--key") && err.contains(key.id()), "{err}");
    let err = verify_export(lines(), head.clone(), Some(&self::key(2)))
        .unwrap_err()
        .to_string();
    assert!(err.contains("/keys/chain-2.key"), "{err}");

    let forged = reseal(&events, 7, &Chain::Plain, |e| {
        if e.seq == 7 {
            e.kind = EventKind::Note { text: "x".into() };
        }
    });
    let mut tampered: Vec<String> = lines().take(6).collect();
    tampered.extend(
        forged
            .iter()
            .map(|e| String::from_utf8(e.to_bytes()).unwrap()),
    );
    let forged_head = Some((20, forged.last().unwrap().hash.clone()));
    let report = verify_export(tampered, forged_head, Some(&key)).unwrap();
    assert_eq!(report.first_bad.map(|(seq, _)| seq), Some(7));
}
