//! `glovebox schedule list` and `glovebox schedule run NAME`: the
//! `[[schedule]]` and `[[trigger]]` entries as the host keeps them (next
//! fire, last run and its outcome), and a schedule run now by hand. Both go
//! to the running server when one holds the data dir.

use crate::exit::Exit;
use std::path::Path;
use std::process::ExitCode;

use anyhow::{Result, bail};
use clap::Subcommand;
use glovebox::schedule::records::{self, FireRecord, Records};
use glovebox::schedule::show_ms;

#[derive(Subcommand, serde::Serialize, serde::Deserialize)]
pub enum ScheduleCommand {
    /// Every schedule (next fire, last fire, last outcome) and trigger.
    List {
        #[arg(long)]
        json: bool,
    },
    /// Run schedule NAME now, as the schedule (its cron times are unchanged).
    Run { name: String },
}

pub async fn run(config: &Path, command: ScheduleCommand) -> Result<ExitCode> {
    let gateway = crate::reach::gateway(config).await?;
    let scheduler = glovebox::schedule::Scheduler::of(&gateway);
    match command {
        ScheduleCommand::List { json } => {
            let schedules = scheduler.status().await?;
            let store = Records(gateway.ledger().storage.clone());
            let mut triggers = Vec::new();
            for t in &gateway.host().config().triggers {
                let record = store.get(&records::key("trigger", &t.name))?;
                let on = match t.on {
                    glovebox::manifest::TriggerOn::Webhook => format!("webhook /hooks/{}", t.name),
                    glovebox::manifest::TriggerOn::Event { kind, .. } => kind.to_string(),
                };
                triggers.push((
                    t.name.clone(),
                    on,
                    t.run.action.as_str(),
                    record.unwrap_or_default(),
                ));
            }
            if json {
                let triggers: Vec<_> = triggers
                    .iter()
                    .map(|(name, on, action, record)| serde_json::json!({"name": name, "on": on, "action": action, "record": record}))
                    .collect();
                out!(
                    "{}",
                    serde_json::to_string_pretty(
                        &serde_json::json!({"schedules": schedules, "triggers": triggers})
                    )?
                );
                return Ok(ExitCode::SUCCESS);
            }
            if schedules.is_empty() && triggers.is_empty() {
                out!("no `[[schedule]]` or `[[trigger]]` entries are configured");
                return Ok(ExitCode::SUCCESS);
            }
            for s in &schedules {
                out!(
                    "schedule {}  `{}`  {}  next {}  last {}{}",
                    s.name,
                    s.cron,
                    s.action,
                    s.next_fire_ms
                        .map(show_ms)
                        .unwrap_or_else(|| "never".into()),
                    last(&s.record),
                    if s.catch_up { "" } else { "  (no catch-up)" }
                );
            }
            for (name, on, action, record) in &triggers {
                let folded = if record.folded > 0 {
                    format!("  ({} events folded by its cooldown)", record.folded)
                } else {
                    String::new()
                };
                out!(
                    "trigger {name}  on {on}  {action}  last {}{folded}",
                    last(record)
                );
            }
            Ok(ExitCode::SUCCESS)
        }
        ScheduleCommand::Run { name } => {
            let Some(schedule) = gateway
                .host()
                .config()
                .schedules
                .iter()
                .find(|s| s.name == name)
                .cloned()
            else {
                bail!("no schedule `{name}`: `glovebox schedule list` shows them");
            };
            let cause = format!("run by hand by {}", crate::reach::operator().name);
            let outcome = scheduler.fire(&schedule, &cause).await;
            out!("{}", serde_json::to_string_pretty(&outcome)?);
            Ok(if outcome.ok {
                ExitCode::SUCCESS
            } else {
                Exit::Failed.into()
            })
        }
    }
}

/// `<time> <ok|failed>: <outcome>`, or `never`.
fn last(record: &FireRecord) -> String {
    match (record.last_run_at_ms, &record.last_outcome) {
        (Some(at), Some(outcome)) => format!(
            "{} {}: {outcome} ({} runs)",
            show_ms(at),
            if record.last_ok == Some(true) {
                "ok"
            } else {
                "failed"
            },
            record.runs
        ),
        (None, Some(outcome)) => outcome.clone(),
        _ => "never".to_string(),
    }
}
