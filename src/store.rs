//! `glovebox store ...`: check, back up and restore the data dir's store.
//! Exit codes: 0 whole, 8 damage found (check), 2 cannot open or bad usage.

use crate::exit::Exit;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Result;
use clap::Subcommand;
use glovebox::HostConfig;
use glovebox::store_admin;

#[derive(Subcommand)]
pub enum StoreCommand {
    /// Verify the whole store: every session's hash chain, every record.
    /// Only reads (sqlite: read-only, works while a server runs; sled: opens
    /// it as the host does, with the server stopped).
    Check {
        #[arg(long)]
        json: bool,
    },
    /// Write a consistent copy of the store to a new file (a SQLite
    /// database, whatever the backend). With sqlite it works while a server runs.
    Backup {
        /// The backup file to create; never overwritten.
        path: PathBuf,
        #[arg(long)]
        json: bool,
    },
    /// Give the free space inside the store back to the file system
    /// (sqlite: VACUUM). The server must be stopped.
    Compact {
        #[arg(long)]
        json: bool,
    },
    /// Replace the store with a backup's contents, in the configured backend
    /// (also how a data dir moves between backends). The server must be
    /// stopped; the old store is kept beside the new one.
    Restore {
        /// A file `glovebox store backup` wrote.
        path: PathBuf,
        #[arg(long)]
        json: bool,
    },
}

pub fn run(config: &Path, command: StoreCommand) -> Result<ExitCode> {
    let config = glovebox::load_config_blocking(config)?;
    match command {
        StoreCommand::Check { json } => check(&config, json),
        StoreCommand::Backup { path, json } => backup(&config, &path, json),
        StoreCommand::Compact { json } => compact(&config, json),
        StoreCommand::Restore { path, json } => restore(&config, &path, json),
    }
}

/// `store check`: exit 8 (refused) when it finds damage.
fn check(config: &HostConfig, json: bool) -> Result<ExitCode> {
    let report = store_admin::check(config)?;
    print_report(&report, json, print_check)?;
    Ok(if report.ok() {
        ExitCode::SUCCESS
    } else {
        Exit::Refused.into()
    })
}

/// The check's lines: the store, what its open repaired, the sessions and
/// buckets, the damage found, and the verdict.
fn print_check(report: &store_admin::CheckReport) -> Result<()> {
    out!(
        "{} store in {} ({}{})",
        report.backend,
        report.store_dir.display(),
        glovebox::manifest::approximate_size(report.size_bytes),
        if report.read_only {
            ", opened read-only"
        } else {
            ""
        }
    );
    for repair in &report.repairs {
        out!("repaired at open: {repair}");
    }
    let bad = report.sessions.iter().filter(|r| !r.ok).count();
    out!(
        "sessions: {} ({} events), {} verify, {bad} damaged",
        report.sessions.len(),
        report.events,
        report.sessions.len() - bad
    );
    for (bucket, keys) in &report.buckets {
        out!("bucket {bucket}: {keys} keys");
    }
    for problem in &report.problems {
        out!("DAMAGED: {problem}");
    }
    out!(
        "{}",
        if report.ok() {
            "ok: the store is whole"
        } else {
            "the store is damaged: restore a backup with `glovebox store restore BACKUP` (the damaged store is kept beside it)"
        }
    );
    Ok(())
}

/// `store backup`: a consistent copy of the store in a new file.
fn backup(config: &HostConfig, path: &Path, json: bool) -> Result<ExitCode> {
    let report = store_admin::backup(config, path)?;
    print_report(&report, json, |report| {
        out!(
            "backed up the {} store to {} ({}): {} streams, {} events, {} keys in {} buckets",
            report.from_backend,
            report.path.display(),
            glovebox::manifest::approximate_size(report.size_bytes),
            report.streams,
            report.entries,
            report.keys,
            report.buckets
        );
        Ok(())
    })?;
    Ok(ExitCode::SUCCESS)
}

/// `store compact`: the store's free space given back to the file system.
fn compact(config: &HostConfig, json: bool) -> Result<ExitCode> {
    let report = store_admin::compact(config)?;
    print_report(&report, json, |report| {
        out!(
            "compacted the {} store: {} before, {} after",
            report.backend,
            glovebox::manifest::approximate_size(report.before_bytes),
            glovebox::manifest::approximate_size(report.after_bytes)
        );
        Ok(())
    })?;
    Ok(ExitCode::SUCCESS)
}

/// `store restore`: the store replaced with a backup's contents, the old one
/// kept beside it.
fn restore(config: &HostConfig, path: &Path, json: bool) -> Result<ExitCode> {
    let report = store_admin::restore(config, path)?;
    print_report(&report, json, |report| {
        out!(
            "restored {} into the {} store in {}: {} streams, {} events, {} keys; {} sessions verify",
            path.display(),
            report.backend,
            report.store_dir.display(),
            report.streams,
            report.entries,
            report.keys,
            report.sessions_verified
        );
        if let Some(previous) = &report.previous {
            out!("the store that was there is kept in {}", previous.display());
        }
        Ok(())
    })?;
    Ok(ExitCode::SUCCESS)
}

/// A report as pretty JSON with `--json`, else as the lines `text` writes.
fn print_report<T: serde::Serialize>(
    report: &T,
    json: bool,
    text: impl FnOnce(&T) -> Result<()>,
) -> Result<()> {
    if json {
        out!("{}", serde_json::to_string_pretty(report)?);
        Ok(())
    } else {
        text(report)
    }
}
