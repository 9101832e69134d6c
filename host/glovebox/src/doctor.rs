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
//!
//! The permissive-hook rule does not guess from the config: it runs each
//! broad hook (through the runtime, as `glovebox hook test` and `policy
//! replay` do) against a probe set: every configured tool with a small input
//! made from its schema, and a destructive-looking call. Nothing is recorded
//! and no tool runs.
//!
//! [`check`] returns structured findings, for the command line and a
//! dashboard alike. This module also ends sessions for the `session_end`
//! entry points (`Scope::end_session_noting_jobs`, [`end_session`]):
//! jobs nobody waited for (still queued or running, or with a result nobody
//! read) are recorded (`jobs_unwaited`) and returned so the caller can warn.

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;
use std::sync::Arc;

use serde::Serialize;
use serde_json::{Value, json};

use crate::gateway::Gateway;
use crate::hooks::{DecisionKind, HookRequest, HookStatus};
use crate::host::Host;
use crate::jobs::{JobStore, JobSummary};
use crate::ledger::Durable;
use crate::manifest::{Access, HostConfig, Principal, PrincipalKind, Role};
use crate::session::{
    EndOutcome, EventKind, SessionError, SessionState, SessionStatus, UnwaitedJob,
};
use crate::tasks::ledger_work;

/// How much a finding matters. `glovebox doctor` exits 1 when there is a
/// warning; notices alone leave it at 0.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    /// Worth fixing now.
    Warning,
    /// Worth knowing; nothing is at risk any more.
    Notice,
}

impl Severity {
    pub fn as_str(self) -> &'static str {
        match self {
            Severity::Warning => "warning",
            Severity::Notice => "notice",
        }
    }
}

/// Which antipattern a finding is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Rule {
    UnwaitedJobs,
    UnnamedSession,
    PermissiveHook,
    RoleWithoutBudget,
    NoHandoff,
    UnpinnedDigest,
    SharedWritableDir,
}

impl Rule {
    pub fn as_str(self) -> &'static str {
        match self {
            Rule::UnwaitedJobs => "unwaited_jobs",
            Rule::UnnamedSession => "unnamed_session",
            Rule::PermissiveHook => "permissive_hook",
            Rule::RoleWithoutBudget => "role_without_budget",
            Rule::NoHandoff => "no_handoff",
            Rule::UnpinnedDigest => "unpinned_digest",
            Rule::SharedWritableDir => "shared_writable_dir",
        }
    }
}

/// What a finding is about.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum CulpritKind {
    Session,
    Hook,
    Plugin,
    Role,
    Directory,
}

impl CulpritKind {
    pub fn as_str(self) -> &'static str {
        match self {
            CulpritKind::Session => "session",
            CulpritKind::Hook => "hook",
            CulpritKind::Plugin => "plugin",
            CulpritKind::Role => "role",
            CulpritKind::Directory => "directory",
        }
    }
}

/// The thing at fault: a session (its name, or its id), a hook, a plugin,
/// a role or a directory, and the file where it is declared when there is one.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Culprit {
    pub kind: CulpritKind,
    pub name: String,
    /// A session's id (when `name` is its name).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    /// The file that declares it (a plugin's manifest, the config).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub file: Option<PathBuf>,
}

impl std::fmt::Display for Culprit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} `{}`", self.kind.as_str(), self.name)?;
        if let Some(id) = &self.id {
            write!(f, " ({id})")?;
        }
        if let Some(file) = &self.file {
            write!(f, " in `{}`", file.display())?;
        }
        Ok(())
    }
}

/// One antipattern found.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Finding {
    pub rule: Rule,
    pub severity: Severity,
    pub culprit: Culprit,
    /// What is wrong, naming the culprit.
    pub message: String,
    /// What to do about it.
    pub fix: String,
}

impl Finding {
    fn new(
        rule: Rule,
        severity: Severity,
        culprit: Culprit,
        message: String,
        fix: String,
    ) -> Finding {
        Finding {
            rule,
            severity,
            culprit,
            message,
            fix,
        }
    }
}

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

/// A session as people know it: its name, or its id.
fn shown(state: &SessionState) -> &str {
    state.header.name.as_deref().unwrap_or(&state.header.id)
}

fn session_culprit(state: &SessionState) -> Culprit {
    Culprit {
        kind: CulpritKind::Session,
        name: state
            .header
            .name
            .clone()
            .unwrap_or_else(|| state.header.id.clone()),
        id: state.header.name.as_ref().map(|_| state.header.id.clone()),
        file: None,
    }
}

fn unnamed_sessions(states: &[SessionState]) -> Vec<Finding> {
    states
        .iter()
        .filter(|s| s.header.name.is_none())
        .map(|s| {
            let live = s.header.status.is_live();
            Finding::new(
                Rule::UnnamedSession,
                if live {
                    Severity::Warning
                } else {
                    Severity::Notice
                },
                session_culprit(s),
                format!(
                    "session `{}` ({}, project `{}`, {}) has no name: it can only be found and resumed by its id",
                    s.header.id, s.header.role, s.header.project, s.header.status
                ),
                format!(
                    "name it: `glovebox session name {} <name>` (or `session_start` with a `name`); start every session with a name",
                    s.header.id
                ),
            )
        })
        .collect()
}

fn no_handoff(config: &HostConfig, states: &[SessionState]) -> Vec<Finding> {
    let limit = u64::from(config.detector.handoff_after_events);
    states
        .iter()
        .filter(|s| s.header.status.is_live())
        .filter_map(|s| {
            let since = s.latest_handoff.as_ref().map_or(0, |h| h.seq);
            let events = s.last_seq.saturating_sub(since);
            (events > limit).then(|| {
                let label = shown(s);
                Finding::new(
                    Rule::NoHandoff,
                    Severity::Warning,
                    session_culprit(s),
                    format!(
                        "session `{label}` has run {events} events since {} (more than `[detector] handoff_after_events` = {limit}): if it stops, nobody can pick its work up",
                        if since == 0 { "it started with no handoff".to_string() } else { format!("its last handoff (event {since})") }
                    ),
                    format!(
                        "write a handoff with where it stands: `glovebox session handoff {label} --kind continuation --objective ... --done ... --next ...` (or the `session_handoff` tool)"
                    ),
                )
            })
        })
        .collect()
}

fn roles_without_budget(config: &HostConfig, states: &[SessionState]) -> Vec<Finding> {
    // Role → who uses it: principals, and sessions with no caps of their own.
    let mut users: BTreeMap<&'static str, (Role, Vec<String>, Vec<String>)> = BTreeMap::new();
    for p in &config.principals {
        let p: &Principal = &p.principal;
        if p.kind != PrincipalKind::Agent {
            continue;
        }
        for role in &p.roles {
            users
                .entry(role.as_str())
                .or_insert_with(|| (*role, Vec::new(), Vec::new()))
                .1
                .push(p.name.clone());
        }
    }
    for s in states.iter().filter(|s| s.header.status.is_live()) {
        if !s.budget.caps.is_empty() || !s.budget.raised.is_empty() {
            continue;
        }
        users
            .entry(s.header.role.as_str())
            .or_insert_with(|| (s.header.role, Vec::new(), Vec::new()))
            .2
            .push(shown(s).to_string());
    }
    users
        .into_values()
        .filter(|(role, _, _)| {
            config
                .budgets
                .roles
                .get(role)
                .is_none_or(|caps| caps.is_empty())
        })
        .map(|(role, principals, sessions)| {
            let mut used_by = Vec::new();
            if !principals.is_empty() {
                used_by.push(format!("principals {}", quoted(&principals)));
            }
            if !sessions.is_empty() {
                used_by.push(format!(
                    "{} live session(s) with no caps of their own: {}",
                    sessions.len(),
                    quoted(&sessions)
                ));
            }
            Finding::new(
                Rule::RoleWithoutBudget,
                Severity::Warning,
                Culprit {
                    kind: CulpritKind::Role,
                    name: role.as_str().to_string(),
                    id: None,
                    file: Some(config.path.clone()),
                },
                format!(
                    "role `{role}` has no budget (no `[budgets.role.{role}]` caps), and {} use it: a runaway agent in it spends without limit",
                    used_by.join("; ")
                ),
                format!(
                    "add caps to `{}`: `[budgets.role.{role}]` with `cost = 20.0`, `calls = 500`, `wall = \"2h\"` (or start sessions with `--budget-cost`/`--budget-calls`)",
                    config.path.display()
                ),
            )
        })
        .collect()
}

fn quoted(names: &[String]) -> String {
    const SHOWN: usize = 5;
    let mut out: Vec<String> = names.iter().take(SHOWN).map(|n| format!("`{n}`")).collect();
    if names.len() > SHOWN {
        out.push(format!("and {} more", names.len() - SHOWN));
    }
    out.join(", ")
}

/// Jobs of ended sessions (of `ids`) nobody waited for, by session: those
/// `session_end` recorded (`jobs_unwaited`), and from the jobs' records
/// those still queued or running, finished after the end, or final with a
/// result nobody read. Each session's jobs are read through their index.
fn unwaited_jobs(durable: &Durable, ids: &[String]) -> Result<Vec<Finding>, SessionError> {
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

/// Plugins and hooks whose component is not pinned by `sha256`.
fn unpinned(host: &Host) -> Vec<Finding> {
    let config = host.config();
    let mut findings = Vec::new();
    for plugin in host.plugins() {
        let m = &plugin.manifest;
        if m.sha256.is_some() {
            continue;
        }
        let file = m.path.clone().unwrap_or_else(|| config.path.clone());
        findings.push(Finding::new(
            Rule::UnpinnedDigest,
            Severity::Warning,
            Culprit {
                kind: CulpritKind::Plugin,
                name: m.name.clone(),
                id: None,
                file: Some(file.clone()),
            },
            format!(
                "plugin `{}` runs whatever component is at `{}`: its manifest pins no digest, so a replaced file would be loaded without a word",
                m.name,
                m.component.display()
            ),
            format!(
                "pin the component you reviewed: add `sha256 = \"{}\"` to `{}`",
                plugin.digest,
                file.display()
            ),
        ));
    }
    let infos = host.hooks().hooks();
    for hook in &config.hooks {
        if hook.sha256.is_some() {
            continue;
        }
        let digest = infos
            .iter()
            .find(|i| i.name == hook.name)
            .and_then(|i| i.digest.clone())
            .or_else(|| {
                std::fs::read(&hook.component)
                    .ok()
                    .map(|b| crate::session::digest(&b))
            });
        findings.push(Finding::new(
            Rule::UnpinnedDigest,
            Severity::Warning,
            Culprit {
                kind: CulpritKind::Hook,
                name: hook.name.clone(),
                id: None,
                file: Some(config.path.clone()),
            },
            format!(
                "hook `{}` runs whatever component is at `{}`: no digest is pinned, so a replaced file would judge calls without a word",
                hook.name,
                hook.component.display()
            ),
            format!(
                "pin the component you reviewed: add {} to its `[[hook]]` table in `{}`",
                match digest {
                    Some(d) => format!("`sha256 = \"{d}\"`"),
                    None => "`sha256 = \"<its sha-256>\"`".to_string(),
                },
                config.path.display()
            ),
        ));
    }
    findings
}

/// Directories two or more plugins may write (the same directory, or one
/// inside the other), compared by canonical path.
fn shared_writable_dirs(config: &HostConfig) -> Vec<Finding> {
    let mut writable: Vec<(PathBuf, &str, PathBuf)> = Vec::new();
    for m in &config.plugins {
        for grant in &m.fs {
            if grant.access != Access::ReadWrite {
                continue;
            }
            let canonical = std::fs::canonicalize(&grant.host).unwrap_or(grant.host.clone());
            let file = m.path.clone().unwrap_or_else(|| config.path.clone());
            writable.push((canonical, m.name.as_str(), file));
        }
    }
    // Each directory with the plugins that write it or a directory around or inside it.
    let mut shared: BTreeMap<PathBuf, BTreeMap<&str, PathBuf>> = BTreeMap::new();
    for (i, (a, plugin_a, file_a)) in writable.iter().enumerate() {
        for (b, plugin_b, file_b) in &writable[i + 1..] {
            if plugin_a == plugin_b || !(a.starts_with(b) || b.starts_with(a)) {
                continue;
            }
            // Named by the outer directory of the two.
            let dir = if a.starts_with(b) { b } else { a };
            let entry = shared.entry(dir.clone()).or_default();
            entry.insert(plugin_a, file_a.clone());
            entry.insert(plugin_b, file_b.clone());
        }
    }
    shared
        .into_iter()
        .map(|(dir, plugins)| {
            let names: Vec<String> = plugins.keys().map(|p| p.to_string()).collect();
            let files: Vec<String> = plugins
                .values()
                .map(|f| format!("`{}`", f.display()))
                .collect::<BTreeSet<_>>()
                .into_iter()
                .collect();
            Finding::new(
                Rule::SharedWritableDir,
                Severity::Warning,
                Culprit {
                    kind: CulpritKind::Directory,
                    name: dir.display().to_string(),
                    id: None,
                    file: None,
                },
                format!(
                    "directory `{}` is granted read-write to {} plugins ({}): each can overwrite or plant what the others read and run",
                    dir.display(),
                    names.len(),
                    quoted(&names)
                ),
                format!(
                    "give each plugin its own writable directory (or `access = \"read-only\"` where it only reads) in {}",
                    files.join(", ")
                ),
            )
        })
        .collect()
}

/// Whether a trigger covers everything or a whole verb (`*`, `execute:*`).
fn broad(trigger: &str) -> bool {
    trigger == "*"
        || trigger
            .strip_suffix(":*")
            .is_some_and(|verb| !verb.is_empty() && !verb.contains([':', '*']))
}

/// The destructive-looking probe's action under a broad trigger.
fn destructive_action(trigger: &str) -> String {
    match trigger.strip_suffix(":*") {
        Some(verb) => format!("{verb}:database:drop"),
        None => "execute:database:drop".to_string(),
    }
}

/// A small input that fits `schema`: its required properties with a value of
/// their type.
fn probe_input(schema: &Value) -> Value {
    let mut input = serde_json::Map::new();
    let required = schema.get("required").and_then(Value::as_array);
    let properties = schema.get("properties").and_then(Value::as_object);
    for name in required.into_iter().flatten().filter_map(Value::as_str) {
        let prop = properties.and_then(|p| p.get(name));
        let ty = prop
            .and_then(|p| p.get("type"))
            .and_then(|t| t.as_str().or_else(|| t.get(0).and_then(Value::as_str)))
            .unwrap_or("string");
        let value = match ty {
            "integer" | "number" => json!(1),
            "boolean" => json!(false),
            "array" => json!([]),
            "object" => json!({}),
            "null" => Value::Null,
            _ => prop
                .and_then(|p| p.get("enum"))
                .and_then(|e| e.get(0))
                .cloned()
                .unwrap_or_else(|| json!("probe")),
        };
        input.insert(name.to_string(), value);
    }
    Value::Object(input)
}

/// Hooks with a broad trigger that allowed every probe call.
async fn permissive_hooks(host: &Host) -> Vec<Finding> {
    let config = host.config();
    let chain = host.hooks();
    let mut findings = Vec::new();
    for info in chain.hooks() {
        if info.status != HookStatus::Ready {
            continue;
        }
        let broad_triggers: Vec<&String> = info.triggers.iter().filter(|t| broad(t)).collect();
        if broad_triggers.is_empty() {
            continue;
        }
        let mut probes: Vec<HookRequest> = host
            .tools()
            .iter()
            .map(|t| HookRequest {
                call_id: String::new(),
                tool: t.name.clone(),
                action: t.action.clone(),
                role: Role::Workagent.as_str().to_string(),
                session: "s-doctor-probe".into(),
                input: probe_input(&t.input_schema).to_string(),
                estimated_cost: t.cost.unwrap_or(0.0),
                destructive: t.destructive,
                tags: Vec::new(),
            })
            .collect();
        for trigger in &broad_triggers {
            probes.push(HookRequest {
                call_id: String::new(),
                tool: "doctor.drop-everything".into(),
                action: destructive_action(trigger),
                role: Role::Workagent.as_str().to_string(),
                session: "s-doctor-probe".into(),
                input: json!({
                    "query": "DROP TABLE users",
                    "command": "rm -rf /",
                    "path": "/",
                })
                .to_string(),
                estimated_cost: 1000.0,
                destructive: true,
                tags: Vec::new(),
            });
        }
        let mut consulted = 0;
        let mut allowed = 0;
        for (i, mut probe) in probes.into_iter().enumerate() {
            probe.call_id = format!("c-doctor-probe-{i}");
            // A hook run like any other: through the admission of hook runs.
            let Ok(_slot) = host.hook_gate().admit(&probe.session).await else {
                continue;
            };
            if let Some(decision) = chain.evaluate_one(&info.name, &probe).await {
                consulted += 1;
                if decision.decision == DecisionKind::Allow {
                    allowed += 1;
                }
            }
        }
        if consulted == 0 || allowed < consulted {
            continue;
        }
        let triggers: Vec<String> = broad_triggers.iter().map(|t| t.to_string()).collect();
        findings.push(Finding::new(
            Rule::PermissiveHook,
            Severity::Warning,
            Culprit {
                kind: CulpritKind::Hook,
                name: info.name.clone(),
                id: None,
                file: Some(config.path.clone()),
            },
            format!(
                "hook `{}` triggers on {} and allowed all {consulted} probe calls, a destructive `{}` with a cost of 1000 included: it judges nothing",
                info.name,
                quoted(&triggers),
                destructive_action(broad_triggers[0])
            ),
            format!(
                "narrow its triggers to the actions it really judges (e.g. `execute:database:*`) and make it deny or ask on what it should not allow (destructive calls, costs over a role's limit); or remove it from `{}`",
                config.path.display()
            ),
        ));
    }
    findings
}

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
    fn broad_triggers_cover_everything_or_a_whole_verb() {
        assert!(broad("*"));
        assert!(broad("execute:*"));
        assert!(!broad("execute:database:*"));
        assert!(!broad("execute:api"));
        assert_eq!(destructive_action("*"), "execute:database:drop");
        assert_eq!(destructive_action("write:*"), "write:database:drop");
    }

    #[test]
    fn probe_inputs_fill_the_required_properties() {
        let schema = json!({
            "type": "object",
            "required": ["text", "n", "mode", "flag"],
            "properties": {
                "text": {"type": "string"},
                "n": {"type": "integer"},
                "mode": {"type": "string", "enum": ["fast", "slow"]},
                "flag": {"type": ["boolean", "null"]},
                "optional": {"type": "string"},
            },
        });
        assert_eq!(
            probe_input(&schema),
            json!({"text": "probe", "n": 1, "mode": "fast", "flag": false})
        );
        assert_eq!(probe_input(&json!({})), json!({}));
    }

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
