use super::*;
use crate::session::EventKind;
use crate::session::{Sessions, SessionsConfig, StartSession};
use crate::storage::{Durability, SledStore};
use serde_json::json;
use std::sync::Mutex;

/// What an observer was told: the event's principal, the kind, the named targets.
type Told = (Option<String>, NotifyKind, Vec<String>);

#[derive(Debug, Default)]
struct Heard(Mutex<Vec<Told>>);

impl NotifyObserver for Heard {
    fn raised(&self, by: Option<&str>, kind: NotifyKind, n: &Notification) {
        let mut heard = self.0.lock().unwrap();
        heard.push((by.map(str::to_string), kind, n.to.clone()));
    }
}

fn target(name: &str, events: Vec<NotifyKind>) -> NotifyTarget {
    NotifyTarget {
        name: name.into(),
        url: "http://127.0.0.1:9/x".into(),
        events,
        flag_min_severity: Severity::Info,
        format: crate::manifest::NotifyFormat::Json,
        secret: None,
        timeout: std::time::Duration::from_secs(1),
        max_attempts: 1,
        retry_initial: std::time::Duration::from_secs(1),
        retry_max: std::time::Duration::from_secs(1),
    }
}

#[test]
fn a_schedule_alert_reaches_the_targets_it_names_and_the_observers() {
    let dir = tempfile::tempdir().unwrap();
    let storage: Arc<dyn Storage> =
        Arc::new(SledStore::open(dir.path(), Durability::Flush).unwrap());
    let outbox = Arc::new(Outbox::new(
        storage.clone(),
        vec![
            // Named by the schedule, though its `events` do not list alerts.
            target("ops", vec![NotifyKind::JobFailed]),
            target("all", NotifyKind::ALL.to_vec()),
            target("other", vec![NotifyKind::Flag]),
        ],
    ));
    let config = SessionsConfig {
        notify: Some(outbox.clone()),
        ..SessionsConfig::default()
    };
    let sessions = Sessions::with_config(storage, config);
    let heard = Arc::new(Heard::default());
    sessions.observe_notifications(heard.clone());
    let state = sessions
        .start(StartSession {
            role: crate::manifest::Role::Workagent,
            project: "billing".into(),
            name: Some("billing-watch".into()),
            tags: vec![],
            expected_duration: None,
            budget: Default::default(),
            completion: Default::default(),
        })
        .unwrap();
    let alert = EventKind::ScheduleAlert {
        source: "schedule:watch".into(),
        reason: "the alert `count > 0` holds: count = 3".into(),
        notify: vec!["ops".into()],
        call_id: Some("c-1".into()),
    };
    crate::session::actor::scoped("schedule:watch", || {
        sessions.append(&state.header.id, alert).unwrap()
    });
    assert_eq!(outbox.pending("ops").unwrap().len(), 1);
    assert_eq!(outbox.pending("all").unwrap().len(), 1);
    assert!(outbox.pending("other").unwrap().is_empty());
    let entry = &outbox.pending("ops").unwrap()[0];
    assert_eq!(entry.notification.event, "schedule_alert");
    assert!(
        entry.notification.summary.contains("count = 3"),
        "{entry:?}"
    );
    let heard = heard.0.lock().unwrap();
    assert!(
        heard.contains(&(
            Some("schedule:watch".into()),
            NotifyKind::ScheduleAlert,
            vec!["ops".into()]
        )),
        "{heard:?}"
    );
}

/// Two hosts' outboxes on one store: of two that find an entry due,
/// one claims it; a claim that lapsed (its host died mid-attempt) is
/// claimed again; an entry delivered is claimed by nobody.
#[test]
fn an_entry_is_claimed_by_one_outbox_at_a_time() {
    let dir = tempfile::tempdir().unwrap();
    let storage: Arc<dyn Storage> =
        Arc::new(SledStore::open(dir.path(), Durability::Flush).unwrap());
    let targets = vec![target("ops", NotifyKind::ALL.to_vec())];
    let (a, b) = (
        Outbox::new(storage.clone(), targets.clone()),
        Outbox::new(storage.clone(), targets.clone()),
    );
    let notification = Notification {
        event: "flag".into(),
        severity: None,
        session: "s-1".into(),
        session_name: None,
        project: "p".into(),
        role: "workagent".into(),
        seq: 7,
        at_ms: 1_000,
        summary: "stuck".into(),
        details: json!({}),
        to: vec![],
    };
    assert_eq!(
        a.enqueue(NotifyKind::Flag, &notification, 1_000).unwrap(),
        1
    );
    let entry = a.pending("ops").unwrap().remove(0);

    let claimed = a
        .claim(&entry, 2_000, 10_000)
        .unwrap()
        .expect("a claims it");
    assert_eq!(claimed.claimed_until_ms, Some(12_000));
    assert!(b.claim(&entry, 2_001, 10_000).unwrap().is_none());
    // The holder may claim again (a retry within its claim).
    assert!(a.claim(&entry, 3_000, 10_000).unwrap().is_some());
    // A dies: once its claim lapsed, B claims the entry and sends it.
    let claimed = b.claim(&entry, 13_001, 10_000).unwrap().expect("lapsed");
    assert!(a.claim(&entry, 13_002, 10_000).unwrap().is_none());
    b.delivered(&claimed).unwrap();
    assert!(a.claim(&entry, 30_000, 10_000).unwrap().is_none());
    assert!(b.claim(&entry, 30_000, 10_000).unwrap().is_none());
    assert_eq!(a.status().unwrap()[0].delivered, 1);

    // Many claimants at once: exactly one wins.
    assert_eq!(
        a.enqueue(NotifyKind::Flag, &notification, 40_000).unwrap(),
        1
    );
    let entry = a.pending("ops").unwrap().remove(0);
    let outboxes: Vec<Arc<Outbox>> = (0..4)
        .map(|_| Arc::new(Outbox::new(storage.clone(), targets.clone())))
        .collect();
    let barrier = Arc::new(std::sync::Barrier::new(outboxes.len()));
    let won: usize = outboxes
        .iter()
        .map(|o| {
            let (o, barrier, entry) = (o.clone(), barrier.clone(), entry.clone());
            std::thread::spawn(move || {
                barrier.wait();
                o.claim(&entry, 41_000, 10_000).unwrap().is_some()
            })
        })
        .collect::<Vec<_>>()
        .into_iter()
        .map(|t| usize::from(t.join().unwrap()))
        .sum();
    assert_eq!(won, 1);
}

#[test]
fn the_approval_id_is_read_from_the_error() {
    let text = "call to `fs.write` awaits approval `a-123` (gate: sure?): `glovebox approve a-123` runs it";
    assert_eq!(approval_id(text).as_deref(), Some("a-123"));
    assert_eq!(approval_id("timeout"), None);
}

// Threat 57: a receiver that is down while events keep coming must not grow
// its outbox without end: past `quotas.outbox_per_target` the oldest entries
// go, counted; entries a delivery holds a claim on are kept.
#[test]
fn threat_57_a_full_outbox_drops_its_oldest_entries_and_counts_them() {
    let dir = tempfile::tempdir().unwrap();
    let storage: Arc<dyn Storage> =
        Arc::new(SledStore::open(dir.path(), Durability::Flush).unwrap());
    let quotas = QuotasConfig {
        outbox_per_target: 5,
        ..QuotasConfig::default()
    };
    let targets = vec![
        target("ops", vec![NotifyKind::JobFailed]),
        target("quiet", vec![NotifyKind::Flag]),
    ];
    let outbox = Outbox::new(storage.clone(), targets.clone())
        .with_cap(quotas.limit("outbox_per_target"))
        .with_clock(Arc::new(|| 42));
    let n = |seq: u64| Notification {
        event: "job_failed".into(),
        severity: None,
        session: "s-1".into(),
        session_name: None,
        project: "p".into(),
        role: "workagent".into(),
        seq,
        at_ms: seq,
        summary: format!("job {seq} failed"),
        details: json!({}),
        to: vec![],
    };
    outbox.enqueue(NotifyKind::JobFailed, &n(1), 1).unwrap();
    // The oldest is being delivered: it stays while its claim stands.
    let first = outbox.pending("ops").unwrap().remove(0);
    outbox
        .claim(&first, 1, 1_000_000_000_000_000)
        .unwrap()
        .unwrap();
    for seq in 2..=12 {
        outbox.enqueue(NotifyKind::JobFailed, &n(seq), seq).unwrap();
    }
    let seqs: Vec<u64> = outbox
        .pending("ops")
        .unwrap()
        .iter()
        .map(|e| e.notification.seq)
        .collect();
    assert_eq!(seqs, [1, 9, 10, 11, 12]);
    let dropped = outbox.dropped().unwrap();
    assert_eq!(dropped.keys().collect::<Vec<_>>(), ["ops"]);
    assert_eq!(dropped["ops"].dropped, 7);
    assert_eq!(dropped["ops"].last_at_ms, 42);
    // The count is the store's: another process on it (a restart, the
    // CLI) sees it.
    let again = Outbox::new(storage, targets).with_cap(quotas.limit("outbox_per_target"));
    let status = again.status().unwrap();
    assert_eq!((status[0].pending, status[0].dropped), (5, 7));
    assert_eq!(status[0].last_dropped_at_ms, Some(42));
    assert_eq!((status[1].pending, status[1].dropped), (0, 0));
}
