//! The jobs service: validation, the FIFO run queue, one task per job,
//! waiting, cancelling, recovery.

use std::collections::{BTreeSet, HashMap, HashSet};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError, Weak};
use std::time::Duration;

use tokio::sync::{OwnedSemaphorePermit, Semaphore, mpsc, watch};

use glovebox_ledger::jobs::{
    JobError, JobErrorInfo, JobInfo, JobPlaces, JobQuery, JobResult, JobStatus, JobStore,
    JobSummary, JobsConfig, PlaceScope, ResultSummary, WaitMode, WaitOutcome,
};
use glovebox_ledger::page::{Page, PageRequest};

use crate::call::CallReport;
use crate::error::CallError;
use crate::gateway::Gateway;
use crate::manifest::{MAX_WAIT_IDS, QuotaLimit};
use crate::pipeline::{Admitted, call_metering};
use crate::session::SessionError;
use crate::storage::{Delivery, StorageError, WorkQueue};
use crate::watermark::Watermark;

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

/// Records that the host stopped while job `j` was running (`why` is
/// appended to the message): re-queued if its tool is idempotent, else
/// `interrupted`. `false` (nothing changed) if it was not running. The one
/// rule for a restart's recovery and a shutdown's grace period alike.
fn stopped_running(j: &mut JobSummary, now: u64, why: &str) -> bool {
    if j.status != JobStatus::Running {
        return false;
    }
    let message = format!(
        "the host stopped while the job was running (attempt {}){why}",
        j.attempts
    );
    let (status, message) = if j.idempotent {
        (
            JobStatus::Queued,
            format!("{message}; re-queued: its tool is idempotent"),
        )
    } else {
        (
            JobStatus::Interrupted,
            format!(
                "{message}; not re-run: its tool is not idempotent, so it may have had effects (spawn it again if it is safe)"
            ),
        )
    };
    j.status = status;
    if status.is_final() {
        j.finished_at_ms = Some(now);
    }
    j.result = Some(ResultSummary::of(&failed_result("interrupted", message), j.attempts).0);
    true
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

/// Who else may own a job, as this process sees it at one moment: what
/// the pass over the stored jobs and the work queue's deliveries both ask.
struct Owners {
    sessions: Arc<crate::session::Sessions>,
    /// This process's runner name.
    me: String,
    now: u64,
    /// The lease TTL, on a shared store.
    ttl_ms: Option<u64>,
}

impl Owners {
    /// Whether `job` (not final) is another live host's on a shared store:
    /// that host drives the job's session (holds its lease), or started
    /// the job less than a TTL ago (its first append, which takes the
    /// lease, may be on its way).
    fn anothers(&self, job: &JobSummary) -> Result<bool, JobError> {
        let Some(ttl_ms) = self.ttl_ms else {
            return Ok(false);
        };
        let just_started = job.status == JobStatus::Running
            && job.runner.as_deref() != Some(self.me.as_str())
            && self.now.saturating_sub(job.started_at_ms.unwrap_or(0)) < ttl_ms;
        Ok(just_started || self.sessions.leased_elsewhere(&job.session)?)
    }
}

/// A `[quotas]` refusal of a job.
fn quota(limit: QuotaLimit, what: String) -> JobError {
    JobError::Session(SessionError::Quota {
        limit,
        what,
        fix: "wait for jobs to finish (`job_wait`) or cancel some, or ask an operator to raise the quota".into(),
    })
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
        Arc::new_cyclic(|this| Jobs {
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
        })
    }

    /// The gateway its jobs run through.
    pub fn gateway(&self) -> &Gateway {
        &self.gateway
    }

    pub fn config(&self) -> &JobsConfig {
        &self.config
    }

    /// Run at host start, before jobs are spawned: queued jobs are queued to
    /// run again; jobs left running by a process that stopped become
    /// `interrupted`, and are re-queued (to run again) only if their tool is
    /// idempotent. Returns those jobs as they are now.
    ///
    /// On a store several hosts share (session leases: `[storage] backend =
    /// "nats"`), a job is another host's while that host drives its session
    /// (holds the session's lease) or started it less than a lease TTL ago
    /// (its first append, which takes the lease, may be on its way): those
    /// are left alone. A job whose host died is this host's once the
    /// session's lease expired. Since a host may die at any time, the same
    /// pass then runs every third of the lease TTL for as long as `self`
    /// lives; and since every start is a compare-and-set of the record
    /// ([`JobStore::update`]), of the hosts finding one queued job exactly
    /// one runs it.
    ///
    /// There, too, every job spawned or queued is pushed on the store's work
    /// queue (`jobs`, a JetStream work-queue stream), and from here on this
    /// process pulls from it whenever it has a slot free and nothing waiting
    /// for one: a job reaches whichever host is free at once, not at the
    /// next pass, and the spawning principals take turns. A delivery is this host's while the job is live here
    /// (kept alive every third of its ack wait, the lease TTL) and is
    /// acknowledged once the job is final; a host that dies holding one
    /// stops keeping it alive, so it comes back to another host after the
    /// ack wait, which then finds the job's record `running` under a
    /// session lease that expired and applies the same rules as the pass.
    /// The pass stays, for the jobs whose message never made it to the
    /// queue (the host died between storing the job and pushing it).
    pub async fn recover(self: &Arc<Self>) -> Result<Vec<JobSummary>, JobError> {
        let recovered = self.sweep().await?;
        if let Some(queue) = self.work_queue().await? {
            self.start_pulling(queue);
        }
        let sessions = self.gateway.sessions();
        if let Some(period) = sessions.lease_renewal_period() {
            let this = Arc::downgrade(self);
            let pass = crate::tasks::every(period.max(Duration::from_millis(100)), move || {
                let this = this.clone();
                async move {
                    let Some(jobs) = this.upgrade() else { return };
                    if jobs.stopping.load(Ordering::SeqCst) {
                        return;
                    }
                    match jobs.sweep().await {
                        Ok(found) if !found.is_empty() => {
                            tracing::info!(
                                jobs = found.len(),
                                "took over background jobs nobody ran"
                            );
                        }
                        Ok(_) => {}
                        Err(e) => {
                            tracing::warn!(error = %e, "the pass over unrun background jobs failed")
                        }
                    }
                }
            });
            *self.sweeper.lock().unwrap_or_else(PoisonError::into_inner) = Some(pass);
        }
        Ok(recovered)
    }

    /// One pass of [`Jobs::recover`]: the stored jobs that are not final and
    /// not this process's to run already, minus other live hosts' (on a
    /// shared store), queued to run here; those left running by a host that
    /// stopped are ended or re-queued first.
    ///
    /// With a work queue, a queued job reaches a host through the queue, in
    /// its spawner's turn. The pass takes only queued jobs the queue may
    /// have lost (queued more than a TTL ago: their host may have died
    /// between storing and pushing them), the oldest first and no more than
    /// `max_running` a pass, so it cannot gather a backlog into this host's
    /// own first-in, first-out queue.
    async fn sweep(self: &Arc<Self>) -> Result<Vec<JobSummary>, JobError> {
        let has_queue = matches!(self.work_queue().await, Ok(Some(_)));
        let queued_budget = has_queue.then_some(self.config.max_running);
        let (store, owners) = (self.store.clone(), self.owners());
        let jobs = blocking(move || -> Result<Vec<JobSummary>, JobError> {
            let mut orphans = Vec::new();
            let mut lost = Vec::new();
            // The live jobs only: their index, never the finished ones.
            for job in store.live(owners.now)? {
                if job.status.is_final() || owners.anothers(&job)? {
                    continue;
                }
                match (job.status, queued_budget, owners.ttl_ms) {
                    (JobStatus::Queued, Some(_), Some(ttl_ms)) => {
                        if owners.now.saturating_sub(job.created_at_ms) >= ttl_ms {
                            lost.push(job);
                        }
                    }
                    _ => orphans.push(job),
                }
            }
            lost.sort_by_key(|j| j.created_at_ms);
            orphans.extend(lost.into_iter().take(queued_budget.unwrap_or(0)));
            Ok(orphans)
        })
        .await?;
        let mut recovered = Vec::new();
        for job in jobs {
            if let Some(job) = self.take_over(job).await? {
                recovered.push(job);
            }
        }
        Ok(recovered)
    }

    /// Takes `job`, found in the store with no live host of its own, to run
    /// here: a queued one is queued here; one left running by a host that
    /// stopped is ended or re-queued first ([`stopped_running`]). Returns
    /// it as it is now, `None` if there was nothing to take (live here
    /// already, or changed meanwhile).
    async fn take_over(&self, job: JobSummary) -> Result<Option<JobSummary>, JobError> {
        if self.is_live(&job.id) {
            return Ok(None);
        }
        match job.status {
            JobStatus::Queued => {
                self.start(&job);
                Ok(Some(job))
            }
            JobStatus::Running => {
                let now = self.now();
                let why = match &job.runner {
                    Some(runner) if *runner != self.runner => format!(" on `{runner}`"),
                    _ => String::new(),
                };
                let (job, changed) = self
                    .update(&job.id, move |j| stopped_running(j, now, &why))
                    .await?;
                if !changed {
                    return Ok(None);
                }
                tracing::warn!(job = %job.id, tool = %job.tool, status = %job.status, "job was running when its host stopped");
                if job.status == JobStatus::Queued {
                    self.start(&job);
                }
                Ok(Some(job))
            }
            _ => Ok(None),
        }
    }

    /// The pipeline's first stage for a job: a bad request is refused before
    /// anything is queued or logged.
    pub(crate) fn admit(&self, tool: &str, input: &str) -> Result<Admitted, JobError> {
        self.gateway
            .admit(tool, input)
            .map_err(|e| JobError::BadRequest(e.to_string()))
    }

    /// Persists an admitted call as a queued job of `session`.
    pub(crate) async fn persist(
        &self,
        session: &str,
        call: &Admitted,
    ) -> Result<JobInfo, JobError> {
        let job = self.new_job(session, call, None).await?;
        self.store_job(&job).await?;
        self.push(&job.id, job.by.as_deref()).await;
        Ok(job)
    }

    /// The record of a new queued job of `session` (a live one), not stored
    /// yet; its bytes count against agent `principal`'s quota, if any.
    async fn new_job(
        &self,
        session: &str,
        call: &Admitted,
        principal: Option<&str>,
    ) -> Result<JobInfo, JobError> {
        // Below the disk watermark no job is queued (nor stored).
        Watermark::of(self.gateway.host().config())
            .check()
            .map_err(|reason| JobError::Session(SessionError::LowDisk(reason)))?;
        let sessions = self.gateway.sessions().clone();
        let key = session.to_string();
        let state = blocking(move || sessions.show(&key).map_err(JobError::from)).await?;
        if !state.header.status.is_live() {
            return Err(JobError::BadRequest(format!(
                "session {} is {}: jobs run in live sessions only",
                state.label(),
                state.header.status
            )));
        }
        Ok(JobInfo {
            session_name: state.header.name.clone(),
            by: Some(crate::session::actor::current().to_string()),
            result_read: Some(false),
            owner: Some(state.owner_name().to_string()),
            charged_to: principal.map(str::to_string),
            ..JobInfo::queued(
                new_job_id(),
                state.header.id.clone(),
                call.name(),
                call.input(),
                call.info().idempotent,
                creation_ms(self.now()),
            )
        })
    }

    /// Stores a new job, its bytes counted against its `charged_to`
    /// (refused past `quotas.job_bytes_per_principal`, nothing stored).
    async fn store_job(&self, job: &JobInfo) -> Result<(), JobError> {
        let store = self.store.clone();
        let stored = job.clone();
        let quota = self
            .gateway
            .host()
            .config()
            .quotas
            .limit("job_bytes_per_principal");
        blocking(move || store.create(&stored, quota)).await?;
        self.notify();
        Ok(())
    }

    /// Queues an admitted call in `session` and returns the job at once; it
    /// runs when a slot is free. Held to `quotas.jobs_per_session` and, for
    /// an agent `principal`, to `quotas.jobs_per_principal`: the job's
    /// place among the live jobs is taken before it is stored, so two
    /// spawns cannot both pass the last place.
    pub(crate) async fn spawn_counted(
        self: &Arc<Self>,
        session: &str,
        call: Admitted,
        principal: Option<&str>,
    ) -> Result<JobInfo, JobError> {
        let job = self.new_job(session, &call, principal).await?;
        self.reserve(&job, principal)?;
        let placed = match self.take_places(&job, principal).await {
            Ok(()) => self.store_job(&job).await,
            Err(e) => Err(e),
        };
        if let Err(e) = placed {
            self.live
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .remove(&job.id);
            self.give_back_places(&job.id, &job.session, principal.map(str::to_string))
                .await;
            return Err(e);
        }
        self.admitted
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(job.id.clone(), call);
        self.queue_up(&job.id);
        // On a shared store: should this host die before the job ends, its
        // message comes back to another host.
        self.push(&job.id, job.by.as_deref()).await;
        Ok(job)
    }

    /// Takes a place among the live jobs of this process for `job`, or
    /// refuses it past a quota.
    fn reserve(&self, job: &JobInfo, principal: Option<&str>) -> Result<(), JobError> {
        let host = self.gateway.host();
        let quotas = &host.config().quotas;
        let mut live = self.live.lock().unwrap_or_else(PoisonError::into_inner);
        let of_session = live.values().filter(|l| l.session == job.session).count() as u64;
        if of_session >= quotas.jobs_per_session {
            return Err(quota(
                quotas.limit("jobs_per_session"),
                format!("session {} already has {of_session} live jobs", job.session),
            ));
        }
        if let Some(principal) = principal {
            let of_principal = live
                .values()
                .filter(|l| l.principal.as_deref() == Some(principal))
                .count() as u64;
            if of_principal >= quotas.jobs_per_principal {
                return Err(quota(
                    quotas.limit("jobs_per_principal"),
                    format!("principal `{principal}` already has {of_principal} live jobs"),
                ));
            }
        }
        live.insert(
            job.id.clone(),
            Live::new(&job.session, principal.map(str::to_string)),
        );
        Ok(())
    }

    /// On a store several hosts share, takes `job`'s places among the live
    /// jobs of its session and of `principal` in the store, or refuses it
    /// past a quota: what [`Jobs::reserve`] checks for this host, checked
    /// for all of them.
    async fn take_places(&self, job: &JobInfo, principal: Option<&str>) -> Result<(), JobError> {
        let Some(places) = self.places.clone() else {
            return Ok(());
        };
        let quotas = self.gateway.host().config().quotas.clone();
        let (id, session, principal) = (
            job.id.clone(),
            job.session.clone(),
            principal.map(str::to_string),
        );
        let now = self.now();
        blocking(move || {
            if let Err(count) = places.take(
                PlaceScope::Session(&session),
                &id,
                quotas.jobs_per_session,
                now,
            )? {
                return Err(quota(
                    quotas.limit("jobs_per_session"),
                    format!("session {session} already has {count} live jobs on the hosts sharing this store"),
                ));
            }
            if let Some(principal) = &principal
                && let Err(count) = places.take(
                    PlaceScope::Principal(principal),
                    &id,
                    quotas.jobs_per_principal,
                    now,
                )?
            {
                places.give_back(PlaceScope::Session(&session), &id)?;
                return Err(quota(
                    quotas.limit("jobs_per_principal"),
                    format!("principal `{principal}` already has {count} live jobs on the hosts sharing this store"),
                ));
            }
            Ok(())
        })
        .await
    }

    /// Gives back job `id`'s places (it ended, or was never stored). Best
    /// effort: a place left behind is dropped at a later take, once the
    /// job's record says it ended.
    async fn give_back_places(&self, id: &str, session: &str, principal: Option<String>) {
        let Some(places) = self.places.clone() else {
            return;
        };
        let (id, session) = (id.to_string(), session.to_string());
        let given = blocking(move || {
            places.give_back(PlaceScope::Session(&session), &id)?;
            if let Some(principal) = &principal {
                places.give_back(PlaceScope::Principal(principal), &id)?;
            }
            Ok::<_, JobError>(())
        })
        .await;
        if let Err(e) = given {
            tracing::warn!(error = %e, "a job's places could not be given back; a later spawn drops them");
        }
    }

    /// Who else may own a job, now.
    fn owners(&self) -> Owners {
        let sessions = self.gateway.sessions().clone();
        let ttl_ms = sessions
            .lease_ttl()
            .map(|ttl| u64::try_from(ttl.as_millis()).unwrap_or(u64::MAX));
        Owners {
            sessions,
            me: self.runner.clone(),
            now: self.now(),
            ttl_ms,
        }
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

    /// Waits until every job (`All`) or one of them (`First`) is final, or
    /// the timeout passes: `None` waits `default_wait`, and no wait is longer
    /// than `max_wait`. Jobs nobody runs (queued in a data dir no process
    /// runs jobs from) stay pending.
    pub(crate) async fn wait(
        &self,
        ids: &[String],
        mode: WaitMode,
        timeout: Option<Duration>,
    ) -> Result<WaitOutcome, JobError> {
        if ids.is_empty() {
            return Err(JobError::BadRequest(
                "wait for which jobs? give job ids".into(),
            ));
        }
        let unique = wait_set(ids)?;
        let timeout = timeout
            .unwrap_or(self.config.default_wait)
            .min(self.config.max_wait);
        let deadline = tokio::time::Instant::now() + timeout;
        // On a store several hosts share, a job may end on another host,
        // which does not wake this one: look again every so often.
        let poll = self
            .gateway
            .sessions()
            .lease_ttl()
            .map(|_| SHARED_WAIT_POLL);
        let mut changes = self.changed.subscribe();
        loop {
            changes.borrow_and_update();
            // Looked at without their bodies; read with them once the wait ends.
            let mut ended = 0;
            for id in &unique {
                if self.store.summary(id)?.status.is_final() {
                    ended += 1;
                }
            }
            let finished = match mode {
                WaitMode::All => ended == unique.len(),
                WaitMode::First => ended > 0,
            };
            if finished {
                return self.outcome_of(&unique, false);
            }
            let wake = poll.map_or(deadline, |poll| {
                deadline.min(tokio::time::Instant::now() + poll)
            });
            // `changed` cannot fail: this service holds the sender.
            if tokio::time::timeout_at(wake, changes.changed())
                .await
                .is_err()
                && tokio::time::Instant::now() >= deadline
            {
                return self.outcome_of(&unique, true);
            }
        }
    }

    /// What a wait for `ids` answers: the final jobs (marked as read) and
    /// the others, with their bodies.
    fn outcome_of(&self, ids: &[&String], timed_out: bool) -> Result<WaitOutcome, JobError> {
        let mut done = Vec::new();
        let mut pending = Vec::new();
        for id in ids {
            let job = self.status(id)?;
            if job.status.is_final() {
                done.push(job);
            } else {
                pending.push(job);
            }
        }
        Ok(WaitOutcome {
            done,
            pending,
            timed_out,
        })
    }

    /// Cancels a job. A queued job never runs. A running one is stopped: its
    /// instance is dropped and its call finishes in the session log with the
    /// outcome `cancelled` (awaited for a few seconds; a tool computing
    /// without pause stops at the latest at its deadline). A final job is
    /// returned as it is.
    pub(crate) async fn cancel(&self, id: &str) -> Result<JobInfo, JobError> {
        let now = self.now();
        let was_running = Arc::new(AtomicBool::new(false));
        let running = was_running.clone();
        let (job, changed) = self
            .update(id, move |j| {
                if j.status.is_final() {
                    return false;
                }
                running.store(j.status == JobStatus::Running, Ordering::SeqCst);
                j.status = JobStatus::Cancelled;
                j.finished_at_ms = Some(now);
                true
            })
            .await?;
        if !changed {
            return self.peek(id);
        }
        if !was_running.load(Ordering::SeqCst) {
            // A queued job ends here: its places go back now. A running
            // one's go back when its task stores the outcome.
            self.give_back_places(id, &job.session, job.by.clone())
                .await;
        }
        let mut changes = self.changed.subscribe();
        let switch = {
            let mut live = self.live.lock().unwrap_or_else(PoisonError::into_inner);
            if was_running.load(Ordering::SeqCst) {
                live.get(id).map(|l| l.cancel.clone())
            } else {
                // Queued here (or nowhere): it never runs; the dispatcher skips it.
                live.remove(id);
                self.admitted
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .remove(id);
                None
            }
        };
        let Some(switch) = switch else {
            self.release(id).await;
            return self.peek(id);
        };
        switch.send_replace(Some(Arc::from("its background job was cancelled")));
        // Its task leaves `live` once the call is settled in the session log.
        let settled = async {
            loop {
                changes.borrow_and_update();
                if !self.is_live(id) || changes.changed().await.is_err() {
                    return;
                }
            }
        };
        if tokio::time::timeout(CANCEL_SETTLE, settled).await.is_err() {
            tracing::warn!(job = %id, "cancelled job still winding down");
        }
        self.status(id)
    }

    /// For a host that stops: no queued job starts any more (they stay
    /// queued in the store, for the next start); the running ones get until
    /// `grace` to finish. Those still running then are stopped and recorded
    /// as a restart would find them: re-queued if their tool is idempotent,
    /// `interrupted` otherwise; their calls end in the session log, cancelled
    /// with the reason. Returns the jobs it stopped.
    pub async fn shutdown(&self, grace: Duration) -> Vec<JobSummary> {
        self.stopping.store(true, Ordering::SeqCst);
        let deadline = tokio::time::Instant::now() + grace;
        let mut changes = self.changed.subscribe();
        loop {
            changes.borrow_and_update();
            if self.running().is_empty()
                || tokio::time::timeout_at(deadline, changes.changed())
                    .await
                    .is_err()
            {
                break;
            }
        }
        let mut stopped = Vec::new();
        for (id, switch) in self.running() {
            let now = self.now();
            let grace_text = humantime::format_duration(grace).to_string();
            let changed = self
                .update(&id, move |j| {
                    let why = format!(
                        ": it did not finish within the shutdown grace period of {grace_text}"
                    );
                    stopped_running(j, now, &why)
                })
                .await;
            match changed {
                Ok((job, true)) => {
                    tracing::warn!(job = %job.id, tool = %job.tool, status = %job.status, "stopping: job still running after the grace period");
                    switch.send_replace(Some(Arc::from(
                        "the host stopped before its background job finished",
                    )));
                    stopped.push(job);
                }
                Ok(_) => {}
                Err(e) => {
                    tracing::error!(job = %id, error = %e, "stopping: the job's record could not be updated; the next start marks it")
                }
            }
        }
        // Their calls settle in the session log (the instance is dropped at once).
        let settle = tokio::time::Instant::now() + CANCEL_SETTLE;
        while !stopped.iter().all(|j| !self.is_live(&j.id)) {
            if tokio::time::timeout_at(settle, changes.changed())
                .await
                .is_err()
            {
                break;
            }
        }
        // What this host still holds from the work queue goes back to the
        // other hosts now, not after the ack wait; and so do the sessions of
        // the jobs it hands back (re-queued, or never started here), or the
        // host that pulls one would find its session driven here, hand the
        // job back and wait for the lease to expire.
        let requeued: Vec<&JobSummary> = stopped
            .iter()
            .filter(|j| j.status == JobStatus::Queued)
            .collect();
        let mut handed_back: BTreeSet<String> =
            requeued.iter().map(|j| j.session.clone()).collect();
        handed_back.extend(
            self.live
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .values()
                .filter(|l| !l.running)
                .map(|l| l.session.clone()),
        );
        let sessions = self.gateway.sessions().clone();
        let _ = blocking(move || {
            for session in &handed_back {
                sessions.release_lease(session);
            }
            Ok(())
        })
        .await;
        // A re-queued job's first message may be out of reach for a while
        // (handed back by a host that pulled it while it ran here): a new
        // one reaches a free host at once. Starting is a compare-and-set, so
        // two messages still run it once.
        for job in requeued {
            self.push(&job.id, job.by.as_deref()).await;
        }
        let held: Vec<String> = self
            .deliveries
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .keys()
            .cloned()
            .collect();
        for id in held {
            self.release(&id).await;
        }
        stopped
    }

    /// The jobs this process runs now, with their cancel switch.
    fn running(&self) -> Vec<(String, watch::Sender<Option<Arc<str>>>)> {
        self.live
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .iter()
            .filter(|(_, l)| l.running)
            .map(|(id, l)| (id.clone(), l.cancel.clone()))
            .collect()
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

    /// Puts `job`, found in the store, in the run queue of this process.
    fn start(&self, job: &JobSummary) {
        {
            let mut live = self.live.lock().unwrap_or_else(PoisonError::into_inner);
            if live.contains_key(&job.id) {
                return;
            }
            live.insert(job.id.clone(), Live::new(&job.session, job.by.clone()));
        }
        self.queue_up(&job.id);
    }

    /// Hands job `id`, live already, to the dispatcher.
    fn queue_up(&self, id: &str) {
        let rx = self
            .queue_rx
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
        if let Some(rx) = rx {
            crate::tasks::host_task(dispatch(self.this.clone(), rx, self.permits.clone()));
        }
        // The receiver lives as long as the dispatcher, which lives as long as `self`.
        let _ = self.queue.send(id.to_string());
    }

    /// Runs job `id` with its admission `permit`.
    async fn run(self: Arc<Self>, id: String, permit: OwnedSemaphorePermit) {
        if self.stopping.load(Ordering::SeqCst) {
            // The host stops: the job stays queued in the store, for the
            // next process that runs jobs (on a shared store, another host
            // gets its message now).
            self.live
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .remove(&id);
            self.release(&id).await;
            return;
        }
        let cancel = match self
            .live
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(&id)
        {
            Some(live) => live.cancel.subscribe(),
            None => return,
        };
        let now = self.now();
        let mut waited = Duration::ZERO;
        let started = loop {
            let runner = self.runner.clone();
            let started = self
                .update(&id, move |j| {
                    if j.status == JobStatus::Running
                        && j.started_at_ms == Some(now)
                        && j.runner.as_deref() == Some(runner.as_str())
                    {
                        // This start's own write, which reached the store
                        // though its flush was not acknowledged: it runs.
                        return true;
                    }
                    if j.status != JobStatus::Queued {
                        // Started by another host sharing the store, or
                        // cancelled: not this process's to run.
                        return false;
                    }
                    j.status = JobStatus::Running;
                    j.started_at_ms = Some(now);
                    j.attempts += 1;
                    j.runner = Some(runner.clone());
                    true
                })
                .await;
            match started {
                Err(JobError::Storage(StorageError::Io(ref e))) if waited < OUTCOME_PATIENCE => {
                    // The store failed (it is reopened once there is room):
                    // the record may say `running` or still `queued`. Try
                    // again then, so the job neither stays `running` without
                    // running nor waits for a restart to start.
                    tracing::warn!(job = %id, error = %e, "the job could not be started yet; trying again");
                    tokio::time::sleep(crate::storage::RETRY).await;
                    waited += crate::storage::RETRY;
                    if self.stopping.load(Ordering::SeqCst) {
                        break started;
                    }
                }
                other => break other,
            }
        };
        if let Ok((job, true)) = started {
            if let Some(live) = self
                .live
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .get_mut(&id)
            {
                live.running = true;
            }
            let admitted = self
                .admitted
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .remove(&id);
            // A job this process did not spawn (recovered, or queued by the
            // CLI) is admitted now: its tool or config may have changed.
            let call = match admitted {
                Some(call) => Ok(call),
                None => self.admit_stored(&job).await,
            };
            let report = match call {
                Ok(call) => self.run_as_spawner(&job, call, cancel).await,
                Err(e) => Ok(CallReport::refused(&job.tool, e)),
            };
            let (status, result) = outcome(report);
            // The slot is not needed to store the outcome, which may wait
            // for a failed store to be reopened.
            drop(permit);
            let ended = self.store_outcome(&job, status, result).await;
            let left = self
                .live
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .remove(&id);
            self.notify();
            if let Some(left) = left
                && ended
            {
                self.give_back_places(&id, &left.session, left.principal)
                    .await;
            }
            self.release(&id).await;
            return;
        } else if let Err(e) = started {
            tracing::error!(job = %id, error = %e, "the job could not be started");
        }
        drop(permit);
        self.live
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(&id);
        // Not started here (another host did, or it was cancelled): what was
        // admitted for it goes too.
        self.admitted
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(&id);
        self.notify();
        self.release(&id).await;
    }

    /// Runs `call`, job `job`'s, as whoever spawned it is now. An agent's
    /// job is that agent's call, checked as one when it starts (its session
    /// still its own, the session's role within the agent's roles now), so
    /// a reload that demoted or removed the agent while the job waited in
    /// the queue reaches it too (threat 52). An operator's job runs as the
    /// operator who spawned it (its events are that operator's), and so does
    /// an embedder's agent where the config declares no principal.
    async fn run_as_spawner(
        &self,
        job: &JobSummary,
        call: Admitted,
        cancel: crate::pipeline::Cancel,
    ) -> Result<CallReport, SessionError> {
        let job_id = Some(job.id.clone());
        if let Some(agent) = &job.charged_to {
            match self.gateway.principals().current(agent) {
                Some(principal) => {
                    return self
                        .gateway
                        .scope(&principal)
                        .call(&job.session, call, job_id, Some(cancel))
                        .await;
                }
                None if self.gateway.principals().declared() => {
                    return Err(SessionError::NotAllowed(format!(
                        "principal `{agent}`, which queued job {}, is no longer declared (a reload removed it), so the job does not run: an operator spawns it again if it should run",
                        job.id
                    )));
                }
                // No principal is declared: an embedder's own agent, which
                // no config can demote; it runs as it was spawned.
                None => {}
            }
        }
        let run = self.gateway.call(&job.session, call, job_id, Some(cancel));
        match job.by.clone() {
            Some(by) => crate::tasks::acting(by, run).await,
            None => run.await,
        }
    }

    /// Admits the call of `job`, stored by another process (recovered, or
    /// queued by the CLI): its tool or config may have changed since.
    async fn admit_stored(&self, job: &JobSummary) -> Result<Admitted, CallError> {
        let (store, id) = (self.store.clone(), job.id.clone());
        match blocking(move || store.input(&id)).await {
            Ok(input) => self.gateway.admit(&job.tool, &input),
            Err(e) => Err(CallError::InvalidInput {
                tool: job.tool.clone(),
                reason: format!("its input could not be read: {e}"),
            }),
        }
    }

    /// Stores what job `job`'s run (attempt `job.attempts`) ended with:
    /// its result apart, then its record. Keeps trying while the store is
    /// failed (it is reopened once there is room) for up to
    /// [`OUTCOME_PATIENCE`], rather than leave the record `running` until
    /// a restart. Returns whether the record is final now.
    async fn store_outcome(&self, job: &JobSummary, status: JobStatus, result: JobResult) -> bool {
        let id = job.id.clone();
        let now = self.now();
        let mut waited = Duration::ZERO;
        // Its result apart first (once: its bytes are counted once).
        let staged = loop {
            let (store, job, result) = (self.store.clone(), job.clone(), result.clone());
            match blocking(move || store.stage_result(&job, job.attempts, &result)).await {
                Ok(staged) => break staged,
                Err(JobError::Storage(StorageError::Io(e))) if waited < OUTCOME_PATIENCE => {
                    // A failed store is reopened once there is room (see
                    // `glovebox_store::Reopening`): try again then.
                    tracing::warn!(job = %id, error = %e, "the job's result could not be stored yet; trying again");
                    tokio::time::sleep(crate::storage::RETRY).await;
                    waited += crate::storage::RETRY;
                }
                Err(e) => {
                    tracing::error!(job = %id, error = %e, "the job's result could not be stored; the next start's recovery ends its record");
                    return false;
                }
            }
        };
        loop {
            let summary = staged.summary.clone();
            let finished = self
                .update(&id, move |j| {
                    if j.status == JobStatus::Running {
                        j.status = status;
                        j.finished_at_ms = Some(now);
                        j.result = Some(summary.clone());
                        true
                    } else if j.status == JobStatus::Cancelled && j.kept().is_none() {
                        // Cancelled while running: keep what the call says of itself.
                        j.result = Some(summary.clone());
                        true
                    } else {
                        false
                    }
                })
                .await;
            match finished {
                Err(JobError::Storage(StorageError::Io(e))) if waited < OUTCOME_PATIENCE => {
                    tracing::warn!(job = %id, error = %e, "the job's outcome could not be stored yet; trying again");
                    tokio::time::sleep(crate::storage::RETRY).await;
                    waited += crate::storage::RETRY;
                }
                Err(e) => {
                    // Its result stays stored and counted: the record may
                    // have taken it (an error says nothing of the write).
                    tracing::error!(job = %id, error = %e, "the job's outcome could not be stored; the next start's recovery ends its record");
                    return false;
                }
                Ok((record, _)) => {
                    let ended = record.status.is_final();
                    let store = self.store.clone();
                    let _ = blocking(move || {
                        store.settle_result(&staged, &record);
                        Ok(())
                    })
                    .await;
                    return ended;
                }
            }
        }
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
}

/// How often a wait on a store several hosts share reads the jobs again.
const SHARED_WAIT_POLL: Duration = Duration::from_millis(250);

/// How long a job keeps trying to store its start, and after it ran its
/// outcome, in a failed store (which is reopened once there is room) before
/// it gives up.
const OUTCOME_PATIENCE: Duration = Duration::from_secs(600);

/// Hands queued jobs permits in queue order and starts their tasks.
async fn dispatch(
    jobs: Weak<Jobs>,
    mut queue: mpsc::UnboundedReceiver<String>,
    permits: Arc<Semaphore>,
) {
    while let Some(id) = queue.recv().await {
        let Ok(permit) = permits.clone().acquire_owned().await else {
            return;
        };
        let Some(jobs) = jobs.upgrade() else { return };
        // A task of its own on the multi-threaded runtime: jobs use every core.
        crate::tasks::host_task(jobs.run(id, permit));
    }
}

/// A job's status and result from its call's report.
fn outcome(report: Result<CallReport, SessionError>) -> (JobStatus, JobResult) {
    let report = match report {
        Ok(report) => report,
        Err(e) => {
            return (JobStatus::Failed, failed_result("session", e.to_string()));
        }
    };
    let metering = call_metering(&report.metering);
    let (status, output, error) = match report.outcome {
        Ok(value) => (JobStatus::Completed, Some(value), None),
        Err(e) => {
            let status = match e {
                CallError::Timeout { .. } => JobStatus::Timeout,
                CallError::Cancelled { .. } => JobStatus::Cancelled,
                _ => JobStatus::Failed,
            };
            let info = JobErrorInfo {
                kind: e.kind().to_string(),
                message: e.to_string(),
            };
            (status, None, Some(info))
        }
    };
    let result = JobResult {
        output,
        error,
        stdout: report.stdout,
        stderr: report.stderr,
        metering,
    };
    (status, result)
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

/// `job-` and 12 hex digits.
fn new_job_id() -> String {
    let id = uuid::Uuid::new_v4().simple().to_string();
    format!("job-{}", &id[..12])
}

/// `now`, but later than any job this process created before, so jobs list
/// in the order they were created.
fn creation_ms(now: u64) -> u64 {
    use std::sync::atomic::AtomicU64;
    static LAST: AtomicU64 = AtomicU64::new(0);
    let prev = LAST
        .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |last| {
            Some(now.max(last + 1))
        })
        .unwrap_or(now);
    now.max(prev + 1)
}
