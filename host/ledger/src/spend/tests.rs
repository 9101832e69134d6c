//! The tallies on one store, seen by several processes (what the hosts of a
//! NATS store are to each other): the last call under a ceiling goes to
//! exactly one of them, warnings and refusals are counted once per
//! ceiling and period, periods roll on their own, and the daily events
//! quota holds across batches.

use std::sync::Arc;

use super::*;
use crate::manifest::{CeilingLimits, Role};
use crate::storage::{Durability, SledStore};

const DAY_MS: u64 = 86_400_000;
/// 2025-06-14 (a Saturday) 13:30 UTC.
const SAT: u64 = 1_749_907_800_000;

fn store() -> (tempfile::TempDir, Arc<dyn Storage>) {
    let dir = tempfile::tempdir().unwrap();
    let storage: Arc<dyn Storage> =
        Arc::new(SledStore::open(dir.path(), Durability::Flush).unwrap());
    (dir, storage)
}

/// Tallies on `storage` with alice's daily calls at `calls` and the
/// project `demo`'s weekly cost at 1.0.
fn tallies(storage: &Arc<dyn Storage>, calls: u64) -> Tallies {
    let mut config = SpendConfig::default();
    let alice = PeriodCeilings {
        day: CeilingLimits {
            calls: Some(calls),
            ..CeilingLimits::default()
        },
        ..PeriodCeilings::default()
    };
    config.ceilings.principals.insert("alice".into(), alice);
    let mut demo = PeriodCeilings::default();
    demo.week.cost_micros = Some(1_000_000);
    config.ceilings.projects.insert("demo".into(), demo);
    let t = Tallies::new(storage.clone());
    t.configure(config);
    t
}

fn scopes(principal: &str) -> [Scope; 3] {
    [
        Scope::principal(principal),
        Scope::project("demo"),
        Scope::role(Role::Workagent),
    ]
}

fn runs(a: Admission) -> Vec<Crossed> {
    match a {
        Admission::Run(crossed) => crossed,
        Admission::Refused(b) => panic!("refused: {}", b.reason()),
    }
}

fn refused(a: Admission) -> Breach {
    match a {
        Admission::Refused(b) => b,
        Admission::Run(_) => panic!("admitted"),
    }
}

/// Why: a ceiling each process checked alone would let racing processes
/// spend past it together.
#[test]
fn threat_50_the_last_call_under_a_ceiling_goes_to_one_process_and_the_refusal_names_it() {
    let (_dir, storage) = store();
    let a = tallies(&storage, 5);
    for _ in 0..4 {
        runs(a.admit_call(&scopes("alice"), 100, SAT).unwrap());
    }
    // Eight processes with their own (empty) view race for the last call:
    // one gets it, and of the others one is the period's first refusal.
    let outcomes: Vec<Admission> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..8)
            .map(|_| {
                let t = tallies(&storage, 5);
                s.spawn(move || t.admit_call(&scopes("alice"), 100, SAT).unwrap())
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    let ran = outcomes
        .iter()
        .filter(|o| matches!(o, Admission::Run(_)))
        .count();
    let first = outcomes
        .iter()
        .filter(|o| matches!(o, Admission::Refused(b) if b.first))
        .count();
    assert_eq!((ran, first), (1, 1));
    // The first process, whose view is stale, reads again and is refused.
    let breach = refused(a.admit_call(&scopes("alice"), 100, SAT).unwrap());
    assert_eq!(breach.key(), "budgets.principal.alice.day.calls");
    assert_eq!((breach.used, breach.limit, breach.first), (5, 5, false));
    assert_eq!(breach.window.id, "2025-06-14");
    let reason = breach.reason();
    assert!(
        reason.contains("`budgets.principal.alice.day.calls`"),
        "{reason}"
    );
    assert!(reason.contains("5 calls"), "{reason}");
    assert!(reason.contains("2025-06-15 00:00 UTC"), "{reason}");
    let raise = &breach.alternatives("s-1")[0];
    assert!(
        raise.contains("glovebox budget raise principal alice --period day --calls"),
        "{raise}"
    );
    // Nothing was charged to the project for the refused calls.
    let demo = a.read(&Scope::project("demo"), SAT).unwrap();
    assert_eq!((demo.week.calls, demo.week.cost_micros), (5, 500));
    // Another principal is not held by alice's ceiling.
    runs(a.admit_call(&scopes("bob"), 100, SAT).unwrap());
    // No new session of alice's starts; bob's may.
    assert!(a.at_ceiling(&scopes("alice"), SAT).unwrap().is_some());
    assert!(a.at_ceiling(&scopes("bob"), SAT).unwrap().is_none());
    // The next day alice's calls run again; the project's week goes on.
    runs(a.admit_call(&scopes("alice"), 100, SAT + DAY_MS).unwrap());
    let demo = a.read(&Scope::project("demo"), SAT + DAY_MS).unwrap();
    assert_eq!(demo.week.cost_micros, 700);
}

/// Why: a refused call charged to the other scopes would eat their ceilings
/// with work that never ran.
#[test]
fn threat_50_a_call_refused_by_one_scope_is_charged_to_none_and_warnings_go_out_once() {
    let (_dir, storage) = store();
    let a = tallies(&storage, 100);
    // 0.8 of the project's weekly cost of 1.0: one warning, from one call.
    let crossed = runs(a.admit_call(&scopes("alice"), 800_000, SAT).unwrap());
    assert_eq!(crossed.len(), 1);
    assert_eq!(
        (
            crossed[0].scope.clone(),
            crossed[0].period,
            crossed[0].measure
        ),
        (Scope::project("demo"), Period::Week, Measure::Cost)
    );
    assert!(runs(a.admit_call(&scopes("alice"), 100_000, SAT).unwrap()).is_empty());
    // Past the project's ceiling: refused, and alice's calls stay as they were.
    let breach = refused(a.admit_call(&scopes("alice"), 200_000, SAT).unwrap());
    assert_eq!(breach.key(), "budgets.project.demo.week.cost");
    assert_eq!((breach.used, breach.projected), (900_000, 1_100_000));
    let reason = breach.reason();
    assert!(
        reason.contains("estimated 0.2") && reason.contains("to 1.1"),
        "{reason}"
    );
    assert_eq!(
        a.read(&Scope::principal("alice"), SAT).unwrap().day.calls,
        2
    );
    // A raise for the week lets it through and warns again at the new ceiling.
    let to = CeilingLimits {
        cost_micros: Some(2_000_000),
        ..CeilingLimits::default()
    };
    a.raise(&Scope::project("demo"), Period::Week, &to, SAT)
        .unwrap();
    assert!(a.at_ceiling(&scopes("alice"), SAT).unwrap().is_none());
    let crossed = runs(a.admit_call(&scopes("alice"), 700_000, SAT).unwrap());
    assert_eq!(crossed.len(), 1);
    assert_eq!(crossed[0].limit, 2_000_000);
    // The next week the raise is gone, and so is the spend.
    let monday = SAT + 2 * DAY_MS;
    let week = a.read(&Scope::project("demo"), monday).unwrap().week;
    assert_eq!((week.cost_micros, week.raised.cost_micros), (0, None));
}

/// Why: model spend already made must count, or reporting it late would
/// dodge the ceiling.
#[test]
fn threat_50_usage_reports_are_charged_whatever_the_ceiling_and_mark_it_reached() {
    let (_dir, storage) = store();
    let a = tallies(&storage, 100);
    let charged = a
        .charge_usage(&scopes("alice"), 1_500_000, 10, SAT)
        .unwrap();
    let reached = charged.reached.expect("past the project's weekly cost");
    assert!(reached.first);
    assert_eq!(reached.key(), "budgets.project.demo.week.cost");
    assert_eq!(
        a.read(&Scope::project("demo"), SAT)
            .unwrap()
            .week
            .cost_micros,
        1_500_000
    );
    let again = a.charge_usage(&scopes("alice"), 1, 0, SAT).unwrap();
    assert!(!again.reached.unwrap().first);
    assert!(
        a.at_ceiling(&scopes("bob"), SAT).unwrap().is_some(),
        "the project holds for bob too"
    );
}

/// Why: a daily quota counted per process or per batch would let an agent
/// write past it by spreading its events.
#[test]
fn threat_49_the_daily_events_quota_holds_across_batches_and_processes() {
    let (_dir, storage) = store();
    let limit = 3 * BATCH_EVENTS;
    let with_quota = || {
        let t = tallies(&storage, 100);
        let mut config = (*t.config()).clone();
        config.quotas.principal_events_per_day = limit;
        config.operators.insert("root".into());
        t.configure(config);
        t
    };
    let (a, b) = (with_quota(), with_quota());
    for i in 0..limit {
        let t = if i % 2 == 0 { &a } else { &b };
        t.count_events("alice", 1, 10, true, SAT).unwrap().unwrap();
    }
    // Each process reads the other's batches when its own write finds the
    // tally changed: past the quota, each admits at most what it has not
    // seen of the other's, which is less than a batch.
    a.flush(SAT);
    b.flush(SAT);
    for t in [&a, &b] {
        let mut past = 0;
        while t.count_events("alice", 1, 10, true, SAT).unwrap().is_ok() {
            past += 1;
            assert!(past <= BATCH_EVENTS, "more than a batch past the quota");
        }
    }
    let over = a
        .count_events("alice", 1, 10, true, SAT)
        .unwrap()
        .unwrap_err();
    assert_eq!(over.limit.key, "principal_events_per_day");
    assert!(
        over.what
            .contains("events to its sessions' logs on 2025-06-14 (UTC)"),
        "{}",
        over.what
    );
    // What finishes admitted work is counted, never refused.
    a.count_events("alice", 1, 10, false, SAT).unwrap().unwrap();
    // Operators and the host are not counted; another agent is not held.
    a.count_events("root", 1_000, 10, true, SAT)
        .unwrap()
        .unwrap();
    a.count_events("host", 1_000, 10, true, SAT)
        .unwrap()
        .unwrap();
    a.count_events("bob", 1, 10, true, SAT).unwrap().unwrap();
    // A new day starts afresh.
    a.count_events("alice", 1, 10, true, SAT + DAY_MS)
        .unwrap()
        .unwrap();
}
