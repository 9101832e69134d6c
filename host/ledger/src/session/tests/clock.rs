//! The one clock: what the ledger reports about time goes by the sessions'
//! clock (`Sessions::with_clock`), never the system's behind its back.

use std::sync::atomic::{AtomicU64, Ordering};

use super::*;
use crate::billing::{DateRange, day_of};
use crate::budget::{self, Cap};
use crate::manifest::{BudgetCaps, BudgetsConfig};

/// 2001-09-09, far from today: a report that read the system's time would
/// show years of wall time.
const T0: u64 = 1_000_000_000_000;

#[test]
fn a_budget_and_a_billing_range_go_by_the_sessions_clock() {
    let env = Env::new();
    let now = Arc::new(AtomicU64::new(T0));
    let sessions = {
        let now = now.clone();
        Sessions::new(env.store.clone()).with_clock(move || now.load(Ordering::SeqCst))
    };
    let mut start = start_request("timed", Role::Workagent);
    start.budget = BudgetCaps {
        wall_ms: Some(60_000),
        tokens: None,
        ..BudgetCaps::default()
    };
    let s = sessions.start(start).unwrap();
    assert_eq!(s.header.created_at_ms, T0);

    now.store(T0 + 30_000, Ordering::SeqCst);
    let status = budget::status(&sessions, &BudgetsConfig::default(), &s.header.id).unwrap();
    let wall = status.limits.iter().find(|l| l.cap == Cap::Wall).unwrap();
    assert_eq!((wall.used, wall.limit), (30_000, 60_000));

    let today = DateRange::parse(None, None, sessions.clock_ms()).unwrap();
    assert_eq!(day_of(T0), "2001-09-09");
    assert!(today.contains(T0) && !today.contains(T0 + 86_400_000));
}
