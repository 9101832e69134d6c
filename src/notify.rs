//! `glovebox notify status` and `glovebox notify test`: what the operator sees
//! of the `[[notify]]` targets' deliveries (the outbox in the store), and a
//! way to check a target's URL and secret before an incident needs them.

use crate::exit::Exit;
use std::path::Path;
use std::process::ExitCode;

use anyhow::{Result, bail};
use clap::Subcommand;
use glovebox::notify::{self, OutboxEntry, TargetStatus};

#[derive(Subcommand, serde::Serialize, serde::Deserialize)]
pub enum NotifyCommand {
    /// Per target: entries pending, delivered and failed, and the failed
    /// ones with their last error.
    Status {
        #[arg(long)]
        json: bool,
    },
    /// Send a test notification to TARGET now (not through the outbox) and
    /// say what the receiver answered.
    Test { target: String },
}

pub async fn run(config: &Path, command: NotifyCommand) -> Result<ExitCode> {
    match command {
        NotifyCommand::Status { json } => status(config, json),
        NotifyCommand::Test { target } => test(config, &target).await,
    }
}

fn status(config: &Path, json: bool) -> Result<ExitCode> {
    let durable = crate::reach::open_durable(config)?;
    let targets = durable.outbox.status()?;
    if json {
        out!("{}", serde_json::to_string_pretty(&targets)?);
        return Ok(ExitCode::SUCCESS);
    }
    if targets.is_empty() {
        out!("no `[[notify]]` targets are configured and the outbox is empty");
        return Ok(ExitCode::SUCCESS);
    }
    out!(
        "{:<20} {:>8} {:>10} {:>7}  url",
        "target",
        "pending",
        "delivered",
        "failed"
    );
    for t in &targets {
        let url = t
            .url
            .as_deref()
            .map(notify::redacted)
            .unwrap_or_else(|| "(no longer configured)".to_string());
        out!(
            "{:<20} {:>8} {:>10} {:>7}  {url}",
            t.target,
            t.pending,
            t.delivered,
            t.failed
        );
    }
    for t in targets.iter().filter(|t| t.dropped > 0) {
        out!(
            "target `{}`: {} notifications dropped, oldest first (the last at {}): its outbox was full (`quotas.outbox_per_target`); see why it does not take them with `glovebox notify test {}`",
            t.target,
            t.dropped,
            t.last_dropped_at_ms
                .map(glovebox::schedule::show_ms)
                .unwrap_or_else(|| "an unknown time".into()),
            t.target
        );
    }
    for t in &targets {
        print_entries(t, "failed (gave up)", &t.failed_entries)?;
        print_entries(t, "retrying", &t.retrying)?;
    }
    Ok(ExitCode::SUCCESS)
}

fn print_entries(t: &TargetStatus, what: &str, entries: &[OutboxEntry]) -> Result<()> {
    if entries.is_empty() {
        return Ok(());
    }
    out!("\n{} — {what}:", t.target);
    for e in entries {
        let n = &e.notification;
        out!(
            "  {}  {}  session {} event {}  {} attempt(s)",
            e.delivery_id,
            n.event,
            n.session_name.as_deref().unwrap_or(&n.session),
            n.seq,
            e.attempts
        );
        if let Some(error) = &e.last_error {
            out!("    last error: {error}");
        }
    }
    Ok(())
}

async fn test(config: &Path, name: &str) -> Result<ExitCode> {
    let config = glovebox::load_config(config).await?;
    let Some(target) = config.notify.iter().find(|t| t.name == name) else {
        let names: Vec<&str> = config.notify.iter().map(|t| t.name.as_str()).collect();
        if names.is_empty() {
            bail!(
                "`{}` has no `[[notify]]` targets: add one (see docs/operators/notifications.md)",
                config.path.display()
            );
        }
        bail!(
            "no `[[notify]]` target is named `{name}` in `{}`: the targets are {}",
            config.path.display(),
            names.join(", ")
        );
    };
    let now = glovebox::clock::system_ms();
    let entry = OutboxEntry::new(target, "test", notify::test_notification(name, now), now);
    let client = notify::client()?;
    match notify::deliver(&client, target, &entry, now).await {
        Ok(status) => {
            out!(
                "delivered to `{name}` ({}): the receiver answered {status}{}",
                notify::redacted(&target.url),
                if target.secret.is_some() {
                    ", signed"
                } else {
                    ""
                }
            );
            Ok(ExitCode::SUCCESS)
        }
        Err(why) => {
            err!(
                "error: the test notification to `{name}` ({}) was not delivered: {why}",
                notify::redacted(&target.url)
            );
            Ok(Exit::ToolFailed.into())
        }
    }
}
