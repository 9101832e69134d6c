//! `glovebox doctor`: the antipatterns of docs/operators/doctor.md found in a config and its
//! data dir, each with its culprit and its fix.
//!
//! | rule | what | severity |
//! |---|---|---|
//! | `unwaited_jobs` | background jobs of an ended session nobody waited for: still queued or running at its end, or with a result nobody read | warning |
//! | `unnamed_session` | a session with no name (it cannot be resumed by name) | warning while live, notice once ended |
//! | `permissive_hook` | a hook triggered on `*` (or a whole verb, `execute:*`) that allowed every probe call, a destructive one included | warning |
//! | `role_without_budget` | a role principals or sessions use with no `[budgets.role.<role>]` caps | warning |
//! | `no_handoff` | a live session with more than `[detector] handoff_after_events` events since its last handoff | warning |
//! | `unpinned_digest` | a plugin or hook with no `sha256` pin | warning |
//! | `shared_writable_dir` | a directory granted read-write (`[[fs]]`) to several plugins | warning |
//! | `held_tool_text` | a tool held because its text changed since it was accepted, or carries text aimed at the model | warning |
//!
//! The permissive-hook rule does not guess from the config: it runs each
//! broad hook (through the runtime, as `glovebox hook test` and `policy
//! replay` do) against a probe set: every configured tool with a small input
//! made from its schema, and a destructive-looking call. Nothing is recorded
//! and no tool runs.
//!
//! The findings make a compliance score (`score.rs`: 100 less 10 per
//! warning and 2 per notice, never below 0), which the sweep records once a
//! UTC day in the store (`compliance.rs`) for the dashboard's trend.
//!
//! [`check`] returns structured findings ([`Finding`], in `findings.rs`), for
//! the command line and a dashboard alike; the checks are by family:
//! `sessions.rs`, `unwaited.rs` (jobs), `plugins.rs`, `hooks.rs`. This module
//! also ends sessions (`session_end.rs`) for the `session_end`
//! entry points (`Scope::end_session_noting_jobs`, [`end_session`]):
//! jobs nobody waited for (still queued or running, or with a result nobody
//! read) are recorded (`jobs_unwaited`) and returned so the caller can warn.

use crate::gateway::Gateway;
use crate::host::Host;
use crate::ledger::Durable;
use crate::manifest::HostConfig;
use crate::session::{SessionError, SessionStatus};
use crate::tasks::ledger_work;

mod compliance;
mod findings;
mod hooks;
mod plugins;
mod score;
mod session_end;
mod sessions;
mod unwaited;

pub use compliance::{
    BUCKET as COMPLIANCE_BUCKET, ComplianceRecords, DailyScore, KEPT_DAYS, TREND_DAYS,
    record_today, trend,
};
pub use findings::{Culprit, CulpritKind, Finding, Rule, Severity};
pub use score::{FULL_SCORE, NOTICE_WEIGHT, Score, WARNING_WEIGHT, score, weight};
pub(crate) use session_end::unwaited_jobs_of;
pub use session_end::{SessionEnded, end_session, unwaited_warning};

use hooks::permissive_hooks;
use plugins::{held_tools, shared_writable_dirs, unpinned};
use sessions::{no_handoff, roles_without_budget, unnamed_sessions};
use unwaited::unwaited_jobs;

/// Every finding for `gateway`'s config and data dir: warnings first, then
/// by rule and culprit.
pub async fn check(gateway: &Gateway) -> Result<Vec<Finding>, SessionError> {
    let host = gateway.host();
    let mut findings = check_config(&host).await;
    let config = host.config().clone();
    let durable = gateway.ledger().clone();
    findings.extend(ledger_work(move || check_ledger(&config, &durable)).await?);
    findings.sort_by(|a, b| {
        (a.severity, a.rule, &a.culprit.name).cmp(&(b.severity, b.rule, &b.culprit.name))
    });
    Ok(findings)
}

/// The findings of the config alone: hooks (probed), digest pins, shared
/// read-write directories, and roles principals use with no budget.
pub async fn check_config(host: &Host) -> Vec<Finding> {
    let config = host.config();
    let mut findings = permissive_hooks(host).await;
    findings.extend(unpinned(host));
    findings.extend(held_tools(host));
    findings.extend(shared_writable_dirs(config));
    findings
}

/// The findings of the data dir: sessions and jobs (and the roles sessions
/// use with no budget, with those principals use).
pub fn check_ledger(config: &HostConfig, durable: &Durable) -> Result<Vec<Finding>, SessionError> {
    let sessions = &durable.sessions;
    let mut states = Vec::new();
    let mut ids = Vec::new();
    for info in sessions.walk()? {
        let info = info?;
        ids.push(info.header.id.clone());
        if info.header.status == SessionStatus::Archived {
            continue;
        }
        match sessions.show(&info.header.id) {
            Ok(state) => states.push(state),
            // A damaged session is `glovebox log verify`'s business.
            Err(e) => {
                tracing::warn!(session = %info.header.id, error = %e, "doctor: session skipped")
            }
        }
    }
    let mut findings = Vec::new();
    findings.extend(unnamed_sessions(&states));
    findings.extend(no_handoff(config, &states));
    findings.extend(roles_without_budget(config, &states));
    findings.extend(unwaited_jobs(durable, &ids)?);
    Ok(findings)
}
