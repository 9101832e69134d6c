//! Running the action of a schedule or a trigger: as its own principal
//! (`schedule:<name>`, `trigger:<name>`; see `manifest::Run::principal`),
//! through the same gateway entry points an agent uses, so its calls meet
//! the hooks, budgets and ownership rules like any other, and every event
//! it causes names it. Each run first notes in its session why it runs;
//! a call's result is held against `alert_if`, and an alert (or a failed
//! run) is a `schedule_alert` event in that session, which the notify
//! outbox turns into a notification to the named targets.

use crate::gateway::Gateway;
use crate::manifest::{Action, Principal, Run, SessionTarget};
use crate::session::{EventKind, Handoff, HandoffKind, SessionError, SessionStatus, StartSession};
use crate::tasks;
use crate::tasks::ledger_work;

/// What one run did.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct RunOutcome {
    pub ok: bool,
    /// For a person: what it did, or why it failed.
    pub summary: String,
    /// The session it worked in (id).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub session: Option<String>,
    /// Whether it raised a `schedule_alert`.
    pub alerted: bool,
}

impl RunOutcome {
    fn failed(summary: String, session: Option<String>) -> RunOutcome {
        RunOutcome {
            ok: false,
            summary,
            session,
            alerted: false,
        }
    }
}

/// Runs `run` as `principal`, noting `cause` (why it runs) in its session.
pub async fn run_action(
    gateway: &Gateway,
    principal: &Principal,
    run: &Run,
    cause: &str,
) -> RunOutcome {
    let outcome = tasks::acting(
        principal.name.clone(),
        run_for(gateway, principal, run, cause),
    )
    .await;
    if outcome.ok {
        tracing::info!(by = %principal.name, outcome = %outcome.summary, "ran a scheduled action");
    } else {
        tracing::warn!(by = %principal.name, outcome = %outcome.summary, "a scheduled action failed");
    }
    outcome
}

async fn run_for(gateway: &Gateway, principal: &Principal, run: &Run, cause: &str) -> RunOutcome {
    let target = match &run.action {
        Action::Sweep => {
            return match crate::sweep::pass(gateway).await {
                Ok(swept) => RunOutcome {
                    ok: true,
                    summary: format!(
                        "swept {} live sessions: {} flags raised, {} paused, {} archived",
                        swept.judged,
                        swept.raised.len(),
                        swept.paused.len(),
                        swept.archived.len()
                    ),
                    session: None,
                    alerted: false,
                },
                Err(e) => RunOutcome::failed(format!("the sweep failed: {e}"), None),
            };
        }
        Action::Start { session, .. } | Action::Call { session, .. } => session,
    };
    let id = match own_session(gateway, principal, target).await {
        Ok(id) => id,
        Err(e) => {
            return RunOutcome::failed(
                format!("cannot work in session `{}`: {e}", target.name),
                None,
            );
        }
    };
    let note = format!("{} runs `{}`: {cause}", principal.name, run.action.as_str());
    if let Err(e) = append_as_run(gateway, &id, EventKind::Note { text: note }).await {
        return RunOutcome::failed(format!("cannot log the run: {e}"), Some(id));
    }
    let mut outcome = match &run.action {
        Action::Start { handoff, .. } => {
            let mut h = Handoff::new(HandoffKind::Continuation, target.role, &handoff.objective);
            h.notes.success_criteria = handoff.success_criteria.clone();
            h.notes.next_steps = handoff.next_steps.clone();
            match gateway.scope(principal).handoff(&id, h).await {
                Ok(_) => RunOutcome {
                    ok: true,
                    summary: format!("posted a handoff to session `{}` ({id})", target.name),
                    session: Some(id.clone()),
                    alerted: false,
                },
                Err(e) => {
                    RunOutcome::failed(format!("the handoff was refused: {e}"), Some(id.clone()))
                }
            }
        }
        Action::Call { tool, input, .. } => {
            run_call(gateway, principal, run, &id, tool, input).await
        }
        Action::Sweep => unreachable!("a sweep returned above"),
    };
    if !outcome.ok && !run.notify.is_empty() && !outcome.alerted {
        let reason = format!("the run failed: {}", outcome.summary);
        outcome.alerted = raise_alert(gateway, principal, run, &id, reason, None).await;
    }
    outcome
}

/// Calls `tool` in session `id` and holds its output against `alert_if`.
async fn run_call(
    gateway: &Gateway,
    principal: &Principal,
    run: &Run,
    id: &str,
    tool: &str,
    input: &serde_json::Value,
) -> RunOutcome {
    let session = Some(id.to_string());
    let call = match gateway.admit(tool, &input.to_string()) {
        Ok(call) => call,
        Err(e) => {
            return RunOutcome::failed(format!("`{tool}` cannot be called: {e}"), session);
        }
    };
    let report = match gateway.scope(principal).call(id, call, None, None).await {
        Ok(report) => report,
        Err(e) => {
            return RunOutcome::failed(format!("the call to `{tool}` was refused: {e}"), session);
        }
    };
    let output = match report.outcome {
        Ok(output) => output,
        Err(e) => {
            return RunOutcome::failed(format!("the call to `{tool}` failed: {e}"), session);
        }
    };
    let call_id = last_call_id(gateway, id).await;
    let mut outcome = RunOutcome {
        ok: true,
        summary: format!("called `{tool}`"),
        session,
        alerted: false,
    };
    if let Some(alert) = &run.alert_if {
        match alert.observe(&output) {
            Some(seen) if alert.holds(seen) => {
                let field = alert.path.join(".");
                let reason = format!("the alert `{}` holds: {field} = {seen}", alert.as_str());
                outcome.summary = format!("called `{tool}`; {reason}");
                outcome.alerted = raise_alert(gateway, principal, run, id, reason, call_id).await;
            }
            Some(seen) => {
                outcome.summary = format!(
                    "called `{tool}`; `{}` does not hold ({seen})",
                    alert.as_str()
                );
            }
            None => {
                let reason = format!(
                    "the output of `{tool}` has no number at `{}` to hold against `{}`",
                    alert.path.join("."),
                    alert.as_str()
                );
                outcome.ok = false;
                outcome.summary = reason;
            }
        }
    }
    outcome
}

/// Logs a `schedule_alert` in session `id`; whether it was logged.
async fn raise_alert(
    gateway: &Gateway,
    principal: &Principal,
    run: &Run,
    id: &str,
    reason: String,
    call_id: Option<String>,
) -> bool {
    let kind = EventKind::ScheduleAlert {
        source: principal.name.clone(),
        reason,
        notify: run.notify.clone(),
        call_id,
    };
    match append_as_run(gateway, id, kind).await {
        Ok(()) => true,
        Err(e) => {
            tracing::warn!(by = %principal.name, session = %id, error = %e, "could not log a schedule alert: it is not sent");
            false
        }
    }
}

/// The id of the newest finished call in session `id` (the run's own:
/// the session is the run's principal's, and its runs go one at a time).
async fn last_call_id(gateway: &Gateway, id: &str) -> Option<String> {
    let (sessions, id) = (gateway.sessions().clone(), id.to_string());
    ledger_work(move || {
        let last = sessions.show(&id)?.last_seq;
        let events = sessions.events(&id, last.saturating_sub(16).max(1), 17)?;
        Ok(events.into_iter().rev().find_map(|e| match e.kind {
            EventKind::CallFinished { call_id, .. } => Some(call_id),
            _ => None,
        }))
    })
    .await
    .ok()
    .flatten()
}

async fn append_as_run(gateway: &Gateway, id: &str, kind: EventKind) -> Result<(), SessionError> {
    let (sessions, id) = (gateway.sessions().clone(), id.to_string());
    ledger_work(move || sessions.append(&id, kind).map(|_| ())).await
}

/// The live session named `target.name` that `principal` owns (resumed
/// when it paused itself), or a new one it starts; its id.
async fn own_session(
    gateway: &Gateway,
    principal: &Principal,
    target: &SessionTarget,
) -> Result<String, SessionError> {
    let scope = gateway.scope(principal);
    match scope.session(&target.name).await {
        Ok(state) if state.header.status == SessionStatus::Paused => Ok(scope
            .resume_session(&state.header.id)
            .await?
            .state
            .header
            .id),
        Ok(state) if state.header.status.is_live() => Ok(state.header.id),
        Ok(_) | Err(SessionError::NotFound(_)) => {
            let start = StartSession {
                role: target.role,
                project: target.project.clone(),
                name: Some(target.name.clone()),
                tags: Vec::new(),
                expected_duration: None,
                budget: Default::default(),
                completion: Default::default(),
            };
            Ok(scope.start_session(start).await?.header.id)
        }
        Err(e) => Err(e),
    }
}
