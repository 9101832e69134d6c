//! One pass of the host's upkeep: the stuck-agent detector's time-based
//! rules over the live sessions, expired approvals denied, orphaned ones
//! settled, old finished records removed, and once a UTC day the compliance
//! score recorded (`doctor::record_today`). The background's sweep worker
//! runs it every `[detector] sweep_interval`; a `sweep` schedule, and tests,
//! run one on demand.

use crate::detect;
use crate::gateway::Gateway;
use crate::session::SessionError;
use crate::tasks::ledger_work;

/// One pass of the stuck-agent detector's sweep ([`detect::sweep`]): the
/// time-based rules over every live session (flags as events, a pause on
/// a critical flag) and, with `[detector] archive_after`, the archive of
/// sessions idle that long. The ledger work runs off the async threads;
/// what the pass did is logged and returned.
pub async fn pass(gateway: &Gateway) -> Result<detect::Swept, SessionError> {
    crate::scope::expire_approvals(gateway).await?;
    // Pending approvals of sessions that ended without settling them
    // (before ending did, or on a host that did not): denied now.
    let sessions = gateway.sessions().clone();
    for a in ledger_work(move || sessions.settle_orphaned_approvals()).await? {
        tracing::warn!(approval = %a.id, session = %a.session, "sweep: denied a pending approval of a session that had ended");
    }
    let config = gateway.host().config().detector.clone();
    let (sessions, approvals) = (
        gateway.sessions().clone(),
        gateway.ledger().approvals.clone(),
    );
    let swept = ledger_work(move || detect::sweep(&sessions, &approvals, &config)).await?;
    for f in &swept.raised {
        tracing::warn!(session = %f.session, name = f.name.as_deref().unwrap_or("-"), rule = %f.rule, severity = %f.severity, reason = %f.reason, "sweep: blocker flag raised");
    }
    for id in &swept.paused {
        tracing::warn!(session = %id, "sweep: paused on a critical flag");
    }
    for id in &swept.archived {
        tracing::info!(session = %id, "sweep: archived an idle session");
    }
    for why in &swept.failed {
        tracing::warn!(error = %why, "sweep: a session could not be swept");
    }
    collect_finished(gateway).await;
    record_compliance(gateway).await;
    tracing::debug!(
        judged = swept.judged,
        raised = swept.raised.len(),
        paused = swept.paused.len(),
        archived = swept.archived.len(),
        "sweep pass done"
    );
    Ok(swept)
}

/// Records today's compliance score if no record of today is there yet
/// (`glovebox doctor`'s checks run then, once a day). Failures are logged:
/// the next sweep tries again.
pub async fn record_compliance(gateway: &Gateway) {
    match crate::doctor::record_today(gateway).await {
        Ok(Some(r)) => tracing::info!(
            day = %r.day,
            score = r.score.score,
            warnings = r.score.warnings,
            notices = r.score.notices,
            "sweep: recorded the day's compliance score"
        ),
        Ok(None) => {}
        Err(e) => tracing::warn!(error = %e, "sweep: could not record the day's compliance score"),
    }
}

/// Removes the final jobs and settled approvals older than
/// `[quotas] retain_finished` (their calls stay in the session logs), so
/// the store does not grow with every job ever run. Failures are logged:
/// the next sweep tries again.
pub async fn collect_finished(gateway: &Gateway) {
    let Some(keep) = gateway.host().config().quotas.retain_finished else {
        return;
    };
    let keep_ms = u64::try_from(keep.as_millis()).unwrap_or(u64::MAX);
    let before = gateway.sessions().clock_ms().saturating_sub(keep_ms);
    let storage = gateway.ledger().storage.clone();
    let approvals = gateway.ledger().approvals.clone();
    let collected = ledger_work(move || {
        let jobs = glovebox_ledger::jobs::JobStore::new(storage)
            .collect(before)
            .map_err(|e| SessionError::InvalidInput(e.to_string()))?;
        Ok::<_, SessionError>((jobs, approvals.collect(before)?))
    })
    .await;
    match collected {
        Ok((0, 0)) => {}
        Ok((jobs, approvals)) => {
            tracing::info!(
                jobs,
                approvals,
                "sweep: removed final jobs and settled approvals past `quotas.retain_finished`"
            )
        }
        Err(e) => tracing::warn!(error = %e, "sweep: could not remove old jobs and approvals"),
    }
}
