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
            first.header.id
        )
    );
    let other = env.start("test", Role::Workagent);
    let err = env.sessions.rename(&other.header.id, "build").unwrap_err();
    assert!(matches!(err, SessionError::NameTaken { .. }), "{err}");
    assert_eq!(
        env.sessions.show("test").unwrap().header.id,
        other.header.id
    );
}

#[test]
fn a_name_is_freed_when_its_session_completes() {
    let env = Env::new();
    let first = env.start("deploy", Role::Workagent);
    env.sessions.end("deploy", EndOutcome::Completed).unwrap();
    // The ended session is still found by its name while nobody else has it.
    assert_eq!(
        env.sessions.show("deploy").unwrap().header.id,
        first.header.id
    );
    let second = env.start("deploy", Role::Workagent);
    assert_ne!(first.header.id, second.header.id);
    assert_eq!(
        env.sessions.show("deploy").unwrap().header.id,
        second.header.id
    );
    // Paused, then archived: freed as well.
    env.sessions.resume("deploy").unwrap();
    env.sessions.pause("deploy", "later").unwrap();
    env.sessions.archive("deploy").unwrap();
    let third = env.start("deploy", Role::Workagent);
    assert_eq!(
        env.sessions.show("deploy").unwrap().header.id,
        third.header.id
    );
}

#[test]
fn renaming_moves_the_name() {
    let env = Env::new();
    let s = env.start("old", Role::Orchestrator);
    let renamed = env.sessions.rename("old", "new").unwrap();
    assert_eq!(renamed.header.name.as_deref(), Some("new"));
    assert_eq!(env.sessions.show("new").unwrap().header.id, s.header.id);
    // The old name is free for another live session.
    let other = env.start("old", Role::Orchestrator);
    assert_eq!(env.sessions.show("old").unwrap().header.id, other.header.id);
    // Survives a restart: the index agrees with the log.
    let env = env.reopen(SessionsConfig::default());
    assert_eq!(env.sessions.show("new").unwrap().header.id, s.header.id);
    assert_eq!(env.sessions.show("old").unwrap().header.id, other.header.id);
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
