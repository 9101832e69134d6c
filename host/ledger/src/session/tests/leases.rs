//! Session leases (`lease.rs`): two hosts on one store, each a `Sessions`
//! with its own clock. A lease is taken by the first append, refused to
//! another host while it lasts, renewed by its holder, taken over once it
//! expired (the calls the dead holder left are marked interrupted), and
//! released when the session ends, when it idles, and at a clean shutdown.
//! Without a lease config nothing of this runs.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use super::*;
use crate::manifest::Principal;
use crate::session::lease::LEASES_BUCKET;

const TTL: Duration = Duration::from_secs(10);
const T0: u64 = 1_000_000_000;

/// A clock the test moves.
#[derive(Clone)]
struct Clock(Arc<AtomicU64>);

impl Clock {
    fn new() -> Clock {
        Clock(Arc::new(AtomicU64::new(T0)))
    }
    fn advance(&self, ms: u64) {
        self.0.fetch_add(ms, Ordering::SeqCst);
    }
    fn now(&self) -> u64 {
        self.0.load(Ordering::SeqCst)
    }
}

/// A host named `node` on `store`, with `clock`.
fn host(store: &Arc<SledStore>, node: &str, addr: Option<&str>, clock: &Clock) -> Sessions {
    let clock = clock.clone();
    Sessions::with_config(
        store.clone(),
        SessionsConfig {
            lease: Some(LeaseConfig {
                node: node.to_string(),
                addr: addr.map(str::to_string),
                ttl: TTL,
            }),
            ..SessionsConfig::default()
        },
    )
    .with_clock(move || clock.now())
}

fn request(sessions: &Sessions, session: &str, call_id: &str) -> Result<Event, SessionError> {
    sessions.append(
        session,
        EventKind::CallRequested {
            call_id: call_id.to_string(),
            tool: "echo.echo".to_string(),
            input_digest: digest(b"{}"),
            input: inline_if_small("{}"),
            job_id: None,
            trace_id: None,
            parent_call: None,
        },
    )
}

fn begin(sessions: &Sessions, session: &str, call_id: &str) {
    sessions
        .append(
            session,
            EventKind::CallStarted {
                call_id: call_id.to_string(),
                tool: "echo.echo".to_string(),
                idempotency_key: format!("key-{call_id}"),
                idempotent: false,
                tool_digest: digest(b"wasm"),
                cost_micros: 0,
            },
        )
        .expect("call_started");
}

fn stored_lease(store: &SledStore, id: &str) -> Option<Lease> {
    store
        .get(LEASES_BUCKET, id)
        .unwrap()
        .map(|bytes| serde_json::from_slice(&bytes).unwrap())
}

#[test]
fn a_lease_is_refused_while_held_renewed_by_its_holder_and_taken_over_once_expired() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(dir.path());
    let clock = Clock::new();
    let a = host(&store, "a", None, &clock);
    let b = host(&store, "b", Some("http://b.example:8080/mcp"), &clock);

    // A starts the session and runs a call in it: A holds the lease.
    let w = start_in(&a, "w", Role::Workagent);
    request(&a, &w.header.id, "c-1").unwrap();
    begin(&a, &w.header.id, "c-1");
    let lease = stored_lease(&store, &w.header.id).expect("a lease");
    assert_eq!(lease.node, "a");
    assert_eq!(lease.addr, None);
    assert_eq!(lease.expires_at_ms, T0 + 10_000);

    // B may read the session, not append to it: the error names A and
    // how long the lease has left.
    assert_eq!(b.show("w").unwrap().in_flight.len(), 1);
    clock.advance(4_000);
    let err = request(&b, "w", "c-b").unwrap_err();
    assert!(
        matches!(&err, SessionError::Leased { node, .. } if node == "a"),
        "{err:?}"
    );
    assert_eq!(
        err.to_string(),
        format!(
            "session `w` ({}) is driven by node `a` until its lease expires: send the call there, or wait 6 s (the lease expires then unless that node renews it)",
            w.header.id
        )
    );
    // B's recovery at start leaves A's running call alone.
    let recovery = b.recover().unwrap();
    assert!(
        recovery.interrupted.is_empty(),
        "{:?}",
        recovery.interrupted
    );
    assert_eq!(a.show("w").unwrap().in_flight.len(), 1);

    // A renews: the lease lasts a TTL from now, and B is still refused
    // after the first expiry would have passed.
    assert_eq!(a.renew_leases(), 1);
    assert_eq!(
        stored_lease(&store, &w.header.id).unwrap().expires_at_ms,
        T0 + 14_000
    );
    clock.advance(8_000);
    assert!(matches!(
        request(&b, "w", "c-b"),
        Err(SessionError::Leased { wait_ms: 2_000, .. })
    ));

    // A dies (it renews no more): once the lease expired, B takes it over,
    // and the call A left in flight is marked interrupted, naming A.
    clock.advance(2_001);
    request(&b, "w", "c-b").unwrap();
    let lease = stored_lease(&store, &w.header.id).unwrap();
    assert_eq!(
        (lease.node.as_str(), lease.addr.as_deref()),
        ("b", Some("http://b.example:8080/mcp"))
    );
    let events = b.events(&w.header.id, 1, usize::MAX).unwrap();
    let interrupted: Vec<&str> = events
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::CallInterrupted { call_id, reason } => {
                assert!(
                    reason.contains("node `a` stopped driving the session (its lease expired) while the call was running"),
                    "{reason}"
                );
                Some(call_id.as_str())
            }
            _ => None,
        })
        .collect();
    assert_eq!(interrupted, ["c-1"]);
    let state = b.show("w").unwrap();
    assert_eq!(state.in_flight.keys().collect::<Vec<_>>(), ["c-b"]);
    assert!(b.verify("w").unwrap().ok);

    // A wakes up: its renewal finds the lease taken and drops it, and its
    // next append is refused, naming B and where B serves.
    assert_eq!(a.renew_leases(), 0);
    let err = request(&a, "w", "c-late").unwrap_err().to_string();
    assert!(
        err.contains("is driven by node `b` (http://b.example:8080/mcp) until its lease expires"),
        "{err}"
    );

    // B ends the session: the lease is released, and A may append again
    // (what the lifecycle allows of an ended session).
    b.append(
        "w",
        EventKind::CallInterrupted {
            call_id: "c-b".to_string(),
            reason: "test".to_string(),
        },
    )
    .unwrap();
    b.end("w", EndOutcome::Completed).unwrap();
    assert_eq!(stored_lease(&store, &w.header.id), None);
    assert!(!b.holds_lease(&w.header.id));
    a.archive(&w.header.id).unwrap();
    assert_eq!(
        stored_lease(&store, &w.header.id),
        None,
        "an archived session is not held"
    );
}

#[test]
fn leases_are_released_when_idle_and_at_a_clean_shutdown() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(dir.path());
    let clock = Clock::new();
    let a = host(&store, "a", None, &clock);
    let b = host(&store, "b", None, &clock);
    let idle = start_in(&a, "idle", Role::Workagent);
    let busy = start_in(&a, "busy", Role::Workagent);
    request(&a, &busy.header.id, "c-1").unwrap();
    begin(&a, &busy.header.id, "c-1");

    // A TTL without an append: the idle session's lease goes, the one with
    // a call in flight is kept.
    clock.advance(5_000);
    assert_eq!(a.renew_leases(), 2);
    clock.advance(5_000);
    assert_eq!(a.renew_leases(), 1);
    assert_eq!(stored_lease(&store, &idle.header.id), None);
    assert_eq!(stored_lease(&store, &busy.header.id).unwrap().node, "a");
    // B drives the idle session now, at once.
    request(&b, "idle", "c-b").unwrap();
    assert!(b.holds_lease(&idle.header.id));

    // A stops cleanly: its leases are released, and B takes the busy
    // session without waiting (nothing expired, so nothing is interrupted).
    drop(a);
    assert_eq!(stored_lease(&store, &busy.header.id), None);
    request(&b, "busy", "c-b2").unwrap();
    assert_eq!(b.show("busy").unwrap().in_flight.len(), 2);
}

/// An agent whose host died resumes its session on another host: the
/// resume is refused (naming the holder) while the dead host's lease lasts,
/// then takes the lease over and returns the call the dead host left
/// running as interrupted, with its handoff.
#[test]
fn resuming_on_another_host_takes_the_lease_and_returns_the_calls_its_holder_left() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(dir.path());
    let clock = Clock::new();
    let a = host(&store, "a", Some("http://a.example:8080/mcp"), &clock);
    let b = host(&store, "b", None, &clock);
    let w = start_in(&a, "w", Role::Workagent);
    a.handoff(
        "w",
        Handoff::new(HandoffKind::Continuation, Role::Workagent, "ship it"),
    )
    .unwrap();
    request(&a, &w.header.id, "c-1").unwrap();
    begin(&a, &w.header.id, "c-1");

    // An agent's resume (over MCP: its scope's `resume`) and the CLI's alike.
    let err = b.scope(&Principal::local()).resume("w").unwrap_err();
    assert!(
        matches!(&err, SessionError::Leased { node, .. } if node == "a"),
        "{err:?}"
    );
    let err = b.resume("w").unwrap_err();
    assert!(
        matches!(&err, SessionError::Leased { node, addr: Some(addr), .. }
            if node == "a" && addr == "http://a.example:8080/mcp"),
        "{err:?}"
    );
    assert!(b.show("w").unwrap().interrupted.is_empty());

    clock.advance(TTL.as_millis() as u64 + 1);
    let resumed = b.scope(&Principal::local()).resume("w").unwrap();
    assert_eq!(resumed.interrupted_calls.len(), 1, "{resumed:?}");
    let call = &resumed.interrupted_calls[0];
    assert_eq!(call.call_id, "c-1");
    assert!(call.started, "{call:?}");
    assert!(
        call.reason.contains("node `a` stopped driving the session"),
        "{call:?}"
    );
    assert_eq!(resumed.latest_handoff.unwrap().handoff.objective, "ship it");
    assert_eq!(stored_lease(&store, &w.header.id).unwrap().node, "b");
    assert!(b.verify("w").unwrap().ok);
}

/// Two hosts start sessions at the same moment and race for one lease: one
/// gets it, the other is refused (the compare-and-set underneath).
#[test]
fn two_hosts_racing_for_one_lease_get_it_once() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(dir.path());
    let clock = Clock::new();
    let a = host(&store, "a", None, &clock);
    let w = start_in(&a, "w", Role::Workagent);
    drop(a);
    for round in 0..20 {
        let hosts: Vec<Arc<Sessions>> = ["x", "y", "z"]
            .iter()
            .map(|n| Arc::new(host(&store, n, None, &clock)))
            .collect();
        let barrier = Arc::new(std::sync::Barrier::new(hosts.len()));
        let results: Vec<bool> = hosts
            .iter()
            .map(|h| {
                let (h, barrier, id) = (h.clone(), barrier.clone(), w.header.id.clone());
                std::thread::spawn(move || {
                    barrier.wait();
                    match h.take_lease(&id) {
                        Ok(_) => true,
                        Err(SessionError::Leased { .. }) => false,
                        Err(e) => panic!("{e}"),
                    }
                })
            })
            .collect::<Vec<_>>()
            .into_iter()
            .map(|t| t.join().unwrap())
            .collect();
        assert_eq!(
            results.iter().filter(|won| **won).count(),
            1,
            "round {round}: {results:?}"
        );
        // Dropped: the winner releases it for the next round.
        drop(hosts);
        assert_eq!(stored_lease(&store, &w.header.id), None);
    }
}

/// Without a lease config (the embedded backends) no lease is read or
/// written: the single-host path is what it was.
#[test]
fn without_leases_nothing_is_written_to_the_leases_bucket() {
    let env = Env::new();
    let s = env.start("w", Role::Workagent);
    env.call(&s.header.id, "c-1", "ok");
    env.request(&s.header.id, "c-2");
    assert!(env.sessions.recover().unwrap().interrupted.len() == 1);
    assert!(
        !env.store
            .buckets()
            .unwrap()
            .contains(&LEASES_BUCKET.to_string()),
        "{:?}",
        env.store.buckets().unwrap()
    );
    assert_eq!(env.sessions.lease_of("w").unwrap(), None);
    assert_eq!(env.sessions.lease_renewal_period(), None);
}
