//! Every task the gateway starts and every piece of blocking work it hands
//! off, in one place: what runs where, and what a panic or a cancellation in
//! it turns into.
//!
//! The ledger is synchronous (the storage trait is), so the async callers run
//! its work with [`blocking`], which first takes their thread out of the
//! async workers (or, on a current-thread runtime, uses the blocking pool);
//! a call runs [`contained`] in its caller's task (a slow call's guest in a
//! task of its own on the slow lane, [`Owned`]), so a panic in host glue
//! ends that call only, and dropping the caller's future (a cancelled job)
//! drops the call.
//!
//! Who acts ([`acting`]): an entry point (an MCP request, an operator's
//! command, a background job) names the principal once; the ledger's work
//! that its future does, directly or through [`blocking`], and the tasks it
//! starts here, append events that carry that principal (see
//! [`crate::session::actor`]). It may name a [`LogSink`] too (an MCP
//! connection's `logging`): the log lines its work writes, wherever it runs,
//! are handed to it as well ([`log_sink`]).

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use crate::session::actor;

/// Where the log lines of one caller's work go besides the host's log:
/// called with the line's level, target and text. It must not block.
pub type LogSink = Arc<dyn Fn(tracing::Level, &str, String) + Send + Sync>;

thread_local! {
    static SINK: std::cell::RefCell<Option<LogSink>> = const { std::cell::RefCell::new(None) };
}

/// The log sink of the work running on this thread, if its entry point
/// named one (see [`acting_with`]).
pub fn log_sink() -> Option<LogSink> {
    SINK.with(|s| s.borrow().clone())
}

/// Runs `f` with `sink` as this thread's log sink (the previous one back
/// afterwards, also on a panic).
fn with_sink<T>(sink: Option<LogSink>, f: impl FnOnce() -> T) -> T {
    struct Restore(Option<LogSink>);
    impl Drop for Restore {
        fn drop(&mut self) {
            let previous = self.0.take();
            SINK.with(|s| *s.borrow_mut() = previous);
        }
    }
    let previous = SINK.with(|s| std::mem::replace(&mut *s.borrow_mut(), sink));
    let _restore = Restore(previous);
    f()
}

/// Who acts and where its log lines go, as named here: carried to the
/// blocking work and the tasks started from here.
fn here() -> (Option<Arc<str>>, Option<LogSink>) {
    (actor::named(), log_sink())
}

/// Runs `f` as `by` with `sink`, as [`here`] found them.
fn within<T>(by: &Option<Arc<str>>, sink: &Option<LogSink>, f: impl FnOnce() -> T) -> T {
    with_sink(sink.clone(), || match by {
        Some(by) => actor::scoped(by.clone(), f),
        None => f(),
    })
}

use tokio::task::JoinHandle;

/// Runs blocking work (the ledger's, an operator's command) without holding
/// up the async threads. A panic in `f` becomes `failed(message)`, the
/// caller's own error.
///
/// On a multi-thread runtime `f` runs on this very thread, which first hands
/// its share of the other tasks to another thread (`block_in_place`): the
/// caller waits for `f` anyway, and so its work starts at once instead of
/// after a blocking-pool thread wakes up, and the caller resumes without
/// waiting to be woken in turn. Elsewhere (a current-thread runtime, as in
/// most tests) `f` goes to the blocking pool.
pub async fn blocking<T, E>(
    f: impl FnOnce() -> Result<T, E> + Send + 'static,
    failed: impl FnOnce(String) -> E,
) -> Result<T, E>
where
    T: Send + 'static,
    E: Send + 'static,
{
    use tokio::runtime::{Handle, RuntimeFlavor};
    if Handle::current().runtime_flavor() == RuntimeFlavor::MultiThread {
        let ran = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            tokio::task::block_in_place(f)
        }));
        return ran.unwrap_or_else(|panic| {
            Err(failed(format!(
                "a blocking task failed: {}",
                panicked(panic.as_ref())
            )))
        });
    }
    let (by, sink) = here();
    let f = move || within(&by, &sink, f);
    match tokio::task::spawn_blocking(f).await {
        Ok(r) => r,
        Err(e) => Err(failed(format!("a blocking task failed: {}", why(e)))),
    }
}

/// Starts `future` in a task of its own, aborted if the handle is dropped
/// before it ends.
/// It acts for whoever the caller acts for.
pub fn owned<T: Send + 'static>(future: impl Future<Output = T> + Send + 'static) -> Owned<T> {
    Owned(tokio::spawn(inherit(future)))
}

/// Runs `future` in a task of its own that runs to its end even when the
/// caller stops waiting for it (unlike [`owned`], whose task is aborted),
/// and waits for it. For work that must finish what it began writing, like
/// a nested call's log (`nested.rs`): whoever stops waiting tells it to stop
/// some other way. It acts for whoever the caller acts for.
pub async fn to_the_end<T: Send + 'static>(
    future: impl Future<Output = T> + Send + 'static,
) -> Result<T, Ended> {
    tokio::spawn(inherit(future)).await.map_err(why)
}

/// Runs `future` in the caller's own task, as [`owned`] runs it in a task of
/// its own, but without handing it to another thread and back: a panic in it
/// ends it with the panic's message, as [`Owned::join`] words it, and does
/// not unwind into the caller. Dropping the caller's future drops it (and
/// what it holds), as dropping an [`Owned`] aborts its task.
pub async fn contained<T>(future: impl Future<Output = T>) -> Result<T, Ended> {
    let mut future = std::pin::pin!(future);
    std::future::poll_fn(move |cx| {
        let polled =
            std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| future.as_mut().poll(cx)));
        match polled {
            Ok(poll) => poll.map(Ok),
            Err(panic) => std::task::Poll::Ready(Err(panicked(panic.as_ref()))),
        }
    })
    .await
}

/// The threads the guests of slow calls run on (see the admission's "Slow
/// calls"): a runtime of its own, started at the first slow call, with a
/// worker per core. A guest that computes yields at every epoch tick to
/// whatever else is ready on its worker; on the server's workers that is
/// the quick calls and the server's own I/O, which then wait behind every
/// computing guest's turn. Here the slow guests take turns among
/// themselves, and the operating system shares the cores between these
/// threads and the server's: a quick call waits for a time slice, not for
/// a queue of guests. A worker per core (not fewer) so that a host whose
/// work is all slow (CPU-bound jobs) computes on every core; how many slow
/// guests run at once is `runtime.slow_share`'s to bound, not the lane's.
#[derive(Default)]
pub struct SlowLane {
    /// Started once, by the first slow call (`None`: it could not be).
    runtime: std::sync::OnceLock<Option<tokio::runtime::Runtime>>,
}

impl SlowLane {
    /// Starts `future` on the lane's threads, as [`owned`] does on the
    /// caller's runtime (it acts for whoever the caller acts for). When the
    /// lane cannot start its threads, the caller's runtime runs it.
    pub fn owned<T: Send + 'static>(
        &self,
        future: impl Future<Output = T> + Send + 'static,
    ) -> Owned<T> {
        let runtime = self.runtime.get_or_init(|| {
            let threads = std::thread::available_parallelism()
                .map_or(1, std::num::NonZero::get);
            tokio::runtime::Builder::new_multi_thread()
                .worker_threads(threads)
                .thread_name("glovebox-slow")
                .enable_all()
                .build()
                .inspect_err(|e| {
                    tracing::warn!(error = %e, "cannot start the threads of slow calls; they run with the others");
                })
                .ok()
        });
        match runtime {
            Some(runtime) => Owned(runtime.spawn(inherit(future))),
            None => owned(future),
        }
    }
}

impl Drop for SlowLane {
    fn drop(&mut self) {
        // Dropped on an async thread (the host goes): no blocking wait for
        // the lane's threads, whose tasks are cancelled.
        if let Some(Some(runtime)) = self.runtime.take() {
            runtime.shutdown_background();
        }
    }
}

/// Starts `future` in the background: nobody waits for it (the `after` hooks).
/// It acts for whoever the caller acts for.
pub fn detached(future: impl Future<Output = ()> + Send + 'static) {
    drop(tokio::spawn(inherit(future)));
}

/// Starts `future` in the background as the host's own work: unlike
/// [`detached`] it does not act for the caller, so what it appends is the
/// host's unless it names a principal itself (the jobs' dispatcher, which
/// outlives the call that started it and runs each job as its spawner).
pub fn host_task(future: impl Future<Output = ()> + Send + 'static) {
    drop(tokio::spawn(future));
}

/// Runs `future` on behalf of `by` (a principal's name, or `cli:<uid>`):
/// every event the ledger appends while it runs, on whichever thread polls
/// it, and in the blocking work and tasks it starts here, is `by`'s.
pub fn acting<F: Future>(by: impl Into<Arc<str>>, future: F) -> impl Future<Output = F::Output> {
    acting_with(by, None, future)
}

/// [`acting`], with `sink` getting the log lines of the work as well.
pub fn acting_with<F: Future>(
    by: impl Into<Arc<str>>,
    sink: Option<LogSink>,
    future: F,
) -> impl Future<Output = F::Output> {
    let by = Some(by.into());
    let mut future = Box::pin(future);
    std::future::poll_fn(move |cx| within(&by, &sink, || future.as_mut().poll(cx)))
}

/// `future`, acting for the actor (and its log sink) named where it is
/// created, if one is.
fn inherit<F>(future: F) -> impl Future<Output = F::Output> + Send + 'static
where
    F: Future + Send + 'static,
{
    let (by, sink) = here();
    let mut future = Box::pin(future);
    std::future::poll_fn(move |cx| {
        if by.is_none() && sink.is_none() {
            return future.as_mut().poll(cx);
        }
        within(&by, &sink, || future.as_mut().poll(cx))
    })
}

/// Starts `pass` every `period` (the first one a period from now) in a task
/// of its own, until the handle is dropped. A pass that overruns delays the
/// next one; passes never overlap.
pub fn every<F, Fut>(period: Duration, mut pass: F) -> Owned<()>
where
    F: FnMut() -> Fut + Send + 'static,
    Fut: Future<Output = ()> + Send + 'static,
{
    owned(async move {
        let mut ticks = tokio::time::interval_at(tokio::time::Instant::now() + period, period);
        ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            ticks.tick().await;
            pass().await;
        }
    })
}

/// Renews the session leases `sessions` holds (a store several hosts
/// share: see the ledger's `session/lease.rs`) every third of their TTL,
/// on the blocking pool, until the handle is dropped or the sessions are:
/// it holds them weakly, so that dropping them (a clean shutdown) releases
/// the leases. `None` without leases (the embedded backends).
pub fn lease_renewal(sessions: &Arc<crate::session::Sessions>) -> Option<Owned<()>> {
    let period = sessions.lease_renewal_period()?;
    let sessions = Arc::downgrade(sessions);
    Some(every(period.max(Duration::from_millis(100)), move || {
        let sessions = sessions.clone();
        async move {
            let renewed = blocking(
                move || match sessions.upgrade() {
                    Some(sessions) => Ok(sessions.renew_leases()),
                    None => Err("the sessions are closed".to_string()),
                },
                |e| e,
            )
            .await;
            if let Err(e) = renewed {
                tracing::debug!(error = %e, "no session leases renewed");
            }
        }
    }))
}

/// One handle for several tasks (the notification worker's, one per
/// target): dropping it stops them all.
pub fn holding(tasks: Vec<Owned<()>>) -> Owned<()> {
    owned(async move {
        let _tasks = tasks;
        std::future::pending::<()>().await
    })
}

/// A task aborted when its handle is dropped unawaited.
pub struct Owned<T>(JoinHandle<T>);

impl<T> Owned<T> {
    /// The task's output, or what ended it instead (a panic's message, or a
    /// cancellation).
    pub async fn join(mut self) -> Result<T, Ended> {
        (&mut self.0).await.map_err(why)
    }
}

impl<T> Drop for Owned<T> {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// What ended a task, or a contained future, that did not return.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Ended {
    /// It panicked; the panic's message.
    #[error("it panicked: {0}")]
    Panicked(String),
    /// It was stopped before it ended.
    #[error("it was cancelled")]
    Cancelled,
}

/// What ended a task that did not return.
fn why(e: tokio::task::JoinError) -> Ended {
    if e.is_panic() {
        panicked(e.into_panic().as_ref())
    } else {
        Ended::Cancelled
    }
}

/// A panic that ended a task or a contained future.
fn panicked(panic: &(dyn std::any::Any + Send)) -> Ended {
    Ended::Panicked(crate::call::panic_message(panic))
}

/// Runs the ledger's (blocking) work off the async threads.
pub(crate) async fn ledger_work<T: Send + 'static>(
    f: impl FnOnce() -> Result<T, crate::session::SessionError> + Send + 'static,
) -> Result<T, crate::session::SessionError> {
    blocking(f, |why| {
        crate::session::SessionError::Storage(crate::storage::StorageError::Io(format!(
            "the session store: {why}"
        )))
    })
    .await
}

/// Blocking memory bank work off the async threads (see [`ledger_work`]).
pub(crate) async fn memory_work<T: Send + 'static>(
    f: impl FnOnce() -> Result<T, crate::memory::MemoryError> + Send + 'static,
) -> Result<T, crate::memory::MemoryError> {
    blocking(f, |why| {
        crate::memory::MemoryError::Session(crate::session::SessionError::Storage(
            crate::storage::StorageError::Io(format!("the memory bank: {why}")),
        ))
    })
    .await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_contained_future_that_panics_after_waiting_ends_with_the_panic_not_the_caller() {
        let ended = contained(async {
            tokio::task::yield_now().await;
            if std::hint::black_box(true) {
                panic!("host glue broke");
            }
            1
        })
        .await;
        assert_eq!(ended, Err(Ended::Panicked("host glue broke".to_string())));
        assert_eq!(
            ended.unwrap_err().to_string(),
            "it panicked: host glue broke"
        );
        // The caller goes on, and so does the next call.
        assert_eq!(contained(async { 2 }).await, Ok(2));
    }

    /// The thread `blocking` ran its work on, and what a panic in it became.
    async fn where_blocking_runs() -> (bool, String) {
        let caller = std::thread::current().id();
        let here = blocking(
            move || Ok::<_, String>(std::thread::current().id() == caller),
            |why| why,
        )
        .await
        .unwrap();
        let failed = blocking(
            || -> Result<(), String> { panic!("the ledger broke") },
            |why| why,
        )
        .await
        .unwrap_err();
        (here, failed)
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn blocking_work_runs_on_the_callers_thread_of_a_multi_thread_runtime() {
        // From a task on one of the runtime's workers, as the gateway's
        // callers are (the test's own body runs outside the workers).
        let (here, failed) = tokio::spawn(where_blocking_runs()).await.unwrap();
        assert!(here, "the work went to another thread");
        assert_eq!(
            failed,
            "a blocking task failed: it panicked: the ledger broke"
        );
    }

    #[tokio::test]
    async fn blocking_work_goes_to_the_blocking_pool_of_a_current_thread_runtime() {
        let (here, failed) = where_blocking_runs().await;
        assert!(!here, "the work blocked the runtime's only thread");
        assert_eq!(
            failed,
            "a blocking task failed: it panicked: the ledger broke"
        );
    }

    #[tokio::test]
    async fn dropping_the_caller_drops_a_contained_future_and_what_it_holds() {
        struct Held(Arc<std::sync::atomic::AtomicBool>);
        impl Drop for Held {
            fn drop(&mut self) {
                self.0.store(true, std::sync::atomic::Ordering::SeqCst);
            }
        }
        let dropped = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let held = Held(dropped.clone());
        let call = contained(async move {
            let _held = held;
            std::future::pending::<()>().await;
        });
        // The caller gives up after a while (a cancelled job).
        let gave_up = tokio::time::timeout(Duration::from_millis(10), call).await;
        assert!(gave_up.is_err());
        assert!(dropped.load(std::sync::atomic::Ordering::SeqCst));
    }
}
