//! `[[schedule]]` and `[[trigger]]`: work the host starts by itself, on a
//! cron expression or when something happens, so an agent system does not
//! run only while someone calls it.
//!
//! ```toml
//! [[schedule]]
//! name = "billing-watch"
//! cron = "0 */6 * * *"          # UTC; five fields (a sixth, first, for seconds)
//! catch_up = true               # a fire missed while the host was down runs once at start
//! action = "call"               # "start", "call" or "sweep"
//! session = "billing-watch"     # the session it works in; started when none is live
//! project = "billing"
//! role = "workagent"            # the default
//! tool = "report.overdue"
//! input = { days = 30 }
//! alert_if = "count > 0"        # a number (or array length) in the tool's JSON output
//! notify = ["ops"]              # `[[notify]]` targets told when the alert holds or the run fails
//!
//! [[trigger]]
//! name = "ci-failed"
//! on = "job_failed"             # any `[[notify]]` event, or "webhook"
//! from_project = "ci"           # only events of sessions of this project (default: any)
//! cooldown = "1m"               # at most one fire a minute (the default); "0s": every event
//! action = "start"
//! session = "ci-triage"
//! project = "ci"
//! objective = "find out why the CI job failed"
//! ```
//!
//! Who acts: a schedule is the agent principal `schedule:<name>`, a trigger
//! `trigger:<name>`, with the one role and project its entry names and
//! nothing else (see [`Run::principal`]). It owns the sessions it starts and
//! reaches no other principal's; its calls go through the hooks like any
//! agent's, and every event it causes carries its name. Nothing here is
//! granted that the operator did not write.

use crate::UnknownWord;
use std::path::Path;

use chrono::{DateTime, Utc};
use serde::Deserialize;

use super::ConfigError;
use super::detector::Severity;
use super::notify::{NotifyKind, NotifyTarget, parse_events, secret_or_file};
use super::principal::{Principal, PrincipalKind};
use super::role::Role;
use super::source::Source;

/// A cron expression, parsed (by `croner`: standard five fields, or six
/// with seconds first; `@hourly`-style nicknames), evaluated in UTC.
#[derive(Clone)]
pub struct CronExpr {
    text: String,
    cron: croner::Cron,
}

/// Why a `cron` text is not a schedule; each quotes the text (the config
/// adds the key and what to write).
#[derive(thiserror::Error, Debug)]
#[non_exhaustive]
pub enum CronExprError {
    /// The cron parser refused it.
    #[error("`{text}` is not a cron expression: {error}")]
    NotCron {
        text: String,
        error: croner::errors::CronError,
    },
    /// It parses but matches no time (30 February): a typo too.
    #[error("`{text}` never fires")]
    NeverFires { text: String },
}

impl CronExpr {
    /// The expression, or why it is not one.
    pub fn parse(text: &str) -> Result<CronExpr, CronExprError> {
        let cron = croner::parser::CronParser::new()
            .parse(text.trim())
            .map_err(|error| CronExprError::NotCron {
                text: text.to_string(),
                error,
            })?;
        let expr = CronExpr {
            text: text.trim().to_string(),
            cron,
        };
        // An expression that never fires (30 February) is a typo too.
        if expr.next_after(0).is_none() {
            return Err(CronExprError::NeverFires {
                text: text.to_string(),
            });
        }
        Ok(expr)
    }

    pub fn as_str(&self) -> &str {
        &self.text
    }

    /// The first time it fires strictly after `after_ms` (unix millis), if any.
    pub fn next_after(&self, after_ms: u64) -> Option<u64> {
        let after = DateTime::<Utc>::from_timestamp_millis(i64::try_from(after_ms).ok()?)?;
        let next = self.cron.find_next_occurrence(&after, false).ok()?;
        u64::try_from(next.timestamp_millis()).ok()
    }

    /// The last time it fired at or before `at_ms`, and after `after_ms`:
    /// the one fire of a stretch it missed (see `catch_up`).
    pub fn last_between(&self, after_ms: u64, at_ms: u64) -> Option<u64> {
        let at = DateTime::<Utc>::from_timestamp_millis(i64::try_from(at_ms).ok()?)?;
        let last = self.cron.find_previous_occurrence(&at, true).ok()?;
        u64::try_from(last.timestamp_millis())
            .ok()
            .filter(|last| *last > after_ms)
    }
}

impl std::fmt::Debug for CronExpr {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "CronExpr({:?})", self.text)
    }
}

impl PartialEq for CronExpr {
    fn eq(&self, other: &Self) -> bool {
        self.text == other.text
    }
}

/// One `[[schedule]]`.
#[derive(Clone, Debug, PartialEq)]
pub struct ScheduleConfig {
    /// Unique among the schedules; the principal is `schedule:<name>`.
    pub name: String,
    pub cron: CronExpr,
    /// A fire missed while the host was down runs once at start (default
    /// true); false: missed fires are skipped.
    pub catch_up: bool,
    pub run: Run,
}

/// One `[[trigger]]`.
#[derive(Clone, PartialEq)]
pub struct TriggerConfig {
    /// Unique among the triggers; the principal is `trigger:<name>`, and a
    /// webhook trigger is `POST /hooks/<name>` on the admin listener.
    pub name: String,
    pub on: TriggerOn,
    /// Only events of sessions of this project (event triggers).
    pub from_project: Option<String>,
    /// The webhook's shared secret (`on = "webhook"` only): each request is
    /// signed with HMAC-SHA256 under it.
    pub secret: Option<String>,
    /// `cooldown` (event triggers): after a fire, events that would fire it
    /// again within this time are folded into one fire when it ends, so an
    /// agent that causes events in a loop (failing jobs, flags) starts at
    /// most one run per cooldown. Default [`DEFAULT_TRIGGER_COOLDOWN`];
    /// zero fires on every event. Webhooks have none (their sender signs
    /// each request, and a replay is refused).
    pub cooldown: std::time::Duration,
    pub run: Run,
}

/// An event trigger's `cooldown` when the config gives none.
pub const DEFAULT_TRIGGER_COOLDOWN: std::time::Duration = std::time::Duration::from_secs(60);
/// The longest `cooldown`.
const MAX_TRIGGER_COOLDOWN: std::time::Duration = std::time::Duration::from_secs(24 * 3600);

impl std::fmt::Debug for TriggerConfig {
    // The secret never reaches a log line.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TriggerConfig")
            .field("name", &self.name)
            .field("on", &self.on)
            .field("from_project", &self.from_project)
            .field("secret", &self.secret.as_ref().map(|_| "<set>"))
            .field("cooldown", &self.cooldown)
            .field("run", &self.run)
            .finish()
    }
}

/// What fires a trigger.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TriggerOn {
    /// An event of a session log, as `[[notify]]` names them (flags at or
    /// above `min_severity`).
    Event {
        kind: NotifyKind,
        min_severity: Severity,
    },
    /// A signed `POST /hooks/<name>` on the admin listener.
    Webhook,
}

impl TriggerOn {
    /// Whether an event of `kind` (a flag's `severity`) fires it.
    pub fn fires_on(&self, kind: NotifyKind, severity: Option<Severity>) -> bool {
        match *self {
            TriggerOn::Event {
                kind: k,
                min_severity,
            } => k == kind && severity.is_none_or(|s| s >= min_severity),
            TriggerOn::Webhook => false,
        }
    }
}

/// What a schedule or trigger does, and whom it tells.
#[derive(Clone, Debug, PartialEq)]
pub struct Run {
    pub action: Action,
    /// When the result calls for a person (`call` only).
    pub alert_if: Option<AlertIf>,
    /// The `[[notify]]` targets told of an alert or a failed run.
    pub notify: Vec<String>,
}

/// The session an action works in: the live one of this name it owns, or a
/// new one it starts.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SessionTarget {
    pub name: String,
    pub project: String,
    pub role: Role,
}

/// The handoff a `start` action posts into its session.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct HandoffNote {
    pub objective: String,
    pub success_criteria: Vec<String>,
    pub next_steps: Vec<String>,
}

/// The action of a schedule or trigger.
#[derive(Clone, Debug, PartialEq)]
pub enum Action {
    /// Start the session (or resume it) and post a handoff into it, for the
    /// agent that picks it up.
    Start {
        session: SessionTarget,
        handoff: HandoffNote,
    },
    /// Call a tool in the session, through the whole pipeline.
    Call {
        session: SessionTarget,
        tool: String,
        input: serde_json::Value,
    },
    /// One pass of the stuck-agent detector over the live sessions.
    Sweep,
}

impl Action {
    pub fn as_str(&self) -> &'static str {
        match self {
            Action::Start { .. } => "start",
            Action::Call { .. } => "call",
            Action::Sweep => "sweep",
        }
    }

    pub fn session(&self) -> Option<&SessionTarget> {
        match self {
            Action::Start { session, .. } | Action::Call { session, .. } => Some(session),
            Action::Sweep => None,
        }
    }
}

impl Run {
    /// Who a schedule or trigger acts as: the agent `<prefix>:<name>`
    /// (`schedule`, `trigger`), with its session's role as its ceiling and
    /// its project as its only one (a sweep: none), no pinned tags. The `:`
    /// keeps it apart from every declared principal's name.
    pub fn principal(&self, prefix: &str, name: &str) -> Principal {
        let (roles, projects) = match self.action.session() {
            Some(s) => (vec![s.role], vec![s.project.clone()]),
            None => (Vec::new(), Vec::new()),
        };
        Principal {
            name: format!("{prefix}:{name}"),
            kind: PrincipalKind::Agent,
            roles,
            projects,
            tags: Vec::new(),
            approve_by: Default::default(),
        }
    }
}

/// `alert_if = "<path> <op> <number>"`: a threshold on a call's JSON output.
#[derive(Clone, Debug, PartialEq)]
pub struct AlertIf {
    /// The dotted path into the output (`count`, `summary.overdue`).
    pub path: Vec<String>,
    pub op: Cmp,
    pub value: f64,
    text: String,
}

/// A comparison of [`AlertIf`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Cmp {
    Gt,
    Ge,
    Lt,
    Le,
    Eq,
    Ne,
}

/// Why an `alert_if` text is not a condition; each quotes the part at fault
/// and the whole text.
#[derive(thiserror::Error, Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum AlertIfError {
    /// Not three words.
    #[error("`{text}` is not `<field> <comparison> <number>`")]
    Shape { text: String },
    /// The middle word is not one of `> >= < <= == !=`.
    #[error("`{op}` in `{text}` is not a comparison")]
    Comparison { op: String, text: String },
    /// The last word is not a finite number.
    #[error("`{value}` in `{text}` is not a number")]
    Number { value: String, text: String },
    /// The first word has an empty segment.
    #[error("`{path}` in `{text}` is not a field path")]
    Path { path: String, text: String },
}

impl AlertIf {
    pub fn parse(text: &str) -> Result<AlertIf, AlertIfError> {
        let words: Vec<&str> = text.split_whitespace().collect();
        let [path, op, value] = words.as_slice() else {
            return Err(AlertIfError::Shape {
                text: text.to_string(),
            });
        };
        let op = match *op {
            ">" => Cmp::Gt,
            ">=" => Cmp::Ge,
            "<" => Cmp::Lt,
            "<=" => Cmp::Le,
            "==" => Cmp::Eq,
            "!=" => Cmp::Ne,
            other => {
                return Err(AlertIfError::Comparison {
                    op: other.to_string(),
                    text: text.to_string(),
                });
            }
        };
        let value: f64 = value
            .parse()
            .ok()
            .filter(|v: &f64| v.is_finite())
            .ok_or_else(|| AlertIfError::Number {
                value: value.to_string(),
                text: text.to_string(),
            })?;
        let path: Vec<String> = path.split('.').map(str::to_string).collect();
        if path.iter().any(|p| p.is_empty()) {
            return Err(AlertIfError::Path {
                path: words[0].to_string(),
                text: text.to_string(),
            });
        }
        Ok(AlertIf {
            path,
            op,
            value,
            text: words.join(" "),
        })
    }

    pub fn as_str(&self) -> &str {
        &self.text
    }

    /// The number at the path of `output` (an array counts as its length),
    /// if there is one.
    pub fn observe(&self, output: &serde_json::Value) -> Option<f64> {
        let mut at = output;
        for key in &self.path {
            at = at.get(key)?;
        }
        match at {
            serde_json::Value::Number(n) => n.as_f64(),
            serde_json::Value::Array(a) => Some(a.len() as f64),
            _ => None,
        }
    }

    /// Whether `observed` meets the condition.
    pub fn holds(&self, observed: f64) -> bool {
        match self.op {
            Cmp::Gt => observed > self.value,
            Cmp::Ge => observed >= self.value,
            Cmp::Lt => observed < self.value,
            Cmp::Le => observed <= self.value,
            Cmp::Eq => observed == self.value,
            Cmp::Ne => observed != self.value,
        }
    }
}

/// A `[[schedule]]` or `[[trigger]]` as written: its own keys, then the
/// keys of its action (the same in both; serde's `flatten` would lose
/// `deny_unknown_fields`, so they are spelled out once here).
macro_rules! raw_entry {
    ($(#[$doc:meta])* $ty:ident { $($(#[$meta:meta])* $key:ident: $kty:ty,)* }) => {
        $(#[$doc])*
        #[derive(Default, Deserialize)]
        #[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
        #[serde(deny_unknown_fields)]
        pub(super) struct $ty {
            $($(#[$meta])* $key: $kty,)*
            /// `"start"` (start or resume a session with a handoff), `"call"`
            /// (run a tool in a session) or `"sweep"` (a pass of the
            /// stuck-agent detector).
            #[cfg_attr(feature = "schemars", schemars(required))]
            #[cfg_attr(feature = "schemars", schemars(extend("enum" = ["start", "call", "sweep"])))]
            action: Option<String>,
            /// The session it works in, in its own principal's names; started
            /// when none of that name is live (`start` and `call`).
            #[cfg_attr(feature = "schemars", schemars(extend("x-default" = "(required with `start`, `call`)")))]
            session: Option<String>,
            /// Its only project (`start` and `call`).
            #[cfg_attr(feature = "schemars", schemars(extend("x-default" = "(required with `start`, `call`)")))]
            project: Option<String>,
            /// Its one role (`start` and `call`).
            #[cfg_attr(feature = "schemars", schemars(extend("default" = "workagent")))]
            role: Option<String>,
            /// With `action = "call"`: the tool to call (`plugin.tool`).
            #[cfg_attr(feature = "schemars", schemars(extend("x-default" = "(required with `call`)")))]
            tool: Option<String>,
            /// With `action = "call"`: the tool's input, a table.
            #[cfg_attr(feature = "schemars", schemars(extend("default" = {})))]
            #[cfg_attr(
                feature = "schemars",
                schemars(with = "Option<serde_json::Map<String, serde_json::Value>>")
            )]
            input: Option<toml::Value>,
            /// With `action = "start"`: the objective of the handoff posted into the session.
            #[cfg_attr(feature = "schemars", schemars(extend("x-default" = "(required with `start`)")))]
            objective: Option<String>,
            /// With `action = "start"`: the handoff's success criteria.
            #[cfg_attr(feature = "schemars", schemars(extend("default" = [])))]
            success_criteria: Option<Vec<String>>,
            /// With `action = "start"`: the handoff's next steps.
            #[cfg_attr(feature = "schemars", schemars(extend("default" = [])))]
            next_steps: Option<Vec<String>>,
            /// With `action = "call"`: `<field> <op> <number>` over the tool's
            /// JSON output (`>`, `>=`, `<`, `<=`, `==`, `!=`); needs `notify`.
            #[cfg_attr(feature = "schemars", schemars(extend("x-default" = "none")))]
            alert_if: Option<String>,
            /// `[[notify]]` targets told when the alert holds or the run fails.
            #[cfg_attr(feature = "schemars", schemars(extend("default" = [])))]
            notify: Option<Vec<String>>,
        }

        impl $ty {
            fn run(&self) -> RawRun<'_> {
                RawRun {
                    action: self.action.as_deref(),
                    session: self.session.as_deref(),
                    project: self.project.as_deref(),
                    role: self.role.as_deref(),
                    tool: self.tool.as_deref(),
                    input: self.input.as_ref(),
                    objective: self.objective.as_deref(),
                    success_criteria: self.success_criteria.as_deref(),
                    next_steps: self.next_steps.as_deref(),
                    alert_if: self.alert_if.as_deref(),
                    notify: self.notify.as_deref(),
                }
            }
        }
    };
}

raw_entry!(
    /// `[[schedule]]`: work started on a cron expression
    /// ([`operators/schedules.md`](operators/schedules.md)).
    RawSchedule {
        /// The principal it acts as: `schedule:<name>`, `trigger:<name>`
        /// (1 to 64 letters, digits, `-`, `_` and `.`).
        #[cfg_attr(feature = "schemars", schemars(required))]
        name: Option<String>,
        /// Five fields in UTC (a sixth, first, for seconds), or `@hourly`, `@daily`, ...
        #[cfg_attr(feature = "schemars", schemars(required))]
        cron: Option<String>,
        /// A fire missed while the host was down runs once at start.
        #[cfg_attr(feature = "schemars", schemars(extend("default" = true)))]
        catch_up: Option<bool>,
    }
);

raw_entry!(
    /// `[[trigger]]`: work started when an event happens or a webhook comes
    /// ([`operators/schedules.md`](operators/schedules.md)).
    RawTrigger {
        /// The principal it acts as: `schedule:<name>`, `trigger:<name>`
        /// (1 to 64 letters, digits, `-`, `_` and `.`).
        #[cfg_attr(feature = "schemars", schemars(required))]
        name: Option<String>,
        /// A `[[notify]]` event kind, or `"webhook"` (`POST /hooks/<name>` on
        /// the admin listener).
        #[cfg_attr(feature = "schemars", schemars(required))]
        on: Option<String>,
        /// Only events of sessions of this project (not on webhooks).
        #[cfg_attr(feature = "schemars", schemars(extend("x-default" = "any")))]
        from_project: Option<String>,
        /// A webhook trigger's signing secret, inline (16+ characters); or `secret_file`.
        #[cfg_attr(feature = "schemars", schemars(extend("x-default" = "(one of the two with `webhook`)")))]
        secret: Option<String>,
        /// A webhook trigger's signing secret in a 0600 file (16+ characters); or `secret`.
        #[cfg_attr(feature = "schemars", schemars(extend("x-default" = "(one of the two with `webhook`)")))]
        secret_file: Option<String>,
        /// After a fire, events within this time are folded into one fire
        /// when it ends; `"0s"` fires on every event; at most `"24h"`; not on
        /// webhooks.
        #[cfg_attr(feature = "schemars", schemars(extend("default" = "1m")))]
        cooldown: Option<super::units::Millis>,
    }
);

/// The action's keys of an entry.
struct RawRun<'a> {
    action: Option<&'a str>,
    session: Option<&'a str>,
    project: Option<&'a str>,
    role: Option<&'a str>,
    tool: Option<&'a str>,
    input: Option<&'a toml::Value>,
    objective: Option<&'a str>,
    success_criteria: Option<&'a [String]>,
    next_steps: Option<&'a [String]>,
    alert_if: Option<&'a str>,
    notify: Option<&'a [String]>,
}

const NAME_HINT: &str = "name it with 1 to 64 letters, digits, `-`, `_` and `.`";

/// Why a schedule's, a trigger's or a session's name is refused (the caller
/// adds the key and [`NAME_HINT`]).
#[derive(thiserror::Error, Debug, Clone, PartialEq, Eq)]
enum NameError {
    #[error("the entry has no `name`")]
    Missing,
    #[error("`{name}` is not a name")]
    Invalid { name: String },
}

fn check_name(name: Option<&str>) -> Result<String, NameError> {
    let Some(name) = name else {
        return Err(NameError::Missing);
    };
    if !super::source::is_plain_name(name) {
        return Err(NameError::Invalid {
            name: name.to_string(),
        });
    }
    Ok(name.to_string())
}

/// The checked name of entry `i` of the `[[table]]` entries (`table` is
/// `schedule` or `trigger`), which no entry before it (`taken`) may bear.
fn unique_name<'a>(
    src: &Source,
    table: &str,
    i: usize,
    name: Option<&str>,
    taken: impl Iterator<Item = &'a str>,
) -> Result<String, ConfigError> {
    let key = format!("{table}[{i}].name");
    let name = check_name(name).map_err(|p| src.invalid(&key, p, NAME_HINT))?;
    if let Some(other) = taken.into_iter().position(|t| t == name) {
        return Err(src.invalid(
            &key,
            format!("two {table}s are named `{name}` (also `{table}[{other}]`)"),
            format!("give each `[[{table}]]` its own name"),
        ));
    }
    Ok(name)
}

pub(super) fn validate_schedules(
    src: &Source,
    raw: &[RawSchedule],
    targets: &[NotifyTarget],
) -> Result<Vec<ScheduleConfig>, ConfigError> {
    let mut out: Vec<ScheduleConfig> = Vec::new();
    for (i, entry) in raw.iter().enumerate() {
        let at = |key: &str| format!("schedule[{i}].{key}");
        let name = unique_name(
            src,
            "schedule",
            i,
            entry.name.as_deref(),
            out.iter().map(|s| s.name.as_str()),
        )?;
        let cron = CronExpr::parse(entry.cron.as_deref().unwrap_or_default()).map_err(|p| {
            src.invalid(
                &at("cron"),
                p,
                "write five fields `minute hour day-of-month month day-of-week` in UTC, e.g. `cron = \"0 */6 * * *\"` (every 6 hours), or `@hourly`, `@daily`",
            )
        })?;
        let run = validate_run(src, &|k| at(k), &entry.run(), targets)?;
        out.push(ScheduleConfig {
            name,
            cron,
            catch_up: entry.catch_up.unwrap_or(true),
            run,
        });
    }
    Ok(out)
}

/// The secret files the `[[trigger]]` entries name, resolved from the
/// config's directory `dir` (threat 56: no grant may reach them).
pub(super) fn secret_files(dir: &Path, raw: &[RawTrigger]) -> Vec<super::SecretFile> {
    super::SecretFile::named_by(
        dir,
        "trigger",
        "secret_file",
        raw,
        |t| t.secret_file.as_ref(),
        |t| {
            let name = t.name.as_deref().unwrap_or("?");
            format!("the secret file of trigger `{name}`")
        },
    )
}

pub(super) fn validate_triggers(
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
        let on_text = entry.on.as_deref().unwrap_or_default().trim();
        let on = if on_text == "webhook" {
            TriggerOn::Webhook
        } else {
            let one = [on_text.to_string()];
            match parse_events(Some(&one)) {
                Ok((kinds, min_severity)) if kinds.len() == 1 && on_text != "*" => {
                    TriggerOn::Event {
                        kind: kinds[0],
                        min_severity,
                    }
                }
                Ok(_) | Err(_) => {
                    return Err(src.invalid(
                        &at("on"),
                        format!("`{on_text}` is not one event"),
                        "write one of `job_finished`, `job_failed`, `flag` (or `flag:warning`, `flag:critical`), `session_completed`, `session_stalled`, `approval_needed`, `budget_warning`, `budget_exceeded`, `rescue_opened`, `rescue_resolved`, `schedule_alert`, or `webhook`",
                    ));
                }
            }
        };
        let secret = secret_or_file(
            src,
            &at,
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
        if on == TriggerOn::Webhook && entry.from_project.is_some() {
            return Err(src.invalid(
                &at("from_project"),
                "`from_project` filters the events of sessions; a webhook comes from outside",
                "remove `from_project`",
            ));
        }
        let cooldown = match (on, &entry.cooldown) {
            (TriggerOn::Webhook, Some(_)) => {
                return Err(src.invalid(
                    &at("cooldown"),
                    "`cooldown` paces the events that fire an event trigger; a webhook's sender paces itself (each request is signed, a replay refused)",
                    "remove `cooldown`",
                ));
            }
            (TriggerOn::Webhook, None) => std::time::Duration::ZERO,
            (TriggerOn::Event { .. }, None) => DEFAULT_TRIGGER_COOLDOWN,
            (TriggerOn::Event { .. }, Some(super::units::Millis(d))) => {
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
        };
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

fn validate_run(
    src: &Source,
    at: &dyn Fn(&str) -> String,
    raw: &RawRun<'_>,
    targets: &[NotifyTarget],
) -> Result<Run, ConfigError> {
    let only = |key: &str, present: bool, action: &str| {
        if present {
            Err(src.invalid(
                &at(key),
                format!("`{key}` is not a setting of `action = \"{action}\"`"),
                "remove it, or pick the action it belongs to (`start`: objective, success_criteria, next_steps; `call`: tool, input, alert_if)",
            ))
        } else {
            Ok(())
        }
    };
    let session = |action: &str| -> Result<SessionTarget, ConfigError> {
        let name = check_name(raw.session).map_err(|p| {
            src.invalid(
                &at("session"),
                format!("{p}: `action = \"{action}\"` works in a named session"),
                "name the session, e.g. `session = \"billing-watch\"` (1 to 64 letters, digits, `-`, `_`, `.`); it is started when none of that name is live",
            )
        })?;
        let project = raw
            .project
            .filter(|p| !p.trim().is_empty())
            .map(str::to_string)
            .ok_or_else(|| {
                src.invalid(
                    &at("project"),
                    "the session's project is missing",
                    "write `project = \"...\"`: the project the session is started in (its only one)",
                )
            })?;
        let role = match raw.role {
            None => Role::Workagent,
            Some(r) => r.parse().map_err(|e: UnknownWord| {
                src.invalid(
                    &at("role"),
                    e,
                    "the role its session is started as (default `workagent`)",
                )
            })?,
        };
        Ok(SessionTarget {
            name,
            project,
            role,
        })
    };
    let handoff_keys =
        raw.objective.is_some() || raw.success_criteria.is_some() || raw.next_steps.is_some();
    let call_keys = raw.tool.is_some() || raw.input.is_some() || raw.alert_if.is_some();
    let action = match raw.action {
        Some("start") => {
            only("tool", call_keys, "start")?;
            let objective = raw
                .objective
                .filter(|o| !o.trim().is_empty())
                .map(str::to_string)
                .ok_or_else(|| {
                    src.invalid(
                        &at("objective"),
                        "`action = \"start\"` posts a handoff, and it has no objective",
                        "write `objective = \"...\"`: what the agent that picks the session up is to do",
                    )
                })?;
            Action::Start {
                session: session("start")?,
                handoff: HandoffNote {
                    objective,
                    success_criteria: raw.success_criteria.unwrap_or_default().to_vec(),
                    next_steps: raw.next_steps.unwrap_or_default().to_vec(),
                },
            }
        }
        Some("call") => {
            only("objective", handoff_keys, "call")?;
            let tool = raw
                .tool
                .filter(|t| !t.trim().is_empty())
                .map(str::to_string)
                .ok_or_else(|| {
                    src.invalid(
                        &at("tool"),
                        "`action = \"call\"` names no tool",
                        "write `tool = \"plugin.tool\"` (a tool of a `[[plugin]]`)",
                    )
                })?;
            let input = match raw.input {
                None => serde_json::json!({}),
                Some(value @ toml::Value::Table(_)) => {
                    serde_json::to_value(value).map_err(|e| {
                        src.invalid(
                            &at("input"),
                            format!("the input does not convert to JSON: {e}"),
                            "write the tool's input as a TOML table",
                        )
                    })?
                }
                Some(_) => {
                    return Err(src.invalid(
                        &at("input"),
                        "the input is not a table",
                        "write the tool's input as a table, e.g. `input = { days = 30 }`",
                    ));
                }
            };
            Action::Call {
                session: session("call")?,
                tool,
                input,
            }
        }
        Some("sweep") => {
            only("tool", call_keys, "sweep")?;
            only("objective", handoff_keys, "sweep")?;
            for (key, present) in [
                ("session", raw.session.is_some()),
                ("project", raw.project.is_some()),
                ("role", raw.role.is_some()),
            ] {
                only(key, present, "sweep")?;
            }
            Action::Sweep
        }
        other => {
            return Err(src.invalid(
                &at("action"),
                match other {
                    None => "the entry has no `action`".to_string(),
                    Some(a) => format!("`{a}` is not an action"),
                },
                "write `action = \"start\"` (start or resume a session with a handoff), `\"call\"` (run a tool in a session) or `\"sweep\"` (a pass of the stuck-agent detector)",
            ));
        }
    };
    let alert_if = match raw.alert_if {
        None => None,
        Some(text) => Some(AlertIf::parse(text).map_err(|p| {
            src.invalid(
                &at("alert_if"),
                p,
                "write `<field> <comparison> <number>` over the tool's JSON output, e.g. `alert_if = \"count > 0\"` (comparisons: > >= < <= == !=)",
            )
        })?),
    };
    let notify = raw.notify.unwrap_or_default().to_vec();
    for name in &notify {
        if !targets.iter().any(|t| &t.name == name) {
            return Err(src.invalid(
                &at("notify"),
                format!("`{name}` is not a `[[notify]]` target"),
                format!(
                    "name a declared target ({}), or declare it with `[[notify]] name = \"{name}\"`",
                    if targets.is_empty() {
                        "there are none".to_string()
                    } else {
                        targets
                            .iter()
                            .map(|t| format!("`{}`", t.name))
                            .collect::<Vec<_>>()
                            .join(", ")
                    }
                ),
            ));
        }
    }
    if alert_if.is_some() && notify.is_empty() {
        return Err(src.invalid(
            &at("alert_if"),
            "an alert with no one to tell",
            "add `notify = [\"TARGET\"]`, naming `[[notify]]` targets",
        ));
    }
    Ok(Run {
        action,
        alert_if,
        notify,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const HOUR_MS: u64 = 3_600_000;

    #[test]
    fn cron_steps_in_utc() {
        let every_six = CronExpr::parse("0 */6 * * *").unwrap();
        assert_eq!(every_six.next_after(0), Some(6 * HOUR_MS));
        assert_eq!(every_six.next_after(6 * HOUR_MS), Some(12 * HOUR_MS));
        assert_eq!(every_six.next_after(6 * HOUR_MS - 1), Some(6 * HOUR_MS));
        // The last of several missed fires, not the first.
        assert_eq!(every_six.last_between(1, 20 * HOUR_MS), Some(18 * HOUR_MS));
        assert_eq!(every_six.last_between(1, 5 * HOUR_MS), None);
        let seconds = CronExpr::parse("*/10 * * * * *").unwrap();
        assert_eq!(seconds.next_after(0), Some(10_000));
        assert!(CronExpr::parse("@hourly").is_ok());
    }

    #[test]
    fn bad_cron_expressions_are_refused() {
        for bad in [
            "",
            "* * *",
            "61 * * * *",
            "0 25 * * *",
            "every hour",
            "0 0 30 2 *",
        ] {
            assert!(CronExpr::parse(bad).is_err(), "{bad:?} parsed");
        }
    }

    #[test]
    fn alert_conditions_read_numbers_and_array_lengths() {
        let alert = AlertIf::parse("count > 0").unwrap();
        let seen = alert.observe(&serde_json::json!({"count": 3})).unwrap();
        assert!(alert.holds(seen));
        assert!(!alert.holds(alert.observe(&serde_json::json!({"count": 0})).unwrap()));
        let nested = AlertIf::parse("report.items >= 2").unwrap();
        assert_eq!(
            nested.observe(&serde_json::json!({"report": {"items": [1, 2]}})),
            Some(2.0)
        );
        assert_eq!(nested.observe(&serde_json::json!({"report": "x"})), None);
        for bad in [
            "count",
            "count >",
            "count ~ 1",
            "count > x",
            ". > 1",
            "count > inf",
        ] {
            assert!(AlertIf::parse(bad).is_err(), "{bad:?} parsed");
        }
    }

    #[test]
    fn a_schedule_is_an_agent_within_its_session_only() {
        let run = Run {
            action: Action::Call {
                session: SessionTarget {
                    name: "w".into(),
                    project: "billing".into(),
                    role: Role::Workagent,
                },
                tool: "t".into(),
                input: serde_json::json!({}),
            },
            alert_if: None,
            notify: vec![],
        };
        let p = run.principal("schedule", "w");
        assert_eq!(p.name, "schedule:w");
        assert!(!p.is_operator());
        assert!(p.may_act_as(Role::Workagent) && !p.may_act_as(Role::Supervisor));
        assert!(p.may_touch("billing") && !p.may_touch("other"));
        let sweep = Run {
            action: Action::Sweep,
            alert_if: None,
            notify: vec![],
        };
        let p = sweep.principal("trigger", "s");
        assert!(!p.may_touch("billing") && !p.may_act_as(Role::Workagent));
    }
}
