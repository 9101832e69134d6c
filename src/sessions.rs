//! `glovebox session ...` and `glovebox log ...`.

use crate::exit::Exit;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, Result};
use clap::{Args, Subcommand};
use glovebox::budget::BudgetCaps;
use glovebox::session::{
    EndOutcome, Handoff, HandoffKind, HandoffNotes, Role, SessionFilter, SessionInfo,
    SessionStatus, StartSession,
};
use glovebox::{Durable, Host, HostConfig, Sessions};

#[derive(Subcommand, serde::Serialize, serde::Deserialize)]
pub enum SessionCommand {
    /// Start a session.
    Start {
        /// orchestrator, supervisor or workagent.
        #[arg(long)]
        role: Role,
        #[arg(long)]
        project: String,
        #[command(flatten)]
        #[serde(flatten)]
        new: NewSessionArgs,
    },
    /// Report the brain's own usage (tokens, model cost) into a session; the
    /// cost counts toward its cost cap.
    Usage {
        session: String,
        #[arg(long, default_value_t = 0)]
        tokens_in: u64,
        #[arg(long, default_value_t = 0)]
        tokens_out: u64,
        /// Model cost, in the same units as the tools' `cost`.
        #[arg(long, default_value_t = 0.0)]
        cost: f64,
        #[arg(long)]
        model: Option<String>,
    },
    /// Show a session's budget, or (operator) set its caps: logged as
    /// `cap_raised`; a session its budget paused resumes once within its caps.
    Budget {
        session: String,
        #[arg(long)]
        cost: Option<f64>,
        #[arg(long)]
        calls: Option<u64>,
        #[arg(long, value_parser = humantime::parse_duration)]
        wall: Option<Duration>,
    },
    /// List sessions, newest activity first.
    List {
        #[arg(long)]
        status: Option<SessionStatus>,
        /// Only sessions with this tag (repeatable: all must match).
        #[arg(long = "tag")]
        tags: Vec<String>,
        #[arg(long)]
        role: Option<Role>,
        #[arg(long)]
        project: Option<String>,
        /// Only the sessions of this principal (`local`: the command line's).
        #[arg(long)]
        owner: Option<String>,
        /// Only sessions with no activity for more than this many days.
        #[arg(long)]
        inactive_days: Option<u64>,
        /// Only sessions with active blocker flags, with their flags and
        /// escalation step.
        #[arg(long)]
        blocked: bool,
        /// The child sessions of this session instead (`session spawn`), with
        /// their status, outcome, carved budget and latest handoff to it.
        #[arg(long, value_name = "PARENT", conflicts_with_all = ["status", "tags", "role", "project", "owner", "inactive_days", "blocked"])]
        children: Option<String>,
        /// A page of sessions, newest first.
        #[command(flatten)]
        page: crate::paging::PageArgs,
        #[arg(long)]
        json: bool,
    },
    /// Spawn a child session of PARENT: a role at or below the parent's, a
    /// task handoff, and caps carved out of the parent's budget (required for
    /// each cap the parent has). The child's agent resumes it to get the task.
    Spawn {
        parent: String,
        /// orchestrator, supervisor or workagent, at or below the parent's.
        #[arg(long)]
        role: Role,
        /// What the child is to do.
        #[arg(long)]
        objective: String,
        /// The task's notes, as a handoff takes them.
        #[command(flatten)]
        #[serde(flatten)]
        notes: NotesArgs,
        #[command(flatten)]
        #[serde(flatten)]
        new: NewSessionArgs,
    },
    /// From a judge session (role `judge`, yours), pass or fail WORKER's
    /// latest handoff, which its `completed` waits for when its condition
    /// asks for a judge. WORKER must belong to another principal.
    Verdict {
        worker: String,
        /// Your judge session.
        #[arg(long)]
        judge: String,
        /// Pass the handoff (else `--fail`).
        #[arg(long, conflicts_with = "fail", required_unless_present = "fail")]
        pass: bool,
        #[arg(long)]
        fail: bool,
        /// Why (repeatable; a failing verdict needs one).
        #[arg(long = "reason")]
        reasons: Vec<String>,
        /// The handoff judged (its seq); refused if it is no longer the latest.
        #[arg(long)]
        handoff_seq: Option<u64>,
    },
    /// Wait until every child of PARENT has posted a handoff to it or ended,
    /// up to the timeout (default 30s, at most 10m); exit 6 on timeout.
    Wait {
        parent: String,
        #[arg(long, value_parser = humantime::parse_duration)]
        timeout: Option<Duration>,
    },
    /// Show a session's state (its blocker flags and escalation step under `watch`).
    Show { session: String },
    /// Run the stuck-agent detector on a session now: raises the blocker
    /// flags that hold (a critical one pauses it) and shows the active ones.
    Check {
        session: String,
        #[arg(long)]
        json: bool,
    },
    /// Name (or rename) a session.
    Name { session: String, name: String },
    /// Add or remove tags.
    Tag {
        session: String,
        #[arg(long = "add")]
        add: Vec<String>,
        #[arg(long = "remove")]
        remove: Vec<String>,
    },
    /// Pause a session; calls are refused until it is resumed.
    Pause {
        session: String,
        #[arg(long)]
        reason: String,
    },
    /// Resume a session: prints its state, its latest handoff and interrupted calls.
    Resume { session: String },
    /// End a session. One with live child sessions is refused unless
    /// `--cancel-children` ends them first (as interrupted).
    End {
        session: String,
        /// completed, interrupted or exit.
        #[arg(long, default_value = "completed")]
        outcome: EndOutcome,
        /// End the session's live children (and theirs) first, as interrupted.
        #[arg(long)]
        cancel_children: bool,
    },
    /// Archive an ended (or paused) session.
    Archive { session: String },
    /// Write a handoff: from flags, or a whole handoff as JSON with `--from-file`.
    Handoff {
        session: String,
        /// orchestrator_to_supervisor, supervisor_to_workagent, workagent_completion,
        /// supervisor_to_orchestrator or continuation.
        #[arg(long, required_unless_present = "from_file")]
        kind: Option<HandoffKind>,
        #[arg(long, required_unless_present = "from_file")]
        objective: Option<String>,
        /// The session that receives it (its resume returns it).
        #[arg(long)]
        to: Option<String>,
        #[command(flatten)]
        #[serde(flatten)]
        notes: NotesArgs,
        /// A JSON file with the whole handoff (the fields of `Handoff`).
        #[arg(long, conflicts_with_all = ["kind", "objective"])]
        from_file: Option<PathBuf>,
    },
    /// Re-run an interrupted call of an idempotent tool, with its idempotency key.
    Rerun { session: String, call_id: String },
}

/// The notes of a handoff, as `session handoff` and `session spawn` (its
/// task) both take them: every field of [`HandoffNotes`].
#[derive(Args, serde::Serialize, serde::Deserialize)]
pub struct NotesArgs {
    /// A requirement (repeatable).
    #[arg(long = "requirement")]
    pub requirements: Vec<String>,
    /// A file the work concerns (repeatable).
    #[arg(long = "file")]
    pub files: Vec<String>,
    /// How to tell the work is done (repeatable).
    #[arg(long = "success")]
    pub success_criteria: Vec<String>,
    /// Work done so far (repeatable).
    #[arg(long = "done")]
    pub work_completed: Vec<String>,
    /// The phase the work is in.
    #[arg(long)]
    pub phase: Option<String>,
    /// A next step (repeatable).
    #[arg(long = "next")]
    pub next_steps: Vec<String>,
    /// Something in the way (repeatable).
    #[arg(long = "blocker")]
    pub blockers: Vec<String>,
}

impl From<NotesArgs> for HandoffNotes {
    fn from(n: NotesArgs) -> HandoffNotes {
        HandoffNotes {
            requirements: n.requirements,
            files: n.files,
            success_criteria: n.success_criteria,
            work_completed: n.work_completed,
            current_phase: n.phase.unwrap_or_default(),
            next_steps: n.next_steps,
            blockers: n.blockers,
        }
    }
}

/// What `session start` and `session spawn` both say of the new session.
#[derive(Args, serde::Serialize, serde::Deserialize)]
pub struct NewSessionArgs {
    /// A name, unique among live sessions.
    #[arg(long)]
    pub name: Option<String>,
    /// A tag (repeatable).
    #[arg(long = "tag")]
    pub tags: Vec<String>,
    /// How long the work should take (e.g. `2h`): used to spot stuck agents.
    #[arg(long, value_parser = humantime::parse_duration)]
    pub expected_duration: Option<Duration>,
    /// Budget: a cap on cost (estimated tool cost plus reported model
    /// cost); the lower of this and the role's cap in the config holds, and
    /// a child's is carved out of its parent's.
    #[arg(long)]
    pub budget_cost: Option<f64>,
    /// Budget: a cap on the calls that run (a child's is carved out of its
    /// parent's).
    #[arg(long)]
    pub budget_calls: Option<u64>,
    /// Budget: a cap on the time since the session started (e.g. `30m`; a
    /// child's is within its parent's).
    #[arg(long, value_parser = humantime::parse_duration)]
    pub budget_wall: Option<Duration>,
    /// What must hold before it ends as `completed`, as JSON: `gates`
    /// (tool calls whose result must hold each `expect` field) and/or
    /// `"judge": true`. The config's `[[completion]]` is added.
    #[arg(long, value_name = "JSON")]
    pub completion: Option<String>,
}

impl NewSessionArgs {
    /// The `--budget-*` caps, as the ledger takes them.
    pub fn budget(&self) -> Result<BudgetCaps> {
        BudgetCaps::new(self.budget_cost, self.budget_calls, self.budget_wall)
            .map_err(|e| anyhow::anyhow!("--budget-cost: {e}"))
    }
}

#[derive(Subcommand, serde::Serialize, serde::Deserialize)]
pub enum LogCommand {
    /// Check the hash chain of one session, or of all; reports the first bad event.
    /// With `--file`, check an export (`log export`) offline, without a data dir.
    Verify {
        #[arg(conflicts_with = "file")]
        session: Option<String>,
        #[arg(long)]
        json: bool,
        /// An exported log (JSON lines) to check instead of the store's.
        #[arg(long, value_name = "EXPORT")]
        file: Option<PathBuf>,
        /// With `--file`: the head the export must end at, `SEQ:HASH`, as
        /// `log export` printed it when the export was made.
        #[arg(long, value_name = "SEQ:HASH", requires = "file")]
        head: Option<String>,
        /// With `--file`: the chain key a keyed export was sealed with (the
        /// host's `[storage] chain_key_file`; 0600, at least 32 bytes).
        #[arg(long, value_name = "FILE", requires = "file")]
        key: Option<PathBuf>,
    },
    /// Print a session's events, one line each.
    Show {
        session: String,
        #[arg(long, default_value_t = 1)]
        from: u64,
        #[arg(long, default_value_t = usize::MAX)]
        limit: usize,
    },
    /// Export a session's events as JSON lines (for audit).
    Export { session: String },
}

/// `log verify --file EXPORT [--head SEQ:HASH] [--key FILE]`: an export
/// checked offline (a keyed one under its key).
fn verify_export(
    file: &Path,
    head: Option<&str>,
    key: Option<&Path>,
    json: bool,
) -> Result<ExitCode> {
    let head = match head {
        None => None,
        Some(text) => {
            let parsed = text
                .split_once(':')
                .and_then(|(seq, hash)| Some((seq.parse::<u64>().ok()?, hash.to_string())))
                .filter(|(_, hash)| {
                    hash.len() == 64 && hash.bytes().all(|b| b.is_ascii_hexdigit())
                });
            match parsed {
                Some(head) => Some(head),
                None => {
                    err!(
                        "error: `--head {text}` is not SEQ:HASH (a sequence number, a colon, and the 64 hex digits `log export` printed)"
                    );
                    return Ok(Exit::Usage.into());
                }
            }
        }
    };
    let text = std::fs::read_to_string(file)
        .with_context(|| format!("cannot read the export `{}`", file.display()))?;
    let key = key.map(glovebox::read_chain_key).transpose()?;
    let report = match glovebox::session::verify_export(
        text.lines().map(str::to_string),
        head,
        key.as_ref(),
    ) {
        Ok(report) => report,
        Err(why) => {
            err!("error: `{}`: {why}", file.display());
            return Ok(Exit::Usage.into());
        }
    };
    if json {
        print_json(&report)?;
    } else {
        let label = file.display();
        let mode = report.mode();
        match (&report.first_bad, report.head_checked) {
            (None, Some(head)) => out!(
                "ok   {label}: {} events of {}, {mode} chain intact, ends at its head (event {head})",
                report.events_checked,
                report.session
            ),
            (None, None) => out!(
                "ok   {label}: {} events of {}, {mode} chain intact (no --head given: a cut tail would not show)",
                report.events_checked,
                report.session
            ),
            (Some((seq, reason)), _) => {
                out!("BAD  {label} ({mode} chain): first bad event {seq}: {reason}")
            }
        }
    }
    Ok(if report.ok {
        ExitCode::SUCCESS
    } else {
        Exit::Refused.into()
    })
}

fn open(config: &Path) -> Result<Arc<Sessions>> {
    Ok(open_durable(config)?.sessions.clone())
}

/// The data dir's ledger: the running server's (`control.rs`), or opened
/// here with what recovery found printed.
pub(crate) fn open_durable(config: &Path) -> Result<Arc<Durable>> {
    if let Some(gateway) = crate::control::served() {
        return Ok(gateway.ledger().clone());
    }
    let config = HostConfig::load(config)?;
    let durable = glovebox::open_sessions(&config)?;
    let recovery = &durable.recovery;
    for call in &recovery.interrupted {
        err!(
            "note: call `{}` of `{}` in session `{}` was running when the host stopped: now interrupted{}",
            call.call_id,
            call.tool,
            call.session_name.as_deref().unwrap_or(&call.session),
            if call.idempotent {
                " (idempotent: `glovebox session rerun` re-runs it)"
            } else {
                ""
            }
        );
    }
    for refused in &recovery.refused {
        err!("warning: {refused}");
    }
    Ok(Arc::new(durable))
}

/// `session list --blocked`: the listed sessions with active blocker flags,
/// each with its escalation step and flags (most severe first).
fn list_blocked(sessions: &Sessions, list: &[SessionInfo], json: bool) -> Result<ExitCode> {
    let mut blocked = Vec::new();
    for info in list {
        let state = match sessions.show(&info.header.id) {
            Ok(state) => state,
            Err(e) => return Ok(crate::session_refused(&e)),
        };
        if !state.watch.flags.is_empty() {
            blocked.push(state);
        }
    }
    if json {
        let rows: Vec<_> = blocked
            .iter()
            .map(|s| {
                serde_json::json!({
                    "id": s.header.id,
                    "name": s.header.name,
                    "role": s.header.role,
                    "status": s.header.status,
                    "project": s.header.project,
                    "owner": s.owner_name(),
                    "escalation": s.watch.escalation,
                    "flags": s.watch.flags,
                })
            })
            .collect();
        print_json(&rows)?;
        return Ok(ExitCode::SUCCESS);
    }
    for s in &blocked {
        let mut flags: Vec<_> = s.watch.flags.iter().collect();
        flags.sort_by_key(|(rule, f)| (std::cmp::Reverse(f.severity), rule.as_str()));
        let flags: Vec<String> = flags
            .iter()
            .map(|(rule, f)| format!("{rule}:{}", f.severity))
            .collect();
        out!(
            "{:38}  {:20}  {:10}  {:8}  {}",
            s.header.id,
            s.header.name.as_deref().unwrap_or("-"),
            s.header.status.to_string(),
            s.watch.escalation.to_string(),
            flags.join(",")
        );
        if let Some((_, top)) = s.watch.flags.iter().max_by_key(|(_, f)| f.severity) {
            out!("    {}; {}", top.reason, top.suggested_action);
        }
    }
    Ok(ExitCode::SUCCESS)
}

pub(crate) fn print_json<T: serde::Serialize>(value: &T) -> Result<()> {
    out!("{}", serde_json::to_string_pretty(value)?);
    Ok(())
}

pub async fn run_session(config: &Path, command: SessionCommand) -> Result<ExitCode> {
    if let SessionCommand::Rerun { session, call_id } = &command {
        let gateway = crate::control::gateway(config).await?;
        let operator = crate::control::operator();
        return match gateway
            .scope(&operator)
            .rerun_interrupted(session, call_id)
            .await
        {
            Ok(report) => crate::print_report(&report, false),
            Err(e) => Ok(crate::session_refused(&e)),
        };
    }
    match command {
        SessionCommand::Usage {
            session,
            tokens_in,
            tokens_out,
            cost,
            model,
        } => {
            let usage = glovebox::budget::UsageReport {
                tokens_in,
                tokens_out,
                cost,
                model,
            };
            return crate::billing::session_usage(config, &session, &usage);
        }
        SessionCommand::Budget {
            session,
            cost,
            calls,
            wall,
        } => return crate::billing::session_budget(config, &session, cost, calls, wall),
        SessionCommand::Check { session, json } => {
            return crate::rescue::check(config, &session, json);
        }
        SessionCommand::End {
            session,
            outcome,
            cancel_children,
        } => return end(config, &session, outcome, cancel_children).await,
        SessionCommand::Verdict {
            worker,
            judge,
            pass,
            fail: _,
            reasons,
            handoff_seq,
        } => {
            let input = glovebox::session::VerdictInput {
                pass,
                reasons,
                handoff_seq,
            };
            return crate::completion::verdict(config, &judge, &worker, input).await;
        }
        SessionCommand::Spawn { .. } => return crate::children::spawn(config, command).await,
        SessionCommand::Wait { parent, timeout } => {
            return crate::children::wait(config, &parent, timeout).await;
        }
        _ => {}
    }
    // Checked against the host's tools before the data dir is opened.
    let completion = match &command {
        SessionCommand::Start { new, .. } => {
            crate::completion::completion_arg(config, new.completion.as_deref()).await?
        }
        _ => Default::default(),
    };
    let sessions = open(config)?;
    let result = match command {
        SessionCommand::Start { role, project, new } => {
            let budget = new.budget()?;
            sessions
                .start(StartSession {
                    role,
                    project,
                    name: new.name,
                    tags: new.tags,
                    expected_duration: new.expected_duration,
                    budget,
                    completion,
                })
                .map(|s| serde_json::to_value(&s))
        }
        SessionCommand::List {
            status,
            tags,
            role,
            project,
            owner,
            inactive_days,
            blocked,
            children,
            page,
            json,
        } => {
            let page = page.request();
            if let Some(parent) = children {
                let (children, next) = match sessions
                    .scope(&crate::control::operator())
                    .children(&parent, &page)
                {
                    Ok(page) => (page.items, page.next_cursor),
                    Err(e) => return Ok(crate::session_refused(&e)),
                };
                crate::paging::print_next(next.as_deref());
                if json {
                    print_json(&children)?;
                } else {
                    if children.is_empty() {
                        out!("`{parent}` has no children");
                    }
                    for c in &children {
                        out!(
                            "{:38}  {:20}  {:12}  {:10}  {:12}  {}",
                            c.id,
                            c.name.as_deref().unwrap_or("-"),
                            c.role.to_string(),
                            c.status.to_string(),
                            c.outcome.map_or_else(|| "-".to_string(), |o| o.to_string()),
                            c.handoff.as_ref().map_or_else(
                                || "-".to_string(),
                                |h| format!("{}: {}", h.handoff.kind, h.handoff.objective)
                            )
                        );
                    }
                }
                return Ok(ExitCode::SUCCESS);
            }
            let filtered = status.is_some()
                || !tags.is_empty()
                || role.is_some()
                || project.is_some()
                || owner.is_some()
                || inactive_days.is_some();
            let filter = SessionFilter {
                status,
                tags,
                role,
                project,
                inactive_for: inactive_days.map(|d| Duration::from_secs(d * 86_400)),
                owner,
            };
            let (list, next) = match sessions.list(&filter, &page) {
                Ok(page) => (page.items, page.next_cursor),
                Err(e) => return Ok(crate::session_refused(&e)),
            };
            crate::paging::print_next(next.as_deref());
            if blocked {
                return list_blocked(&sessions, &list, json);
            }
            if json {
                print_json(&list)?;
            } else {
                if list.is_empty() {
                    out!(
                        "{}",
                        if filtered {
                            "no sessions match the filter"
                        } else {
                            "no sessions in this data dir"
                        }
                    );
                }
                for s in &list {
                    out!(
                        "{:38}  {:20}  {:12}  {:10}  {:16}  {}",
                        s.header.id,
                        s.header.name.as_deref().unwrap_or("-"),
                        s.header.role.to_string(),
                        s.header.status.to_string(),
                        s.header.project,
                        s.header.tags.join(",")
                    );
                }
            }
            return Ok(ExitCode::SUCCESS);
        }
        SessionCommand::Show { session } => {
            sessions.show(&session).map(|s| serde_json::to_value(&s))
        }
        SessionCommand::Name { session, name } => sessions
            .rename(&session, &name)
            .map(|s| serde_json::to_value(&s)),
        SessionCommand::Tag {
            session,
            add,
            remove,
        } => sessions
            .tag(&session, &add, &remove)
            .map(|s| serde_json::to_value(&s)),
        SessionCommand::Pause { session, reason } => sessions
            .pause(&session, &reason)
            .map(|s| serde_json::to_value(&s)),
        SessionCommand::Resume { session } => {
            sessions.resume(&session).map(|r| serde_json::to_value(&r))
        }
        SessionCommand::Archive { session } => {
            sessions.archive(&session).map(|s| serde_json::to_value(&s))
        }
        SessionCommand::Handoff {
            session,
            kind,
            objective,
            to,
            notes,
            from_file,
        } => {
            let handoff = match from_file {
                Some(path) => {
                    let text = std::fs::read_to_string(&path).with_context(|| {
                        format!("cannot read the handoff file `{}`", path.display())
                    })?;
                    serde_json::from_str::<Handoff>(&text)
                        .with_context(|| format!("`{}` is not a valid handoff", path.display()))?
                }
                None => {
                    let state = match sessions.show(&session) {
                        Ok(s) => s,
                        Err(e) => return Ok(crate::session_refused(&e)),
                    };
                    let (Some(kind), Some(objective)) = (kind, objective) else {
                        anyhow::bail!(
                            "a handoff needs `--kind` and `--objective` (or `--from-file`)"
                        );
                    };
                    let mut h = Handoff::new(kind, state.header.role, objective);
                    h.target_session = to;
                    h.notes = notes.into();
                    h
                }
            };
            sessions
                .handoff(&session, handoff)
                .map(|e| serde_json::to_value(&e))
        }
        SessionCommand::Rerun { .. }
        | SessionCommand::End { .. }
        | SessionCommand::Spawn { .. }
        | SessionCommand::Verdict { .. }
        | SessionCommand::Wait { .. }
        | SessionCommand::Usage { .. }
        | SessionCommand::Budget { .. }
        | SessionCommand::Check { .. } => unreachable!("handled above"),
    };
    match result {
        Ok(value) => {
            print_json(&value?)?;
            Ok(ExitCode::SUCCESS)
        }
        Err(e) => Ok(crate::session_refused(&e)),
    }
}

/// `session end`: the state as JSON, with a `warning` (also on stderr) when
/// jobs of the session's own were still queued or running (recorded in its
/// log as `jobs_unwaited`; `glovebox doctor` reports them). `completed`
/// goes through the gateway, which runs the session's completion gates
/// (refused, exit 8, with the failing gate's output, until they pass).
async fn end(
    config: &Path,
    session: &str,
    outcome: EndOutcome,
    cancel_children: bool,
) -> Result<ExitCode> {
    let operator = crate::control::operator();
    let ended = if outcome == EndOutcome::Completed {
        let gateway = crate::control::gateway(config).await?;
        let scope = gateway.scope(&operator);
        if cancel_children {
            match scope.cancel_children(session).await {
                Ok(ids) => ids
                    .iter()
                    .for_each(|id| err!("child session {id} ended as interrupted")),
                Err(e) => return Ok(crate::session_refused(&e)),
            }
        }
        scope.end_checked(session, outcome).await
    } else {
        let durable = open_durable(config)?;
        if cancel_children {
            match durable.sessions.scope(&operator).cancel_children(session) {
                Ok(ids) => ids
                    .iter()
                    .for_each(|id| err!("child session {id} ended as interrupted")),
                Err(e) => return Ok(crate::session_refused(&e)),
            }
        }
        glovebox::doctor::end_session(&durable, session, outcome)
    };
    let ended = match ended {
        Ok(ended) => ended,
        Err(e) => return Ok(crate::session_refused(&e)),
    };
    let mut value = serde_json::to_value(&ended.state)?;
    if let Some(warning) = ended.warning() {
        err!("warning: {warning}");
        if let Some(map) = value.as_object_mut() {
            map.insert("warning".into(), warning.into());
        }
    }
    print_json(&value)?;
    Ok(ExitCode::SUCCESS)
}

pub fn run_log(config: &Path, command: LogCommand) -> Result<ExitCode> {
    if let LogCommand::Verify {
        file: Some(file),
        head,
        key,
        json,
        ..
    } = &command
    {
        return verify_export(file, head.as_deref(), key.as_deref(), *json);
    }
    let sessions = open(config)?;
    match command {
        LogCommand::Verify { session, json, .. } => {
            let reports = match &session {
                Some(s) => sessions.verify(s).map(|r| vec![r]),
                None => sessions.verify_all(),
            };
            let reports = match reports {
                Ok(r) => r,
                Err(e) => return Ok(crate::session_refused(&e)),
            };
            let bad = reports.iter().filter(|r| !r.ok).count();
            if json {
                print_json(&reports)?;
            } else {
                if reports.is_empty() {
                    out!("no sessions in this data dir: nothing to verify");
                }
                for r in &reports {
                    let label = r.name.as_deref().unwrap_or(&r.session);
                    let mode = r.mode();
                    match &r.first_bad {
                        None => match r.head_checked {
                            Some(head) => out!(
                                "ok   {label}: {} events, {mode} chain intact, reaches its recorded head (event {head})",
                                r.events_checked
                            ),
                            None => out!(
                                "ok   {label}: {} events, {mode} chain intact (no head recorded: written before heads were)",
                                r.events_checked
                            ),
                        },
                        Some((seq, reason)) => {
                            out!("BAD  {label} ({mode} chain): first bad event {seq}: {reason}")
                        }
                    }
                }
            }
            Ok(if bad == 0 {
                ExitCode::SUCCESS
            } else {
                Exit::Refused.into()
            })
        }
        LogCommand::Show {
            session,
            from,
            limit,
        } => {
            let events = match sessions.events(&session, from, limit) {
                Ok(e) => e,
                Err(e) => return Ok(crate::session_refused(&e)),
            };
            for e in events {
                let detail = serde_json::to_string(&e.kind)?;
                out!(
                    "{:>6}  {}  {:16}  {:16}  {}",
                    e.seq,
                    e.at_ms,
                    e.by.as_deref().unwrap_or("-"),
                    e.kind.name(),
                    detail
                );
            }
            Ok(ExitCode::SUCCESS)
        }
        LogCommand::Export { session } => {
            let events = match sessions.events(&session, 1, usize::MAX) {
                Ok(e) => e,
                Err(e) => return Ok(crate::session_refused(&e)),
            };
            // The head, for an auditor to keep apart from the export and
            // check it with (`log verify --file EXPORT --head SEQ:HASH`).
            if let Some(last) = events.last() {
                err!("head: {}:{}", last.seq, last.hash);
            }
            for e in events {
                out!("{}", serde_json::to_string(&e)?);
            }
            Ok(ExitCode::SUCCESS)
        }
    }
}

#[derive(Subcommand, serde::Serialize, serde::Deserialize)]
pub enum PolicyCommand {
    /// Evaluate the hook chain of `--config` against the calls recorded in a
    /// session and report each decision that would change. Nothing is executed.
    Replay {
        #[arg(long)]
        session: String,
        /// Read the session from this config's data dir instead of `--config`'s.
        #[arg(long)]
        store_config: Option<PathBuf>,
        #[arg(long)]
        json: bool,
    },
}

pub async fn approvals(
    config: &Path,
    all: bool,
    json: bool,
    page: &crate::paging::PageArgs,
) -> Result<ExitCode> {
    // The gateway, not the store alone: an input is shown in its tool's
    // schema order.
    let gateway = crate::control::gateway(config).await?;
    let (list, next) = match gateway.ledger().approvals.page(all, &page.request()) {
        Ok(p) => (p.items, p.next_cursor),
        Err(e) => return Ok(crate::session_refused(&e)),
    };
    if json {
        print_json(&list)?;
    } else if list.is_empty() {
        out!("no pending approvals");
    } else {
        let host = gateway.host();
        for a in &list {
            crate::approvals::print(&host.show_approval(a))?;
        }
    }
    crate::paging::print_next(next.as_deref());
    Ok(ExitCode::SUCCESS)
}

pub async fn approve(config: &Path, id: &str) -> Result<ExitCode> {
    let gateway = crate::control::gateway(config).await?;
    let shown = gateway
        .ledger()
        .approvals
        .get(id)
        .map(|a| gateway.host().show_approval(&a));
    match gateway.approve(id, &crate::control::operator()).await {
        Ok(report) => {
            if let Ok(shown) = &shown {
                crate::approvals::print_approved(shown)?;
            }
            crate::print_report(&report, false)
        }
        Err(e) => Ok(crate::session_refused(&e)),
    }
}

pub async fn deny(config: &Path, id: &str, reason: &str) -> Result<ExitCode> {
    let gateway = crate::control::gateway(config).await?;
    match gateway
        .deny_approval(id, reason, &crate::control::operator())
        .await
    {
        Ok(a) => {
            out!(
                "denied {} ({} in session {}): {reason}",
                a.id,
                a.tool,
                a.session_name.as_deref().unwrap_or(&a.session)
            );
            Ok(ExitCode::SUCCESS)
        }
        Err(e) => Ok(crate::session_refused(&e)),
    }
}

pub async fn policy(config: &Path, command: PolicyCommand) -> Result<ExitCode> {
    let PolicyCommand::Replay {
        session,
        store_config,
        json,
    } = command;
    // The policy replayed is the config's as it is on disk now (the one a
    // reload would serve), against the running server's log when one holds
    // the data dir.
    let host = Host::from_config_file(config).await?;
    let durable = match (&store_config, crate::control::served()) {
        (Some(path), _) => Arc::new(glovebox::open_sessions(&HostConfig::load(path)?)?),
        (None, Some(gateway)) => gateway.ledger().clone(),
        (None, None) => Arc::new(glovebox::open_sessions(host.config())?),
    };
    let report = match glovebox::replay::replay(&host, &durable.sessions, &session).await {
        Ok(r) => r,
        Err(e) => return Ok(crate::session_refused(&e)),
    };
    if json {
        print_json(&report)?;
    } else {
        out!(
            "replayed {} calls of {}: {} decisions would change",
            report.calls,
            report.session,
            report.changes.len()
        );
        for c in &report.changes {
            out!(
                "  {} {}: {} -> {}{}",
                c.call_id,
                c.tool,
                c.recorded,
                c.replayed,
                c.hook
                    .as_ref()
                    .map(|h| format!(" (hook `{h}`: {})", c.reason.as_deref().unwrap_or("")))
                    .unwrap_or_default()
            );
        }
        for (call, why) in &report.skipped {
            out!("  skipped {call}: {why}");
        }
    }
    Ok(ExitCode::SUCCESS)
}
