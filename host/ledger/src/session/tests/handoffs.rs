//! Handoffs fit the writer's role, reach their target, and come back on resume.

use super::*;

#[test]
fn a_handoff_of_the_wrong_kind_names_the_kinds_the_role_may_write() {
    let env = Env::new();
    let s = env.start("worker", Role::Workagent);
    let h = Handoff::new(
        HandoffKind::OrchestratorToSupervisor,
        Role::Workagent,
        "plan",
    );
    let err = env.sessions.handoff("worker", h).unwrap_err();
    assert_eq!(
        err.to_string(),
        format!(
            "bad handoff from session `worker` ({}): a workagent session cannot write a handoff of kind \
             `orchestrator_to_supervisor`: a workagent may write workagent_completion, continuation",
            s.header.id
        )
    );
    assert_eq!(env.sessions.show("worker").unwrap().last_seq, 1);
}

#[test]
fn resume_returns_the_latest_handoff() {
    let env = Env::new();
    let s = env.start("solo", Role::Supervisor);
    let mut first = Handoff::new(
        HandoffKind::Continuation,
        Role::Supervisor,
        "ship the parser",
    );
    first.notes.current_phase = "design".into();
    env.sessions.handoff("solo", first).unwrap();
    // A handoff activates a created session.
    assert_eq!(
        env.sessions.show("solo").unwrap().header.status,
        SessionStatus::Active
    );
    let mut second = Handoff::new(
        HandoffKind::Continuation,
        Role::Supervisor,
        "ship the parser",
    );
    second.notes.current_phase = "implementation".into();
    second.notes.work_completed = vec!["grammar".into()];
    second.notes.next_steps = vec!["error recovery".into()];
    second.notes.success_criteria = vec!["fuzz for an hour".into()];
    env.sessions.handoff("solo", second.clone()).unwrap();
    env.sessions.pause("solo", "context full").unwrap();

    // A new process, with no memory of the session.
    let env = env.reopen(SessionsConfig::default());
    let resumed = env.sessions.resume("solo").unwrap();
    let latest = resumed.latest_handoff.expect("a handoff");
    second.to_role = Some(Role::Supervisor);
    assert_eq!(latest.handoff, second);
    assert_eq!(latest.from_session, s.header.id);
    assert_eq!(resumed.state.handoffs, 2);
    assert_eq!(resumed.state.header.status, SessionStatus::Active);
}

#[test]
fn a_targeted_handoff_reaches_the_target_session() {
    let env = Env::new();
    let boss = env.start("boss", Role::Orchestrator);
    let lead = env.start("lead", Role::Supervisor);
    let worker = env.start("hands", Role::Workagent);

    let mut h = Handoff::new(
        HandoffKind::OrchestratorToSupervisor,
        Role::Orchestrator,
        "build the api",
    );
    h.notes.requirements = vec!["rest".into()];
    h.target_session = Some("hands".into());
    let err = env
        .sessions
        .handoff("boss", h.clone())
        .unwrap_err()
        .to_string();
    assert!(
        err.contains(
            "is a workagent, but a `orchestrator_to_supervisor` handoff goes to a supervisor"
        ),
        "{err}"
    );

    h.target_session = Some("lead".into());
    env.sessions.handoff("boss", h).unwrap();
    let resumed = env.sessions.resume("lead").unwrap();
    let got = resumed.latest_handoff.expect("received handoff");
    assert_eq!(got.from_session, boss.header.id);
    assert_eq!(got.handoff.objective, "build the api");
    assert_eq!(
        got.handoff.target_session.as_deref(),
        Some(lead.header.id.as_str())
    );

    let mut cont = Handoff::new(HandoffKind::Continuation, Role::Workagent, "x");
    cont.target_session = Some("lead".into());
    let err = env
        .sessions
        .handoff(&worker.header.id, cont)
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("a continuation is for the session itself"),
        "{err}"
    );
}
