//! The one clock: unix time in milliseconds.
//!
//! Every time the ledger stamps (an event's `at_ms`, a budget's wall time,
//! billing's "today", an outbox entry's next attempt) comes from a
//! [`Clock`]. [`system`] reads the system's time, and is the only place in
//! the ledger, and in the crates above it, that does; `Sessions::with_clock`
//! and `Outbox::with_clock` put another in its place, so a test of
//! anything time-based moves time instead of sleeping. The crates above
//! reach it through the ledger (`Sessions::clock_ms`, `Outbox::clock_ms`)
//! rather than reading the system time themselves.
//!
//! What reads the system's time on its own only names or orders things and
//! is never compared with a stamp: call ids, the names of quarantined and
//! set-aside store directories, the data-dir lock's note, the crash test's
//! seed.

use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

/// A source of "now", in unix milliseconds.
pub type Clock = Arc<dyn Fn() -> u64 + Send + Sync>;

/// The system's clock.
pub fn system() -> Clock {
    Arc::new(system_ms)
}

/// Now by the system's clock; 0 before 1970, `u64::MAX` past year 584
/// million.
pub fn system_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
        .unwrap_or(0)
}
