//! `glovebox context ...`: the context index of the rescues, as the
//! operator adds to it, lists, searches and retires it; and how the
//! commands here open the data dir's rescues and exit on their errors.

use std::path::Path;
use std::process::ExitCode;

use anyhow::Result;
use clap::Subcommand;
use glovebox::HostConfig;
use glovebox::manifest::ContextWriter;
use glovebox::page::Page;
use glovebox::rescue::{RescueError, Rescues};

use crate::exit::Exit;
use crate::output::print_json;

#[derive(Subcommand, serde::Serialize, serde::Deserialize)]
pub enum ContextCommand {
    /// Add an entry to a project's context index (as the operator).
    Add {
        #[arg(long)]
        project: String,
        text: String,
    },
    /// List a project's entries (or all projects'), the latest first.
    List {
        #[arg(long)]
        project: Option<String>,
        /// Include retired entries.
        #[arg(long)]
        all: bool,
        #[arg(long)]
        json: bool,
        #[command(flatten)]
        page: crate::paging::PageArgs,
    },
    /// Find active entries containing every word of QUERY, the latest first.
    Search {
        query: String,
        #[arg(long)]
        project: Option<String>,
        #[arg(long)]
        json: bool,
        #[command(flatten)]
        page: crate::paging::PageArgs,
    },
    /// Retire an entry: new sessions no longer get it.
    Retire { id: String },
}

pub(super) struct Opened {
    pub(super) rescues: Rescues,
    pub(super) durable: std::sync::Arc<glovebox::Durable>,
    pub(super) config: HostConfig,
}

pub(super) fn open(config: &Path) -> Result<Opened> {
    let durable = crate::reach::open_durable(config)?;
    let config = crate::reach::config(config)?;
    let rescues = Rescues::new(
        durable.sessions.clone(),
        durable.storage.clone(),
        config.context.clone(),
    )
    .with_memory(config.memory.clone());
    Ok(Opened {
        rescues,
        durable,
        config,
    })
}

fn refused(e: &RescueError) -> ExitCode {
    err!("error: {e}");
    match e {
        RescueError::Refused(_) => Exit::Denied,
        RescueError::NotFound(_) | RescueError::InvalidInput(_) => Exit::Invalid,
        RescueError::Session(_) | RescueError::Storage(_) => Exit::Refused,
    }
    .into()
}

pub fn run_context(config: &Path, command: ContextCommand) -> Result<ExitCode> {
    let o = open(config)?;
    let index = o.rescues.index();
    let now = o.rescues.now();
    let list = |found: Result<Page<glovebox::rescue::IndexEntry>, RescueError>,
                json: bool|
     -> Result<ExitCode> {
        let (entries, next) = match found {
            Ok(p) => (p.items, p.next_cursor),
            Err(e) => return Ok(refused(&e)),
        };
        if json {
            print_json(&entries)?;
        } else if entries.is_empty() {
            out!("no context entries");
        } else {
            for e in &entries {
                out!(
                    "{}  {:16}  {:8}{}  {}",
                    e.id,
                    e.project,
                    e.writer.as_str(),
                    if e.retired_at_ms.is_some() {
                        "  retired"
                    } else {
                        ""
                    },
                    e.text
                );
            }
        }
        crate::paging::print_next(next.as_deref());
        Ok(ExitCode::SUCCESS)
    };
    match command {
        ContextCommand::Add { project, text } => {
            match index.add(&project, &text, ContextWriter::Operator, None, now) {
                Ok(e) => print_json(&e)?,
                Err(e) => return Ok(refused(&e)),
            }
            Ok(ExitCode::SUCCESS)
        }
        ContextCommand::List {
            project,
            all,
            json,
            page,
        } => list(index.list(project.as_deref(), all, &page.request()), json),
        ContextCommand::Search {
            query,
            project,
            json,
            page,
        } => list(
            index.search(&query, project.as_deref(), &page.request()),
            json,
        ),
        ContextCommand::Retire { id } => {
            match index.retire(&id, ContextWriter::Operator, now) {
                Ok(e) => print_json(&e)?,
                Err(e) => return Ok(refused(&e)),
            }
            Ok(ExitCode::SUCCESS)
        }
    }
}
