//! Injected flush failures, for tests (feature `fault-injection`): the one
//! counter every backend asks before it makes writes durable.

use std::sync::atomic::{AtomicUsize, Ordering};

/// How many of the next flushes (or commits) are to fail.
#[derive(Debug, Default)]
pub(crate) struct FailNext(AtomicUsize);

impl FailNext {
    /// Makes the next `n` flushes fail.
    pub(crate) fn arm(&self, n: usize) {
        self.0.store(n, Ordering::SeqCst);
    }

    /// Whether this flush is to fail (and counts it).
    pub(crate) fn take(&self) -> bool {
        self.0
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1))
            .is_ok()
    }
}
