//! Ending a session for the `session_end` entry points, with the jobs of
//! its own nobody waited for.

use std::sync::Arc;

use serde::Serialize;

use crate::jobs::JobStore;
use crate::ledger::Durable;
use crate::session::{EndOutcome, SessionError, SessionState, UnwaitedJob};

/// What ending a session did: its state, and the background jobs of its own
/// nobody waited for (recorded as `jobs_unwaited`).
#[derive(Clone, Debug, Serialize)]
pub struct SessionEnded {
    pub state: SessionState,
    pub unwaited: Vec<UnwaitedJob>,
}

impl SessionEnded {
    /// The warning for the caller, when jobs were left unwaited.
    pub fn warning(&self) -> Option<String> {
        unwaited_warning(&self.unwaited)
    }
}

/// The warning `session_end` gives when it ended a session with jobs still
/// queued or running.
pub fn unwaited_warning(unwaited: &[UnwaitedJob]) -> Option<String> {
    if unwaited.is_empty() {
        return None;
    }
    let list: Vec<String> = unwaited
        .iter()
        .map(|j| format!("{} ({}, {})", j.id, j.tool, j.status))
        .collect();
    Some(format!(
        "the session ended with {} background job(s) nobody waited for: {}; nobody will read their results. Wait for jobs (job_wait) before ending a session, or cancel them",
        unwaited.len(),
        list.join(", ")
    ))
}

pub(crate) fn unwaited_jobs_of(
    storage: &Arc<dyn crate::storage::Storage>,
    session: &str,
) -> Vec<UnwaitedJob> {
    match JobStore::new(storage.clone()).unwaited_of(session) {
        Ok(jobs) => jobs
            .into_iter()
            .map(|j| UnwaitedJob {
                id: j.id,
                tool: j.tool,
                status: j.status.as_str().to_string(),
            })
            .collect(),
        Err(e) => {
            tracing::warn!(%session, error = %e, "cannot read the session's jobs at its end");
            Vec::new()
        }
    }
}

/// Ends a session at the command line (an operator's, unscoped), recording
/// the jobs of its own nobody waited for.
pub fn end_session(
    durable: &Durable,
    session: &str,
    outcome: EndOutcome,
) -> Result<SessionEnded, SessionError> {
    let id = durable.sessions.show(session)?.header.id;
    let unwaited = unwaited_jobs_of(&durable.storage, &id);
    let state = durable
        .sessions
        .end_with_unwaited(&id, outcome, unwaited.clone())?;
    Ok(SessionEnded { state, unwaited })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_warning_names_each_job() {
        assert_eq!(unwaited_warning(&[]), None);
        let warning = unwaited_warning(&[UnwaitedJob {
            id: "job-1".into(),
            tool: "sleep.sleep".into(),
            status: "queued".into(),
        }])
        .unwrap();
        assert!(warning.contains("job-1 (sleep.sleep, queued)"), "{warning}");
    }
}
