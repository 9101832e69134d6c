//! The host's own work while it serves, started from one place: the jobs
//! runner (re-queueing the jobs a previous run left), the detector's sweeps,
//! the notification worker, the scheduler and the event triggers. Every
//! front end that serves (MCP over stdio or HTTP, and whatever serves next)
//! starts [`Background`] and holds it; dropping it stops the workers.
//!
//! Each worker starts only when the config asks for it at start (a sweep
//! interval, `[[notify]]` targets, `[[schedule]]`s, event triggers); what a
//! reload changes in them counts from their next look.

use std::sync::Arc;

use anyhow::Context;

use crate::gateway::Gateway;
use crate::jobs::{Jobs, JobsConfig};
use crate::tasks;

/// The jobs runner and the workers of one serving host; they stop when it
/// is dropped.
pub struct Background {
    jobs: Arc<Jobs>,
    _workers: Option<tasks::Owned<()>>,
}

impl Background {
    /// Starts the jobs runner of `gateway` with `jobs`, re-queueing what a
    /// previous run left, then the workers its config asks for.
    pub async fn start(gateway: &Gateway, jobs: JobsConfig) -> anyhow::Result<Background> {
        let jobs = Jobs::new(gateway.clone(), jobs);
        let recovered = jobs
            .recover()
            .await
            .context("cannot recover the background jobs")?;
        if !recovered.is_empty() {
            tracing::info!(jobs = recovered.len(), "recovered background jobs");
        }
        let workers: Vec<_> = [
            sweeps(gateway),
            notify(gateway),
            crate::schedule::start(gateway),
            crate::triggers::start(gateway),
        ]
        .into_iter()
        .flatten()
        .collect();
        let workers = (!workers.is_empty()).then(|| tasks::holding(workers));
        Ok(Background {
            jobs,
            _workers: workers,
        })
    }

    /// The jobs runner.
    pub fn jobs(&self) -> &Arc<Jobs> {
        &self.jobs
    }
}

/// Starts the delivery of notifications to the `[[notify]]` targets (see
/// [`crate::notify`]): what is in the outbox, including what a previous
/// process left there, and what the sessions add to it. `None` without
/// targets.
fn notify(gateway: &Gateway) -> Option<tasks::Owned<()>> {
    crate::notify::start(gateway.ledger().outbox.clone())
}

/// Starts the sweep every `[detector] sweep_interval` in a task of its own
/// (none when the interval is off or the detector is disabled).
fn sweeps(gateway: &Gateway) -> Option<tasks::Owned<()>> {
    let detector = gateway.host().config().detector.clone();
    let every = detector.sweep_interval.filter(|_| detector.enabled)?;
    tracing::info!(every = %humantime::format_duration(every), "the detector sweeps live sessions");
    let gateway = gateway.clone();
    Some(tasks::every(every, move || {
        let gateway = gateway.clone();
        async move {
            if let Err(e) = crate::sweep::pass(&gateway).await {
                tracing::warn!(error = %e, "sweep: the pass failed (the next one tries again)");
            }
        }
    }))
}
