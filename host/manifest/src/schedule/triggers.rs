//! Checking the `[[trigger]]` entries: a unique name, what fires it (one
//! event, or a webhook with its signing secret) and how often an event may
//! fire it, then the action ([`super::run`]).

use std::path::Path;

use crate::ConfigError;
use crate::notify::{NotifyTarget, parse_events, secret_or_file};
use crate::source::Source;

use super::names::unique_name;
use super::raw::RawTrigger;
use super::run::validate_run;
use super::{DEFAULT_TRIGGER_COOLDOWN, TriggerConfig, TriggerOn};

/// The longest `cooldown`.
const MAX_TRIGGER_COOLDOWN: std::time::Duration = std::time::Duration::from_secs(24 * 3600);

pub(crate) fn validate_triggers(
    src: &Source,
    dir: &Path,
    raw: &[RawTrigger],
    targets: &[NotifyTarget],
) -> Result<Vec<TriggerConfig>, ConfigError> {
    let mut out: Vec<TriggerConfig> = Vec::new();
    for (i, entry) in raw.iter().enumerate() {
        let at = |key: &str| format!("trigger[{i}].{key}");
        let name = unique_name(
            src,
            "trigger",
            i,
            entry.name.as_deref(),
            out.iter().map(|t| t.name.as_str()),
        )?;
        let on = trigger_on(src, &at, entry)?;
        let secret = trigger_secret(src, &at, dir, entry, on)?;
        check_from_project(src, &at, entry, on)?;
        let cooldown = trigger_cooldown(src, &at, entry, on)?;
        let run = validate_run(src, &|k| at(k), &entry.run(), targets)?;
        out.push(TriggerConfig {
            name,
            on,
            from_project: entry.from_project.clone(),
            secret,
            cooldown,
            run,
        });
    }
    Ok(out)
}

/// `on`: one `[[notify]]` event kind (a flag with its least severity), or
/// `"webhook"`.
fn trigger_on(
    src: &Source,
    at: &dyn Fn(&str) -> String,
    entry: &RawTrigger,
) -> Result<TriggerOn, ConfigError> {
    let on_text = entry.on.as_deref().unwrap_or_default().trim();
    let on = if on_text == "webhook" {
        TriggerOn::Webhook
    } else {
        let one = [on_text.to_string()];
        match parse_events(Some(&one)) {
            Ok((kinds, min_severity)) if kinds.len() == 1 && on_text != "*" => TriggerOn::Event {
                kind: kinds[0],
                min_severity,
            },
            Ok(_) | Err(_) => {
                return Err(src.invalid(
                    &at("on"),
                    format!("`{on_text}` is not one event"),
                    "write one of `job_finished`, `job_failed`, `flag` (or `flag:warning`, `flag:critical`), `session_completed`, `session_stalled`, `approval_needed`, `budget_warning`, `budget_exceeded`, `rescue_opened`, `rescue_resolved`, `schedule_alert`, or `webhook`",
                ));
            }
        }
    };
    Ok(on)
}

/// A webhook's signing secret (`secret` or `secret_file`): required, and
/// long enough; an event trigger has none.
fn trigger_secret(
    src: &Source,
    at: &dyn Fn(&str) -> String,
    dir: &Path,
    entry: &RawTrigger,
    on: TriggerOn,
) -> Result<Option<String>, ConfigError> {
    let secret = secret_or_file(
        src,
        at,
        dir,
        (&entry.secret, &entry.secret_file),
        "the webhook's secret",
    )?
    .map(|s| s.trim().to_string());
    match (on, &secret) {
        (TriggerOn::Webhook, None) => {
            return Err(src.invalid(
                &at("secret_file"),
                "a webhook trigger has no shared secret: anyone who reaches the admin listener could fire it",
                "add `secret_file = \"FILE\"` (a 0600 file with at least 16 random characters, e.g. `openssl rand -hex 32`)",
            ));
        }
        (TriggerOn::Webhook, Some(s)) if s.len() < 16 => {
            return Err(src.invalid(
                &at(if entry.secret.is_some() {
                    "secret"
                } else {
                    "secret_file"
                }),
                "the webhook's secret is shorter than 16 characters",
                "use a long random value, e.g. `openssl rand -hex 32`",
            ));
        }
        (TriggerOn::Event { .. }, Some(_)) => {
            return Err(src.invalid(
                &at(if entry.secret.is_some() {
                    "secret"
                } else {
                    "secret_file"
                }),
                "only a webhook trigger has a secret",
                "remove it, or write `on = \"webhook\"`",
            ));
        }
        _ => {}
    }
    Ok(secret)
}

/// `from_project` filters sessions' events, so a webhook has none.
fn check_from_project(
    src: &Source,
    at: &dyn Fn(&str) -> String,
    entry: &RawTrigger,
    on: TriggerOn,
) -> Result<(), ConfigError> {
    if on == TriggerOn::Webhook && entry.from_project.is_some() {
        return Err(src.invalid(
            &at("from_project"),
            "`from_project` filters the events of sessions; a webhook comes from outside",
            "remove `from_project`",
        ));
    }
    Ok(())
}

/// An event trigger's `cooldown` (default [`DEFAULT_TRIGGER_COOLDOWN`], at
/// most a day); a webhook has none.
fn trigger_cooldown(
    src: &Source,
    at: &dyn Fn(&str) -> String,
    entry: &RawTrigger,
    on: TriggerOn,
) -> Result<std::time::Duration, ConfigError> {
    Ok(match (on, &entry.cooldown) {
        (TriggerOn::Webhook, Some(_)) => {
            return Err(src.invalid(
                &at("cooldown"),
                "`cooldown` paces the events that fire an event trigger; a webhook's sender paces itself (each request is signed, a replay refused)",
                "remove `cooldown`",
            ));
        }
        (TriggerOn::Webhook, None) => std::time::Duration::ZERO,
        (TriggerOn::Event { .. }, None) => DEFAULT_TRIGGER_COOLDOWN,
        (TriggerOn::Event { .. }, Some(crate::units::Millis(d))) => {
            if *d > MAX_TRIGGER_COOLDOWN {
                return Err(src.invalid(
                    &at("cooldown"),
                    format!(
                        "a cooldown of {} is longer than a day",
                        humantime::format_duration(*d)
                    ),
                    "write at most `cooldown = \"24h\"`, or `\"0s\"` to fire on every event",
                ));
            }
            *d
        }
    })
}
