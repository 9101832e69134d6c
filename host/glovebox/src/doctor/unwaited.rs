//! The check of the jobs of ended sessions that nobody waited for.

use std::collections::BTreeSet;

use super::findings::{Finding, Rule, Severity};
use super::sessions::{session_culprit, shown};
use crate::jobs::{JobStore, JobSummary};
use crate::ledger::Durable;
use crate::session::{EventKind, SessionError, SessionStatus};

/// Jobs of ended sessions (of `ids`) nobody waited for, by session: those
/// `session_end` recorded (`jobs_unwaited`), and from the jobs' records
/// those still queued or running, finished after the end, or final with a
/// result nobody read. Each session's jobs are read through their index.
pub(super) fn unwaited_jobs(
    durable: &Durable,
    ids: &[String],
) -> Result<Vec<Finding>, SessionError> {
    let sessions = &durable.sessions;
    let store = JobStore::new(durable.storage.clone());
    let mut findings = Vec::new();
    for session in ids {
        let jobs = store
            .of_session(session)
            .map_err(|e| SessionError::Storage(crate::storage::StorageError::Io(e.to_string())))?;
        if jobs.is_empty() {
            continue;
        }
        let state = match sessions.show(session) {
            Ok(s) => s,
            Err(SessionError::NotFound(_)) => continue,
            Err(e) => return Err(e),
        };
        if state.outcome.is_none() && state.header.status != SessionStatus::Archived {
            continue;
        }
        let mut ended_at = None;
        let mut recorded: BTreeSet<String> = BTreeSet::new();
        for e in sessions.events(&state.header.id, 1, usize::MAX)? {
            match e.kind {
                EventKind::Ended { .. } if ended_at.is_none() => ended_at = Some(e.at_ms),
                EventKind::JobsUnwaited { jobs } => recorded.extend(jobs.into_iter().map(|j| j.id)),
                _ => {}
            }
        }
        let Some(ended_at) = ended_at else { continue };
        let unwaited: Vec<&JobSummary> = jobs
            .iter()
            .filter(|j| {
                recorded.contains(&j.id)
                    || j.unwaited()
                    || j.finished_at_ms.is_some_and(|f| f > ended_at)
            })
            .collect();
        if unwaited.is_empty() {
            continue;
        }
        let list: Vec<String> = unwaited
            .iter()
            .map(|j| format!("`{}` ({}, now {})", j.id, j.tool, j.status.as_str()))
            .collect();
        findings.push(Finding::new(
            Rule::UnwaitedJobs,
            Severity::Warning,
            session_culprit(&state),
            format!(
                "session `{}` ended without waiting for {} background job(s) of its own (still queued or running at its end, or with a result nobody read): {}",
                shown(&state),
                unwaited.len(),
                list.join(", ")
            ),
            format!(
                "read their results now (`glovebox job status {}`), and wait for jobs before ending a session (`job_wait` / `glovebox job wait`), or cancel those no longer needed",
                unwaited[0].id
            ),
        ));
    }
    Ok(findings)
}
