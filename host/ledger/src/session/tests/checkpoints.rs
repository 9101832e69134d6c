//! Checkpoint cadence, loading from the tail, and falling back past bad checkpoints.

use super::*;

fn every(n: u64) -> SessionsConfig {
    SessionsConfig {
        checkpoint_every: n,
        ..SessionsConfig::default()
    }
}

#[test]
fn checkpoints_are_written_every_n_events_and_at_handoff_and_pause() {
    let env = Env::with_config(every(10));
    let s = env.start("steady", Role::Supervisor);
    for i in 2..=25 {
        env.note(&s.header.id, &format!("step {i}"));
    }
    assert_eq!(checkpoint_seqs(&*env.store, &s.header.id), [20, 10]);
    let h = Handoff::new(HandoffKind::Continuation, Role::Supervisor, "go on");
    assert_eq!(env.sessions.handoff(&s.header.id, h).unwrap().seq, 26);
    assert_eq!(checkpoint_seqs(&*env.store, &s.header.id), [26, 20]);
    env.sessions.pause(&s.header.id, "lunch").unwrap();
    // The newest two are kept.
    assert_eq!(checkpoint_seqs(&*env.store, &s.header.id), [27, 26]);
}

#[test]
fn resume_after_ten_thousand_events_reads_only_the_tail() {
    let env = Env::new();
    let s = env.start("long", Role::Workagent);
    for i in 0..3_333 {
        env.call(&s.header.id, &format!("c{i}"), "ok");
    }
    let before = env.sessions.show(&s.header.id).unwrap();
    assert_eq!(before.last_seq, 10_000);

    let env = env.reopen(SessionsConfig::default());
    let resumed = env.sessions.resume("long").unwrap();
    let stats = env.sessions.last_load_stats().expect("a load");
    // 10,000 = 39 × 256 + 16: the checkpoint at 9,984, then 16 events.
    assert_eq!(stats.checkpoint_seq, Some(9_984));
    assert_eq!(stats.events_read, 1 + 16);
    assert!(stats.checkpoints_rejected.is_empty());
    // An active session resumes without a record of its own: same state as before.
    assert_eq!(resumed.state, before);

    let (replayed, full) = env.sessions.reload("long", false).unwrap();
    assert_eq!(full.checkpoint_seq, None);
    assert_eq!(full.events_read, 10_000);
    assert_eq!(replayed, before);
}

#[test]
fn a_corrupt_newest_checkpoint_falls_back_to_the_older_one_then_to_a_full_replay() {
    let env = Env::with_config(every(10));
    let s = env.start("sturdy", Role::Workagent);
    for i in 2..=35 {
        env.note(&s.header.id, &format!("step {i}"));
    }
    let expected = env.sessions.show(&s.header.id).unwrap();
    assert_eq!(checkpoint_seqs(&*env.store, &s.header.id), [30, 20]);

    // A torn write of the newest checkpoint.
    let key = checkpoint::key(&s.header.id, 30);
    let mut torn = env.store.get(checkpoint::BUCKET, &key).unwrap().unwrap();
    torn.truncate(torn.len() / 2);
    env.store.put(checkpoint::BUCKET, &key, &torn).unwrap();
    let (state, stats) = env.sessions.reload(&s.header.id, true).unwrap();
    assert_eq!(state, expected);
    assert_eq!(stats.checkpoint_seq, Some(20));
    assert_eq!(stats.events_read, 1 + 15);
    assert_eq!(stats.checkpoints_rejected.len(), 1);
    assert!(
        stats.checkpoints_rejected[0].1.contains("checksum"),
        "{:?}",
        stats.checkpoints_rejected
    );

    // A well-formed checkpoint that does not match the log (taken of another
    // history) does not count either.
    let mut other = expected.clone();
    other.last_seq = 20;
    other.last_hash = "f".repeat(64);
    env.store
        .put(
            checkpoint::BUCKET,
            &checkpoint::key(&s.header.id, 20),
            &checkpoint::encode(&other, &Chain::Plain),
        )
        .unwrap();
    let (state, stats) = env.sessions.reload(&s.header.id, true).unwrap();
    assert_eq!(state, expected);
    assert_eq!(stats.checkpoint_seq, None);
    assert_eq!(stats.events_read, 35);
    assert!(
        stats.checkpoints_rejected[1]
            .1
            .contains("not the one it was taken after"),
        "{stats:?}"
    );
}
