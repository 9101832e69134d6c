//! Settle: what happens once a call has its outcome.
//!
//! The outcome goes into the log, durably: the result is acknowledged only
//! then (and that write makes the call's write-ahead record durable too, if
//! it was not yet). Then, in the same trip to the ledger and best effort (the
//! call is acknowledged already), the budget's warnings due and the
//! stuck-agent detector. The hooks that judged the call hear how it ended, in
//! the background.
//!
//! One exception: a call made from inside another call's run (code mode,
//! `nested.rs`) returns its result to that run, not to an agent, so its
//! outcome is written without waiting for the disk. The run's own outcome,
//! written durably before the agent hears of it, makes it durable (one store,
//! one flush). A crash before that leaves the nested call in flight, and the
//! recovery marks it interrupted, as for any call a crash cut; what a nested
//! call may not run before is durable is still written durably before it runs
//! (`record.rs`). A nested call cancelled because its run ended (its deadline)
//! has no outcome after it: it is written durably.

use crate::budget;
use crate::call::{CallContext, CallReport, Metering};
use crate::error::CallError;
use crate::host::Host;
use crate::ledger::Durable;
use crate::session::{
    CallMetering, Commit, EventKind, SessionError, Sessions, bounded_error, digest, inline_if_small,
};

use super::judge::Judgement;
use crate::tasks::ledger_work;

/// Logs the outcome of a call that ran; see the module docs. `Err`: the
/// outcome could not be logged, so the result is not acknowledged, and the
/// session is paused until an operator looks.
pub(crate) async fn settle(
    host: &Host,
    ledger: &Durable,
    session: &str,
    ctx: &CallContext,
    cost_micros: u64,
    report: &CallReport,
) -> Result<(), SessionError> {
    let (outcome, error, output, output_digest) = match &report.outcome {
        Ok(value) => {
            let text = value.to_string();
            (
                "ok".to_string(),
                None,
                inline_if_small(&text),
                digest(text.as_bytes()),
            )
        }
        Err(e) => (
            e.kind().to_string(),
            Some(bounded_error(e.to_string())),
            None,
            String::new(),
        ),
    };
    let mut metering = call_metering(&report.metering);
    metering.cost_micros = cost_micros;
    let finished = EventKind::CallFinished {
        call_id: ctx.call_id.clone(),
        outcome,
        error,
        output,
        output_digest,
        metering,
    };
    let budgets = host.config().budgets.clone();
    let detector = host.config().detector.clone();
    let sessions = ledger.sessions.clone();
    let id = session.to_string();
    // A nested call cancelled by the end of its run has nobody after it to
    // make it durable: it is written durably itself.
    let cancelled = matches!(report.outcome, Err(CallError::Cancelled { .. }));
    let commit = match crate::nesting::parent_call() {
        Some(_) if !cancelled => Commit::Deferred,
        _ => Commit::Durable,
    };
    ledger_work(move || {
        let appended = sessions.append_with_commit(&id, commit, |_, _| (vec![finished], ()));
        if let Err(e) = appended {
            // Not acknowledged: say so, and stop the session until an
            // operator looks (best effort: the store may be failing).
            let reason = format!("the outcome of a call could not be logged: {e}");
            let _ = sessions.pause(&id, &reason);
            return Err(e);
        }
        if let Err(e) = budget::upkeep(&sessions, &budgets, &id) {
            tracing::warn!(session = %id, error = %e, "could not log the session's budget warnings");
        }
        detect(&sessions, &detector, &id);
        Ok(())
    })
    .await
}

/// The detector's look at a session after a call that did not run.
pub(crate) async fn refused(host: &Host, ledger: &Durable, session: &str) {
    let detector = host.config().detector.clone();
    if !detector.enabled {
        return;
    }
    let sessions = ledger.sessions.clone();
    let id = session.to_string();
    let _ = ledger_work(move || {
        detect(&sessions, &detector, &id);
        Ok(())
    })
    .await;
}

/// Tells the hooks that allowed a call how it ended, off the caller's path
/// and through the admission of hook runs: their failures are logged (by
/// the chain) and change nothing.
pub(crate) fn tell_hooks(host: &Host, judgement: &Judgement, report: &CallReport) {
    let Some(outcome) = &judgement.chain else {
        return;
    };
    if !host.hooks().wants_after(outcome) {
        return;
    }
    let summary = match &report.outcome {
        Ok(_) => format!("ok in {:.1} ms", report.metering.wall.as_secs_f64() * 1e3),
        Err(e) => format!("{}: {e}", e.kind()),
    };
    let ok = report.outcome.is_ok();
    let hooks = host.hook_chain();
    let gate = host.hook_gate();
    let (request, outcome) = (judgement.request.clone(), outcome.clone());
    crate::tasks::detached(async move {
        // Through admission like the judging: a burst of notifications
        // waits for hook slots instead of exhausting the instance pool.
        match gate.admit(&request.session).await {
            Ok(_slot) => {
                hooks.after(&request, &outcome, ok, &summary).await;
            }
            Err(full) => tracing::warn!(
                call_id = %request.call_id,
                reason = %full,
                "the hooks were not told how a call ended: admission was full"
            ),
        }
    });
}

/// Runs the stuck-agent detector on session `id` (best effort: the call is
/// settled already). See [`crate::detect`].
fn detect(sessions: &Sessions, config: &crate::manifest::DetectorConfig, id: &str) {
    if !config.enabled {
        return;
    }
    match crate::detect::flags(sessions, config, id) {
        Ok(raised) => {
            for flag in &raised {
                tracing::warn!(session = %id, rule = %flag.rule, severity = %flag.severity, reason = %flag.reason, "blocker flag raised");
            }
        }
        Err(e) => {
            tracing::warn!(session = %id, error = %e, "the stuck-agent detector could not run")
        }
    }
}

/// What one call cost, as the log records it: the runtime's metering, without
/// the tool's estimated cost (settle adds it for calls that ran).
pub(crate) fn call_metering(m: &Metering) -> CallMetering {
    CallMetering {
        wall_us: u64::try_from(m.wall.as_micros()).unwrap_or(u64::MAX),
        fuel: m.fuel,
        peak_memory_bytes: m.peak_memory_bytes,
        bytes_in: m.bytes_in,
        bytes_out: m.bytes_out,
        cost_micros: 0,
    }
}
