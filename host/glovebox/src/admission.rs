//! Fair admission: who runs next when every slot is taken.
//!
//! Why: admission control used to refuse a call at once (`busy`) when it
//! found every call slot (`runtime.max_concurrent_calls`) or the memory
//! budget (`runtime.memory_budget`) taken. Under load one tenant's slow calls
//! then turned everyone else's calls into `busy`. Here a call that finds no
//! room waits in a bounded queue (`runtime.admission_queue` waiters, each up
//! to `runtime.admission_wait` and never past the call's own deadline), and
//! freed slots are handed out fairly:
//!
//! - round robin by principal (the ledger's actor of the call), then round
//!   robin by session within a principal, FIFO within a session;
//! - while other principals wait, a principal holding its share of the slots
//!   (`runtime.principal_share` of them, at least one) gets no more.
//!
//! No crate fits: the async semaphores (tokio's, `async-lock`) are FIFO over
//! one queue, and the round-robin crates select among backends, not waiters.
//! So this is a small queue under a `std` mutex (never held across an
//! `.await`) whose waiters are futures woken by the hand-over. A waiter that
//! is dropped (its call cancelled, its wait timed out) takes itself out of the
//! queue, and a slot handed to it after it stopped listening goes back to the
//! pool at once: nothing leaks.
//!
//! Hooks. A call's permission hooks run in wasmtime instances from the same
//! pool as calls (the engine keeps [`crate::runtime::HOOK_INSTANCES`] instances
//! beyond the call slots for them). Hook runs go through an admission of their
//! own with that many slots, on the same rules: a burst of calls then queues
//! for the hooks instead of exhausting the instance pool, which would have
//! failed closed as spurious denials. The two admissions are separate, and a
//! call never waits for one while holding the other, so they cannot deadlock:
//! the hooks judge a call (holding a hook slot, no call slot) before it asks
//! for its call slot, and its call slot is released when the tool ends,
//! before the hooks hear how it ended (`after`, again under a hook slot only).
//! A chain takes one hook slot for all its hooks (they run one at a time).
//! Hook runs wait at least 1 s and queue at least 64 deep whatever
//! `runtime.admission_wait` and `runtime.admission_queue` say: a hook refused
//! a slot denies its call (fail closed, saying admission was full), so a zero
//! wait, which only means "do not queue calls", must not turn into denials.
//!
//! One principal's waiters are capped too (`quotas.queued_calls_per_principal`,
//! passed to each [`Admission::acquire`] so a reload applies it): past it
//! that principal's next call is refused at once, and the queue keeps room
//! for the others (threat 58).
//!
//! The share cap is per principal only: the sessions of one principal are
//! served round robin among themselves, but one of them may hold all of that
//! principal's slots.
//!
//! Slow calls. Round robin is fair in turns, not in time: a tool whose
//! calls run for hundreds of milliseconds holds its slot that long, and
//! when such calls fill every slot a quick call waits behind them however
//! its turn falls. So the calls of tools not known to be quick (the host
//! keeps each tool's recent run time against `runtime.slow_call`; a tool
//! not called yet is not known to be quick) hold at most
//! `runtime.slow_share` of the slots, and the rest are kept for quick calls,
//! which then find a slot at once or after a quick call's wait. This leaves
//! slots idle when only slow calls come; `slow_share = 1` turns it off.

use std::collections::{HashMap, VecDeque};
use std::future::poll_fn;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::task::{Poll, Waker};
use std::time::Duration;

/// How an admission is sized.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct Limits {
    /// Slots: how many holders at once.
    pub slots: usize,
    /// Units (MiB of memory for calls) the holders share; each asks for some.
    pub units: u64,
    /// The most slots one principal holds while another principal waits.
    pub share: usize,
    /// The most slots slow calls hold.
    pub slow_share: usize,
    /// The most waiters at once.
    pub queue: usize,
}

/// Told the pool (`calls` or `hooks`) and how long each admission waited
/// (admitted or refused).
pub(crate) type WaitObserver = Arc<dyn Fn(&'static str, Duration) + Send + Sync>;

impl Limits {
    /// `share` of `slots` (a fraction above 0, at most 1), at least one slot.
    pub fn share_of(slots: usize, share: f64) -> usize {
        // Truncation is meant: a share is rounded down, then at least one slot.
        let held = (slots as f64 * share).floor() as usize;
        held.clamp(1, slots.max(1))
    }
}

/// Who asks: a principal and a session of it, for a call known to be slow
/// or not.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub(crate) struct Key {
    pub principal: Arc<str>,
    pub session: Arc<str>,
    /// The call's tool has been running long (see the module's "Slow calls").
    pub slow: bool,
}

impl Key {
    pub fn new(principal: impl Into<Arc<str>>, session: impl Into<Arc<str>>) -> Key {
        Key {
            principal: principal.into(),
            session: session.into(),
            slow: false,
        }
    }

    /// The same, for a call of a tool known to be slow when `slow`.
    pub fn slow(self, slow: bool) -> Key {
        Key { slow, ..self }
    }
}

/// What was short when a waiter was refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Short {
    /// Every slot was taken.
    Slots,
    /// A slot was free, but not enough units.
    Units,
    /// A slot and the units were free, but the principal held its share
    /// while other principals waited.
    Share,
    /// A slot and the units were free, but slow calls held their share.
    Slow,
}

/// Why a waiter got no slot.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Refused {
    /// It asks for more units than there are at all: it can never run.
    TooBig,
    /// No room now, and it may not wait (a zero wait).
    Full(Short),
    /// The queue holds its most waiters already (and this was short).
    QueueFull(Short),
    /// Its principal has its most waiters queued already (and this was short).
    PrincipalQueueFull(Short),
    /// It waited its whole wait.
    TimedOut(Short),
}

/// A fair admission; clones share it.
#[derive(Clone)]
pub(crate) struct Admission {
    shared: Arc<Shared>,
}

struct Shared {
    limits: Limits,
    state: Mutex<State>,
}

#[derive(Default)]
struct State {
    slots_free: usize,
    units_free: u64,
    /// Slots held, by principal (principals holding none are absent).
    held: HashMap<Arc<str>, usize>,
    /// Slots held by slow calls.
    slow_held: usize,
    /// Principals with waiters, in the order they are served.
    ring: VecDeque<Arc<str>>,
    tenants: HashMap<Arc<str>, Tenant>,
    waiters: HashMap<u64, Waiter>,
    /// Waiters not yet handed a slot.
    queued: usize,
    /// Of them, by principal (principals with none are absent).
    queued_by: HashMap<Arc<str>, usize>,
    next_id: u64,
}

/// The waiters of one principal.
#[derive(Default)]
struct Tenant {
    /// Sessions with waiters, in the order they are served.
    sessions: VecDeque<Arc<str>>,
    /// Waiter ids by session, FIFO.
    queues: HashMap<Arc<str>, VecDeque<u64>>,
}

struct Waiter {
    key: Key,
    units: u64,
    granted: bool,
    waker: Option<Waker>,
}

/// A slot (and its units), given back when dropped.
pub(crate) struct Permit {
    shared: Arc<Shared>,
    principal: Arc<str>,
    units: u64,
    slow: bool,
}

impl std::fmt::Debug for Permit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Permit")
            .field("principal", &self.principal)
            .field("units", &self.units)
            .field("slow", &self.slow)
            .finish()
    }
}

impl Drop for Permit {
    fn drop(&mut self) {
        let wake = {
            let mut state = self.shared.lock();
            state.release(&self.principal, self.units, self.slow);
            state.dispatch(&self.shared.limits)
        };
        wake.into_iter().for_each(Waker::wake);
    }
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, State> {
        // The state is consistent between statements: a panic elsewhere
        // while it was held leaves nothing half-done worth refusing over.
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl Admission {
    pub fn new(limits: Limits) -> Admission {
        let state = State {
            slots_free: limits.slots,
            units_free: limits.units,
            ..State::default()
        };
        Admission {
            shared: Arc::new(Shared {
                limits,
                state: Mutex::new(state),
            }),
        }
    }

    pub fn limits(&self) -> Limits {
        self.shared.limits
    }

    /// Slots held now.
    pub fn in_use(&self) -> usize {
        self.shared.limits.slots - self.shared.lock().slots_free
    }

    /// Units held now.
    pub fn units_in_use(&self) -> u64 {
        self.shared.limits.units - self.shared.lock().units_free
    }

    /// Waiters now.
    pub fn waiting(&self) -> usize {
        self.shared.lock().queued
    }

    /// A slot and `units` for `key`: at once when there is room and nobody
    /// waits, else after waiting its turn for up to `wait` (refused at once
    /// when `wait` is zero or the queue is full).
    pub async fn acquire(&self, key: Key, units: u64, wait: Duration) -> Result<Permit, Refused> {
        self.acquire_within(key, units, wait, usize::MAX).await
    }

    /// [`Admission::acquire`], refused at once when `key`'s principal has
    /// `principal_queue` waiters already.
    pub async fn acquire_within(
        &self,
        key: Key,
        units: u64,
        wait: Duration,
        principal_queue: usize,
    ) -> Result<Permit, Refused> {
        let limits = self.shared.limits;
        let (id, wake) = {
            let mut state = self.shared.lock();
            if units > limits.units {
                return Err(Refused::TooBig);
            }
            if state.queued == 0 && state.fits(units, key.slow, &limits) {
                state.take(&key.principal, units, key.slow);
                return Ok(self.permit(key.principal, units, key.slow));
            }
            if wait.is_zero() {
                return Err(Refused::Full(state.short(units, key.slow, &limits)));
            }
            if state.queued >= limits.queue {
                return Err(Refused::QueueFull(state.short(units, key.slow, &limits)));
            }
            if state.queued_by.get(&key.principal).copied().unwrap_or(0) >= principal_queue {
                return Err(Refused::PrincipalQueueFull(
                    state.short(units, key.slow, &limits),
                ));
            }
            let id = state.enqueue(key, units);
            (id, state.dispatch(&limits))
        };
        wake.into_iter().for_each(Waker::wake);
        let mut waiting = Waiting {
            shared: self.shared.clone(),
            id,
            done: false,
        };
        let granted = poll_fn(|cx| {
            let mut state = self.shared.lock();
            let waiter = state
                .waiters
                .get_mut(&id)
                .expect("a waiter stays in the table until it is done");
            if waiter.granted {
                Poll::Ready(())
            } else {
                waiter.waker = Some(cx.waker().clone());
                Poll::Pending
            }
        });
        let timed_out = tokio::time::timeout(wait, granted).await.is_err();
        // Whether or not the timer fired, the hand-over may have come first.
        match waiting.finish() {
            Ok(key) => Ok(self.permit(key.principal, units, key.slow)),
            Err(short) => {
                debug_assert!(timed_out);
                Err(Refused::TimedOut(short))
            }
        }
    }

    fn permit(&self, principal: Arc<str>, units: u64, slow: bool) -> Permit {
        Permit {
            shared: self.shared.clone(),
            principal,
            units,
            slow,
        }
    }
}

/// A waiter's place: taken out of the queue when dropped, and a slot handed
/// to it that it did not take is given back.
struct Waiting {
    shared: Arc<Shared>,
    id: u64,
    done: bool,
}

impl Waiting {
    /// Leaves the queue: `Ok` with its key when a slot was handed over (the
    /// caller now holds it), else what was short.
    fn finish(&mut self) -> Result<Key, Short> {
        self.done = true;
        let mut state = self.shared.lock();
        let waiter = state.remove(self.id);
        if waiter.granted {
            Ok(waiter.key)
        } else {
            Err(state.short(waiter.units, waiter.key.slow, &self.shared.limits))
        }
    }
}

impl Drop for Waiting {
    fn drop(&mut self) {
        if self.done {
            return;
        }
        let wake = {
            let mut state = self.shared.lock();
            let waiter = state.remove(self.id);
            if waiter.granted {
                // Handed a slot after it stopped listening: give it back.
                state.release(&waiter.key.principal, waiter.units, waiter.key.slow);
            }
            // Its leaving may let a waiter over its share, or behind it, in.
            state.dispatch(&self.shared.limits)
        };
        wake.into_iter().for_each(Waker::wake);
    }
}

impl State {
    fn fits(&self, units: u64, slow: bool, limits: &Limits) -> bool {
        self.slots_free > 0
            && self.units_free >= units
            && !(slow && self.slow_held >= limits.slow_share)
    }

    fn short(&self, units: u64, slow: bool, limits: &Limits) -> Short {
        if self.slots_free == 0 {
            Short::Slots
        } else if self.units_free < units {
            Short::Units
        } else if slow && self.slow_held >= limits.slow_share {
            Short::Slow
        } else {
            Short::Share
        }
    }

    fn take(&mut self, principal: &Arc<str>, units: u64, slow: bool) {
        self.slots_free -= 1;
        self.units_free -= units;
        self.slow_held += usize::from(slow);
        *self.held.entry(principal.clone()).or_default() += 1;
    }

    fn release(&mut self, principal: &Arc<str>, units: u64, slow: bool) {
        self.slots_free += 1;
        self.units_free += units;
        self.slow_held -= usize::from(slow);
        if let Some(held) = self.held.get_mut(principal) {
            *held -= 1;
            if *held == 0 {
                self.held.remove(principal);
            }
        }
    }

    fn enqueue(&mut self, key: Key, units: u64) -> u64 {
        let id = self.next_id;
        self.next_id += 1;
        let tenant = self.tenants.entry(key.principal.clone()).or_default();
        if tenant.sessions.is_empty() {
            self.ring.push_back(key.principal.clone());
        }
        let queue = tenant.queues.entry(key.session.clone()).or_default();
        if queue.is_empty() {
            tenant.sessions.push_back(key.session.clone());
        }
        queue.push_back(id);
        *self.queued_by.entry(key.principal.clone()).or_default() += 1;
        self.waiters.insert(
            id,
            Waiter {
                key,
                units,
                granted: false,
                waker: None,
            },
        );
        self.queued += 1;
        id
    }

    /// One waiter of `principal` fewer in the queue.
    fn unqueue(&mut self, principal: &Arc<str>) {
        if let Some(n) = self.queued_by.get_mut(principal) {
            *n -= 1;
            if *n == 0 {
                self.queued_by.remove(principal);
            }
        }
    }

    /// Takes waiter `id` out of the table (and out of the queue, if it was
    /// not handed a slot yet).
    fn remove(&mut self, id: u64) -> Waiter {
        let waiter = self.waiters.remove(&id).expect("a waiter is removed once");
        if !waiter.granted {
            self.queued -= 1;
            self.unqueue(&waiter.key.principal);
            let Key {
                principal, session, ..
            } = &waiter.key;
            if let Some(tenant) = self.tenants.get_mut(principal) {
                if let Some(queue) = tenant.queues.get_mut(session) {
                    queue.retain(|w| *w != id);
                    if queue.is_empty() {
                        tenant.queues.remove(session);
                        tenant.sessions.retain(|s| s != session);
                    }
                }
                if tenant.sessions.is_empty() {
                    self.tenants.remove(principal);
                    self.ring.retain(|p| p != principal);
                }
            }
        }
        waiter
    }

    /// Hands free slots to waiters, round robin by principal, then by
    /// session; returns the wakers of those served, to wake once the lock
    /// is released.
    fn dispatch(&mut self, limits: &Limits) -> Vec<Waker> {
        let mut wake = Vec::new();
        // Principals passed over in a row: a whole turn of them, and nobody
        // can be served until something is released.
        let mut passed = 0;
        while self.slots_free > 0 && passed < self.ring.len() {
            let Some(principal) = self.ring.pop_front() else {
                break;
            };
            let others_wait = !self.ring.is_empty();
            let held = self.held.get(&principal).copied().unwrap_or(0);
            let served = if others_wait && held >= limits.share {
                None
            } else {
                self.serve(&principal, limits)
            };
            match served {
                Some(id) => {
                    passed = 0;
                    let waiter = self.waiters.get_mut(&id).expect("a queued waiter");
                    waiter.granted = true;
                    let (units, slow) = (waiter.units, waiter.key.slow);
                    wake.extend(waiter.waker.take());
                    self.queued -= 1;
                    self.unqueue(&principal);
                    self.take(&principal, units, slow);
                }
                None => passed += 1,
            }
            if self.tenants.contains_key(&principal) {
                self.ring.push_back(principal);
            }
        }
        wake
    }

    /// The next waiter of `principal` that fits (a slow call only while
    /// slow calls hold less than their share): the head of its first session
    /// that has one, that session then going last. Takes it out of the queue
    /// (not out of the table).
    fn serve(&mut self, principal: &Arc<str>, limits: &Limits) -> Option<u64> {
        let slow_full = self.slow_held >= limits.slow_share;
        let tenant = self.tenants.get_mut(principal)?;
        let (slots_free, units_free) = (self.slots_free, self.units_free);
        let fits = |id: &u64| {
            let waiter = &self.waiters[id];
            slots_free > 0 && waiter.units <= units_free && !(slow_full && waiter.key.slow)
        };
        let turn = tenant
            .sessions
            .iter()
            .position(|s| tenant.queues[s].front().is_some_and(fits))?;
        let session = tenant.sessions.remove(turn).expect("a session in turn");
        let queue = tenant.queues.get_mut(&session).expect("its queue");
        let id = queue.pop_front().expect("a head that fits");
        if queue.is_empty() {
            tenant.queues.remove(&session);
        } else {
            tenant.sessions.push_back(session);
        }
        if tenant.sessions.is_empty() {
            self.tenants.remove(principal);
        }
        Some(id)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const LONG: Duration = Duration::from_secs(30);

    fn admission(slots: usize, share: usize, queue: usize) -> Admission {
        Admission::new(Limits {
            slots,
            units: 1000,
            share,
            slow_share: slots,
            queue,
        })
    }

    fn key(principal: &str, session: &str) -> Key {
        Key::new(principal, session)
    }

    /// Starts a waiter for `key` that reports its `tag` on `order` when
    /// it gets a slot, and holds the slot until `hold` says.
    fn waiter(
        a: &Admission,
        key: Key,
        tag: &'static str,
        order: &tokio::sync::mpsc::UnboundedSender<&'static str>,
    ) -> (
        tokio::task::JoinHandle<Result<(), Refused>>,
        tokio::sync::oneshot::Sender<()>,
    ) {
        let (a, order) = (a.clone(), order.clone());
        let (hold, held) = tokio::sync::oneshot::channel();
        let task = tokio::spawn(async move {
            let permit = a.acquire(key, 1, LONG).await?;
            order.send(tag).unwrap();
            let _ = held.await;
            drop(permit);
            Ok(())
        });
        (task, hold)
    }

    // Threat 58: one principal filling the admission queue left no room for
    // the others; its waiters are capped and the others still queue.
    #[tokio::test]
    async fn threat_58_one_principals_waiters_are_capped_and_others_still_queue() {
        let a = admission(1, 1, 10);
        let held = a.acquire(key("x", "s"), 1, LONG).await.unwrap();
        let mut waiting = Vec::new();
        for _ in 0..2 {
            let a = a.clone();
            waiting.push(tokio::spawn(async move {
                a.acquire_within(key("greedy", "g"), 1, LONG, 2)
                    .await
                    .map(drop)
            }));
        }
        while a.waiting() < 2 {
            tokio::task::yield_now().await;
        }
        let third = a.acquire_within(key("greedy", "g"), 1, LONG, 2).await;
        assert!(
            matches!(third, Err(Refused::PrincipalQueueFull(Short::Slots))),
            "{third:?}"
        );
        // Another principal still gets in line, and is served in its turn.
        let other = {
            let a = a.clone();
            tokio::spawn(async move {
                a.acquire_within(key("other", "o"), 1, LONG, 2)
                    .await
                    .map(drop)
            })
        };
        while a.waiting() < 3 {
            tokio::task::yield_now().await;
        }
        drop(held);
        for task in waiting {
            task.await.unwrap().unwrap();
        }
        other.await.unwrap().unwrap();
        assert_eq!(a.waiting(), 0);
        assert!(
            a.shared.lock().queued_by.is_empty(),
            "nothing is left counted"
        );
    }

    /// The next waiter served; fails (instead of hanging) when none is.
    async fn served(rx: &mut tokio::sync::mpsc::UnboundedReceiver<&'static str>) -> &'static str {
        tokio::time::timeout(Duration::from_secs(10), rx.recv())
            .await
            .expect("no waiter was served within 10 s")
            .expect("the waiters' channel stays open")
    }

    /// Lets the spawned waiters run until they are all parked.
    async fn settle() {
        for _ in 0..20 {
            tokio::task::yield_now().await;
        }
    }

    #[tokio::test]
    async fn fifo_within_a_session() {
        let a = admission(1, 1, 100);
        let order = served_in_turn(
            &a,
            &[
                (key("p", "s"), "1"),
                (key("p", "s"), "2"),
                (key("p", "s"), "3"),
            ],
        )
        .await;
        assert_eq!(order, ["1", "2", "3"]);
    }

    #[tokio::test]
    async fn round_robin_across_principals_then_sessions() {
        let a = admission(1, 1, 100);
        let order = served_in_turn(
            &a,
            &[
                (key("alice", "a1"), "alice-a1-1"),
                (key("alice", "a1"), "alice-a1-2"),
                (key("alice", "a2"), "alice-a2-1"),
                (key("bob", "b1"), "bob-1"),
                (key("bob", "b1"), "bob-2"),
                (key("carol", "c1"), "carol-1"),
            ],
        )
        .await;
        assert_eq!(
            order,
            [
                "alice-a1-1",
                "bob-1",
                "carol-1",
                "alice-a2-1",
                "bob-2",
                "alice-a1-2"
            ]
        );
    }

    /// Queues `waiters` in order behind one held slot, then lets each run
    /// to its end one at a time: the order they were served in.
    async fn served_in_turn(a: &Admission, waiters: &[(Key, &'static str)]) -> Vec<&'static str> {
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
        let blocker = a.acquire(key("blocker", "b"), 1, LONG).await.unwrap();
        let mut holds = HashMap::new();
        let mut tasks = Vec::new();
        for (k, tag) in waiters {
            let (task, hold) = waiter(a, k.clone(), tag, &tx);
            holds.insert(*tag, hold);
            tasks.push(task);
            settle().await;
        }
        assert_eq!(a.waiting(), waiters.len());
        drop(blocker);
        let mut order = Vec::new();
        while order.len() < waiters.len() {
            let tag = served(&mut rx).await;
            order.push(tag);
            settle().await;
            // One slot: nobody else got in while this one holds it.
            assert!(rx.try_recv().is_err(), "two holders of one slot");
            holds.remove(tag).unwrap().send(()).unwrap();
        }
        for task in tasks {
            task.await.unwrap().unwrap();
        }
        assert_eq!((a.in_use(), a.waiting()), (0, 0));
        order
    }

    #[tokio::test]
    async fn a_principal_gets_no_more_than_its_share_while_others_wait() {
        // Four slots, a share of two: alice holds two, and more of hers wait.
        let a = admission(4, 2, 100);
        let alice: Vec<Permit> = hold_two(&a, "alice").await;
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
        let mut holds = Vec::new();
        // Two more slots are free: nobody else waits, so alice may take them.
        let (t1, h1) = waiter(&a, key("alice", "a"), "alice-3", &tx);
        settle().await;
        assert_eq!(Some(served(&mut rx).await), Some("alice-3"));
        holds.push((t1, h1));
        // One slot left; bob and more of alice's wait behind a full house.
        let (t2, h2) = waiter(&a, key("alice", "a"), "alice-4", &tx);
        settle().await;
        assert_eq!(Some(served(&mut rx).await), Some("alice-4"));
        holds.push((t2, h2));
        assert_eq!(a.in_use(), 4);
        let (t5, h5) = waiter(&a, key("alice", "a"), "alice-5", &tx);
        settle().await;
        let (tb, hb) = waiter(&a, key("bob", "b"), "bob-1", &tx);
        settle().await;
        let (tb2, hb2) = waiter(&a, key("bob", "b"), "bob-2", &tx);
        settle().await;
        assert_eq!(a.waiting(), 3);
        // Alice's slots free up one by one: bob, who waits, gets them, not
        // alice (over her share while bob waits), though she queued first.
        drop(alice);
        let mut bobs = [served(&mut rx).await, served(&mut rx).await];
        bobs.sort_unstable();
        assert_eq!(bobs, ["bob-1", "bob-2"]);
        settle().await;
        assert!(rx.try_recv().is_err(), "alice got a slot over her share");
        // Once bob's waiters are served, nobody else waits: alice may go on.
        hb.send(()).unwrap();
        assert_eq!(Some(served(&mut rx).await), Some("alice-5"));
        for (t, h) in holds.into_iter().chain([(t5, h5), (tb2, hb2)]) {
            h.send(()).unwrap();
            t.await.unwrap().unwrap();
        }
        tb.await.unwrap().unwrap();
        assert_eq!((a.in_use(), a.waiting()), (0, 0));
    }

    async fn hold_two(a: &Admission, principal: &str) -> Vec<Permit> {
        let mut held = Vec::new();
        for _ in 0..2 {
            held.push(a.acquire(key(principal, "s"), 1, LONG).await.unwrap());
        }
        held
    }

    #[tokio::test]
    async fn past_the_queue_bound_a_waiter_is_refused_at_once() {
        let a = admission(1, 1, 2);
        let held = a.acquire(key("p", "s"), 1, LONG).await.unwrap();
        let (tx, _rx) = tokio::sync::mpsc::unbounded_channel();
        let w1 = waiter(&a, key("q", "s"), "1", &tx);
        let w2 = waiter(&a, key("r", "s"), "2", &tx);
        settle().await;
        assert_eq!(a.waiting(), 2);
        let start = std::time::Instant::now();
        let third = a.acquire(key("s", "s"), 1, LONG).await;
        assert_eq!(third.unwrap_err(), Refused::QueueFull(Short::Slots));
        assert!(start.elapsed() < Duration::from_secs(5));
        drop(held);
        for (task, hold) in [w1, w2] {
            hold.send(()).unwrap();
            task.await.unwrap().unwrap();
        }
        assert_eq!((a.in_use(), a.waiting()), (0, 0));
    }

    #[tokio::test]
    async fn a_zero_wait_refuses_at_once_and_says_what_was_short() {
        let a = Admission::new(Limits {
            slots: 2,
            units: 100,
            share: 2,
            slow_share: 2,
            queue: 10,
        });
        let big = a.acquire(key("p", "s"), 80, Duration::ZERO).await.unwrap();
        let no_room = a.acquire(key("p", "s"), 30, Duration::ZERO).await;
        assert_eq!(no_room.unwrap_err(), Refused::Full(Short::Units));
        let small = a.acquire(key("p", "s"), 20, Duration::ZERO).await.unwrap();
        let no_slot = a.acquire(key("p", "s"), 0, Duration::ZERO).await;
        assert_eq!(no_slot.unwrap_err(), Refused::Full(Short::Slots));
        let never = a.acquire(key("p", "s"), 101, LONG).await;
        assert_eq!(never.unwrap_err(), Refused::TooBig);
        drop((big, small));
        assert_eq!((a.in_use(), a.units_in_use()), (0, 0));
    }

    #[tokio::test(start_paused = true)]
    async fn a_waiter_gives_up_after_its_wait() {
        let a = admission(1, 1, 10);
        let held = a.acquire(key("p", "s"), 1, LONG).await.unwrap();
        let start = tokio::time::Instant::now();
        let late = a.acquire(key("q", "s"), 1, Duration::from_secs(5));
        let late = tokio::time::timeout(Duration::from_secs(60), late)
            .await
            .expect("the wait ends at its limit");
        assert_eq!(late.unwrap_err(), Refused::TimedOut(Short::Slots));
        let waited = start.elapsed();
        assert!(
            waited >= Duration::from_secs(5) && waited < Duration::from_secs(6),
            "{waited:?}"
        );
        assert_eq!(a.waiting(), 0, "a waiter that gave up left the queue");
        drop(held);
        assert_eq!(a.in_use(), 0);
        // The slot it did not get is there for the next one.
        let next = a.acquire(key("q", "s"), 1, Duration::ZERO).await;
        assert!(next.is_ok());
    }

    #[tokio::test(start_paused = true)]
    async fn a_principal_at_its_share_is_not_served_past_it_even_by_a_free_slot() {
        let a = Admission::new(Limits {
            slots: 2,
            units: 100,
            share: 1,
            slow_share: 2,
            queue: 10,
        });
        let alice = a.acquire(key("alice", "s"), 10, LONG).await.unwrap();
        // Bob waits for room in the units (alice's 10 are in the way).
        let bob = tokio::spawn({
            let a = a.clone();
            async move {
                a.acquire(key("bob", "s"), 100, Duration::from_secs(10))
                    .await
            }
        });
        settle().await;
        assert_eq!(a.waiting(), 1);
        // A slot and the units are free, but alice holds her share while bob
        // waits: she waits too, and is refused saying why.
        let more = a.acquire(key("alice", "s"), 10, Duration::from_secs(1));
        let more = tokio::time::timeout(Duration::from_secs(60), more)
            .await
            .expect("the wait ends at its limit");
        assert_eq!(more.unwrap_err(), Refused::TimedOut(Short::Share));
        // Alice's slot goes back: bob fits now, and is served.
        drop(alice);
        let bob = bob
            .await
            .unwrap()
            .expect("bob is served once alice is done");
        assert_eq!((a.in_use(), a.units_in_use(), a.waiting()), (1, 100, 0));
        drop(bob);
        assert_eq!((a.in_use(), a.units_in_use()), (0, 0));
    }

    #[tokio::test]
    async fn a_dropped_waiter_leaves_its_place_and_never_leaks_a_slot() {
        let a = admission(1, 1, 10);
        let held = a.acquire(key("p", "s"), 1, LONG).await.unwrap();
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
        // A waiter cancelled while it waits: its place goes.
        let cancelled = waiter(&a, key("q", "s"), "cancelled", &tx);
        settle().await;
        let (behind, hold) = waiter(&a, key("r", "s"), "behind", &tx);
        settle().await;
        assert_eq!(a.waiting(), 2);
        cancelled.0.abort();
        assert!(cancelled.0.await.unwrap_err().is_cancelled());
        assert_eq!(a.waiting(), 1);
        drop(held);
        assert_eq!(Some(served(&mut rx).await), Some("behind"));
        hold.send(()).unwrap();
        behind.await.unwrap().unwrap();
        assert_eq!((a.in_use(), a.waiting()), (0, 0));

        // A waiter handed a slot, then dropped before it took it: the slot
        // goes back (to the next waiter).
        let held = a.acquire(key("p", "s"), 1, LONG).await.unwrap();
        let mut first = Box::pin(a.acquire(key("q", "s"), 1, LONG));
        assert!(futures_poll(&mut first).is_pending());
        let (next, hold) = waiter(&a, key("r", "s"), "next", &tx);
        settle().await;
        drop(held);
        // The slot was handed to `first`, which never looks again.
        assert_eq!(a.in_use(), 1);
        assert_eq!(a.waiting(), 1);
        drop(first);
        assert_eq!(Some(served(&mut rx).await), Some("next"));
        hold.send(()).unwrap();
        next.await.unwrap().unwrap();
        assert_eq!((a.in_use(), a.waiting()), (0, 0));
    }

    /// Polls `f` once.
    fn futures_poll<F: std::future::Future + Unpin>(f: &mut F) -> Poll<F::Output> {
        let waker = Waker::noop();
        let mut cx = std::task::Context::from_waker(waker);
        std::pin::Pin::new(f).poll(&mut cx)
    }

    /// Slow calls hold at most their share of the slots, even when nobody
    /// else waits: quick calls find the rest free at once, and a slow call
    /// waits for a slow one to end, though a quick call waited before it.
    #[tokio::test]
    async fn slow_calls_hold_no_more_than_their_share_of_the_slots() {
        let a = Admission::new(Limits {
            slots: 4,
            units: 1000,
            share: 4,
            slow_share: 2,
            queue: 100,
        });
        let slow = |s: &str| key("p", s).slow(true);
        let first = a.acquire(slow("s1"), 1, LONG).await.unwrap();
        let _second = a.acquire(slow("s2"), 1, LONG).await.unwrap();
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
        // Two slots are free, but not for a third slow call.
        let (_s3, release_s3) = waiter(&a, slow("s3"), "slow-3", &tx);
        settle().await;
        assert_eq!(a.waiting(), 1);
        // Quick calls take them at once (the queue's head is a slow call
        // that cannot be served: they wait their turn, which comes now).
        let (_q1, release_q1) = waiter(&a, key("p", "q1"), "quick-1", &tx);
        assert_eq!(served(&mut rx).await, "quick-1");
        let (_q2, _release_q2) = waiter(&a, key("p", "q2"), "quick-2", &tx);
        assert_eq!(served(&mut rx).await, "quick-2");
        assert_eq!(a.in_use(), 4);
        // A quick call waits for a slot; a slow one ending lets the waiting
        // slow call in, a quick one ending the quick call.
        let (_q3, _release_q3) = waiter(&a, key("p", "q3"), "quick-3", &tx);
        settle().await;
        drop(first);
        assert_eq!(served(&mut rx).await, "slow-3");
        let _ = release_q1.send(());
        assert_eq!(served(&mut rx).await, "quick-3");
        let _ = release_s3.send(());
        assert_eq!(a.waiting(), 0);
    }

    /// A slow call that waited its whole wait while slow calls held their
    /// share, with slots free, says so.
    #[tokio::test(start_paused = true)]
    async fn a_slow_call_over_the_share_says_so() {
        let a = Admission::new(Limits {
            slots: 3,
            units: 100,
            share: 3,
            slow_share: 1,
            queue: 10,
        });
        let _slow = a
            .acquire(key("p", "s1").slow(true), 10, LONG)
            .await
            .unwrap();
        let refused = a
            .acquire(key("p", "s2").slow(true), 5, Duration::ZERO)
            .await;
        assert_eq!(refused.unwrap_err(), Refused::Full(Short::Slow));
        let refused = a
            .acquire(key("p", "s2").slow(true), 5, Duration::from_secs(1))
            .await;
        assert_eq!(refused.unwrap_err(), Refused::TimedOut(Short::Slow));
        // Quick calls are not held back.
        let _q = a.acquire(key("p", "q"), 5, Duration::ZERO).await.unwrap();
    }

    #[test]
    fn a_share_is_at_least_one_slot() {
        assert_eq!(Limits::share_of(16, 0.5), 8);
        assert_eq!(Limits::share_of(2, 0.5), 1);
        assert_eq!(Limits::share_of(1, 0.5), 1);
        assert_eq!(Limits::share_of(3, 0.01), 1);
        assert_eq!(Limits::share_of(3, 1.0), 3);
    }
}
