//! `glovebox job ...`: background jobs from the command line.
//!
//! One process holds a data dir at a time. While `glovebox serve` runs, these
//! commands run inside it (`control/`) and a spawned job starts at once on
//! its runner; without a server, `job spawn` only queues a job (persists it)
//! and exits, and the job runs in whichever process next runs the jobs of the
//! data dir: `job wait` (while it waits) or `glovebox serve`.

use crate::exit::Exit;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use std::time::Duration;

use anyhow::Result;
use clap::Subcommand;
use glovebox::page::PageRequest;
use glovebox::{JobError, JobStatus, WaitMode};

#[derive(Subcommand, serde::Serialize, serde::Deserialize)]
pub enum JobCommand {
    /// Queue a tool call as a background job in a session; prints the job and
    /// returns at once.
    ///
    /// With a server running it starts there at once. Without one, the job
    /// is only queued (persisted in the data dir): it runs when a process
    /// runs the data dir's jobs, i.e. `glovebox job wait` or `glovebox serve`. The request is checked first: an unknown tool or
    /// input that fails the tool's schema is refused and nothing is queued.
    Spawn {
        /// The session (id or name) the call is made and logged in.
        #[arg(long, short)]
        session: String,
        /// The tool, as `plugin.tool` (or just `tool` when unambiguous).
        tool: String,
        /// The input as JSON text; `-` reads it from stdin.
        #[arg(long, short, conflicts_with = "input_file")]
        input: Option<String>,
        /// Read the input from a file.
        #[arg(long)]
        input_file: Option<PathBuf>,
    },
    /// Print a job: its status and, once final, its result.
    Status { id: String },
    /// Run the data dir's queued jobs and wait for the given ones.
    ///
    /// This process runs every queued job of the data dir while it waits
    /// (jobs that were running when a host stopped are marked interrupted,
    /// and re-run only if their tool is idempotent). Jobs still running when
    /// the wait ends are stopped with the process: they become interrupted
    /// (re-run by the next runner only if idempotent). Exits 0 when the wait
    /// was satisfied, 6 when it timed out.
    Wait {
        #[arg(required = true)]
        ids: Vec<String>,
        /// Return when the first job is final, not all of them.
        #[arg(long)]
        first: bool,
        /// How long to wait (e.g. `30s`, `5m`); default 30s, at most 10m.
        #[arg(long, value_parser = humantime::parse_duration)]
        timeout: Option<Duration>,
    },
    /// Cancel a job: a queued job never runs; a finished one is left as it is.
    Cancel { id: String },
    /// List jobs, oldest first, a page at a time: their sizes and SHA-256
    /// digests, not their input and output (`job status` prints those).
    ///
    /// When more may follow, the cursor of the next page is printed on
    /// stderr: pass it as `--cursor`.
    List {
        /// Only the jobs of this session (id or name).
        #[arg(long)]
        session: Option<String>,
        /// queued, running, completed, failed, timeout, cancelled or interrupted.
        #[arg(long)]
        status: Option<JobStatus>,
        /// Jobs in this page: 100 by default, 500 at most.
        #[arg(long)]
        limit: Option<usize>,
        /// Where the previous page ended (the cursor it printed).
        #[arg(long)]
        cursor: Option<String>,
    },
}

pub async fn run(config: &Path, command: JobCommand) -> Result<ExitCode> {
    let jobs = crate::reach::jobs(config).await?;
    // The operator at the command line, through its scope like any caller.
    let operator = crate::reach::operator();
    let scope = jobs.scope(&operator);
    let result = match command {
        JobCommand::Spawn {
            session,
            tool,
            input,
            input_file,
        } => {
            let input = super::read_input(input, input_file)?;
            // Inside a running server the job starts now; here it is only
            // queued for whichever process runs the data dir's jobs next.
            let job = match crate::reach::served() {
                Some(_) => scope.spawn_call(&session, &tool, &input).await,
                None => scope.enqueue(&session, &tool, &input).await,
            };
            job.and_then(|job| print(&job))
        }
        JobCommand::Status { id } => scope.status(&id).await.and_then(|job| print(&job)),
        JobCommand::Wait {
            ids,
            first,
            timeout,
        } => {
            let mode = if first {
                WaitMode::First
            } else {
                WaitMode::All
            };
            // Inside a running server its runner already runs the jobs.
            let recovered = match crate::reach::served() {
                Some(_) => Ok(Vec::new()),
                None => jobs.recover().await,
            };
            match recovered {
                Ok(recovered) => {
                    for job in recovered.iter().filter(|j| j.status != JobStatus::Queued) {
                        err!("job {}: {}", job.id, job.status);
                    }
                    match scope.wait(&ids, mode, timeout).await {
                        Ok(outcome) => {
                            print(&outcome)?;
                            return Ok(if outcome.timed_out {
                                Exit::Limit.into()
                            } else {
                                ExitCode::SUCCESS
                            });
                        }
                        Err(e) => Err(e),
                    }
                }
                Err(e) => Err(e),
            }
        }
        JobCommand::Cancel { id } => scope.cancel(&id).await.and_then(|job| print(&job)),
        JobCommand::List {
            session,
            status,
            limit,
            cursor,
        } => scope
            .list(session.as_deref(), status, &PageRequest { limit, cursor })
            .await
            .and_then(|page| {
                print(&page.items)?;
                if let Some(next) = &page.next_cursor {
                    err!("more jobs follow: --cursor {next}");
                }
                Ok(())
            }),
    };
    match result {
        Ok(()) => Ok(ExitCode::SUCCESS),
        Err(e) => {
            err!("error: {e}");
            Ok(match e {
                JobError::NotFound(_) | JobError::BadRequest(_) => Exit::Invalid,
                JobError::Session(_) => Exit::Refused,
                JobError::Storage(_) => Exit::Failed,
            }
            .into())
        }
    }
}

fn print<T: serde::Serialize>(value: &T) -> Result<(), JobError> {
    let text = serde_json::to_string_pretty(value)
        .map_err(|e| JobError::BadRequest(format!("cannot print the job: {e}")))?;
    // A closed stdout (`| head`) is not an error of the job's.
    let _ = crate::output::write_out(format_args!("{text}"));
    Ok(())
}
