//! A new job: its request checked, its place among the live jobs taken
//! (the `[quotas]` on jobs), its record stored and queued.

use std::sync::atomic::Ordering;
use std::sync::{Arc, PoisonError};

use glovebox_ledger::jobs::{JobError, JobInfo, PlaceScope};

use super::{Jobs, Live, blocking};
use crate::manifest::QuotaLimit;
use crate::pipeline::Admitted;
use crate::session::SessionError;
use crate::watermark::Watermark;

/// A `[quotas]` refusal of a job.
fn quota(limit: QuotaLimit, what: String) -> JobError {
    JobError::Session(SessionError::Quota {
        limit,
        what,
        fix: "wait for jobs to finish (`job_wait`) or cancel some, or ask an operator to raise the quota".into(),
    })
}

impl Jobs {
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
            .map_err(|reason| JobError::Session(SessionError::LowDisk(reason.into())))?;
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
    pub(super) async fn give_back_places(
        &self,
        id: &str,
        session: &str,
        principal: Option<String>,
    ) {
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
