//! Names are unique among live sessions and freed when a session ends.

use super::*;

#[test]
fn a_live_name_cannot_be_taken_twice() {
    let env = Env::new();
    let first = env.start("build", Role::Supervisor);
    let err = env
        .sessions
        .start(start_request("build", Role::Workagent))
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        format!(
            "the name `build` is taken by the live session `build` ({}): pick another name, or end or archive that session first",
            first.id
        )
    );
    let other = env.start("test", Role::Workagent);
    let err = env.sessions.rename(&other.id, "build").unwrap_err();
    assert!(matches!(err, SessionError::NameTaken { .. }), "{err}");
    assert_eq!(env.sessions.show("test").unwrap().id, other.id);
}

#[test]
fn a_name_is_freed_when_its_session_completes() {
    let env = Env::new();
    let first = env.start("deploy", Role::Workagent);
    env.sessions.end("deploy", EndOutcome::Completed).unwrap();
    // The ended session is still found by its name while nobody else has it.
    assert_eq!(env.sessions.show("deploy").unwrap().id, first.id);
    let second = env.start("deploy", Role::Workagent);
    assert_ne!(first.id, second.id);
    assert_eq!(env.sessions.show("deploy").unwrap().id, second.id);
    // Paused, then archived: freed as well.
    env.sessions.resume("deploy").unwrap();
    env.sessions.pause("deploy", "later").unwrap();
    env.sessions.archive("deploy").unwrap();
    let third = env.start("deploy", Role::Workagent);
    assert_eq!(env.sessions.show("deploy").unwrap().id, third.id);
}

#[test]
fn renaming_moves_the_name() {
    let env = Env::new();
    let s = env.start("old", Role::Orchestrator);
    let renamed = env.sessions.rename("old", "new").unwrap();
    assert_eq!(renamed.name.as_deref(), Some("new"));
    assert_eq!(env.sessions.show("new").unwrap().id, s.id);
    // The old name is free for another live session.
    let other = env.start("old", Role::Orchestrator);
    assert_eq!(env.sessions.show("old").unwrap().id, other.id);
    // Survives a restart: the index agrees with the log.
    let env = env.reopen(SessionsConfig::default());
    assert_eq!(env.sessions.show("new").unwrap().id, s.id);
    assert_eq!(env.sessions.show("old").unwrap().id, other.id);
}

#[test]
fn bad_names_and_unknown_sessions_are_explained() {
    let env = Env::new();
    for bad in ["", "two words", "s-0123456789abcdef0123456789abcdef"] {
        let err = env
            .sessions
            .start(StartSession {
                project: "p".into(),
                ..start_request(bad, Role::Workagent)
            })
            .unwrap_err();
        assert!(err.to_string().starts_with("invalid session name"), "{err}");
    }
    let err = env.sessions.show("nope").unwrap_err();
    assert_eq!(
        err.to_string(),
        "no session with the id or name `nope`: run `glovebox session list` to see the sessions there are"
    );
}
