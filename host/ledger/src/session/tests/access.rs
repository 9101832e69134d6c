//! Who may touch a session: its owner and operators; one test per rule.

use std::collections::HashSet;

use super::*;
use crate::manifest::{HandoffRoute, HandoffsConfig, Principal};

fn start(role: Role, project: &str, name: &str, tags: &[&str]) -> StartSession {
    StartSession {
        project: project.to_string(),
        tags: tags.iter().map(|t| t.to_string()).collect(),
        ..start_request(name, role)
    }
}

/// `who`'s untagged workagent session `name` in project `p`.
fn start_work(s: &Sessions, who: &Principal, name: &str) -> SessionState {
    s.scope(who)
        .start(start(Role::Workagent, "p", name, &[]), &none())
        .unwrap()
}

fn none() -> HashSet<String> {
    HashSet::new()
}

#[test]
fn another_principals_session_is_not_found_like_one_that_does_not_exist() {
    let env = Env::new();
    let (a, b) = (workagent("a"), workagent("b"));
    let s = &env.sessions;
    let mine = start_work(s, &a, "a-work");
    assert_eq!(mine.owner.as_deref(), Some("a"));
    let theirs = start_work(s, &b, "b-work");
    for key in ["b-work", theirs.header.id.as_str()] {
        // The same error as for a key nothing has.
        let absent = s.scope(&a).show("no-such-session").unwrap_err().to_string();
        let refused = s.scope(&a).show(key).unwrap_err().to_string();
        assert_eq!(absent.replace("no-such-session", key), refused);
        assert_not_found(s.scope(&a).show(key), key);
        assert_not_found(s.scope(&a).resume(key), key);
        assert_not_found(s.scope(&a).pause(key, "mine now"), key);
        assert_not_found(s.scope(&a).end(key, EndOutcome::Completed), key);
        assert_not_found(s.scope(&a).events(key, 1, 10), key);
        assert_not_found(s.scope(&a).tag(key, &["x".into()], &[], &none()), key);
        assert_not_found(
            s.scope(&a).handoff(
                key,
                Handoff::new(HandoffKind::Continuation, Role::Workagent, "x"),
                &HandoffsConfig::default(),
            ),
            key,
        );
    }
    // A handoff into another's session: its target is not found either.
    let mut h = Handoff::new(HandoffKind::Continuation, Role::Workagent, "take this");
    h.target_session = Some("b-work".into());
    let e = s
        .scope(&a)
        .handoff("a-work", h, &HandoffsConfig::default())
        .unwrap_err();
    assert!(
        matches!(e, SessionError::BadHandoff { .. })
            && e.to_string()
                .contains("no session with the id or name `b-work`"),
        "{e}"
    );
    assert_eq!(s.show("b-work").unwrap().handoffs, 0);
    // Lists show one's own only.
    let listed: Vec<_> = s
        .scope(&a)
        .list(&SessionFilter::default(), &Default::default())
        .unwrap()
        .items
        .into_iter()
        .map(|i| i.header.id)
        .collect();
    assert_eq!(listed, vec![mine.header.id.clone()]);
    // Nothing changed in b's session.
    assert_eq!(s.show(&theirs.header.id).unwrap().last_seq, theirs.last_seq);
}

#[test]
fn operators_see_and_touch_every_session() {
    let env = Env::new();
    let a = workagent("a");
    let op = Principal::operator("cli:1000");
    let s = &env.sessions;
    let id = start_work(s, &a, "w").header.id;
    assert_eq!(s.scope(&op).show("w").unwrap().header.id, id);
    assert_eq!(
        s.scope(&op)
            .list(&SessionFilter::default(), &Default::default())
            .unwrap()
            .items
            .len(),
        1
    );
    s.scope(&op).resume("w").unwrap();
    s.scope(&op).end("w", EndOutcome::Completed).unwrap();
}

#[test]
fn a_role_above_the_ceiling_or_a_project_not_allowed_is_refused() {
    let env = Env::new();
    let a = agent("a", &[Role::Workagent], &["demo"]);
    let s = &env.sessions;
    let e = s
        .scope(&a)
        .start(start(Role::Orchestrator, "demo", "o", &[]), &none())
        .unwrap_err();
    assert!(matches!(e, SessionError::NotAllowed(_)), "{e}");
    let text = e.to_string();
    assert!(
        text.contains("as orchestrator")
            && text.contains("ceiling (workagent)")
            && text.contains("operator"),
        "{text}"
    );
    let e = s
        .scope(&a)
        .start(start(Role::Workagent, "secret", "x", &[]), &none())
        .unwrap_err();
    assert!(
        e.to_string().contains("project `secret`") && e.to_string().contains("`demo`"),
        "{e}"
    );
    // Nothing was started, and the names are free.
    assert!(
        s.list(&SessionFilter::default(), &Default::default())
            .unwrap()
            .items
            .is_empty()
    );
    s.scope(&a)
        .start(start(Role::Workagent, "demo", "o", &[]), &none())
        .unwrap();
}

#[test]
fn pinned_tags_are_added_and_cannot_be_removed_or_forged() {
    let env = Env::new();
    let a = Principal {
        tags: vec!["team-a".to_string()],
        ..workagent("a")
    };
    let reserved: HashSet<String> = ["team-a".to_string(), "team-b".to_string()].into();
    let s = &env.sessions;
    let state = s
        .scope(&a)
        .start(start(Role::Workagent, "p", "w", &["mine"]), &reserved)
        .unwrap();
    assert_eq!(
        state.header.tags,
        vec!["mine".to_string(), "team-a".to_string()]
    );
    assert_eq!(state.pinned_tags, vec!["team-a".to_string()]);
    // Another principal's pinned tag, at start or later: refused.
    let e = s
        .scope(&a)
        .start(start(Role::Workagent, "p", "w2", &["team-b"]), &reserved)
        .unwrap_err();
    assert!(
        e.to_string().contains("`team-b`") && e.to_string().contains("pinned"),
        "{e}"
    );
    let e = s
        .scope(&a)
        .tag("w", &["team-b".into()], &[], &reserved)
        .unwrap_err();
    assert!(matches!(e, SessionError::NotAllowed(_)), "{e}");
    let e = s
        .scope(&a)
        .tag("w", &[], &["team-a".into()], &reserved)
        .unwrap_err();
    assert!(
        e.to_string().contains("cannot remove the tag `team-a`"),
        "{e}"
    );
    // Its own tags come and go; an operator may remove a pinned one.
    s.scope(&a)
        .tag("w", &["extra".into()], &["mine".into()], &reserved)
        .unwrap();
    let op = Principal::operator("ops");
    let state = s
        .scope(&op)
        .tag("w", &[], &["team-a".into()], &reserved)
        .unwrap();
    assert_eq!(state.header.tags, vec!["extra".to_string()]);
}

#[test]
fn a_pause_the_host_took_is_lifted_only_by_an_operator() {
    let env = Env::new();
    let a = workagent("a");
    let s = &env.sessions;
    let id = start_work(s, &a, "w").header.id;
    s.scope(&a).resume(&id).unwrap();
    // As the budget, the detector, a rescue or a pending approval do.
    s.append_with(&id, |_, _| {
        (
            vec![EventKind::Paused {
                reason: "budget exceeded: cost".into(),
                by: None,
            }],
            (),
        )
    })
    .unwrap();
    let e = s.scope(&a).resume(&id).unwrap_err();
    assert!(matches!(e, SessionError::NotAllowed(_)), "{e}");
    let text = e.to_string();
    assert!(
        text.contains("budget exceeded: cost") && text.contains("only an operator"),
        "{text}"
    );
    assert_eq!(s.show(&id).unwrap().header.status, SessionStatus::Paused);
    s.scope(&Principal::operator("ops")).resume(&id).unwrap();
    assert_eq!(s.show(&id).unwrap().header.status, SessionStatus::Active);
    // An operator's pause is not the agent's to lift either.
    s.scope(&Principal::operator("ops"))
        .pause(&id, "look at this")
        .unwrap();
    assert!(s.scope(&a).resume(&id).is_err());
}

#[test]
fn an_agent_pauses_and_resumes_its_own_session() {
    let env = Env::new();
    let a = workagent("a");
    let s = &env.sessions;
    let id = start_work(s, &a, "w").header.id;
    s.scope(&a).resume(&id).unwrap();
    let paused = s.scope(&a).pause(&id, "waiting for the user").unwrap();
    assert_eq!(paused.paused_by.as_deref(), Some("a"));
    let resumed = s.scope(&a).resume(&id).unwrap();
    assert_eq!(resumed.state.header.status, SessionStatus::Active);
    assert_eq!(resumed.state.paused_by, None);
}

/// Records written before principals existed (no `owner`, no `by`), as the
/// old code wrote and hashed them: they still verify and load, and the
/// session is the built-in agent `local`'s; its pause the host's.
#[test]
fn logs_from_before_principals_verify_unchanged_and_belong_to_local() {
    const OLD: [&str; 3] = [
        r#"{"session":"s-old","seq":1,"at_ms":1000,"prev_hash":"0000000000000000000000000000000000000000000000000000000000000000","hash":"2a2bd21a7a077b0f2982184d18ae533d7012963b69f5250c76ab6b15f6614d24","kind":{"type":"session_started","role":"workagent","project":"demo","name":"old","tags":["a"],"expected_duration_ms":null}}"#,
        r#"{"session":"s-old","seq":2,"at_ms":1001,"prev_hash":"2a2bd21a7a077b0f2982184d18ae533d7012963b69f5250c76ab6b15f6614d24","hash":"083969b9fee322000e9ae75b85db167005f7d170e8194a93900d4cf4bfaf4318","kind":{"type":"resumed"}}"#,
        r#"{"session":"s-old","seq":3,"at_ms":1002,"prev_hash":"083969b9fee322000e9ae75b85db167005f7d170e8194a93900d4cf4bfaf4318","hash":"f851aca151356cd0cb8e6cbb6326d00b183cf83cf672b42a998895927d7c62f0","kind":{"type":"paused","reason":"budget exceeded"}}"#,
    ];
    let env = Env::new();
    let records: Vec<Vec<u8>> = OLD.iter().map(|e| e.as_bytes().to_vec()).collect();
    env.store.append("s-old", 0, &records).unwrap();
    // Each record re-encodes to the very bytes it was read from.
    for text in OLD {
        assert_eq!(
            Event::from_bytes(text.as_bytes()).unwrap().to_bytes(),
            text.as_bytes()
        );
    }
    let report = env.sessions.verify("s-old").unwrap();
    assert!(report.ok && report.events_checked == 3, "{report:?}");
    let state = env.sessions.show("s-old").unwrap();
    assert_eq!(
        (state.owner.as_deref(), state.owner_name()),
        (None, "local")
    );
    let local = Principal::local();
    assert!(env.sessions.scope(&local).show("s-old").is_ok());
    assert_not_found(env.sessions.scope(&workagent("a")).show("s-old"), "s-old");
    assert!(matches!(
        env.sessions.scope(&local).resume("s-old"),
        Err(SessionError::NotAllowed(_))
    ));
}

#[test]
fn a_handoff_into_another_principals_session_follows_a_configured_route_only() {
    let env = Env::new();
    let worker = agent("w", &[Role::Workagent], &["p"]);
    let lead = agent("l", &[Role::Supervisor], &["p", "q"]);
    let s = &env.sessions;
    start_work(s, &worker, "w-task");
    s.scope(&lead)
        .start(start(Role::Supervisor, "p", "l-sup", &[]), &none())
        .unwrap();
    s.scope(&lead)
        .start(start(Role::Supervisor, "q", "l-other", &[]), &none())
        .unwrap();
    let done = |to: &str| {
        let mut h = Handoff::new(HandoffKind::WorkagentCompletion, Role::Workagent, "done");
        h.target_session = Some(to.into());
        h
    };
    let route = HandoffsConfig {
        routes: vec![HandoffRoute {
            from: Role::Workagent,
            to: Role::Supervisor,
        }],
    };
    // No route: the lead's session does not exist for the worker.
    let e = s
        .scope(&worker)
        .handoff("w-task", done("l-sup"), &HandoffsConfig::default())
        .unwrap_err();
    assert!(
        e.to_string()
            .contains("no session with the id or name `l-sup`"),
        "{e}"
    );
    // A route the other way round opens nothing either.
    let back = HandoffsConfig {
        routes: vec![HandoffRoute {
            from: Role::Supervisor,
            to: Role::Workagent,
        }],
    };
    assert!(
        s.scope(&worker)
            .handoff("w-task", done("l/l-sup"), &back)
            .is_err()
    );
    // A project the worker may not touch stays closed on the route.
    let e = s
        .scope(&worker)
        .handoff("w-task", done("l/l-other"), &route)
        .unwrap_err();
    assert!(e.to_string().contains("`l/l-other`"), "{e}");
    assert_eq!(s.show("l-other").unwrap().handoffs, 0);
    // Along the route the target's name is in its owner's space: a bare
    // name is the writer's own, `OWNER/NAME` (or an id) another's.
    let e = s
        .scope(&worker)
        .handoff("w-task", done("l-sup"), &route)
        .unwrap_err();
    assert!(e.to_string().contains("`l-sup`"), "{e}");
    // Along the route, into a project it may touch: the lead receives it.
    s.scope(&worker)
        .handoff("w-task", done("l/l-sup"), &route)
        .unwrap();
    assert_eq!(s.show("l-sup").unwrap().handoffs, 1);
}

#[test]
fn a_look_from_the_cache_answers_as_show_as_does_and_only_when_it_need_not_wait() {
    let env = Env::new();
    let (a, b) = (workagent("a"), workagent("b"));
    let s = &env.sessions;
    let mine = start_work(s, &a, "a-work");
    let theirs = start_work(s, &b, "b-work");

    // Loaded by its start: the same state the scope's `show` gives.
    let cached = s
        .scope(&a)
        .show_cached(&mine.header.id)
        .expect("cached")
        .unwrap();
    assert_eq!(cached, s.scope(&a).show(&mine.header.id).unwrap());
    // Another principal's session is "not found" here too.
    assert_not_found(
        s.scope(&a).show_cached(&theirs.header.id).expect("cached"),
        &theirs.header.id,
    );
    // A name takes a look at the name index: not from the cache.
    assert!(s.scope(&a).show_cached("a-work").is_none());

    // A writer holds the session: the cache does not wait for it.
    {
        let slot = s.slot(&mine.header.id);
        let _held = crate::session::slots::lock_slot(&slot);
        assert!(s.scope(&a).show_cached(&mine.header.id).is_none());
        assert!(s.show_cached(&mine.header.id).is_none());
    }

    // After the state changes, the cache has the change.
    env.note(&mine.header.id, "more");
    let cached = s.show_cached(&mine.header.id).expect("cached");
    assert_eq!(cached.last_seq, mine.last_seq + 1);
    assert_eq!(cached, s.show(&mine.header.id).unwrap());

    // A store opened anew has loaded nothing: the look goes to the log.
    let env = env.reopen(SessionsConfig::default());
    assert!(env.sessions.show_cached(&mine.header.id).is_none());
    env.sessions.show(&mine.header.id).unwrap();
    assert!(env.sessions.show_cached(&mine.header.id).is_some());
}

/// The ceiling error for `who` acting in session `name` of `role`.
#[track_caller]
fn assert_above_ceiling<T: std::fmt::Debug>(r: Result<T, SessionError>, name: &str, role: Role) {
    match r {
        Err(SessionError::NotAllowed(m)) => {
            assert!(
                m.contains(&format!("may not act in session `{name}`")),
                "{m}"
            );
            assert!(m.contains(&format!("it is a {role} session")), "{m}");
            assert!(m.contains("roles are now workagent"), "{m}");
            assert!(
                m.contains(&format!("adds `{role}` to the principal's `roles`")),
                "{m}"
            );
            assert!(m.contains("glovebox session resume"), "{m}");
        }
        other => panic!("expected the ceiling refusal for `{name}`, got {other:?}"),
    }
}

/// Why (threat 52): the role ceiling was checked at a start only, so a
/// principal demoted by a reload, or `local` with a session started at the
/// command line, resumed and acted in a session above its roles. Now every
/// act checks the session's role against the caller's roles of the moment;
/// seeing, pausing and ending stay its owner's, and operators act in any.
#[test]
fn threat_52_acting_in_a_session_above_the_callers_current_roles_is_refused() {
    let env = Env::new();
    let s = &env.sessions;
    let before = agent(
        "lead",
        &[Role::Supervisor, Role::Workagent, Role::Judge],
        &["*"],
    );
    let high = s
        .scope(&before)
        .start(start(Role::Supervisor, "p", "high", &[]), &none())
        .unwrap();
    s.scope(&before)
        .start(start(Role::Judge, "p", "bench", &[]), &none())
        .unwrap();
    start_work(s, &before, "low");
    // A reload takes supervisor and judge away: the same name, fewer roles.
    let after = agent("lead", &[Role::Workagent], &["*"]);
    let last = s.show("high").unwrap().last_seq;
    assert_above_ceiling(s.scope(&after).resume("high"), "high", Role::Supervisor);
    assert_above_ceiling(
        s.scope(&after).handoff(
            "high",
            Handoff::new(HandoffKind::Continuation, Role::Supervisor, "x"),
            &HandoffsConfig::default(),
        ),
        "high",
        Role::Supervisor,
    );
    assert_above_ceiling(
        s.scope(&after).tag("high", &["x".into()], &[], &none()),
        "high",
        Role::Supervisor,
    );
    assert_above_ceiling(
        s.scope(&after).spawn(
            "high",
            spawn_kid(Handoff::new(HandoffKind::Task, Role::Workagent, "x")),
            &Default::default(),
            &none(),
        ),
        "high",
        Role::Supervisor,
    );
    assert_above_ceiling(
        s.scope(&after).verdict(
            "bench",
            "high",
            VerdictInput {
                pass: true,
                reasons: vec!["fine".into()],
                handoff_seq: None,
            },
        ),
        "bench",
        Role::Judge,
    );
    assert_above_ceiling(
        s.scope(&after).act(high.header.id.as_str()),
        "high",
        Role::Supervisor,
    );
    // Nothing was written to it.
    assert_eq!(s.show("high").unwrap().last_seq, last);
    // Its workagent session still works.
    s.scope(&after).resume("low").unwrap();
    s.scope(&after)
        .tag("low", &["x".into()], &[], &none())
        .unwrap();
    // An operator acts in any session.
    s.scope(&boss_operator()).resume("high").unwrap();
    // The owner still sees it, and may pause it and end it.
    assert_eq!(
        s.scope(&after).show("high").unwrap().header.id,
        high.header.id
    );
    s.scope(&after).pause("high", "stopping").unwrap();
    s.scope(&after).end("high", EndOutcome::Exit).unwrap();

    // `local` (every MCP client without principals) owns what the command
    // line started, and acts only as a workagent in it.
    start_in(s, "cli-lead", Role::Orchestrator);
    let local = Principal::local();
    assert_eq!(
        s.scope(&local).show("cli-lead").unwrap().owner_name(),
        "local"
    );
    assert_above_ceiling(
        s.scope(&local).resume("cli-lead"),
        "cli-lead",
        Role::Orchestrator,
    );
    start_in(s, "cli-work", Role::Workagent);
    s.scope(&local).resume("cli-work").unwrap();
}

fn boss_operator() -> Principal {
    Principal::operator("cli:0")
}
