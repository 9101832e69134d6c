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
    let first = s.start_as(&a, start("a-1", &[]), &none).unwrap();
    s.start_as(&a, start("a-2", &[]), &none).unwrap();
    let message = assert_quota(
        s.start_as(&a, start("a-3", &[]), &none),
        "sessions_per_principal",
    );
    assert!(
        message.contains("`quotas.sessions_per_principal` = 2") && message.contains("`a`"),
        "{message}"
    );
    // Nothing was written: the name is still free, no session has it.
    assert!(s.show("a-3").is_err());
    // Another principal has its own quota; an operator has none.
    s.start_as(&b, start("b-1", &[]), &none).unwrap();
    let operator = Principal::operator("cli:0".to_string());
    for i in 0..3 {
        s.start_as(&operator, start(&format!("op-{i}"), &[]), &none)
            .unwrap();
    }
    // A session that ends frees its place.
    s.end(&first.header.id, EndOutcome::Completed).unwrap();
    s.start_as(&a, start("a-3", &[]), &none).unwrap();
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
