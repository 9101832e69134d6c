//! Ending a session settles its pending approvals (threat 50), and the disk
//! watermark holds what an actor writes into a log (threat 49).

use super::*;
use crate::approvals::{Approval, ApprovalStatus, Approvals};
use crate::page::PageRequest;

/// A pending approval of call `call` in `session`, stored.
fn pending(store: &Arc<SledStore>, session: &SessionState, call: &str) -> Approval {
    let approval = Approval {
        id: Approvals::new_id(),
        session: session.header.id.clone(),
        session_name: session.header.name.clone(),
        call_id: call.to_string(),
        tool: "files.write".into(),
        tool_digest: "d".into(),
        input_hash: digest(b"{}"),
        input: "{}".into(),
        action: "write:file".into(),
        hook: "destructive".into(),
        pattern: "write:*".into(),
        reason: "writes a file".into(),
        requested_at_ms: 1,
        status: ApprovalStatus::Pending,
        principal: Some("agent".into()),
        job: None,
    };
    Approvals::new(store.clone()).put(&approval).unwrap();
    approval
}

/// Who heard of which denial.
#[derive(Debug, Default)]
struct Heard(std::sync::Mutex<Vec<String>>);

impl ApprovalObserver for Heard {
    fn settled(&self, approval: &Approval) {
        self.0.lock().unwrap().push(approval.id.clone());
    }
}

fn notes(env: &Env, id: &str) -> Vec<String> {
    env.sessions
        .events(id, 1, 1000)
        .unwrap()
        .into_iter()
        .filter_map(|e| match e.kind {
            EventKind::Note { text } => Some(text),
            _ => None,
        })
        .collect()
}

#[test]
fn threat_50_ending_a_session_denies_its_pending_approvals_by_the_host() {
    // Why: an ended session's approvals could never run, yet stayed pending.
    let env = Env::new();
    let heard = Arc::new(Heard::default());
    env.sessions.observe_approvals(heard.clone());
    let s = env.start("w", Role::Workagent);
    let other = env.start("other", Role::Workagent);
    let mine = pending(&env.store, &s, "c1");
    let theirs = pending(&env.store, &other, "c2");
    let approvals = Approvals::new(env.store.clone());

    actor::scoped("agent", || env.sessions.end(&s.header.id, EndOutcome::Exit)).unwrap();
    let denied = approvals.get(&mine.id).unwrap();
    match &denied.status {
        ApprovalStatus::Denied { by, reason, .. } => {
            assert_eq!(by.as_deref(), Some("host"));
            assert!(reason.contains("the session ended (exit)"), "{reason}");
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(*heard.0.lock().unwrap(), std::slice::from_ref(&mine.id));
    // Noted in the log before the end, worded as an operator's denial.
    let events = env.sessions.events(&s.header.id, 1, 1000).unwrap();
    let kinds: Vec<&str> = events.iter().map(|e| e.kind.name()).collect();
    assert_eq!(kinds[kinds.len() - 2..], ["note", "ended"]);
    assert!(
        notes(&env, &s.header.id)[0].contains(&format!("approval {} of call c1", mine.id)),
        "{:?}",
        notes(&env, &s.header.id)
    );
    assert!(notes(&env, &s.header.id)[0].contains("denied by host"));
    // Another session's approval waits on.
    assert_eq!(
        approvals.get(&theirs.id).unwrap().status,
        ApprovalStatus::Pending
    );
    let listed = approvals.page(false, &PageRequest::default()).unwrap();
    assert_eq!(listed.items.len(), 1);
    assert_eq!(listed.items[0].id, theirs.id);
    // Archiving a paused session settles its own too.
    env.sessions.resume(&other.header.id).unwrap();
    env.sessions.pause(&other.header.id, "later").unwrap();
    env.sessions.archive(&other.header.id).unwrap();
    assert!(matches!(
        approvals.get(&theirs.id).unwrap().status,
        ApprovalStatus::Denied { .. }
    ));
    assert_eq!(approvals.count_pending(100).unwrap(), 0);
}

#[test]
fn threat_50_a_refused_end_settles_nothing() {
    // Why: the approvals are denied only once the end is known to be written.
    let env = Env::new();
    let s = env.start("w", Role::Workagent);
    env.sessions.end(&s.header.id, EndOutcome::Exit).unwrap();
    let late = pending(&env.store, &s, "c1");
    // Ending an ended session is refused: its (orphaned) approval stays.
    assert!(env.sessions.end(&s.header.id, EndOutcome::Exit).is_err());
    let approvals = Approvals::new(env.store.clone());
    assert_eq!(
        approvals.get(&late.id).unwrap().status,
        ApprovalStatus::Pending
    );
    // The orphan pass settles it, with a note in the (completed) log.
    let settled = env.sessions.settle_orphaned_approvals().unwrap();
    assert_eq!(settled.len(), 1);
    assert!(matches!(
        approvals.get(&late.id).unwrap().status,
        ApprovalStatus::Denied { ref reason, .. } if reason.contains("already completed")
    ));
    assert!(notes(&env, &s.header.id)[0].contains("denied by host"));
    assert!(env.sessions.settle_orphaned_approvals().unwrap().is_empty());
}

/// A disk that is always below the watermark.
#[derive(Debug)]
struct Full;

impl DiskRoom for Full {
    fn check(&self) -> Result<(), NoRoom> {
        Err("low disk: the test's disk is full (`storage.min_free`)".into())
    }
}

#[test]
fn threat_49_below_the_watermark_an_actors_notes_are_refused_and_closing_goes_through() {
    // Why: annotations skipped the watermark, so an agent could fill the disk.
    let env = Env::new();
    let s = env.start("w", Role::Workagent);
    let approval = pending(&env.store, &s, "c1");
    let before = env.sessions.events(&s.header.id, 1, 1000).unwrap().len();
    let env = env.reopen(SessionsConfig {
        disk: Some(Arc::new(Full)),
        ..SessionsConfig::default()
    });
    let id = s.header.id.clone();
    let note = || EventKind::Note { text: "x".into() };
    let refused = actor::scoped("agent", || env.sessions.append(&id, note()));
    assert!(
        matches!(&refused, Err(SessionError::LowDisk(m)) if m.to_string().contains("`storage.min_free`")),
        "{refused:?}"
    );
    let usage = EventKind::UsageReported {
        tokens_in: 1,
        tokens_out: 1,
        cost_micros: 0,
        model: None,
        context_tokens: None,
        context_limit: None,
    };
    assert!(matches!(
        actor::scoped("agent", || env.sessions.append(&id, usage)),
        Err(SessionError::LowDisk(_))
    ));
    assert!(matches!(
        actor::scoped("agent", || env.sessions.tag(&id, &["t".into()], &[])),
        Err(SessionError::LowDisk(_))
    ));
    assert_eq!(
        env.sessions.events(&id, 1, 1000).unwrap().len(),
        before,
        "nothing was written"
    );
    // The host's own writes, and what closes a session, go through.
    env.sessions.append(&id, note()).unwrap();
    actor::scoped("agent", || env.sessions.resume(&id)).unwrap();
    actor::scoped("agent", || env.sessions.pause(&id, "stop")).unwrap();
    actor::scoped("agent", || env.sessions.end(&id, EndOutcome::Exit)).unwrap();
    assert!(matches!(
        Approvals::new(env.store.clone())
            .get(&approval.id)
            .unwrap()
            .status,
        ApprovalStatus::Denied { .. }
    ));
}
