//! `[[notify]]`: the webhooks an operator wants told about what happens in
//! the sessions (an approval needed, a flag, a budget, a job, a rescue, a
//! stalled or completed session). Only these URLs are ever contacted by the
//! delivery worker; nothing an agent or a plugin says adds one.
//!
//! ```toml
//! [[notify]]
//! name = "ops"                                  # default: the URL's host[:port]
//! url = "https://hooks.slack.com/services/T000/B000/XXXX"
//! format = "slack"                              # or "json" (the default)
//! events = ["approval_needed", "flag:warning", "budget_exceeded", "job_failed"]
//! secret_file = "notify-ops.secret"             # or `secret = "..."`; signs each delivery
//! timeout = "10s"                               # per delivery
//! max_attempts = 8                              # then the entry is kept as `failed`
//! retry_initial = "5s"                          # doubled after each failed attempt …
//! retry_max = "10m"                             # … up to this
//! ```
//!
//! `events` names [`NotifyKind`]s; `"flag"` is every blocker flag and
//! `"flag:<severity>"` (`info`, `warning`, `critical`) those at or above it.
//! `"*"` is every kind (flags of every severity).

mod events;
mod target_url;

use std::path::Path;
use std::time::Duration;

use serde::Deserialize;

use super::ConfigError;
use super::detector::Severity;
use super::principal::read_credential_file;
use super::source::Source;
use super::units::Millis;

pub use events::NotifyKind;
pub(crate) use events::parse_events;

use events::EVENTS_HINT;
use target_url::url_host;

/// The body a target gets.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NotifyFormat {
    /// The notification as a JSON object (see docs/operators/notifications.md).
    Json,
    /// A Slack incoming-webhook body: `{"text": "..."}`.
    Slack,
}

impl NotifyFormat {
    pub fn as_str(self) -> &'static str {
        match self {
            NotifyFormat::Json => "json",
            NotifyFormat::Slack => "slack",
        }
    }
}

/// One `[[notify]]` target.
#[derive(Clone, PartialEq)]
pub struct NotifyTarget {
    /// Unique among the targets; names the target in `glovebox notify status`
    /// and in each delivery's idempotency key.
    pub name: String,
    /// `http://` or `https://`.
    pub url: String,
    /// The kinds it wants, in [`NotifyKind::ALL`] order.
    pub events: Vec<NotifyKind>,
    /// Flags below this severity are not sent (`Info` unless `flag:<severity>`).
    pub flag_min_severity: Severity,
    pub format: NotifyFormat,
    /// The HMAC-SHA256 key each delivery is signed with, if any.
    pub secret: Option<String>,
    /// How long one delivery may take (connect, send, answer). Default 10 s.
    pub timeout: Duration,
    /// Attempts before an entry is kept as `failed`. Default 8.
    pub max_attempts: u32,
    /// The wait after the first failed attempt, doubled after each. Default 5 s.
    pub retry_initial: Duration,
    /// The longest wait between attempts. Default 10 min.
    pub retry_max: Duration,
}

impl std::fmt::Debug for NotifyTarget {
    // The secret never reaches a log line.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NotifyTarget")
            .field("name", &self.name)
            .field("url", &self.url)
            .field("events", &self.events)
            .field("flag_min_severity", &self.flag_min_severity)
            .field("format", &self.format)
            .field("secret", &self.secret.as_ref().map(|_| "<set>"))
            .field("timeout", &self.timeout)
            .field("max_attempts", &self.max_attempts)
            .field("retry_initial", &self.retry_initial)
            .field("retry_max", &self.retry_max)
            .finish()
    }
}

impl NotifyTarget {
    /// Whether this target wants a notification of `kind` (with the flag's
    /// `severity`, for flags).
    pub fn wants(&self, kind: NotifyKind, severity: Option<Severity>) -> bool {
        self.events.contains(&kind)
            && (kind != NotifyKind::Flag || severity.is_none_or(|s| s >= self.flag_min_severity))
    }

    /// The wait before attempt `attempt + 1` after `attempt` failed ones (1 or more).
    pub fn backoff(&self, attempts: u32) -> Duration {
        let doublings = attempts.saturating_sub(1).min(30);
        self.retry_initial
            .saturating_mul(1u32 << doublings)
            .min(self.retry_max)
    }
}

pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(10);
pub const DEFAULT_MAX_ATTEMPTS: u32 = 8;
pub const DEFAULT_RETRY_INITIAL: Duration = Duration::from_secs(5);
pub const DEFAULT_RETRY_MAX: Duration = Duration::from_secs(600);
/// More attempts than this is a typo, not a policy.
const MAX_ATTEMPTS: i64 = 100;

/// `[[notify]]`: one webhook target ([`operators/notifications.md`](operators/notifications.md)).
#[derive(Deserialize)]
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub(super) struct RawNotify {
    /// The target's name.
    #[cfg_attr(feature = "schemars", schemars(extend("x-default" = "the URL's `host[:port]`")))]
    name: Option<String>,
    /// Where notifications are POSTed.
    #[cfg_attr(feature = "schemars", schemars(required))]
    url: Option<String>,
    /// Event kinds, `flag:<severity>`, or `"*"`.
    #[cfg_attr(feature = "schemars", schemars(required))]
    events: Option<Vec<String>>,
    /// `"json"` or `"slack"` (`{"text": "..."}`, `&`, `<` and `>` escaped,
    /// links not unfurled).
    #[cfg_attr(feature = "schemars", schemars(extend("default" = "json")))]
    #[cfg_attr(feature = "schemars", schemars(extend("enum" = ["json", "slack"])))]
    format: Option<String>,
    /// Signs each delivery (16+ characters); or `secret_file`.
    #[cfg_attr(feature = "schemars", schemars(extend("x-default" = "none")))]
    secret: Option<String>,
    /// A 0600 file holding the secret that signs each delivery; or `secret`.
    #[cfg_attr(feature = "schemars", schemars(extend("x-default" = "none")))]
    secret_file: Option<String>,
    /// Per delivery.
    #[cfg_attr(feature = "schemars", schemars(extend("default" = "10s")))]
    timeout: Option<Millis>,
    /// Attempts at a delivery, then it is kept as failed.
    #[cfg_attr(feature = "schemars", schemars(extend("default" = 8)))]
    max_attempts: Option<i64>,
    /// The first back-off, doubled after each failure.
    #[cfg_attr(feature = "schemars", schemars(extend("default" = "5s")))]
    retry_initial: Option<Millis>,
    /// The longest back-off.
    #[cfg_attr(feature = "schemars", schemars(extend("default" = "10m")))]
    retry_max: Option<Millis>,
}

impl super::NamesSecretFile for RawNotify {
    const KEYS: [&'static str; 3] = ["notify", "secret_file", "notify target"];
    fn named_file(&self) -> (Option<&str>, Option<&String>) {
        (self.name.as_deref(), self.secret_file.as_ref())
    }
}

/// The secret an entry gives in the config (`secret`, as written) or in a
/// file (`secret_file`, trimmed), refused if it gives both: `what` names it
/// in the refusal (`the signing key`). `at` makes an entry's key.
pub(super) fn secret_or_file(
    src: &Source,
    at: &dyn Fn(&str) -> String,
    dir: &Path,
    (secret, secret_file): (&Option<String>, &Option<String>),
    what: &str,
) -> Result<Option<String>, ConfigError> {
    Ok(match (secret, secret_file) {
        (Some(_), Some(_)) => {
            return Err(src.invalid(
                &at("secret"),
                format!("`secret` and `secret_file` both give {what}"),
                "keep one: `secret_file` (a 0600 file) keeps it out of the config",
            ));
        }
        (Some(s), None) => Some(s.clone()),
        (None, Some(file)) => {
            let text = read_credential_file(src, &at("secret_file"), dir, file)?;
            Some(text.trim().to_string())
        }
        (None, None) => None,
    })
}

pub(super) fn validate_notify(
    src: &Source,
    dir: &Path,
    raw: &[RawNotify],
) -> Result<Vec<NotifyTarget>, ConfigError> {
    let mut targets: Vec<NotifyTarget> = Vec::new();
    for (i, entry) in raw.iter().enumerate() {
        let at = |key: &str| format!("notify[{i}].{key}");
        let url = entry.url.as_deref().unwrap_or_default().trim().to_string();
        let host = url_host(&url).map_err(|problem| {
            src.invalid(
                &at("url"),
                problem,
                "write the receiver's full URL, e.g. `url = \"https://hooks.slack.com/services/...\"` or `url = \"http://127.0.0.1:9000/glovebox\"`",
            )
        })?;
        let name = target_name(src, &at, entry, &host, &targets)?;
        let (events, flag_min_severity) = parse_events(entry.events.as_deref())
            .map_err(|problem| src.invalid(&at("events"), problem, EVENTS_HINT))?;
        let format = target_format(src, &at, entry)?;
        let secret = signing_secret(src, &at, dir, entry)?;
        let (timeout, retry_initial, retry_max) = delivery_durations(src, &at, entry)?;
        let max_attempts = delivery_attempts(src, &at, entry)?;
        targets.push(NotifyTarget {
            name,
            url,
            events,
            flag_min_severity,
            format,
            secret,
            timeout,
            max_attempts,
            retry_initial,
            retry_max,
        });
    }
    Ok(targets)
}

/// The target's `name` (a plain name; default its URL's `host`, `:` made
/// `_`), unique among the `targets` before it.
fn target_name(
    src: &Source,
    at: &dyn Fn(&str) -> String,
    entry: &RawNotify,
    host: &str,
    targets: &[NotifyTarget],
) -> Result<String, ConfigError> {
    let name = match &entry.name {
        Some(name) => {
            if !super::source::is_plain_name(name) {
                return Err(src.invalid(
                    &at("name"),
                    format!("`{name}` is not a target name"),
                    "use 1 to 64 letters, digits, `-`, `_` and `.`",
                ));
            }
            name.clone()
        }
        None => host.replace(':', "_"),
    };
    if let Some(other) = targets.iter().position(|t| t.name == name) {
        return Err(src.invalid(
            &at(if entry.name.is_some() { "name" } else { "url" }),
            format!("two `[[notify]]` targets are named `{name}` (also `notify[{other}]`)"),
            "give each target its own `name = \"...\"` (it defaults to the URL's host)",
        ));
    }
    Ok(name)
}

/// `format`: `json` (the default) or `slack`.
fn target_format(
    src: &Source,
    at: &dyn Fn(&str) -> String,
    entry: &RawNotify,
) -> Result<NotifyFormat, ConfigError> {
    Ok(match entry.format.as_deref() {
        None | Some("json") => NotifyFormat::Json,
        Some("slack") => NotifyFormat::Slack,
        Some(other) => {
            return Err(src.invalid(
                &at("format"),
                format!("`{other}` is not a notification format"),
                "write `\"json\"` (the notification as a JSON object) or `\"slack\"` (a Slack incoming-webhook body)",
            ));
        }
    })
}

/// The key notifications are signed with (`secret` or `secret_file`), if
/// any: at least 16 characters.
fn signing_secret(
    src: &Source,
    at: &dyn Fn(&str) -> String,
    dir: &Path,
    entry: &RawNotify,
) -> Result<Option<String>, ConfigError> {
    let secret = secret_or_file(
        src,
        at,
        dir,
        (&entry.secret, &entry.secret_file),
        "the signing key",
    )?;
    if secret.as_deref().is_some_and(|s| s.len() < 16) {
        let key = if entry.secret.is_some() {
            "secret"
        } else {
            "secret_file"
        };
        return Err(src.invalid(
            &at(key),
            "the signing secret is shorter than 16 characters",
            "use a long random value, e.g. `openssl rand -hex 32`",
        ));
    }
    Ok(secret)
}

/// `timeout`, `retry_initial` and `retry_max` (none zero, `retry_max` not
/// shorter than `retry_initial`).
fn delivery_durations(
    src: &Source,
    at: &dyn Fn(&str) -> String,
    entry: &RawNotify,
) -> Result<(Duration, Duration, Duration), ConfigError> {
    let duration = |key: &str, value: Option<Millis>, default: Duration| match value {
        None => Ok(default),
        Some(Millis(d)) if d.is_zero() => Err(src.invalid(
            &at(key),
            format!("`{key}` is zero"),
            "write a duration such as \"500ms\", \"5s\" or \"10m\"",
        )),
        Some(Millis(d)) => Ok(d),
    };
    let timeout = duration("timeout", entry.timeout, DEFAULT_TIMEOUT)?;
    let retry_initial = duration("retry_initial", entry.retry_initial, DEFAULT_RETRY_INITIAL)?;
    let retry_max = duration(
        "retry_max",
        entry.retry_max,
        DEFAULT_RETRY_MAX.max(retry_initial),
    )?;
    if retry_max < retry_initial {
        return Err(src.invalid(
            &at("retry_max"),
            "`retry_max` is shorter than `retry_initial`",
            "raise `retry_max`, or lower `retry_initial`",
        ));
    }
    Ok((timeout, retry_initial, retry_max))
}

/// `max_attempts`: 1 to [`MAX_ATTEMPTS`].
fn delivery_attempts(
    src: &Source,
    at: &dyn Fn(&str) -> String,
    entry: &RawNotify,
) -> Result<u32, ConfigError> {
    Ok(match entry.max_attempts {
        None => DEFAULT_MAX_ATTEMPTS,
        Some(n @ 1..=MAX_ATTEMPTS) => n as u32,
        Some(n) => {
            return Err(src.invalid(
                &at("max_attempts"),
                format!("{n} attempts is out of range"),
                format!(
                    "write an integer from 1 to {MAX_ATTEMPTS} (default {DEFAULT_MAX_ATTEMPTS})"
                ),
            ));
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_doubles_up_to_the_cap() {
        let target = NotifyTarget {
            name: "t".into(),
            url: "http://x".into(),
            events: vec![],
            flag_min_severity: Severity::Info,
            format: NotifyFormat::Json,
            secret: None,
            timeout: DEFAULT_TIMEOUT,
            max_attempts: 8,
            retry_initial: Duration::from_secs(1),
            retry_max: Duration::from_secs(5),
        };
        let waits: Vec<u64> = (1..=5).map(|a| target.backoff(a).as_secs()).collect();
        assert_eq!(waits, vec![1, 2, 4, 5, 5]);
    }
}
