//! `glovebox log ...`: the session log's hash chain verified (the store's,
//! or an export offline), a session's events shown or exported.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, Result};
use clap::Subcommand;

use crate::exit::Exit;
use crate::output::print_json;

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

pub fn run(config: &Path, command: LogCommand) -> Result<ExitCode> {
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
    let sessions = crate::reach::sessions(config)?;
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
