//! `glovebox session spawn` and `glovebox session wait`: child sessions at
//! the command line, as the operator (the rules are the ledger's, see
//! `glovebox_ledger::session::family`; `session list --children` is in
//! `session_list.rs`, `session end --cancel-children` in `sessions.rs`).

use crate::exit::Exit;
use std::path::Path;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::Result;
use glovebox::session::{Handoff, HandoffKind, Role, SpawnChild};

use crate::output::print_json;
use crate::reach::open_durable;
use crate::session_args::{NewSessionArgs, NotesArgs};

/// `session spawn`: the child's state and the parent's `child_spawned`
/// event, as JSON.
pub(crate) async fn spawn(
    config: &Path,
    parent: String,
    role: Role,
    objective: String,
    notes: NotesArgs,
    new: NewSessionArgs,
) -> Result<ExitCode> {
    let completion = crate::completion::completion_arg(config, new.completion.as_deref()).await?;
    let durable = open_durable(config)?;
    let host = crate::reach::config(config)?;
    let budget = new.budget()?;
    let read_only = new.read_only;
    let mut task = Handoff::new(HandoffKind::Task, role, objective);
    task.notes = notes.into();
    let spawn = SpawnChild {
        role,
        name: new.name,
        tags: new.tags,
        expected_duration: new.expected_duration,
        budget,
        task,
        completion,
    };
    let reserved = glovebox::manifest::pinned_tags(&host.principals);
    match durable
        .sessions
        .scope(&crate::reach::operator())
        .spawn_read_only(&parent, spawn, &host.budgets, &reserved, read_only)
    {
        Ok(spawned) => {
            print_json(&spawned)?;
            Ok(ExitCode::SUCCESS)
        }
        Err(e) => Ok(crate::session_refused(&e)),
    }
}

/// `session wait`: inside a running server, waits on its gateway; with no
/// server nothing can change the children while this command holds the data
/// dir, so it reports them at once.
pub(crate) async fn wait(
    config: &Path,
    parent: &str,
    timeout: Option<Duration>,
) -> Result<ExitCode> {
    let operator = crate::reach::operator();
    let waited = match crate::reach::served() {
        Some(gateway) => {
            gateway
                .scope(&operator)
                .wait_children(parent, timeout)
                .await
        }
        None => {
            let durable = open_durable(config)?;
            glovebox::children::wait_timeout(timeout).and_then(|_| {
                let (state, children) = durable.sessions.scope(&operator).wait_check(parent)?;
                let pending: Vec<String> = children
                    .iter()
                    .filter(|c| !c.settled)
                    .map(|c| c.id.clone())
                    .collect();
                if !pending.is_empty() {
                    err!(
                        "note: no server runs on this data dir, so nothing can settle the children while this command holds it: reported at once"
                    );
                }
                Ok(glovebox::children::ChildrenWaited {
                    parent: state.header.id,
                    timed_out: !pending.is_empty(),
                    children,
                    pending,
                })
            })
        }
    };
    match waited {
        Ok(waited) => {
            print_json(&waited)?;
            Ok(if waited.timed_out {
                Exit::Limit.into()
            } else {
                ExitCode::SUCCESS
            })
        }
        Err(e) => Ok(crate::session_refused(&e)),
    }
}
