//! `[quotas]`: each bound refuses the request that would pass it, names its
//! key, and writes nothing.

use std::collections::HashSet;

use super::*;
use crate::manifest::{Principal, QuotasConfig};

fn env(quotas: QuotasConfig) -> Env {
    Env::with_config(SessionsConfig {
        quotas,
        ..SessionsConfig::default()
    })
}

fn start(name: &str, tags: &[&str]) -> StartSession {
    StartSession {
        tags: tags.iter().map(|t| t.to_string()).collect(),
        ..start_request(name, Role::Workagent)
    }
}

#[track_caller]
fn assert_quota<T: std::fmt::Debug>(r: Result<T, SessionError>, key: &str) -> String {
    match r {
        Err(e) if matches!(&e, SessionError::Quota { limit, .. } if limit.key == key) => {
            e.to_string()
        }
        other => panic!("expected the quota `{key}`, got {other:?}"),
    }
}

#[test]
fn threat_43_an_agent_past_its_live_sessions_is_refused_until_one_ends() {
    let env = env(QuotasConfig {
        sessions_per_principal: 2,
        ..QuotasConfig::default()
    });
    let (a, b) = (workagent("a"), workagent("b"));
    let none = HashSet::new();
    let s = &env.sessions;
    let first = s.scope(&a).start(start("a-1", &[]), &none).unwrap();
    s.scope(&a).start(start("a-2", &[]), &none).unwrap();
    let message = assert_quota(
        s.scope(&a).start(start("a-3", &[]), &none),
        "sessions_per_principal",
    );
    assert!(
        message.contains("`quotas.sessions_per_principal` = 2") && message.contains("`a`"),
        "{message}"
    );
    // Nothing was written: the name is still free, no session has it.
    assert!(s.show("a-3").is_err());
    // Another principal has its own quota; an operator has none.
    s.scope(&b).start(start("b-1", &[]), &none).unwrap();
    let operator = Principal::operator("cli:0".to_string());
    for i in 0..3 {
        s.scope(&operator)
            .start(start(&format!("op-{i}"), &[]), &none)
            .unwrap();
    }
    // A session that ends frees its place.
    s.end(&first.header.id, EndOutcome::Completed).unwrap();
    s.scope(&a).start(start("a-3", &[]), &none).unwrap();
}

#[test]
fn threat_43_tags_past_the_quota_are_refused_at_start_and_when_added() {
    let env = env(QuotasConfig {
        tags_per_session: 3,
        ..QuotasConfig::default()
    });
    let s = &env.sessions;
    assert_quota(
        s.start(start("many", &["a", "b", "c", "d"])),
        "tags_per_session",
    );
    let id = s.start(start("few", &["a", "b"])).unwrap().header.id;
    let tags = |t: &[&str]| t.iter().map(|t| t.to_string()).collect::<Vec<_>>();
    s.tag(&id, &tags(&["c"]), &[]).unwrap();
    let seq = s.show(&id).unwrap().last_seq;
    assert_quota(s.tag(&id, &tags(&["d"]), &[]), "tags_per_session");
    assert_eq!(
        s.show(&id).unwrap().last_seq,
        seq,
        "a refused tag writes nothing"
    );
    // Re-adding a tag it has, or swapping one for another, fits.
    s.tag(&id, &tags(&["a"]), &[]).unwrap();
    let state = s.tag(&id, &tags(&["d"]), &tags(&["a"])).unwrap();
    assert_eq!(state.header.tags, tags(&["b", "c", "d"]));
}

#[test]
fn threat_43_a_handoff_past_its_size_or_list_quota_is_refused_and_not_logged() {
    let env = env(QuotasConfig {
        handoff_bytes: 4096,
        handoff_items: 4,
        ..QuotasConfig::default()
    });
    let s = &env.sessions;
    let id = s.start(start("writer", &[])).unwrap().header.id;
    let seq = s.show(&id).unwrap().last_seq;

    let mut big = Handoff::new(HandoffKind::Continuation, Role::Workagent, "x".repeat(5000));
    let message = assert_quota(s.handoff(&id, big.clone()), "handoff_bytes");
    assert!(message.contains("scratch dir"), "{message}");

    big.objective = "carry on".into();
    big.notes.next_steps = (0..5).map(|i| format!("step {i}")).collect();
    let message = assert_quota(s.handoff(&id, big.clone()), "handoff_items");
    assert!(message.contains("`next_steps` has 5 entries"), "{message}");
    assert_eq!(s.show(&id).unwrap().last_seq, seq, "nothing was logged");

    big.notes.next_steps.truncate(4);
    s.handoff(&id, big).unwrap();
}

/// The log's quotas at `events` events and `bytes` bytes written by actors,
/// with a checkpoint every 4 events.
fn log_env(events: u64, bytes: u64) -> Env {
    Env::with_config(SessionsConfig {
        quotas: QuotasConfig {
            session_events: events,
            session_bytes: bytes,
            ..QuotasConfig::default()
        },
        checkpoint_every: 4,
        ..SessionsConfig::default()
    })
}

/// A note by the agent `a`.
fn note_by_a(s: &Sessions, id: &str, text: &str) -> Result<Event, SessionError> {
    actor::scoped("a", || {
        s.append(
            id,
            EventKind::Note {
                text: text.to_string(),
            },
        )
    })
}

/// Notes by `a` in `id` until one is refused: how many went in, and the
/// refusal.
fn notes_until_refused(s: &Sessions, id: &str, text: &str) -> (usize, SessionError) {
    let mut written = 0;
    loop {
        match note_by_a(s, id, text) {
            Ok(_) => written += 1,
            Err(e) => return (written, e),
        }
        assert!(written < 1000, "the loop of notes was never stopped");
    }
}

/// What actors wrote into `id`'s log, read back from it: events and bytes.
fn written_in_log(s: &Sessions, id: &str) -> Written {
    let events = s.events(id, 1, usize::MAX).unwrap();
    let by_actors: Vec<&Event> = events
        .iter()
        .filter(|e| e.by.as_deref().is_some_and(|by| by != actor::HOST))
        .collect();
    Written {
        events: by_actors.len() as u64,
        bytes: by_actors.iter().map(|e| e.to_bytes().len() as u64).sum(),
    }
}

/// Why (threats 42, 49): notes, usage reports, handoffs and tags skipped
/// every bound but the disk, so one agent looping in one session grew its
/// log (read whole to resume, verify and replay it) until the disk every
/// tenant shares was full. Past `quotas.session_events` new content is
/// refused, naming the key and the fix; what pauses and ends the session
/// still goes through, and nothing written before is lost.
#[test]
fn threat_49_a_loop_of_notes_stops_at_session_events_and_the_session_still_ends() {
    let env = log_env(10, 1 << 30);
    let s = &env.sessions;
    let id = actor::scoped("a", || s.start(start("loop", &[])))
        .unwrap()
        .header
        .id;
    let (notes, refused) = notes_until_refused(s, &id, "again");
    assert_eq!(notes, 9, "the start and nine notes make the ten");
    let message = assert_quota(Err::<(), _>(refused), "session_events");
    for words in [
        "`quotas.session_events` = 10",
        "would hold 11 events",
        "`session_end` still works",
    ] {
        assert!(message.contains(words), "{message}");
    }
    let seq = s.show(&id).unwrap().last_seq;
    // Every other kind of new content is refused too, writing nothing.
    let usage = EventKind::UsageReported {
        tokens_in: 1,
        tokens_out: 1,
        cost_micros: 0,
        model: None,
        context_tokens: None,
        context_limit: None,
    };
    assert_quota(
        actor::scoped("a", || s.append(&id, usage)),
        "session_events",
    );
    let go_on = Handoff::new(HandoffKind::Continuation, Role::Workagent, "go on");
    assert_quota(
        actor::scoped("a", || s.handoff(&id, go_on)),
        "session_events",
    );
    assert_quota(
        actor::scoped("a", || s.tag(&id, &["t".into()], &[])),
        "session_events",
    );
    assert_eq!(s.show(&id).unwrap().last_seq, seq, "nothing was written");
    // The host's own records are not the actors': they go through.
    s.append(
        &id,
        EventKind::Note {
            text: "host".into(),
        },
    )
    .unwrap();
    // Resuming, pausing and ending go through.
    actor::scoped("a", || s.resume(&id)).unwrap();
    actor::scoped("a", || s.pause(&id, "stop")).unwrap();
    actor::scoped("a", || s.resume(&id)).unwrap();
    actor::scoped("a", || s.end(&id, EndOutcome::Exit)).unwrap();
    let log = s.events(&id, 1, usize::MAX).unwrap();
    let kept = log
        .iter()
        .filter(|e| matches!(&e.kind, EventKind::Note { text } if text == "again"))
        .count();
    assert_eq!(kept, 9, "every acknowledged note is in the log");
    assert_eq!(log.last().unwrap().kind.name(), "ended");
    assert_eq!(s.show(&id).unwrap().written, written_in_log(s, &id));
}

/// Why (threats 42, 49): a few big notes fill a disk as well as many small
/// ones; `quotas.session_bytes` bounds the bytes actors write into one log,
/// counted as stored.
#[test]
fn threat_42_notes_past_session_bytes_are_refused_and_the_log_stays_under_it() {
    let limit = 8 * 1024;
    let env = log_env(1_000_000, limit);
    let s = &env.sessions;
    let id = actor::scoped("a", || s.start(start("big", &[])))
        .unwrap()
        .header
        .id;
    let text = "x".repeat(1000);
    let (notes, refused) = notes_until_refused(s, &id, &text);
    assert!((5..=8).contains(&notes), "{notes} notes of 1000 bytes");
    let message = assert_quota(Err::<(), _>(refused), "session_bytes");
    assert!(
        message.contains("`quotas.session_bytes` = 8 KiB"),
        "{message}"
    );
    let written = written_in_log(s, &id);
    assert!(written.bytes <= limit, "{written:?}");
    assert_eq!(s.show(&id).unwrap().written, written);
    actor::scoped("a", || s.end(&id, EndOutcome::Exit)).unwrap();
}

/// Why (threats 42, 49): a count kept only in memory starts again at every
/// restart, so a loop that restarts the host is never stopped; a count
/// taken from the log's tail only under-counts. The count rides in the
/// checkpoints, the load adds the tail, and every way of loading agrees
/// with the log.
#[test]
fn threat_49_the_log_counts_survive_a_restart_and_match_a_full_replay() {
    let quotas = QuotasConfig {
        session_events: 20,
        ..QuotasConfig::default()
    };
    let config = || SessionsConfig {
        quotas: quotas.clone(),
        checkpoint_every: 4,
        ..SessionsConfig::default()
    };
    let env = Env::with_config(config());
    let s = &env.sessions;
    let id = actor::scoped("a", || s.start(start("long", &[])))
        .unwrap()
        .header
        .id;
    for i in 0..10 {
        note_by_a(s, &id, &format!("step {i}")).unwrap();
        if i % 3 == 0 {
            // The host's records (between the actors') count for nothing.
            s.append(
                &id,
                EventKind::Note {
                    text: "host".into(),
                },
            )
            .unwrap();
        }
    }
    let before = s.show(&id).unwrap().written;
    assert_eq!(before.events, 11);
    assert_eq!(before, written_in_log(s, &id));

    let env = env.reopen(config());
    let s = &env.sessions;
    let (from_checkpoint, stats) = s.reload(&id, true).unwrap();
    assert!(stats.checkpoint_seq.is_some(), "{stats:?}");
    assert!(
        stats.checkpoint_seq < Some(from_checkpoint.last_seq),
        "{stats:?}"
    );
    assert_eq!(from_checkpoint.written, before);
    let (replayed, stats) = s.reload(&id, false).unwrap();
    assert_eq!(stats.checkpoint_seq, None);
    assert_eq!(replayed.written, before);
    // The loop goes on where it stopped: nine more notes, not twenty.
    let (notes, refused) = notes_until_refused(s, &id, "more");
    assert_eq!(notes, 9);
    assert_quota(Err::<(), _>(refused), "session_events");
}

/// Why (threats 42, 49): a handoff into a session at its quota, or a spawn
/// from a parent at its quota, wrote the writer's record (or started the
/// child) before the other log refused its part, leaving half a handoff and
/// a child nobody spawned. The other log is checked first: nothing is
/// written anywhere.
#[test]
fn threat_49_a_handoff_to_a_target_at_its_quota_or_a_spawn_from_a_full_parent_writes_nothing() {
    let env = log_env(5, 1 << 30);
    let s = &env.sessions;
    let a = agent(
        "a",
        &[Role::Orchestrator, Role::Supervisor, Role::Workagent],
        &["*"],
    );
    let none = HashSet::new();
    let boss = s
        .scope(&a)
        .start(start_request("boss", Role::Orchestrator), &none)
        .unwrap();
    let lead = s
        .scope(&a)
        .start(start_request("lead", Role::Supervisor), &none)
        .unwrap();
    let (notes, _) = notes_until_refused(s, "lead", "busy");
    assert_eq!(notes, 4);
    let lead_seq = s.show("lead").unwrap().last_seq;

    let mut plan = Handoff::new(
        HandoffKind::OrchestratorToSupervisor,
        Role::Orchestrator,
        "build the api",
    );
    plan.target_session = Some("lead".into());
    let message = assert_quota(
        actor::scoped("a", || s.handoff("boss", plan.clone())),
        "session_events",
    );
    assert!(message.contains(&lead.label()), "{message}");
    let boss_now = s.show("boss").unwrap();
    assert_eq!(boss_now.last_seq, boss.last_seq, "nothing in the writer");
    assert_eq!(boss_now.handoffs, 0);
    assert_eq!(s.show("lead").unwrap().last_seq, lead_seq);

    let mut task = Handoff::new(HandoffKind::Task, Role::Workagent, "do it");
    task.notes.success_criteria = vec!["tests pass".into()];
    let child = spawn_kid(task);
    assert_quota(
        s.scope(&a).spawn(
            "lead",
            child,
            &crate::manifest::BudgetsConfig::default(),
            &none,
        ),
        "session_events",
    );
    assert!(matches!(s.show("kid"), Err(SessionError::NotFound(_))));
    assert_eq!(s.show("lead").unwrap().last_seq, lead_seq);

    // With room in the target, the handoff reaches it.
    let env = env.reopen(SessionsConfig {
        quotas: QuotasConfig {
            session_events: 6,
            ..QuotasConfig::default()
        },
        ..SessionsConfig::default()
    });
    actor::scoped("a", || env.sessions.handoff("boss", plan)).unwrap();
    assert_eq!(env.sessions.show("lead").unwrap().last_seq, lead_seq + 1);
}
