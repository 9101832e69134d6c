//! Completion conditions: gates count only when they passed after the last
//! work, a judge of another principal must pass the latest handoff, and the
//! operator's `[[completion]]` is added at start; one test per rule (see
//! `completion.rs`).

use std::collections::HashSet;

use serde_json::json;

use super::*;
use crate::manifest::{BudgetsConfig, Completion, CompletionRule, Gate, Principal};

fn worker() -> Principal {
    agent("worker", &[Role::Supervisor, Role::Workagent], &["demo"])
}

fn judge() -> Principal {
    agent("reviewer", &[Role::Judge], &["demo"])
}

fn gate() -> Gate {
    Gate {
        tool: "gate.report".into(),
        input: json!({"path": "report.txt"}),
        expect: json!({"passed": true}).as_object().cloned().unwrap(),
    }
}

fn start(
    env: &Env,
    who: &Principal,
    name: &str,
    role: Role,
    completion: Completion,
) -> SessionState {
    env.sessions
        .scope(who)
        .start(
            StartSession {
                completion,
                ..start_request(name, role)
            },
            &HashSet::new(),
        )
        .expect("start")
}

fn gated() -> Completion {
    Completion {
        gates: vec![gate()],
        judge: false,
    }
}

fn judged() -> Completion {
    Completion {
        gates: vec![],
        judge: true,
    }
}

fn result(passed: bool) -> GateResult {
    GateResult {
        tool: "gate.report".into(),
        passed,
        detail: if passed {
            "{\"passed\":true}".into()
        } else {
            "`/passed` is false, expected true; the result was {\"failed\":2}".into()
        },
    }
}

fn completion_handoff(env: &Env, who: &Principal, session: &str) -> u64 {
    let h = Handoff::new(HandoffKind::WorkagentCompletion, Role::Workagent, "done");
    env.sessions
        .scope(who)
        .handoff(session, h, &Default::default())
        .expect("handoff")
        .seq
}

fn verdict(pass: bool, reasons: &[&str]) -> VerdictInput {
    VerdictInput {
        pass,
        reasons: reasons.iter().map(|r| r.to_string()).collect(),
        handoff_seq: None,
    }
}

#[track_caller]
fn refused(r: Result<SessionState, SessionError>, says: &str) -> String {
    match r {
        Err(e @ SessionError::Incomplete(_)) => {
            let text = e.to_string();
            assert!(text.contains(says), "{text}");
            text
        }
        other => panic!("expected `not complete` saying {says:?}, got {other:?}"),
    }
}

#[test]
fn a_gated_session_ends_completed_only_after_a_passing_run_with_no_work_since() {
    let env = Env::new();
    let w = worker();
    let s = start(&env, &w, "w1", Role::Workagent, gated());
    assert_eq!(s.completion.condition, gated());
    refused(
        env.sessions.scope(&w).end("w1", EndOutcome::Completed),
        "have not passed since its last call or handoff",
    );
    // A failing run refuses with the gate's output.
    env.sessions
        .record_gates(&s.header.id, vec![result(false)])
        .unwrap();
    refused(
        env.sessions.scope(&w).end("w1", EndOutcome::Completed),
        "`gate.report` failed: `/passed` is false",
    );
    // A passing run, then work: the run no longer counts (the Ralph re-check).
    env.sessions
        .record_gates(&s.header.id, vec![result(true)])
        .unwrap();
    env.call(&s.header.id, "c-1", "ok");
    refused(
        env.sessions.scope(&w).end("w1", EndOutcome::Completed),
        "have not passed since",
    );
    // Other outcomes are not held to the condition.
    let other = start(&env, &w, "w2", Role::Workagent, gated());
    env.sessions.scope(&w).end("w2", EndOutcome::Exit).unwrap();
    assert_eq!(
        env.sessions.show(&other.header.id).unwrap().outcome,
        Some(EndOutcome::Exit)
    );
    // A passing run with nothing after it: completed.
    env.sessions
        .record_gates(&s.header.id, vec![result(true)])
        .unwrap();
    let ended = env
        .sessions
        .scope(&w)
        .end("w1", EndOutcome::Completed)
        .unwrap();
    assert_eq!(ended.outcome, Some(EndOutcome::Completed));
    // Each run is in the log.
    let kinds: Vec<&str> = env
        .sessions
        .events(&s.header.id, 1, 10_000)
        .unwrap()
        .iter()
        .map(|e| e.kind.name())
        .filter(|k| *k == "gates_checked")
        .collect();
    assert_eq!(kinds.len(), 3);
}

#[test]
fn failing_gate_runs_are_counted_until_one_passes() {
    let env = Env::new();
    let s = start(&env, &worker(), "w", Role::Workagent, gated());
    env.sessions
        .record_gates(&s.header.id, vec![result(false)])
        .unwrap();
    let after = env
        .sessions
        .record_gates(&s.header.id, vec![result(true), result(false)])
        .unwrap();
    assert_eq!(after.completion.failing_runs, 2);
    let after = env
        .sessions
        .record_gates(&s.header.id, vec![result(true)])
        .unwrap();
    assert_eq!(after.completion.failing_runs, 0);
}

#[test]
fn a_judge_of_another_principal_must_pass_the_latest_handoff() {
    let env = Env::new();
    let (w, j) = (worker(), judge());
    let s = start(&env, &w, "w", Role::Workagent, judged());
    let bench = start(&env, &j, "bench", Role::Judge, Completion::default());
    refused(
        env.sessions.scope(&w).end("w", EndOutcome::Completed),
        "has written no handoff to judge",
    );
    // Nothing to judge yet.
    let err = env
        .sessions
        .scope(&j)
        .verdict("bench", "w", verdict(true, &[]))
        .unwrap_err();
    assert!(err.to_string().contains("no handoff to judge yet"), "{err}");
    let first = completion_handoff(&env, &w, &s.header.id);
    refused(
        env.sessions.scope(&w).end("w", EndOutcome::Completed),
        &format!("no judge has passed its latest handoff (event {first})"),
    );
    // A failing verdict needs a reason, and its reasons reach the worker.
    let err = env
        .sessions
        .scope(&j)
        .verdict("bench", "w", verdict(false, &[]))
        .unwrap_err();
    assert!(err.to_string().contains("needs a reason"), "{err}");
    let failed = env
        .sessions
        .scope(&j)
        .verdict("bench", "w", verdict(false, &["the count is wrong"]))
        .unwrap();
    assert_eq!(failed.verdict.handoff_seq, first);
    refused(
        env.sessions.scope(&w).end("w", EndOutcome::Completed),
        "judge `reviewer` (session s-",
    );
    // A new handoff: the old verdict no longer counts; a verdict on the old
    // handoff is refused.
    let second = completion_handoff(&env, &w, &s.header.id);
    let mut stale = verdict(true, &[]);
    stale.handoff_seq = Some(first);
    let err = env
        .sessions
        .scope(&j)
        .verdict("bench", "w", stale)
        .unwrap_err();
    assert!(err.to_string().contains("is not its latest"), "{err}");
    refused(
        env.sessions.scope(&w).end("w", EndOutcome::Completed),
        &format!("event {second}"),
    );
    env.sessions
        .scope(&j)
        .verdict("bench", "w", verdict(true, &["counted again: right"]))
        .unwrap();
    env.sessions
        .scope(&w)
        .end("w", EndOutcome::Completed)
        .unwrap();
    // Both logs hold the verdicts.
    let given = env
        .sessions
        .events(&bench.header.id, 1, 10_000)
        .unwrap()
        .iter()
        .filter(|e| e.kind.name() == "verdict_given")
        .count();
    assert_eq!(given, 2);
    assert!(env.sessions.verify(&s.header.id).unwrap().ok);
}

#[test]
fn a_judge_is_never_the_worker_nor_its_principal() {
    let env = Env::new();
    let w = agent("worker", &[Role::Workagent, Role::Judge], &["demo"]);
    let s = start(&env, &w, "w", Role::Workagent, judged());
    completion_handoff(&env, &w, &s.header.id);
    // Same principal, other session.
    start(&env, &w, "self-judge", Role::Judge, Completion::default());
    let err = env
        .sessions
        .scope(&w)
        .verdict("self-judge", "w", verdict(true, &[]))
        .unwrap_err();
    assert!(
        err.to_string().contains("the judge's own principal"),
        "{err}"
    );
    // A session that is not a judge.
    let j = agent("reviewer", &[Role::Judge, Role::Workagent], &["demo"]);
    start(
        &env,
        &j,
        "not-a-judge",
        Role::Workagent,
        Completion::default(),
    );
    let err = env
        .sessions
        .scope(&j)
        .verdict("not-a-judge", "w", verdict(true, &[]))
        .unwrap_err();
    assert!(err.to_string().contains("not a judge"), "{err}");
    // A worker in a project the judge may not touch is not found.
    let mut outsider = judge();
    outsider.name = "outsider".into();
    outsider.projects = vec!["elsewhere".into()];
    env.sessions
        .scope(&outsider)
        .start(
            StartSession {
                role: Role::Judge,
                project: "elsewhere".into(),
                name: Some("far-bench".into()),
                tags: vec![],
                expected_duration: None,
                budget: Default::default(),
                completion: Default::default(),
            },
            &HashSet::new(),
        )
        .unwrap();
    let err = env
        .sessions
        .scope(&outsider)
        .verdict("far-bench", "w", verdict(true, &[]))
        .unwrap_err();
    assert!(matches!(err, SessionError::NotFound(_)), "{err:?}");
    // A session that asks for no judge takes no verdict.
    let plain = start(&env, &w, "plain", Role::Workagent, Completion::default());
    completion_handoff(&env, &w, &plain.header.id);
    start(&env, &judge(), "bench", Role::Judge, Completion::default());
    let err = env
        .sessions
        .scope(&judge())
        .verdict("bench", "plain", verdict(true, &[]))
        .unwrap_err();
    assert!(err.to_string().contains("asks for no judge"), "{err}");
    // Nothing was written into the worker's log by the refusals.
    assert!(
        env.sessions
            .events(&s.header.id, 1, 10_000)
            .unwrap()
            .iter()
            .all(|e| e.kind.name() != "verdict_received")
    );
}

#[test]
fn a_judge_is_never_spawned() {
    let env = Env::new();
    let boss = agent(
        "boss",
        &[Role::Supervisor, Role::Workagent, Role::Judge],
        &["demo"],
    );
    start(&env, &boss, "lead", Role::Supervisor, Completion::default());
    let task = Handoff::new(HandoffKind::Task, Role::Judge, "judge my workers");
    let err = env
        .sessions
        .scope(&boss)
        .spawn(
            "lead",
            SpawnChild {
                role: Role::Judge,
                name: None,
                ..spawn_kid(task)
            },
            &BudgetsConfig::default(),
            &HashSet::new(),
        )
        .unwrap_err();
    assert!(err.to_string().contains("cannot spawn a judge"), "{err}");
}

#[test]
fn a_spawned_child_carries_the_condition_its_parent_set() {
    let env = Env::new();
    let w = worker();
    start(&env, &w, "lead", Role::Supervisor, Completion::default());
    let task = Handoff::new(HandoffKind::Task, Role::Workagent, "count words");
    let spawned = env
        .sessions
        .scope(&w)
        .spawn(
            "lead",
            SpawnChild {
                completion: gated().and(&judged()),
                ..spawn_kid(task)
            },
            &BudgetsConfig::default(),
            &HashSet::new(),
        )
        .unwrap();
    assert_eq!(spawned.child.completion.condition, gated().and(&judged()));
    refused(
        env.sessions.scope(&w).end("kid", EndOutcome::Completed),
        "gates have not passed",
    );
}

#[test]
fn the_operators_conditions_are_added_at_start_by_role_and_project() {
    let config = SessionsConfig {
        completion: vec![
            CompletionRule {
                role: Some(Role::Workagent),
                project: None,
                completion: gated(),
            },
            CompletionRule {
                role: None,
                project: Some("demo".into()),
                completion: judged(),
            },
        ],
        ..SessionsConfig::default()
    };
    let env = Env::with_config(config);
    let w = worker();
    let worker_session = start(&env, &w, "w", Role::Workagent, Completion::default());
    assert_eq!(worker_session.completion.condition, gated().and(&judged()));
    let lead = start(&env, &w, "lead", Role::Supervisor, Completion::default());
    assert_eq!(lead.completion.condition, judged());
    // The condition is in the first event, so it survives a reopen.
    let env = env.reopen(SessionsConfig::default());
    assert_eq!(
        env.sessions.show("w").unwrap().completion.condition,
        gated().and(&judged())
    );
}
