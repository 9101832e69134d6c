//! Policy replay: evaluate a hook chain against the calls a session recorded,
//! and report each decision that would change: the pipeline's first two
//! stages (admit, judge) for each recorded call. Nothing is recorded or run.

use serde::Serialize;

use crate::call::CallContext;
use crate::hooks::Verdict;
use crate::host::Host;
use crate::pipeline::Caller;
use crate::session::{Event, EventKind, SessionError, Sessions};

/// One recorded call whose verdict differs under the replayed chain.
#[derive(Clone, Debug, Serialize)]
pub struct ReplayChange {
    pub call_id: String,
    pub tool: String,
    /// What the recorded chain decided: allow, deny, ask, or none (no hooks ran).
    pub recorded: String,
    /// What the replayed chain decides.
    pub replayed: String,
    /// The hook behind the replayed verdict, and why.
    pub hook: Option<String>,
    pub reason: Option<String>,
}

/// The result of a replay.
#[derive(Clone, Debug, Default, Serialize)]
pub struct ReplayReport {
    pub session: String,
    /// Recorded calls evaluated.
    pub calls: usize,
    /// Calls that could not be evaluated, with why (input not kept, tool gone).
    pub skipped: Vec<(String, String)>,
    pub changes: Vec<ReplayChange>,
}

/// Replays `host`'s hook chain over the calls recorded in `session`.
pub async fn replay(
    host: &Host,
    sessions: &Sessions,
    session: &str,
) -> Result<ReplayReport, SessionError> {
    let state = sessions.show(session)?;
    let events = sessions.events(&state.header.id, 1, usize::MAX)?;
    let mut report = ReplayReport {
        session: state.label(),
        ..ReplayReport::default()
    };
    for event in &events {
        let EventKind::CallRequested {
            call_id,
            tool,
            input,
            ..
        } = &event.kind
        else {
            continue;
        };
        let Some(input) = input else {
            report.skipped.push((
                call_id.clone(),
                "its input was too large to keep in the log".into(),
            ));
            continue;
        };
        let call = match host.admit(tool, input) {
            Ok(call) => call,
            Err(e) => {
                report.skipped.push((call_id.clone(), e.to_string()));
                continue;
            }
        };
        report.calls += 1;
        let ctx = CallContext {
            session_id: state.header.id.clone(),
            session_name: state.header.name.clone(),
            role: state.header.role.to_string(),
            project: (!state.header.project.is_empty()).then(|| state.header.project.clone()),
            call_id: call_id.clone(),
            job_id: None,
        };
        // The pipeline's admit and judge stages, as the principal the log
        // names for the call; nothing is recorded or run.
        let caller = Caller::in_session(&state.header, event.by.as_deref().unwrap_or_default());
        let verdict = host.judge_only(&call, &ctx, caller).await;
        let (replayed, hook, reason) = match &verdict {
            Verdict::Allow => ("allow", None, None),
            Verdict::Deny(d) => ("deny", Some(d.hook.clone()), d.reason.clone()),
            Verdict::Ask(d) => ("ask", Some(d.hook.clone()), d.reason.clone()),
        };
        let recorded = recorded_verdict(&events, call_id);
        // A call no hook judged ran: for the comparison that is an allow.
        let effective = if recorded == "none" {
            "allow"
        } else {
            recorded
        };
        if effective != replayed {
            report.changes.push(ReplayChange {
                call_id: call_id.clone(),
                tool: tool.clone(),
                recorded: recorded.to_string(),
                replayed: replayed.to_string(),
                hook,
                reason,
            });
        }
    }
    Ok(report)
}

/// The verdict the log recorded for `call_id`: deny wins, then ask, then allow.
fn recorded_verdict(events: &[Event], call_id: &str) -> &'static str {
    let mut verdict = "none";
    for e in events {
        if let EventKind::CallDecided {
            call_id: c,
            decision,
            hook,
            ..
        } = &e.kind
            && c == call_id
        {
            // A call an operator approved ran because the chain asked.
            let decision = if hook == "operator" {
                "ask"
            } else {
                decision.as_str()
            };
            verdict = match (verdict, decision) {
                ("deny", _) | (_, "deny") => "deny",
                ("ask", _) | (_, "ask") => "ask",
                _ => "allow",
            };
        }
    }
    verdict
}
