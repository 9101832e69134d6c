//! `glovebox budget`: the spend ceilings across sessions and their use this
//! period; `budget raise` (a ceiling for the current period) and `budget
//! lift` (the pause a ceiling took).

use std::path::Path;
use std::process::ExitCode;

use anyhow::{Result, anyhow};
use clap::{Args, Subcommand};
use glovebox::ceilings::{self, CeilingStatus};
use glovebox::manifest::{CeilingLimits, Measure, Period, Scope, ScopeKind};

#[derive(Args, serde::Serialize, serde::Deserialize)]
#[command(args_conflicts_with_subcommands = true)]
pub struct BudgetArgs {
    #[command(subcommand)]
    command: Option<BudgetCommand>,
    /// Print JSON instead of a table.
    #[arg(long)]
    json: bool,
}

#[derive(Subcommand, serde::Serialize, serde::Deserialize)]
enum BudgetCommand {
    /// Raise (or set) a principal's, project's or role's ceilings for the
    /// current period (they replace the config's until it ends); the
    /// sessions its ceilings paused resume once it is within all of them.
    Raise {
        /// `principal`, `project` or `role`.
        kind: String,
        /// Its name (a principal, a project, a role).
        name: String,
        /// `day`, `week` or `month`: the current one is raised.
        #[arg(long)]
        period: String,
        /// The cost ceiling, in cost units.
        #[arg(long)]
        cost: Option<f64>,
        /// The calls ceiling.
        #[arg(long)]
        calls: Option<u64>,
        /// The model tokens ceiling.
        #[arg(long)]
        tokens: Option<u64>,
        #[arg(long)]
        json: bool,
    },
    /// Lift the pause a principal's, project's or role's ceiling took: its
    /// paused sessions resume (a call still past a ceiling is refused again).
    Lift {
        /// `principal`, `project` or `role`.
        kind: String,
        name: String,
        #[arg(long)]
        json: bool,
    },
}

fn scope(kind: &str, name: &str) -> Result<Scope> {
    let kind = kind.parse::<ScopeKind>().map_err(|e| anyhow!("{e}"))?;
    Ok(Scope {
        kind,
        name: name.to_string(),
    })
}

pub fn run(config: &Path, args: BudgetArgs) -> Result<ExitCode> {
    let durable = crate::reach::open_durable(config)?;
    let sessions = &durable.sessions;
    match args.command {
        None => match ceilings::status(sessions) {
            Ok(status) if args.json => out!("{}", serde_json::to_string_pretty(&status)?),
            Ok(status) => print_status(&status)?,
            Err(e) => return Ok(crate::session_refused(&e)),
        },
        Some(BudgetCommand::Raise {
            kind,
            name,
            period,
            cost,
            calls,
            tokens,
            json,
        }) => {
            let scope = scope(&kind, &name)?;
            let period: Period = period
                .parse()
                .map_err(|e: glovebox::manifest::UnknownWord| anyhow!("--period: {e}"))?;
            let mut to = CeilingLimits {
                calls,
                tokens,
                ..CeilingLimits::default()
            };
            if let Some(cost) = cost {
                let micros =
                    glovebox::budget::to_micros(cost).map_err(|e| anyhow!("--cost: {e}"))?;
                to.set(Measure::Cost, Some(micros));
            }
            let raised = match ceilings::raise(sessions, &scope, period, &to) {
                Ok(r) => r,
                Err(e) => return Ok(crate::session_refused(&e)),
            };
            if json {
                out!("{}", serde_json::to_string_pretty(&raised)?);
            } else {
                print_status(&raised.ceilings)?;
            }
            match &raised.still_at {
                Some(at) => err!(
                    "note: {scope} is still at a ceiling, its paused sessions stay paused: {at}"
                ),
                None if raised.resumed.is_empty() => {}
                None => err!(
                    "resumed {} session(s) the ceilings of {scope} paused: {}",
                    raised.resumed.len(),
                    raised.resumed.join(", ")
                ),
            }
        }
        Some(BudgetCommand::Lift { kind, name, json }) => {
            let scope = scope(&kind, &name)?;
            let resumed = match ceilings::lift(sessions, &scope) {
                Ok(r) => r,
                Err(e) => return Ok(crate::session_refused(&e)),
            };
            if json {
                out!("{}", serde_json::to_string_pretty(&resumed)?);
            } else if resumed.is_empty() {
                out!("no session of {scope} is paused by a ceiling");
            } else {
                for id in &resumed {
                    out!("{id}");
                }
            }
            let now = sessions.clock_ms();
            let scopes = [scope.clone()];
            if let Ok(Some(breach)) = sessions.tallies().at_ceiling(&scopes, now) {
                err!(
                    "note: {scope} is still at a ceiling, so their next call is refused again: {}; raise it with `{}`",
                    breach.summary(),
                    breach.raise_command()
                );
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}

fn print_status(status: &[CeilingStatus]) -> Result<()> {
    if status.is_empty() {
        out!(
            "no spend ceiling is configured: add `[budgets.principal.NAME.day]` (or `.week`, `.month`; `project`, `role`) with `cost`, `calls` or `tokens`"
        );
        return Ok(());
    }
    let width = status.iter().map(|s| s.key.len()).max().unwrap_or(0);
    out!(
        "{:width$}  {:>28}  {:>5}  {:<10}  {:<20}  state",
        "ceiling",
        "used of limit",
        "%",
        "period",
        "ends"
    );
    for s in status {
        let ends = glovebox::manifest::Window {
            id: s.period_id.clone(),
            start_ms: 0,
            end_ms: s.ends_at_ms,
        }
        .ends();
        let mut state = Vec::new();
        if s.reached {
            state.push("reached");
        }
        if s.raised {
            state.push("raised");
        }
        out!(
            "{:width$}  {:>28}  {:>4}%  {:<10}  {:<20}  {}",
            s.key,
            s.shown,
            s.percent,
            s.period_id,
            ends,
            state.join(", ")
        );
    }
    Ok(())
}
