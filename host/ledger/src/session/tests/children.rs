//! Child sessions: the link on both sides, the role and budget a child may
//! have, waiting for children, ending a parent, the family's reach; one test
//! per rule (see `family.rs`).

use std::collections::HashSet;
use std::sync::atomic::{AtomicUsize, Ordering};

use super::*;
use crate::manifest::{BudgetCaps, BudgetsConfig, Cap, HandoffRoute, HandoffsConfig, Principal};

fn boss() -> Principal {
    agent(
        "boss",
        &[Role::Orchestrator, Role::Supervisor, Role::Workagent],
        &["*"],
    )
}

fn start_by(
    env: &Env,
    who: &Principal,
    name: &str,
    role: Role,
    budget: BudgetCaps,
) -> SessionState {
    env.sessions
        .scope(who)
        .start(
            StartSession {
                budget,
                ..start_request(name, role)
            },
            &HashSet::new(),
        )
        .expect("start")
}

/// Starts a supervisor session named `name` with no caps.
fn supervisor(env: &Env, who: &Principal, name: &str) -> SessionState {
    start_by(env, who, name, Role::Supervisor, BudgetCaps::default())
}

fn child(name: &str, role: Role, budget: BudgetCaps) -> SpawnChild {
    let mut task = Handoff::new(HandoffKind::Task, role, format!("do {name}"));
    task.notes.success_criteria = vec!["tests pass".into()];
    task.notes.files = vec!["src/lib.rs".into()];
    SpawnChild {
        role,
        name: Some(name.into()),
        tags: vec![],
        expected_duration: None,
        budget,
        task,
        completion: Default::default(),
    }
}

fn spawn(
    env: &Env,
    who: &Principal,
    parent: &str,
    spawn: SpawnChild,
) -> Result<Spawned, SessionError> {
    env.sessions
        .scope(who)
        .spawn(parent, spawn, &BudgetsConfig::default(), &HashSet::new())
}

/// Spawns a workagent child named `name` with no caps of its own.
fn spawn_worker(
    env: &Env,
    who: &Principal,
    parent: &str,
    name: &str,
) -> Result<Spawned, SessionError> {
    spawn(
        env,
        who,
        parent,
        child(name, Role::Workagent, caps(None, None)),
    )
}

/// How many sessions the store lists.
fn session_count(env: &Env) -> usize {
    env.sessions
        .list(&SessionFilter::default(), &Default::default())
        .unwrap()
        .items
        .len()
}

fn caps(cost: Option<f64>, calls: Option<u64>) -> BudgetCaps {
    BudgetCaps::new(cost, calls, None).unwrap()
}

fn kinds(env: &Env, id: &str) -> Vec<String> {
    env.sessions
        .events(id, 1, usize::MAX)
        .unwrap()
        .iter()
        .map(|e| e.kind.name().to_string())
        .collect()
}

#[test]
fn a_spawn_links_child_and_parent_and_hands_the_child_its_task() {
    let env = Env::new();
    let me = boss();
    let parent = supervisor(&env, &me, "lead");
    let spawned = spawn_worker(&env, &me, "lead", "w1").unwrap();
    let kid = &spawned.child;
    assert_eq!(kid.parent.as_deref(), Some(parent.header.id.as_str()));
    assert_eq!(kid.owner.as_deref(), Some("boss"));
    assert_eq!(
        kid.header.project, "demo",
        "a child works in its parent's project"
    );

    // The child's first event names its parent; its resume returns the task.
    let first = &env.sessions.events(&kid.header.id, 1, 1).unwrap()[0];
    let EventKind::SessionStarted { parent: link, .. } = &first.kind else {
        panic!("{first:?}")
    };
    assert_eq!(link.as_deref(), Some(parent.header.id.as_str()));
    let resumed = env.sessions.scope(&me).resume("w1").unwrap();
    let task = resumed.latest_handoff.expect("the task");
    assert_eq!(task.from_session, parent.header.id);
    assert_eq!(task.handoff.kind, HandoffKind::Task);
    assert_eq!(task.handoff.from_role, Role::Supervisor);
    assert_eq!(task.handoff.to_role, Some(Role::Workagent));
    assert_eq!(task.handoff.notes.success_criteria, ["tests pass"]);

    // The parent's log names the child.
    assert_eq!(
        kinds(&env, &parent.header.id),
        ["session_started", "child_spawned"]
    );
    let EventKind::ChildSpawned {
        child: id, role, ..
    } = &spawned.event.kind
    else {
        panic!("{:?}", spawned.event)
    };
    assert_eq!((id, *role), (&kid.header.id, Role::Workagent));
    let children = env
        .sessions
        .scope(&me)
        .children("lead", &Default::default())
        .unwrap()
        .items;
    assert_eq!(children.len(), 1);
    assert_eq!(children[0].id, kid.header.id);
    assert!(!children[0].settled);
    // The family survives a restart: it is in the logs.
    let env = env.reopen(SessionsConfig::default());
    assert_eq!(
        env.sessions
            .show("lead")
            .unwrap()
            .children
            .keys()
            .collect::<Vec<_>>(),
        [&kid.header.id]
    );
}

#[test]
fn a_session_without_a_parent_records_no_parent_field_so_old_logs_hash_the_same() {
    let env = Env::new();
    let s = env.start("solo", Role::Workagent);
    let first = &env.sessions.events(&s.header.id, 1, 1).unwrap()[0];
    let json = String::from_utf8(first.to_bytes()).unwrap();
    assert!(!json.contains("\"parent\""), "{json}");
    let info = env
        .sessions
        .list(&SessionFilter::default(), &Default::default())
        .unwrap()
        .items;
    assert!(!serde_json::to_string(&info).unwrap().contains("\"parent\""));
}

#[test]
fn a_child_above_its_parents_role_is_refused_and_nothing_is_written() {
    let env = Env::new();
    let me = boss();
    let parent = supervisor(&env, &me, "lead");
    let err = spawn(
        &env,
        &me,
        "lead",
        child("up", Role::Orchestrator, caps(None, None)),
    )
    .unwrap_err()
    .to_string();
    assert!(err.contains("at or below its parent's"), "{err}");
    assert!(err.contains("supervisor or workagent"), "{err}");
    assert_eq!(session_count(&env), 1);
    assert_eq!(env.sessions.show("lead").unwrap().last_seq, parent.last_seq);
}

#[test]
fn a_child_above_the_principals_ceiling_is_refused() {
    let env = Env::new();
    // May run supervisors, not workagents.
    let me = agent("sup-only", &[Role::Supervisor], &["*"]);
    supervisor(&env, &me, "lead");
    let err = spawn_worker(&env, &me, "lead", "w")
        .unwrap_err()
        .to_string();
    assert!(err.contains("ceiling"), "{err}");
    assert_eq!(session_count(&env), 1);
}

#[test]
fn an_unknown_or_anothers_parent_is_not_found() {
    let env = Env::new();
    let (me, other) = (
        boss(),
        agent("other", &[Role::Supervisor, Role::Workagent], &["*"]),
    );
    supervisor(&env, &other, "theirs");
    for key in ["nope", "theirs"] {
        match spawn_worker(&env, &me, key, "w") {
            Err(SessionError::NotFound(k)) => assert_eq!(k, key),
            other => panic!("{other:?}"),
        }
    }
    assert_eq!(session_count(&env), 1);
}

#[test]
fn childrens_caps_are_carved_out_of_the_parents_and_a_spawn_beyond_them_is_refused() {
    let env = Env::new();
    let me = boss();
    let parent = start_by(
        &env,
        &me,
        "lead",
        Role::Supervisor,
        caps(Some(1.0), Some(10)),
    );
    // A child must carry each cap its parent has.
    let err = spawn(
        &env,
        &me,
        "lead",
        child("w0", Role::Workagent, caps(Some(0.5), None)),
    )
    .unwrap_err()
    .to_string();
    assert!(err.contains("no `calls` cap"), "{err}");
    assert!(err.contains("--budget-calls"), "{err}");
    spawn(
        &env,
        &me,
        "lead",
        child("w1", Role::Workagent, caps(Some(0.6), Some(4))),
    )
    .unwrap();
    // 0.6 of 1.0 is carved: 0.4 is left, and a child of 0.5 does not fit.
    let before = env.sessions.show("lead").unwrap().last_seq;
    let err = spawn(
        &env,
        &me,
        "lead",
        child("w2", Role::Workagent, caps(Some(0.5), Some(4))),
    )
    .unwrap_err()
    .to_string();
    assert!(err.contains("`cost` cap"), "{err}");
    assert!(err.contains("beyond its parent's budget"), "{err}");
    assert!(err.contains("0.4"), "{err}");
    assert!(
        err.contains(&format!("glovebox session budget {}", parent.header.id)),
        "{err}"
    );
    assert_eq!(env.sessions.show("lead").unwrap().last_seq, before);
    assert_eq!(session_count(&env), 2);
    // What fits is accepted, and the parent's own use counts the carve.
    spawn(
        &env,
        &me,
        "lead",
        child("w3", Role::Workagent, caps(Some(0.4), Some(6))),
    )
    .unwrap();
    let lead = env.sessions.show("lead").unwrap();
    let used = crate::budget::Used::of(&lead, lead.header.created_at_ms);
    assert_eq!(used.get(Cap::Cost), 1_000_000);
    assert_eq!(used.get(Cap::Calls), 10);
    let breach = crate::budget::check_call(
        &lead,
        &BudgetsConfig::default(),
        lead.header.created_at_ms,
        0,
    )
    .expect("the parent has no call left of its own");
    assert_eq!(breach.cap, Cap::Calls);
}

#[test]
fn a_wait_without_children_is_refused() {
    let env = Env::new();
    let me = boss();
    supervisor(&env, &me, "lonely");
    let err = env
        .sessions
        .scope(&me)
        .wait_check("lonely")
        .unwrap_err()
        .to_string();
    assert!(err.contains("has no children to wait for"), "{err}");
    assert!(err.contains("session_spawn"), "{err}");
}

#[derive(Debug, Default)]
struct Count(AtomicUsize);

impl ChildObserver for Count {
    fn changed(&self, _parent: &str) {
        self.0.fetch_add(1, Ordering::SeqCst);
    }
}

#[test]
fn a_child_settles_by_a_handoff_to_its_parent_or_by_ending_and_the_observers_hear_it() {
    let env = Env::new();
    let rung = std::sync::Arc::new(Count::default());
    env.sessions.observe_children(rung.clone());
    let me = boss();
    // An orchestrator's workagent reports to it all the same: the parent is
    // its supervisor.
    start_by(&env, &me, "top", Role::Orchestrator, BudgetCaps::default());
    let a = spawn_worker(&env, &me, "top", "a").unwrap();
    let b = spawn_worker(&env, &me, "top", "b").unwrap();
    let (_, children) = env.sessions.scope(&me).wait_check("top").unwrap();
    assert!(children.iter().all(|c| !c.settled));
    assert_eq!(rung.0.load(Ordering::SeqCst), 0);

    let mut done = Handoff::new(HandoffKind::WorkagentCompletion, Role::Workagent, "did a");
    done.notes.work_completed = vec!["a".into()];
    done.target_session = Some("top".into());
    env.sessions
        .scope(&me)
        .handoff("a", done, &HandoffsConfig::default())
        .unwrap();
    assert_eq!(rung.0.load(Ordering::SeqCst), 1);
    env.sessions.scope(&me).end("b", EndOutcome::Exit).unwrap();
    assert_eq!(rung.0.load(Ordering::SeqCst), 2);

    let (_, children) = env.sessions.scope(&me).wait_check("top").unwrap();
    let by_id = |id: &str| children.iter().find(|c| c.id == id).unwrap().clone();
    let (ca, cb) = (by_id(&a.child.header.id), by_id(&b.child.header.id));
    assert!(ca.settled && cb.settled);
    let report = ca.handoff.expect("a's report");
    assert_eq!(report.handoff.objective, "did a");
    assert_eq!(report.handoff.to_role, Some(Role::Orchestrator));
    assert_eq!(ca.status, SessionStatus::Active);
    assert_eq!(cb.outcome, Some(EndOutcome::Exit));
    assert!(cb.handoff.is_none());
}

#[test]
fn a_parent_with_live_children_does_not_end_unless_it_cancels_them() {
    let env = Env::new();
    let me = boss();
    supervisor(&env, &me, "lead");
    let w = spawn(
        &env,
        &me,
        "lead",
        child("w", Role::Supervisor, caps(None, None)),
    )
    .unwrap();
    let grandchild = spawn_worker(&env, &me, "w", "ww").unwrap();
    let err = env
        .sessions
        .scope(&me)
        .end("lead", EndOutcome::Completed)
        .unwrap_err()
        .to_string();
    assert!(err.contains("has live children"), "{err}");
    assert!(err.contains(&w.child.header.id), "{err}");
    assert!(err.contains("--cancel-children"), "{err}");
    assert!(env.sessions.show("lead").unwrap().header.status.is_live());

    let cancelled = env.sessions.scope(&me).cancel_children("lead").unwrap();
    assert_eq!(
        cancelled,
        [
            grandchild.child.header.id.clone(),
            w.child.header.id.clone()
        ]
    );
    for id in &cancelled {
        let s = env.sessions.show(id).unwrap();
        assert_eq!(s.outcome, Some(EndOutcome::Interrupted));
        assert_eq!(
            env.sessions.events(id, s.last_seq, 1).unwrap()[0]
                .by
                .as_deref(),
            Some("boss")
        );
    }
    let ended = env
        .sessions
        .scope(&me)
        .end("lead", EndOutcome::Completed)
        .unwrap();
    assert_eq!(ended.outcome, Some(EndOutcome::Completed));
}

#[test]
fn a_child_reaches_its_family_and_other_sessions_only_along_a_route() {
    let env = Env::new();
    let me = boss();
    let lead = supervisor(&env, &me, "lead");
    let other = supervisor(&env, &me, "other-lead");
    let a = spawn_worker(&env, &me, "lead", "a").unwrap();
    let b = spawn_worker(&env, &me, "lead", "b").unwrap();
    let done = |to: &str| {
        let mut h = Handoff::new(HandoffKind::WorkagentCompletion, Role::Workagent, "done");
        h.target_session = Some(to.to_string());
        h
    };
    // The same principal's unrelated session is outside the family.
    let err = env
        .sessions
        .scope(&me)
        .handoff("a", done("other-lead"), &HandoffsConfig::default())
        .unwrap_err()
        .to_string();
    assert!(err.contains("outside the family"), "{err}");
    assert!(err.contains("\"workagent -> supervisor\""), "{err}");
    assert_eq!(
        env.sessions.show("other-lead").unwrap().last_seq,
        other.last_seq
    );
    // Along a route it goes.
    let routes = HandoffsConfig {
        routes: vec![HandoffRoute {
            from: Role::Workagent,
            to: Role::Supervisor,
        }],
    };
    env.sessions
        .scope(&me)
        .handoff("a", done("other-lead"), &routes)
        .unwrap();
    // Parent, sibling and self are family; a session with no parent is free.
    let (sa, sb) = (
        env.sessions.show(&a.child.header.id).unwrap(),
        env.sessions.show(&b.child.header.id).unwrap(),
    );
    let none = HandoffsConfig::default();
    assert!(check_addressable(&sa, &lead, &none).is_ok());
    assert!(check_addressable(&sa, &sb, &none).is_ok());
    assert!(check_addressable(&sa, &sa, &none).is_ok());
    assert!(check_addressable(&lead, &other, &none).is_ok());
    assert!(check_addressable(&sa, &other, &none).is_err());
}

#[test]
fn a_task_handoff_is_written_only_by_a_spawn() {
    let env = Env::new();
    env.start("solo", Role::Supervisor);
    let h = Handoff::new(HandoffKind::Task, Role::Supervisor, "sneak");
    let err = env.sessions.handoff("solo", h).unwrap_err().to_string();
    assert!(err.contains("written by `session_spawn`"), "{err}");
}

/// A report of about `bytes` bytes from child `name` to `parent`.
fn report(name: &str, parent: &str, bytes: usize) -> Handoff {
    let mut done = Handoff::new(
        HandoffKind::WorkagentCompletion,
        Role::Workagent,
        format!("did {name}"),
    );
    done.notes.work_completed = vec!["x".repeat(bytes)];
    done.target_session = Some(parent.into());
    done
}

/// Why: the parent's state held every child ever spawned with its last
/// report (up to 64 KiB each), written whole in every checkpoint; a
/// supervisor with thousands of workers made each checkpoint megabytes.
#[test]
fn threat_49_a_parent_keeps_a_bounded_summary_and_every_child_stays_found() {
    let env = Env::new();
    let me = boss();
    start_by(&env, &me, "lead", Role::Supervisor, caps(Some(100.0), None));
    const N: usize = 40;
    let mut ids = Vec::new();
    for i in 0..N {
        let name = format!("w{i}");
        let kid = spawn(
            &env,
            &me,
            "lead",
            child(&name, Role::Workagent, caps(Some(1.0), None)),
        )
        .unwrap()
        .child;
        // The first stays at work; the others report (8 KiB each) and end.
        if i > 0 {
            env.sessions
                .scope(&me)
                .handoff(
                    &name,
                    report(&name, "lead", 8192),
                    &HandoffsConfig::default(),
                )
                .unwrap();
            env.sessions
                .scope(&me)
                .end(&name, EndOutcome::Exit)
                .unwrap();
        }
        ids.push(kid.header.id);
    }
    let lead = env.sessions.show("lead").unwrap();
    assert_eq!(lead.children_spawned, N as u64);
    assert_eq!(lead.children.len(), RECENT_CHILDREN);
    assert!(
        !lead.children.contains_key(&ids[0]),
        "the oldest left the state"
    );
    assert!(lead.children.values().all(|l| l.report.is_none()));
    // What its own budget counts as carved: every child's, not the recent's.
    let used = crate::budget::Used::of(&lead, env.sessions.clock_ms());
    assert_eq!(used.cost_micros, N as u64 * 1_000_000);
    // A checkpoint of the parent stays small: 40 reports of 8 KiB are not in it.
    env.sessions.resume("lead").unwrap();
    env.sessions.scope(&me).pause("lead", "checkpoint").unwrap();
    let (_, newest) = checkpoint::list(&*env.store, &lead.header.id).unwrap()[0].clone();
    assert!(
        newest.len() < 16 * 1024,
        "a checkpoint of {} bytes",
        newest.len()
    );

    // Every child is listed, oldest first, a page at a time, its report from
    // its own log.
    let mut listed = Vec::new();
    let mut page = crate::page::PageRequest::first(15);
    loop {
        let got = env.sessions.scope(&me).children("lead", &page).unwrap();
        listed.extend(got.items);
        match got.next_cursor {
            Some(c) => page.cursor = Some(c),
            None => break,
        }
    }
    assert_eq!(listed.iter().map(|c| c.id.clone()).collect::<Vec<_>>(), ids);
    assert!(!listed[0].settled && listed[0].handoff.is_none());
    let last = &listed[N - 1];
    assert!(last.settled);
    assert_eq!(
        last.handoff.as_ref().unwrap().handoff.objective,
        format!("did w{}", N - 1)
    );
    // The wait sees them all, the one at work pending.
    env.sessions.scope(&me).resume("lead").unwrap();
    let (_, waited) = env.sessions.scope(&me).wait_check("lead").unwrap();
    assert_eq!(waited.len(), N);
    assert_eq!(waited.iter().filter(|c| !c.settled).count(), 1);
    // The oldest, long out of the parent's state, still keeps it from ending.
    let e = env
        .sessions
        .scope(&me)
        .end("lead", EndOutcome::Exit)
        .unwrap_err();
    assert!(e.to_string().contains(&ids[0]), "{e}");
    assert_eq!(
        env.sessions.scope(&me).cancel_children("lead").unwrap(),
        [ids[0].clone()]
    );
    env.sessions
        .scope(&me)
        .end("lead", EndOutcome::Exit)
        .unwrap();
}

/// Why: a parent that spawns without end grows the store and its family
/// without bound; `quotas.children_per_session` stops it, writing nothing.
#[test]
fn threat_49_a_spawn_past_children_per_session_is_refused_and_writes_nothing() {
    let env = Env::with_config(SessionsConfig {
        quotas: crate::manifest::QuotasConfig {
            children_per_session: 2,
            ..Default::default()
        },
        ..SessionsConfig::default()
    });
    let me = boss();
    let lead = supervisor(&env, &me, "lead");
    for name in ["a", "b"] {
        spawn_worker(&env, &me, "lead", name).unwrap();
    }
    // Ended children count: each stays in the family.
    env.sessions.scope(&me).end("a", EndOutcome::Exit).unwrap();
    let sessions = session_count(&env);
    let before = env.sessions.show("lead").unwrap().last_seq;
    let e = spawn_worker(&env, &me, "lead", "c").unwrap_err();
    match &e {
        SessionError::Quota { limit, .. } => assert_eq!(limit.key, "children_per_session"),
        other => panic!("{other:?}"),
    }
    assert!(
        e.to_string().contains(&format!(
            "session `lead` ({}) has spawned 2 children",
            lead.header.id
        )),
        "{e}"
    );
    assert_eq!(session_count(&env), sessions);
    assert_eq!(env.sessions.show("lead").unwrap().last_seq, before);
    assert!(matches!(
        env.sessions.show("c"),
        Err(SessionError::NotFound(_))
    ));
}

/// Why: logs and checkpoints written before the bound hold the whole child
/// list, each child with its report; they must load, verify and still
/// answer `session_wait` and the listing.
#[test]
fn threat_49_a_parent_recorded_with_its_whole_child_list_loads_and_answers_as_before() {
    let env = super::fixtures::old_data_dir();
    let alice = agent(
        "alice",
        &[Role::Orchestrator, Role::Supervisor, Role::Workagent],
        &["*"],
    );
    let (lead, stats) = env.sessions.reload("lead", true).unwrap();
    assert_eq!(
        stats.checkpoint_seq,
        Some(8),
        "loaded from the old checkpoint"
    );
    assert_eq!(lead.children_spawned, 3);
    assert!(env.sessions.verify("lead").unwrap().ok);
    let children = env
        .sessions
        .scope(&alice)
        .children("lead", &Default::default())
        .unwrap()
        .items;
    let names: Vec<_> = children.iter().map(|c| c.name.clone().unwrap()).collect();
    assert_eq!(names, ["w1", "w2", "w3"]);
    let report = children[0].handoff.as_ref().expect("w1's report");
    assert_eq!(report.handoff.objective, "did w1");
    assert_eq!(report.handoff.notes.work_completed, ["w1 done"]);
    assert!(children[0].settled && children[1].settled && !children[2].settled);
    let (_, waited) = env.sessions.scope(&alice).wait_check("lead").unwrap();
    assert_eq!(waited, children);
    // The family goes on: a fourth child, and the end still waits for the
    // live ones (w1 reported but did not end).
    spawn_worker(&env, &alice, "lead", "w4").unwrap();
    assert_eq!(env.sessions.show("lead").unwrap().children_spawned, 4);
    let e = env
        .sessions
        .scope(&alice)
        .end("lead", EndOutcome::Exit)
        .unwrap_err();
    for live in ["`w1`", "`w3`", "`w4`"] {
        assert!(e.to_string().contains(live), "{e}");
    }
    assert_eq!(
        env.sessions
            .scope(&alice)
            .cancel_children("lead")
            .unwrap()
            .len(),
        3
    );
    env.sessions
        .scope(&alice)
        .end("lead", EndOutcome::Exit)
        .unwrap();
}

/// A child's carve counts its parent's calls in flight, and the parent's
/// next call counts the carve (why: a child carved while its parent's call
/// ran could spend what that call then spent too, twice the parent's cap).
#[test]
fn threat_51_a_childs_carve_counts_the_parents_calls_in_flight() {
    let env = Env::new();
    let me = boss();
    start_by(
        &env,
        &me,
        "lead",
        Role::Supervisor,
        caps(Some(1.0), Some(10)),
    );
    env.request("lead", "c-1");
    env.sessions
        .append(
            "lead",
            EventKind::CallStarted {
                call_id: "c-1".into(),
                tool: "echo.echo".into(),
                idempotency_key: "lead/c-1".into(),
                idempotent: false,
                tool_digest: digest(b"wasm"),
                cost_micros: 750_000,
            },
        )
        .unwrap();
    let lead = env.sessions.show("lead").unwrap();
    assert_eq!(lead.in_flight["c-1"].cost_micros, 750_000);
    let err = spawn(
        &env,
        &me,
        "lead",
        child("greedy", Role::Workagent, caps(Some(0.5), Some(2))),
    )
    .unwrap_err()
    .to_string();
    assert!(err.contains("in flight"), "{err}");
    assert!(err.contains("so 0.25 is left"), "{err}");
    spawn(
        &env,
        &me,
        "lead",
        child("modest", Role::Workagent, caps(Some(0.25), Some(2))),
    )
    .unwrap();
    // In flight 0.75 and carved 0.25: the parent's next call does not fit,
    // even one that costs nothing (its cost cap is used up).
    let lead = env.sessions.show("lead").unwrap();
    let breach = crate::budget::check_call(
        &lead,
        &BudgetsConfig::default(),
        lead.header.created_at_ms,
        1,
    )
    .expect("nothing is left of the parent's cost");
    assert_eq!(
        (breach.cap, breach.used, breach.projected),
        (Cap::Cost, 1_000_000, 1_000_001)
    );
}
