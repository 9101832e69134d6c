//! `glovebox billing ...`, `glovebox session usage` and `glovebox session budget`.

use std::path::Path;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::{Result, anyhow};
use clap::{Args, Subcommand};
use glovebox::billing::{self, DateRange, Figures, GroupBy};
use glovebox::budget::{self, BudgetCaps, UsageReport};
use glovebox::session::Sessions;
use glovebox::{Durable, HostConfig};

#[derive(Args, serde::Serialize, serde::Deserialize)]
#[command(args_conflicts_with_subcommands = true)]
pub struct BillingArgs {
    #[command(subcommand)]
    command: Option<BillingCommand>,
    #[command(flatten)]
    report: ReportArgs,
}

#[derive(Args, serde::Serialize, serde::Deserialize)]
struct ReportArgs {
    /// The first day, `YYYY-MM-DD` (UTC); default: the beginning.
    #[arg(long)]
    from: Option<String>,
    /// The last day, included, `YYYY-MM-DD` (UTC); default: today.
    #[arg(long)]
    to: Option<String>,
    /// Group by role, session, tool, project, day, family (child sessions
    /// under their root session, split by role with session hours) or
    /// principal (split by the model its sessions recorded at start).
    #[arg(long, default_value = "session")]
    by: GroupBy,
    /// Print JSON instead of a table.
    #[arg(long)]
    json: bool,
}

#[derive(Subcommand, serde::Serialize, serde::Deserialize)]
enum BillingCommand {
    /// The session-end records (each `ended` event with its summary) of the
    /// sessions that ended in the range, as JSON lines.
    Export {
        #[arg(long)]
        from: Option<String>,
        #[arg(long)]
        to: Option<String>,
    },
}

fn open(config: &Path) -> Result<(HostConfig, std::sync::Arc<Durable>)> {
    let durable = crate::reach::open_durable(config)?;
    let config = crate::reach::config(config)?;
    Ok((config, durable))
}

fn range(from: Option<&str>, to: Option<&str>, sessions: &Sessions) -> Result<DateRange> {
    Ok(DateRange::parse(from, to, sessions.clock_ms())?)
}

pub fn run(config: &Path, args: BillingArgs) -> Result<ExitCode> {
    let (_, durable) = open(config)?;
    let sessions = &durable.sessions;
    match args.command {
        Some(BillingCommand::Export { from, to }) => {
            let range = range(from.as_deref(), to.as_deref(), sessions)?;
            let records = match billing::export(sessions, &range) {
                Ok(r) => r,
                Err(e) => return Ok(crate::session_refused(&e)),
            };
            for r in &records {
                out!("{}", serde_json::to_string(r)?);
            }
        }
        None => {
            let a = args.report;
            let range = range(a.from.as_deref(), a.to.as_deref(), sessions)?;
            let report = match billing::report(sessions, &range, a.by) {
                Ok(r) => r,
                Err(e) => return Ok(crate::session_refused(&e)),
            };
            if a.json {
                out!("{}", serde_json::to_string_pretty(&report)?);
                return Ok(ExitCode::SUCCESS);
            }
            out!(
                "billing {} to {} by {} ({} sessions)",
                report.from,
                report.to,
                report.by,
                report.sessions
            );
            let width = report
                .groups
                .iter()
                .map(|g| shown_key(g).len())
                .max()
                .unwrap_or(0)
                .max(5);
            out!(
                "{:width$}  {:>7} {:>6} {:>12} {:>12} {:>10} {:>10} {:>10} {:>10} {:>9} {:>9}",
                report.by.as_str(),
                "calls",
                "fail",
                "wall",
                "fuel",
                "bytes in",
                "bytes out",
                "tool cost",
                "model cost",
                "bg calls",
                "bg cost"
            );
            for g in report.groups.iter().chain([&report.total]) {
                out!("{:width$}  {}", shown_key(g), row(&g.total, &g.background));
                for (role, share) in &g.roles {
                    out!(
                        "  {role}: {} sessions, {:.2} session hours, {} calls, {} background, cost {:.4}",
                        share.sessions,
                        share.session_hours,
                        share.total.calls,
                        share.background.calls,
                        share.total.cost
                    );
                }
                for (model, share) in &g.models {
                    out!(
                        "  model {model}: {} sessions, {} calls, {} background, cost {:.4}",
                        share.sessions,
                        share.total.calls,
                        share.background.calls,
                        share.total.cost
                    );
                }
                if let Some(card) = &g.agent {
                    out!("  {}", card_line(card));
                }
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// A session's recorded card on one line: `model=… version=… owner=…`.
fn card_line(card: &glovebox::manifest::AgentCard) -> String {
    [
        ("model", &card.model),
        ("version", &card.version),
        ("owner", &card.owner),
    ]
    .into_iter()
    .filter_map(|(k, v)| v.as_ref().map(|v| format!("{k}={v}")))
    .collect::<Vec<_>>()
    .join(" ")
}

fn shown_key(g: &billing::Group) -> String {
    match &g.label {
        Some(label) => format!("{label} ({})", g.key),
        None => g.key.clone(),
    }
}

fn row(f: &Figures, bg: &Figures) -> String {
    format!(
        "{:>7} {:>6} {:>12} {:>12} {:>10} {:>10} {:>10.4} {:>10.4} {:>9} {:>9.4}",
        f.calls,
        f.failures,
        format!("{:.1} ms", f.wall_us as f64 / 1000.0),
        f.fuel,
        f.bytes_in,
        f.bytes_out,
        f.tool_cost,
        f.model_cost,
        bg.calls,
        bg.cost
    )
}

pub fn session_usage(config: &Path, session: &str, usage: &UsageReport) -> Result<ExitCode> {
    let (config, durable) = open(config)?;
    match budget::report_usage(&durable.sessions, &config.budgets, session, usage) {
        Ok(events) => {
            out!("{}", serde_json::to_string_pretty(&events)?);
            for e in &events {
                if let glovebox::session::EventKind::Paused { reason, .. } = &e.kind {
                    err!("warning: session paused: {reason}");
                }
            }
            Ok(ExitCode::SUCCESS)
        }
        Err(e) => Ok(crate::session_refused(&e)),
    }
}

pub fn session_budget(
    config: &Path,
    session: &str,
    cost: Option<f64>,
    calls: Option<u64>,
    wall: Option<Duration>,
    tokens: Option<u64>,
) -> Result<ExitCode> {
    let (config, durable) = open(config)?;
    let sessions = &durable.sessions;
    let caps = BudgetCaps::new(cost, calls, wall)
        .map_err(|e| anyhow!("--cost: {e}"))?
        .with_tokens(tokens);
    if !caps.is_empty() {
        let raised = match budget::raise(sessions, &config.budgets, session, &caps) {
            Ok(r) => r,
            Err(e) => return Ok(crate::session_refused(&e)),
        };
        for e in &raised.events {
            if let glovebox::session::EventKind::CapRaised { cap, from, to } = &e.kind {
                err!(
                    "{cap} cap: {} -> {}",
                    from.map(|f| cap.show(f)).unwrap_or_else(|| "none".into()),
                    cap.show(*to)
                );
            }
        }
        if raised.resumed {
            err!("the session is within its caps again: resumed");
        } else if !raised.still_past.is_empty() {
            let past: Vec<&str> = raised.still_past.iter().map(|c| c.as_str()).collect();
            err!(
                "note: the session is still at or past its {} cap",
                past.join(", ")
            );
        }
    }
    match budget::status(sessions, &config.budgets, session) {
        Ok(status) => {
            out!("{}", serde_json::to_string_pretty(&status)?);
            Ok(ExitCode::SUCCESS)
        }
        Err(e) => Ok(crate::session_refused(&e)),
    }
}
