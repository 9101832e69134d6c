//! The jobs service: validation, the FIFO run queue, one task per job,
//! waiting, cancelling, recovery. This file holds the service and its
//! records; each of its concerns is a file of its own: `spawn.rs` (checks,
//! quotas and storing a new job), `run.rs` (the run queue and the run of
//! one job), `approval.rs` (a job whose call waits for a human's
//! approval), `wait.rs` (waiting and cancelling), `recover.rs` (recovery
//! and the pass over the jobs nobody runs), `shutdown.rs` (a host that
//! stops), `work_queue.rs` (the work queue a shared store holds).

use std::collections::{HashMap, HashSet};
use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Mutex, PoisonError, Weak};
use std::time::Duration;

use tokio::sync::{Semaphore, mpsc, watch};

use glovebox_ledger::jobs::{
    JobError, JobErrorInfo, JobInfo, JobPlaces, JobQuery, JobResult, JobStore, JobSummary,
    JobsConfig,
};
use glovebox_ledger::page::{Page, PageRequest};

use crate::gateway::Gateway;
use crate::manifest::MAX_WAIT_IDS;
use crate::pipeline::Admitted;
use crate::storage::{Delivery, WorkQueue};

mod approval;
mod recover;
mod run;
mod shutdown;
mod spawn;
mod wait;
mod work_queue;

/// How long [`Jobs::cancel`] waits for a running job's call to settle in
/// the session log before it returns.
const CANCEL_SETTLE: Duration = Duration::from_secs(5);

/// A job this process has queued to run or runs.
struct Live {
    /// Set to the reason to cancel it.
    cancel: watch::Sender<Option<Arc<str>>>,
    session: String,
    /// The agent principal it counts against (`quotas.jobs_per_principal`).
    principal: Option<String>,
    /// Its call runs (it left the queue).
    running: bool,
}

impl Live {
    fn new(session: &str, principal: Option<String>) -> Live {
        Live {
            cancel: watch::Sender::new(None),
            session: session.to_string(),
            principal,
            running: false,
        }
    }
}

/// The jobs a wait is for: `ids` without repeats, at most
/// [`MAX_WAIT_IDS`] of them.
pub(crate) fn wait_set(ids: &[String]) -> Result<Vec<&String>, JobError> {
    let mut seen = HashSet::with_capacity(ids.len().min(MAX_WAIT_IDS + 1));
    let mut unique = Vec::new();
    for id in ids {
        if seen.insert(id) {
            unique.push(id);
            if unique.len() > MAX_WAIT_IDS {
                return Err(JobError::BadRequest(format!(
                    "wait for at most {MAX_WAIT_IDS} jobs at a time, not more: wait for them in batches, or with `first` for whichever ends first"
                )));
            }
        }
    }
    Ok(unique)
}

/// The background jobs of one host and data dir.
pub struct Jobs {
    gateway: Gateway,
    config: JobsConfig,
    store: Arc<JobStore>,
    /// On a store several hosts share: the live jobs' places, counted in
    /// the store, so the `[quotas]` on jobs hold across the hosts (see the
    /// ledger's `jobs/places.rs`). `None` on the embedded backends, where
    /// `live` counts every job of the data dir.
    places: Option<Arc<JobPlaces>>,
    /// Admission: `max_running` permits, handed out in queue order.
    permits: Arc<Semaphore>,
    queue: mpsc::UnboundedSender<String>,
    /// Taken by the dispatcher when the first job is run.
    queue_rx: Mutex<Option<mpsc::UnboundedReceiver<String>>>,
    /// Jobs this process has queued to run or runs: their cancel switch,
    /// and whose they are (the quotas count them).
    live: Mutex<HashMap<String, Live>>,
    /// Jobs spawned by this process, admitted already: run as admitted,
    /// without checking their input again.
    admitted: Mutex<HashMap<String, Admitted>>,
    /// Bumped at every status change; waiters watch it.
    changed: watch::Sender<u64>,
    /// Set by [`Jobs::shutdown`]: queued jobs are not started any more.
    stopping: AtomicBool,
    /// This process's name in the records of the jobs it starts
    /// ([`JobInfo::runner`]).
    runner: String,
    /// On a store several hosts share: the pass that runs every third of the
    /// lease TTL over the jobs nobody runs (see [`Jobs::recover`]).
    sweeper: Mutex<Option<crate::tasks::Owned<()>>>,
    /// On a store several hosts share: the work queue every host pulls
    /// jobs from (see [`Jobs::recover`]), opened at its first use.
    work: tokio::sync::OnceCell<Option<Arc<dyn WorkQueue>>>,
    /// The queue's deliveries this process holds, by job id: kept alive
    /// while the job is live here, acknowledged once it is final.
    deliveries: Mutex<HashMap<String, Arc<dyn Delivery>>>,
    /// The tasks that pull from the queue and keep its deliveries alive.
    pulling: Mutex<Vec<crate::tasks::Owned<()>>>,
    this: Weak<Jobs>,
}

impl Jobs {
    /// The jobs of the gateway's store, run through its pipeline.
    /// `max_running` is at least 1 and at most the host's
    /// `runtime.max_concurrent_calls`.
    pub fn new(gateway: Gateway, mut config: JobsConfig) -> Arc<Jobs> {
        let cap =
            usize::try_from(gateway.host().config().runtime.max_concurrent_calls).unwrap_or(1);
        config.max_running = config.max_running.clamp(1, cap.max(1));
        config.max_wait = config.max_wait.max(Duration::from_millis(1));
        let (queue, rx) = mpsc::unbounded_channel();
        let store = Arc::new(JobStore::new(gateway.ledger().storage.clone()));
        let places = gateway
            .sessions()
            .lease_ttl()
            .map(|_| Arc::new(JobPlaces::new(gateway.ledger().storage.clone())));
        let runner = gateway.sessions().lease_holder().unwrap_or_else(|| {
            let id = uuid::Uuid::new_v4().simple().to_string();
            format!("process/{}", &id[..12])
        });
        let jobs = Arc::new_cyclic(|this| Jobs {
            permits: Arc::new(Semaphore::new(config.max_running)),
            gateway,
            config,
            store,
            places,
            queue,
            queue_rx: Mutex::new(Some(rx)),
            live: Mutex::new(HashMap::new()),
            admitted: Mutex::new(HashMap::new()),
            changed: watch::Sender::new(0),
            stopping: AtomicBool::new(false),
            runner,
            sweeper: Mutex::new(None),
            work: tokio::sync::OnceCell::new(),
            deliveries: Mutex::new(HashMap::new()),
            pulling: Mutex::new(Vec::new()),
            this: this.clone(),
        });
        // Settlements of the approvals its jobs wait for (`approval.rs`).
        let listener: Weak<dyn crate::settled::JobListener> = Arc::downgrade(&jobs) as _;
        jobs.gateway.waiters().listen(listener);
        jobs
    }

    /// The gateway its jobs run through.
    pub fn gateway(&self) -> &Gateway {
        &self.gateway
    }

    pub fn config(&self) -> &JobsConfig {
        &self.config
    }

    /// Now, by the ledger's clock.
    fn now(&self) -> u64 {
        self.gateway.sessions().clock_ms()
    }

    /// The job as stored; a final one is marked as read (its result is
    /// returned to someone: see `JobInfo::result_read`).
    pub(crate) fn status(&self, id: &str) -> Result<JobInfo, JobError> {
        self.store.read(id)
    }

    /// The job as stored, with its bodies, not marked as read (an
    /// operator's look, not the agent's wait).
    pub fn peek(&self, id: &str) -> Result<JobInfo, JobError> {
        self.store.get(id)
    }

    /// The job's record, without its bodies (as a listing shows it).
    pub(crate) fn summary(&self, id: &str) -> Result<JobSummary, JobError> {
        self.store.summary(id)
    }

    /// A page of the jobs `query` asks for, oldest first: their records
    /// without bodies (sizes and digests instead), read through the jobs'
    /// indexes (see [`JobStore::list`]).
    pub(crate) fn list_query(
        &self,
        query: &JobQuery,
        page: &PageRequest,
    ) -> Result<Page<JobSummary>, JobError> {
        self.store.list(query, page)
    }

    /// A page of the final jobs, the latest to end first.
    pub fn recent(&self, page: &PageRequest) -> Result<Page<JobSummary>, JobError> {
        self.store.recent(page)
    }

    /// The jobs of the store, live (queued or running): read from their index.
    pub fn live(&self) -> Result<Vec<JobSummary>, JobError> {
        self.store.live(self.now())
    }

    fn is_live(&self, id: &str) -> bool {
        self.live
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .contains_key(id)
    }

    /// Changes a job's record (see [`JobStore::update`]) and wakes waiters.
    async fn update(
        &self,
        id: &str,
        change: impl FnMut(&mut JobSummary) -> bool + Send + 'static,
    ) -> Result<(JobSummary, bool), JobError> {
        let store = self.store.clone();
        let id = id.to_string();
        let result = blocking(move || store.update(&id, change)).await;
        if matches!(result, Ok((_, true))) {
            self.notify();
        }
        result
    }

    fn notify(&self) {
        self.changed.send_modify(|n| *n = n.wrapping_add(1));
    }

    /// Marks every change of a job's status made by this process (a
    /// follower reads the jobs it follows again when it changes; changes
    /// made by other hosts sharing the store are not marked here).
    pub fn changes(&self) -> watch::Receiver<u64> {
        self.changed.subscribe()
    }
}

/// The result of a job whose call did not run (or whose outcome is lost):
/// only an error of `kind`.
fn failed_result(kind: &str, message: String) -> JobResult {
    JobResult {
        output: None,
        error: Some(JobErrorInfo {
            kind: kind.to_string(),
            message,
        }),
        stdout: Default::default(),
        stderr: Default::default(),
        metering: Default::default(),
    }
}

/// Runs blocking store work off the async threads.
async fn blocking<T: Send + 'static>(
    f: impl FnOnce() -> Result<T, JobError> + Send + 'static,
) -> Result<T, JobError> {
    crate::tasks::blocking(f, |why| {
        JobError::Storage(crate::storage::StorageError::Io(format!(
            "the job store: {why}"
        )))
    })
    .await
}
