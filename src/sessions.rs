//! `glovebox session ...`: each subcommand (declared in `session_args.rs`)
//! run where it lives, and here those that need no file of their own (listing is `session_list.rs`; spawn and wait `children.rs`;
//! usage and budget `billing.rs`; verdict `completion.rs`; check `rescue.rs`).

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, Result};
use glovebox::session::{EndOutcome, Handoff, HandoffKind, Role, StartSession};

use crate::output::print_json;
pub use crate::session_args::SessionCommand;
use crate::session_args::{NewSessionArgs, NotesArgs};

pub async fn run_session(config: &Path, command: SessionCommand) -> Result<ExitCode> {
    match command {
        SessionCommand::Rerun { session, call_id } => rerun(config, &session, &call_id).await,
        SessionCommand::Usage {
            session,
            tokens_in,
            tokens_out,
            cost,
            model,
            context_tokens,
            context_limit,
        } => {
            let usage = glovebox::budget::UsageReport {
                tokens_in,
                tokens_out,
                cost,
                model,
                context_tokens,
                context_limit,
            };
            crate::billing::session_usage(config, &session, &usage)
        }
        SessionCommand::Budget {
            session,
            cost,
            calls,
            wall,
            tokens,
        } => crate::billing::session_budget(config, &session, cost, calls, wall, tokens),
        SessionCommand::Check { session, json } => crate::rescue::check(config, &session, json),
        SessionCommand::End {
            session,
            outcome,
            cancel_children,
        } => end(config, &session, outcome, cancel_children).await,
        SessionCommand::Verdict {
            worker,
            judge,
            pass,
            fail: _,
            reasons,
            handoff_seq,
        } => verdict(config, &judge, &worker, pass, reasons, handoff_seq).await,
        SessionCommand::Spawn {
            parent,
            role,
            objective,
            notes,
            new,
        } => crate::children::spawn(config, parent, role, objective, notes, new).await,
        SessionCommand::Wait { parent, timeout } => {
            crate::children::wait(config, &parent, timeout).await
        }
        SessionCommand::Start { role, project, new } => start(config, role, project, new).await,
        SessionCommand::List(args) => {
            let sessions = crate::reach::sessions(config)?;
            crate::session_list::list(&sessions, args)
        }
        SessionCommand::Handoff {
            session,
            kind,
            objective,
            to,
            notes,
            from_file,
        } => handoff(config, &session, kind, objective, to, notes, from_file),
        SessionCommand::Show { session } => printed(crate::reach::sessions(config)?.show(&session)),
        SessionCommand::Name { session, name } => {
            printed(crate::reach::sessions(config)?.rename(&session, &name))
        }
        SessionCommand::Tag {
            session,
            add,
            remove,
        } => printed(crate::reach::sessions(config)?.tag(&session, &add, &remove)),
        SessionCommand::Flag {
            session,
            reason,
            severity,
            needs,
        } => crate::session_flag::run(config, session, reason, &severity, needs).await,
        SessionCommand::Pause { session, reason } => {
            printed(crate::reach::sessions(config)?.pause(&session, &reason))
        }
        SessionCommand::Resume { session } => {
            printed(crate::reach::sessions(config)?.resume(&session))
        }
        SessionCommand::Archive { session } => {
            printed(crate::reach::sessions(config)?.archive(&session))
        }
    }
}

/// What a session command gave, printed as JSON, or its refusal.
fn printed<T: serde::Serialize>(
    result: Result<T, glovebox::session::SessionError>,
) -> Result<ExitCode> {
    match result {
        Ok(value) => {
            print_json(&serde_json::to_value(&value)?)?;
            Ok(ExitCode::SUCCESS)
        }
        Err(e) => Ok(crate::session_refused(&e)),
    }
}

/// `session verdict`: the judge's pass or fail of the worker's latest handoff.
async fn verdict(
    config: &Path,
    judge: &str,
    worker: &str,
    pass: bool,
    reasons: Vec<String>,
    handoff_seq: Option<u64>,
) -> Result<ExitCode> {
    let input = glovebox::session::VerdictInput {
        pass,
        reasons,
        handoff_seq,
    };
    crate::completion::verdict(config, judge, worker, input).await
}

/// `session handoff`: the handoff from `--from-file`, or made from the flags
/// (its role the session's own), written to the session and printed.
fn handoff(
    config: &Path,
    session: &str,
    kind: Option<HandoffKind>,
    objective: Option<String>,
    to: Option<String>,
    notes: NotesArgs,
    from_file: Option<PathBuf>,
) -> Result<ExitCode> {
    let sessions = crate::reach::sessions(config)?;
    let handoff = match from_file {
        Some(path) => handoff_from_file(&path)?,
        None => {
            let role = match sessions.show(session) {
                Ok(s) => s.header.role,
                Err(e) => return Ok(crate::session_refused(&e)),
            };
            let (Some(kind), Some(objective)) = (kind, objective) else {
                anyhow::bail!("a handoff needs `--kind` and `--objective` (or `--from-file`)");
            };
            let mut h = Handoff::new(kind, role, objective);
            h.target_session = to;
            h.notes = notes.into();
            h
        }
    };
    let objective = handoff.objective.clone();
    let written = sessions.handoff(session, handoff);
    if let Ok(event) = &written {
        crate::workspace::commit_handoff(config, &event.session, &objective);
    }
    printed(written)
}

/// `session start`: its completion condition is checked against the host's
/// tools before the data dir is opened.
async fn start(
    config: &Path,
    role: Role,
    project: String,
    new: NewSessionArgs,
) -> Result<ExitCode> {
    let completion = crate::completion::completion_arg(config, new.completion.as_deref()).await?;
    let sessions = crate::reach::sessions(config)?;
    let budget = new.budget()?;
    let read_only = new.read_only;
    printed(sessions.start_read_only(
        StartSession {
            role,
            project,
            name: new.name,
            tags: new.tags,
            expected_duration: new.expected_duration,
            budget,
            completion,
        },
        read_only,
    ))
}

/// A handoff written as JSON in a file (`--from-file`).
fn handoff_from_file(path: &Path) -> Result<Handoff> {
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("cannot read the handoff file `{}`", path.display()))?;
    serde_json::from_str::<Handoff>(&text)
        .with_context(|| format!("`{}` is not a valid handoff", path.display()))
}

/// `session rerun`: an interrupted call of an idempotent tool, again.
async fn rerun(config: &Path, session: &str, call_id: &str) -> Result<ExitCode> {
    let gateway = crate::reach::gateway(config).await?;
    let operator = crate::reach::operator();
    match gateway
        .scope(&operator)
        .rerun_interrupted(session, call_id)
        .await
    {
        Ok(report) => crate::print_report(&report, false),
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
    let operator = crate::reach::operator();
    let ended = if outcome == EndOutcome::Completed {
        let gateway = crate::reach::gateway(config).await?;
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
        let durable = crate::reach::open_durable(config)?;
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
