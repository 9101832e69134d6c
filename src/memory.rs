//! `glovebox memory ...`: the operators' review of the memory bank. Agents
//! propose (`memory_propose`); nothing they propose reaches a new session
//! until an operator approves it here. Every step is stamped with the
//! operator who took it (`cli:<uid>`, the socket's peer when a server runs).

use crate::exit::Exit;
use std::path::Path;
use std::process::ExitCode;

use anyhow::Result;
use clap::Subcommand;
use glovebox::memory::{MemoryBank, MemoryEntry, MemoryError, MemoryFilter, MemoryState, Scope};

#[derive(Subcommand, serde::Serialize, serde::Deserialize)]
pub enum MemoryCommand {
    /// List the proposed entries awaiting review, oldest first.
    Review {
        #[arg(long)]
        json: bool,
        #[command(flatten)]
        page: crate::paging::PageArgs,
    },
    /// Approve a proposed entry: new sessions of its scope start with it.
    Approve { id: String },
    /// Reject a proposed entry: it never reaches a session.
    Reject {
        id: String,
        /// Why (kept on the entry for the proposer to read).
        #[arg(long)]
        reason: String,
    },
    /// Retire an approved entry: new sessions no longer start with it.
    Retire {
        id: String,
        #[arg(long)]
        reason: Option<String>,
    },
    /// List entries, oldest first: all, or of one scope and state (the
    /// approved entries of one scope: the most recently approved first).
    List {
        /// `project:NAME`, `user:NAME` or `role:ROLE`.
        #[arg(long)]
        scope: Option<String>,
        /// proposed, approved, rejected or retired.
        #[arg(long)]
        state: Option<MemoryState>,
        #[arg(long)]
        json: bool,
        #[command(flatten)]
        page: crate::paging::PageArgs,
    },
    /// Show one entry with its provenance and review stamps.
    Show { id: String },
}

fn refused(e: &MemoryError) -> ExitCode {
    err!("error: {e}");
    match e {
        MemoryError::NotAllowed(_) => Exit::Denied,
        MemoryError::NotFound(_) | MemoryError::InvalidInput(_) => Exit::Invalid,
        MemoryError::Session(_) | MemoryError::Storage(_) => Exit::Refused,
    }
    .into()
}

fn print_json<T: serde::Serialize>(value: &T) -> Result<()> {
    out!("{}", serde_json::to_string_pretty(value)?);
    Ok(())
}

fn print_list(entries: &[MemoryEntry], json: bool) -> Result<()> {
    if json {
        out!("{}", serde_json::to_string_pretty(entries)?);
        return Ok(());
    }
    if entries.is_empty() {
        out!("no memory entries");
    }
    for e in entries {
        let from = match (&e.provenance.rescue, &e.provenance.session) {
            (Some(r), _) => format!("rescue {r}"),
            (None, Some(s)) => format!("session {s}"),
            (None, None) => "-".to_string(),
        };
        out!(
            "{}  {:9}  {:24}  by {} ({from})\n    {}",
            e.id,
            e.state.as_str(),
            e.scope.to_string(),
            e.provenance.by,
            e.text
        );
    }
    Ok(())
}

pub fn run(config: &Path, command: MemoryCommand) -> Result<ExitCode> {
    let durable = crate::reach::open_durable(config)?;
    let host_config = crate::reach::config(config)?;
    let bank = MemoryBank::new(durable.storage.clone(), host_config.memory.clone());
    let operator = crate::reach::operator().name;
    let now = durable.sessions.clock_ms();
    let one = |result: Result<MemoryEntry, MemoryError>| -> Result<ExitCode> {
        match result {
            Ok(entry) => {
                print_json(&entry)?;
                Ok(ExitCode::SUCCESS)
            }
            Err(e) => Ok(refused(&e)),
        }
    };
    match command {
        MemoryCommand::Review { json, page } => {
            let filter = MemoryFilter {
                state: Some(MemoryState::Proposed),
                ..Default::default()
            };
            match bank.page(&filter, &page.request()) {
                Ok(found) => {
                    print_list(&found.items, json)?;
                    crate::paging::print_next(found.next_cursor.as_deref());
                }
                Err(e) => return Ok(refused(&e)),
            }
            Ok(ExitCode::SUCCESS)
        }
        MemoryCommand::Approve { id } => one(bank.approve(&id, &operator, now)),
        MemoryCommand::Reject { id, reason } => one(bank.reject(&id, &operator, &reason, now)),
        MemoryCommand::Retire { id, reason } => {
            one(bank.retire(&id, &operator, reason.as_deref(), now))
        }
        MemoryCommand::Show { id } => one(bank.get(&id)),
        MemoryCommand::List {
            scope,
            state,
            json,
            page,
        } => {
            let scope = match scope.as_deref().map(str::parse::<Scope>).transpose() {
                Ok(s) => s,
                Err(e) => {
                    err!("error: `--scope`: {e}");
                    return Ok(Exit::Usage.into());
                }
            };
            match bank.page(&MemoryFilter { scope, state }, &page.request()) {
                Ok(found) => {
                    print_list(&found.items, json)?;
                    crate::paging::print_next(found.next_cursor.as_deref());
                }
                Err(e) => return Ok(refused(&e)),
            }
            Ok(ExitCode::SUCCESS)
        }
    }
}
