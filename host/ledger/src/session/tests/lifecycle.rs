//! The lifecycle table, the messages of illegal transitions, listing.

use std::time::Duration;

use super::*;

/// Brings a fresh session named `name` to `status`.
fn session_in(env: &Env, name: &str, status: SessionStatus) -> SessionState {
    let s = env.start(name, Role::Supervisor);
    let id = s.header.id.as_str();
    match status {
        SessionStatus::Created => {}
        SessionStatus::Active => {
            env.sessions.resume(id).unwrap();
        }
        SessionStatus::Paused => {
            env.sessions.resume(id).unwrap();
            env.sessions.pause(id, "waiting for review").unwrap();
        }
        SessionStatus::Completed => {
            env.sessions.end(id, EndOutcome::Completed).unwrap();
        }
        SessionStatus::Archived => {
            env.sessions.end(id, EndOutcome::Completed).unwrap();
            env.sessions.archive(id).unwrap();
        }
    }
    let s = env.sessions.show(id).unwrap();
    assert_eq!(s.header.status, status);
    s
}

/// Performs `action` on session `id`; returns the status after it.
fn act(env: &Env, id: &str, action: &str) -> Result<SessionStatus, SessionError> {
    let s = &env.sessions;
    match action {
        "resume" => s.resume(id).map(|r| r.state.header.status),
        "call" => s
            .append(
                id,
                EventKind::CallRequested {
                    call_id: "c1".into(),
                    tool: "echo.echo".into(),
                    input_digest: digest(b""),
                    input: None,
                    job_id: None,
                    trace_id: None,
                    parent_call: None,
                },
            )
            .and_then(|_| s.show(id))
            .map(|st| st.header.status),
        "handoff" => s
            .handoff(
                id,
                Handoff::new(HandoffKind::Continuation, Role::Supervisor, "carry on"),
            )
            .and_then(|_| s.show(id))
            .map(|st| st.header.status),
        "pause" => s.pause(id, "a break").map(|st| st.header.status),
        "end" => s.end(id, EndOutcome::Exit).map(|st| st.header.status),
        "archive" => s.archive(id).map(|st| st.header.status),
        other => panic!("unknown action {other}"),
    }
}

#[test]
fn the_lifecycle_allows_exactly_its_table() {
    use SessionStatus::*;
    let actions = ["resume", "call", "handoff", "pause", "end", "archive"];
    // The status each action leads to from each status; None = refused.
    let table: [(SessionStatus, [Option<SessionStatus>; 6]); 5] = [
        (
            Created,
            [
                Some(Active),
                Some(Active),
                Some(Active),
                None,
                Some(Completed),
                None,
            ],
        ),
        (
            Active,
            [
                Some(Active),
                Some(Active),
                Some(Active),
                Some(Paused),
                Some(Completed),
                None,
            ],
        ),
        (
            Paused,
            [
                Some(Active),
                None,
                Some(Paused),
                None,
                Some(Completed),
                Some(Archived),
            ],
        ),
        (Completed, [None, None, None, None, None, Some(Archived)]),
        (Archived, [None, None, None, None, None, None]),
    ];
    let env = Env::new();
    for (from, row) in table {
        for (action, expected) in actions.iter().zip(row) {
            let s = session_in(&env, &format!("{from}-{action}"), from);
            let got = act(&env, &s.header.id, action);
            let after = env.sessions.show(&s.header.id).unwrap();
            match (expected, got) {
                (Some(want), Ok(status)) => assert_eq!(status, want, "{action} from {from}"),
                (
                    None,
                    Err(SessionError::IllegalTransition {
                        from: f, allowed, ..
                    }),
                ) => {
                    assert_eq!(f, from, "{action} from {from}");
                    assert_eq!(allowed, from.transitions());
                    // Checked before appending: the log did not grow.
                    assert_eq!(
                        after.last_seq, s.last_seq,
                        "{action} from {from} left a record"
                    );
                }
                (want, got) => panic!("{action} from {from}: expected {want:?}, got {got:?}"),
            }
        }
    }
}

#[test]
fn an_illegal_transition_says_what_is_allowed() {
    let env = Env::new();
    let s = session_in(&env, "review", SessionStatus::Paused);
    let err = act(&env, &s.header.id, "call").unwrap_err();
    assert_eq!(
        err.to_string(),
        format!(
            "session `review` ({}) is paused: `call` would make it active, which is not allowed; \
             from paused the allowed transitions are: resume → active, end → completed, archive → archived",
            s.header.id
        )
    );

    let s = session_in(&env, "filed", SessionStatus::Archived);
    let err = env.sessions.resume("filed").unwrap_err();
    assert!(
        err.to_string()
            .ends_with("archived is final: start a new session"),
        "{err}"
    );

    let s2 = session_in(&env, "fresh", SessionStatus::Created);
    let err = env
        .sessions
        .pause(&s2.header.id, "x")
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("from created the allowed transitions are: resume → active, call → active"),
        "{err}"
    );
    drop(s);
}

#[test]
fn calls_count_into_the_end_record() {
    let env = Env::new();
    let s = env.start("counted", Role::Workagent);
    env.call(&s.header.id, "c1", "ok");
    env.call(&s.header.id, "c2", "timeout");
    assert_eq!(
        env.sessions.show(&s.header.id).unwrap().header.status,
        SessionStatus::Active
    );
    let done = env.sessions.end("counted", EndOutcome::Completed).unwrap();
    assert_eq!(done.outcome, Some(EndOutcome::Completed));
    let last = env
        .sessions
        .events(&s.header.id, done.last_seq, 1)
        .unwrap()
        .remove(0);
    let EventKind::Ended { summary, .. } = last.kind else {
        panic!("not an end record: {last:?}")
    };
    assert_eq!((summary.totals.calls, summary.totals.failures), (2, 1));
    assert_eq!(
        (
            summary.totals.wall_us_total,
            summary.totals.fuel_total,
            summary.totals.peak_memory_max
        ),
        (10, 200, 65536)
    );
    assert_eq!((summary.totals.bytes_in, summary.totals.bytes_out), (4, 4));
}

#[test]
fn call_records_must_follow_a_request() {
    let env = Env::new();
    let s = env.start("strict", Role::Workagent);
    let finished = EventKind::CallInterrupted {
        call_id: "ghost".into(),
        reason: "x".into(),
    };
    let err = env
        .sessions
        .append(&s.header.id, finished)
        .unwrap_err()
        .to_string();
    assert!(err.contains("call `ghost` is not in flight"), "{err}");
    let err = env
        .sessions
        .append(&s.header.id, EventKind::Resumed)
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("resumed events are logged by `Sessions::resume`"),
        "{err}"
    );
    env.request(&s.header.id, "c1");
    let err = env.sessions.append(
        &s.header.id,
        EventKind::CallRequested {
            call_id: "c1".into(),
            tool: "t".into(),
            input_digest: String::new(),
            input: None,
            job_id: None,
            trace_id: None,
            parent_call: None,
        },
    );
    assert!(err.unwrap_err().to_string().contains("already requested"));
}

#[test]
fn list_filters_by_status_tags_role_project_and_idleness() {
    let now = Arc::new(std::sync::atomic::AtomicU64::new(1_000_000));
    let clock = now.clone();
    let env = Env::new();
    let sessions = Sessions::new(env.store.clone())
        .with_clock(move || clock.load(std::sync::atomic::Ordering::SeqCst));
    let start = |name: &str, role, project: &str, tags: &[&str]| {
        sessions
            .start(StartSession {
                project: project.into(),
                tags: tags.iter().map(|t| t.to_string()).collect(),
                expected_duration: Some(Duration::from_secs(600)),
                ..start_request(name, role)
            })
            .unwrap()
    };
    start("a", Role::Orchestrator, "web", &["urgent", "backend"]);
    start("b", Role::Workagent, "web", &["backend"]);
    start("c", Role::Workagent, "cli", &[]);
    now.store(
        1_000_000 + 3 * 86_400_000,
        std::sync::atomic::Ordering::SeqCst,
    );
    sessions.resume("b").unwrap();
    sessions.tag("c", &["urgent".to_string()], &[]).unwrap();
    sessions.end("c", EndOutcome::Exit).unwrap();

    let names = |f: SessionFilter| -> Vec<String> {
        sessions
            .list(&f, &Default::default())
            .unwrap()
            .items
            .into_iter()
            .filter_map(|i| i.header.name)
            .collect()
    };
    assert_eq!(names(SessionFilter::default()).len(), 3);
    assert_eq!(
        names(SessionFilter {
            status: Some(SessionStatus::Active),
            ..Default::default()
        }),
        ["b"]
    );
    assert_eq!(
        names(SessionFilter {
            tags: vec!["urgent".into(), "backend".into()],
            ..Default::default()
        }),
        ["a"]
    );
    assert_eq!(
        names(SessionFilter {
            role: Some(Role::Workagent),
            project: Some("web".into()),
            ..Default::default()
        }),
        ["b"]
    );
    let idle = SessionFilter {
        inactive_for: Some(Duration::from_secs(2 * 86_400)),
        ..Default::default()
    };
    assert_eq!(names(idle), ["a"]);
    let err = "busy".parse::<SessionStatus>().unwrap_err().to_string();
    assert!(err.contains("created, active, paused, completed, archived"));
}

#[test]
fn concurrent_writers_keep_each_log_gapless_and_chained() {
    let env = Env::with_config(SessionsConfig {
        checkpoint_every: 16,
        ..SessionsConfig::default()
    });
    let shared = env.start("shared", Role::Supervisor).header.id;
    let own: Vec<String> = (0..3)
        .map(|i| env.start(&format!("own-{i}"), Role::Workagent).header.id)
        .collect();
    std::thread::scope(|scope| {
        for (t, mine) in own.iter().enumerate() {
            let (env, shared) = (&env, &shared);
            scope.spawn(move || {
                for i in 0..40 {
                    env.note(shared, &format!("thread {t} note {i}"));
                    env.call(mine, &format!("t{t}-c{i}"), "ok");
                }
            });
        }
    });
    let shared_state = env.sessions.show(&shared).unwrap();
    assert_eq!(shared_state.last_seq, 1 + 3 * 40);
    let reports = env.sessions.verify_all().unwrap();
    assert_eq!(reports.len(), 4);
    assert!(
        reports
            .iter()
            .all(|r| r.ok && r.events_checked == r.last_seq),
        "{reports:?}"
    );
    // A fresh load agrees with what the writers saw.
    let env = env.reopen(SessionsConfig::default());
    assert_eq!(env.sessions.show(&shared).unwrap(), shared_state);
    assert_eq!(
        env.sessions.show(&own[0]).unwrap().counters.totals.calls,
        40
    );
}
