//! Who caused an event: the principal every record of a log carries (`by`).
//!
//! The ledger is synchronous and its writes happen deep inside operations
//! that many callers share (a budget guard, the detector, a rescue), so the
//! actor is not a parameter of every method: the caller's entry point names
//! it once, for the work it runs on this thread ([`scoped`]), and every event
//! sealed there carries it. Where nobody named one, the event is the host's
//! own doing (a sweep, a recovery, an interrupted call found at start), and
//! says [`HOST`].
//!
//! The gateway names the actor at its entry points (an MCP request, an
//! operator's command, at the command line or through a server, a
//! background job) and carries it across its tasks (`glovebox::tasks`).

use std::cell::RefCell;
use std::sync::Arc;

/// The actor of events the host itself caused.
pub const HOST: &str = "host";

thread_local! {
    static CURRENT: RefCell<Option<Arc<str>>> = const { RefCell::new(None) };
}

/// Runs `f` with `by` as the actor of every event it appends on this thread
/// (nested scopes take the innermost; the previous one is back afterwards,
/// also when `f` panics).
pub fn scoped<T>(by: impl Into<Arc<str>>, f: impl FnOnce() -> T) -> T {
    struct Restore(Option<Arc<str>>);
    impl Drop for Restore {
        fn drop(&mut self) {
            let previous = self.0.take();
            CURRENT.with(|c| *c.borrow_mut() = previous);
        }
    }
    let previous = CURRENT.with(|c| c.borrow_mut().replace(by.into()));
    let _restore = Restore(previous);
    f()
}

/// The actor named on this thread, if any (to carry it to another thread).
pub fn named() -> Option<Arc<str>> {
    CURRENT.with(|c| c.borrow().clone())
}

/// The actor of an event appended now: the one named on this thread, else
/// [`HOST`].
pub fn current() -> Arc<str> {
    named().unwrap_or_else(|| Arc::from(HOST))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scopes_nest_and_restore() {
        assert_eq!(named(), None);
        scoped("alice", || {
            assert_eq!(&*current(), "alice");
            scoped("cli:0", || assert_eq!(&*current(), "cli:0"));
            assert_eq!(&*current(), "alice");
        });
        assert_eq!(named(), None);
        let panicked = std::panic::catch_unwind(|| scoped("bob", || panic!("boom")));
        assert!(panicked.is_err());
        assert_eq!(
            named(),
            None,
            "a panic inside a scope leaves no actor behind"
        );
    }
}
