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

fn start_by(s: &Sessions, who: &Principal, name: &str) -> Result<SessionState, SessionError> {
    s.scope(who).start(
        start_request(name, Role::Workagent),
        &std::collections::HashSet::new(),
    )
}

/// Why: one global name space told any agent, through `NameTaken`, the id
/// of another principal's session, and let it take a name first (a
/// schedule's, another team's) so that whoever addressed it by name met the
/// squatter or could not start at all.
#[test]
fn threat_53_names_are_scoped_by_owner_another_principals_name_is_not_found() {
    let env = Env::new();
    let s = &env.sessions;
    let (a, b) = (workagent("a"), workagent("b"));
    let squatter = start_by(s, &b, "report").unwrap();
    // The schedule's session, named after it: not taken by b's.
    let schedule = workagent("schedule:nightly");
    let mine = start_by(s, &schedule, "report").unwrap();
    assert_ne!(mine.header.id, squatter.header.id);
    assert_eq!(
        s.scope(&schedule).show("report").unwrap().header.id,
        mine.header.id
    );
    assert_eq!(
        s.scope(&b).show("report").unwrap().header.id,
        squatter.header.id
    );
    // Another principal's name is not found, as a name nobody has; starting
    // one of one's own tells nothing of theirs.
    assert_not_found(s.scope(&a).show("report"), "report");
    assert_not_found(s.scope(&a).resume("report"), "report");
    let own = start_by(s, &a, "report").unwrap();
    assert_eq!(s.scope(&a).show("report").unwrap().header.id, own.header.id);
    // Within one owner a live name is still one session's.
    let e = start_by(s, &a, "report").unwrap_err();
    assert!(matches!(e, SessionError::NameTaken { .. }), "{e}");
    assert!(e.to_string().contains(&own.header.id), "{e}");
    // An ended session of another keeps its name out of reach too.
    s.scope(&b).end("report", EndOutcome::Exit).unwrap();
    s.scope(&a).end("report", EndOutcome::Exit).unwrap();
    assert_eq!(s.scope(&a).show("report").unwrap().header.id, own.header.id);
    assert_eq!(
        s.scope(&b).show("report").unwrap().header.id,
        squatter.header.id
    );
}

/// Why: operators see every owner's sessions, so a bare name is theirs to
/// use only when it is unambiguous; `OWNER/NAME` always says which.
#[test]
fn threat_53_an_operator_names_a_session_as_owner_slash_name_or_by_a_unique_name() {
    let env = Env::new();
    let s = &env.sessions;
    let (a, b) = (workagent("a"), workagent("b"));
    let op = Principal::operator("cli:0");
    let theirs = start_by(s, &a, "shared").unwrap();
    let other = start_by(s, &b, "shared").unwrap();
    let only = start_by(s, &b, "only-b").unwrap();
    let local = env.start("cli-made", Role::Workagent);
    assert_eq!(s.show("a/shared").unwrap().header.id, theirs.header.id);
    assert_eq!(
        s.scope(&op).show("b/shared").unwrap().header.id,
        other.header.id
    );
    assert_eq!(s.show("only-b").unwrap().header.id, only.header.id);
    assert_eq!(s.show("cli-made").unwrap().header.id, local.header.id);
    assert_eq!(s.show("local/cli-made").unwrap().header.id, local.header.id);
    let e = s.show("shared").unwrap_err();
    assert_eq!(
        e.to_string(),
        "several principals have sessions named `shared` (`a/shared`, `b/shared`, ...): name the one you mean as `OWNER/NAME`"
    );
    // An agent's `OWNER/NAME` is a name of its own like any other.
    assert_not_found(s.scope(&a).show("b/shared"), "b/shared");
}

/// Why: data dirs written before names had owners hold one global `names`
/// bucket and no indexes; they must keep working, their names now each in
/// its owner's space.
#[test]
fn threat_53_a_data_dir_with_the_global_names_bucket_keeps_its_names_by_owner() {
    let env = super::fixtures::old_data_dir();
    let s = &env.sessions;
    let (alice, bob) = (workagent("alice"), workagent("bob"));
    let local = Principal::local();
    let build = s.scope(&local).show("build").unwrap();
    assert!(build.header.status.is_live());
    assert_eq!(build.owner_name(), "local");
    let bobs = s.scope(&bob).show("deploy").unwrap();
    assert!(bobs.header.status.is_live());
    let alices = s.scope(&alice).show("deploy").unwrap();
    assert_eq!(alices.header.status, SessionStatus::Completed);
    assert_not_found(s.scope(&alice).show("build"), "build");
    assert_eq!(s.show("bob/deploy").unwrap().header.id, bobs.header.id);
    assert_eq!(s.show("lead").unwrap().owner_name(), "alice");
    // The live names were carried over: taken within their owner only.
    assert!(matches!(
        start_by(s, &bob, "deploy"),
        Err(SessionError::NameTaken { .. })
    ));
    let again = start_by(s, &alice, "deploy").unwrap();
    assert_eq!(
        s.scope(&alice).show("deploy").unwrap().header.id,
        again.header.id
    );
    // Listed from the indexes made for it, newest first.
    let listed = s
        .list(&SessionFilter::default(), &Default::default())
        .unwrap()
        .items;
    assert_eq!(listed.len(), 8);
    assert_eq!(listed[0].header.id, again.header.id);
    let theirs = s
        .scope(&alice)
        .list(&SessionFilter::default(), &Default::default())
        .unwrap()
        .items;
    assert_eq!(theirs.len(), 6, "lead, its three children, two deploys");
    // Every log still verifies, and recovery finds nothing owed.
    for info in &listed {
        assert!(s.verify(&info.header.id).unwrap().ok);
    }
    assert!(s.recover().unwrap().interrupted.is_empty());
}
