//! `[detector]` and `[context]` in `glovebox.toml`: the stuck-agent detector's
//! thresholds, and who may write to the projects' context index.

use std::collections::BTreeMap;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::ConfigError;
use super::source::Source;
use super::units::Millis;

/// How bad a blocker flag is. A critical flag pauses its session.
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    Info,
    Warning,
    Critical,
}

impl Severity {
    pub fn as_str(self) -> &'static str {
        match self {
            Severity::Info => "info",
            Severity::Warning => "warning",
            Severity::Critical => "critical",
        }
    }
}

impl std::fmt::Display for Severity {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The detector's rules, by the name their flags carry; `handoff` is the
/// flag a handoff that names blockers raises, `paused` the one an agent's
/// own pause raises (their severities set here too).
pub const RULES: [&str; 11] = [
    "budget",
    "retry",
    "overrun",
    "denials",
    "no_progress",
    "stale",
    "approval_wait",
    "handoff",
    "paused",
    "context",
    "verify",
];

/// The default of `[detector] handoff_after_events`: about a hundred calls
/// (each logs a request, decisions, a start and a finish) with no handoff.
pub const DEFAULT_HANDOFF_AFTER_EVENTS: u32 = 500;

/// `[detector]`: when the stuck-agent detector raises blocker flags.
#[derive(Clone, Debug, PartialEq)]
pub struct DetectorConfig {
    /// `enabled = false` turns the detector off after calls (`session check` still runs it).
    pub enabled: bool,
    /// `retry_failures`: the same call (tool and input) failing this many
    /// times with no success in between raises `retry`. Default 3.
    pub retry_failures: u32,
    /// `adjust_after`: consecutive failed calls after which the escalation
    /// ladder moves from `retry` to `adjust` (parameter adjustment). Default 2.
    pub adjust_after: u32,
    /// `denials`: this many denied calls among the last `denials_window`
    /// calls (since the last success) raise `denials`. Default 3.
    pub denials: u32,
    /// `denials_window`: how many recent calls `denials` looks at. Default 10.
    pub denials_window: u32,
    /// `overrun_factor`: a session running longer than this times its expected
    /// duration raises `overrun`. Default 2.0.
    pub overrun_factor: f64,
    /// `no_progress_after`: a live, unpaused session with no progress (a
    /// successful call, a note, a handoff, a resume) for this long raises
    /// `no_progress`. Default 30 minutes.
    pub no_progress_after: Duration,
    /// `stale_after`: a live session with no event at all for this long
    /// raises `stale` (judged by the sweep). Default 7 days.
    pub stale_after: Duration,
    /// `approval_wait_after`: a call waiting for a human's approval for this
    /// long raises `approval_wait` on its session (judged by the sweep).
    /// Default 1 hour.
    pub approval_wait_after: Duration,
    /// `rescue_target`: a rescue open this long without being resolved
    /// raises `rescue_overdue` on its session (judged by the sweep), which
    /// reaches the `[[notify]]` targets as every flag does. Default 45
    /// minutes, the target time to unblock.
    pub rescue_target: Duration,
    /// `sweep_interval`: while serving, how often the sweep runs the
    /// time-based rules (`no_progress`, `overrun`, `stale`,
    /// `approval_wait`) over the live sessions, with no call needed. `None`
    /// (`0` or `"off"`) turns the sweep off. Default 30 seconds.
    pub sweep_interval: Option<Duration>,
    /// `archive_after`: the sweep archives a session with no event for this
    /// long (a live one is ended first, outcome `exit`), unless it waits for
    /// an approval or is in a rescue. `None` (`"off"`, the default) archives
    /// nothing; at least `stale_after` otherwise.
    pub archive_after: Option<Duration>,
    /// `budget_fraction`: budget use at or above this (from the billing's
    /// `budget_warning` events) with a failing last call raises `budget`. Default 0.8.
    pub budget_fraction: f64,
    /// `context_fraction`: the brain's context at or above this share of
    /// its window (its latest `session_usage` report's `context_tokens` of
    /// `context_limit`) raises `context`: hand off before the window is
    /// full. Default 0.85.
    pub context_fraction: f64,
    /// `handoff_after_events`: `glovebox doctor` warns about a live session
    /// with more than this many events since its last handoff (or its start)
    /// — a long session with no handoff cannot be picked up by anyone else.
    /// Default [`DEFAULT_HANDOFF_AFTER_EVENTS`].
    pub handoff_after_events: u32,
    /// `[detector.severity]`: each rule's severity (rule name → info, warning or critical).
    pub severity: BTreeMap<String, Severity>,
}

impl Default for DetectorConfig {
    fn default() -> Self {
        DetectorConfig {
            enabled: true,
            retry_failures: 3,
            adjust_after: 2,
            denials: 3,
            denials_window: 10,
            overrun_factor: 2.0,
            no_progress_after: Duration::from_secs(30 * 60),
            stale_after: Duration::from_secs(7 * 86_400),
            approval_wait_after: Duration::from_secs(3600),
            rescue_target: Duration::from_secs(45 * 60),
            sweep_interval: Some(Duration::from_secs(30)),
            archive_after: None,
            budget_fraction: 0.8,
            context_fraction: 0.85,
            handoff_after_events: DEFAULT_HANDOFF_AFTER_EVENTS,
            severity: default_severity(),
        }
    }
}

fn default_severity() -> BTreeMap<String, Severity> {
    [
        ("budget", Severity::Critical),
        ("retry", Severity::Critical),
        ("overrun", Severity::Warning),
        ("denials", Severity::Warning),
        ("no_progress", Severity::Warning),
        ("stale", Severity::Warning),
        ("approval_wait", Severity::Warning),
        ("handoff", Severity::Warning),
        ("paused", Severity::Warning),
        ("context", Severity::Warning),
    ]
    .into_iter()
    .map(|(r, s)| (r.to_string(), s))
    .collect()
}

impl DetectorConfig {
    /// The severity of `rule`'s flags.
    pub fn severity_of(&self, rule: &str) -> Severity {
        self.severity
            .get(rule)
            .copied()
            .unwrap_or(Severity::Warning)
    }
}

/// Who writes to the context index.
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ContextWriter {
    /// A person, through `glovebox context add|retire`.
    Operator,
    /// A rescue's enrich step (`glovebox rescue resolve --enrich`).
    Rescue,
}

impl ContextWriter {
    pub fn as_str(self) -> &'static str {
        match self {
            ContextWriter::Operator => "operator",
            ContextWriter::Rescue => "rescue",
        }
    }
}

/// `[context]`: the context index's settings.
#[derive(Clone, Debug, PartialEq)]
pub struct ContextConfig {
    /// `writers`: who may add or retire entries. Default both.
    pub writers: Vec<ContextWriter>,
}

impl Default for ContextConfig {
    fn default() -> Self {
        ContextConfig {
            writers: vec![ContextWriter::Operator, ContextWriter::Rescue],
        }
    }
}

/// `[detector]`: stuck agents ([`operators/rescues.md`](operators/rescues.md)).
#[derive(Default, Deserialize)]
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub(super) struct RawDetector {
    /// `false` turns the detector off after calls and the sweep off.
    #[cfg_attr(feature = "schemars", schemars(extend("default" = true)))]
    enabled: Option<bool>,
    /// `retry`: the same call failing this many times (1 to 1000).
    #[cfg_attr(feature = "schemars", schemars(extend("default" = 3)))]
    retry_failures: Option<i64>,
    /// Failed calls in a row before the ladder moves from `retry` to `adjust` (1 to 1000).
    #[cfg_attr(feature = "schemars", schemars(extend("default" = 2)))]
    adjust_after: Option<i64>,
    /// `denials`: this many denied calls among the last `denials_window` (1 to 1000).
    #[cfg_attr(feature = "schemars", schemars(extend("default" = 3)))]
    denials: Option<i64>,
    /// The calls `denials` looks at (1 to 1000, at least `denials`).
    #[cfg_attr(feature = "schemars", schemars(extend("default" = 10)))]
    denials_window: Option<i64>,
    /// `overrun`: running longer than this times the expected duration.
    #[cfg_attr(feature = "schemars", schemars(extend("default" = 2.0)))]
    overrun_factor: Option<f64>,
    /// `no_progress`: no successful call, note, handoff or resume for this long.
    #[cfg_attr(feature = "schemars", schemars(extend("default" = "30m")))]
    no_progress_after: Option<Millis>,
    /// `stale`: a live session that did nothing at all for this long.
    #[cfg_attr(feature = "schemars", schemars(extend("default" = "7d")))]
    stale_after: Option<Millis>,
    /// `approval_wait`: a call waiting for a human this long.
    #[cfg_attr(feature = "schemars", schemars(extend("default" = "1h")))]
    approval_wait_after: Option<Millis>,
    /// `rescue_overdue`: a rescue open this long, not resolved.
    #[cfg_attr(feature = "schemars", schemars(extend("default" = "45m")))]
    rescue_target: Option<Millis>,
    /// How often the sweep runs while serving; `0` or `"off"` turns it off;
    /// at least `"100ms"`. Its first pass of a UTC day also records the
    /// day's compliance score (`glovebox doctor`).
    #[cfg_attr(feature = "schemars", schemars(extend("default" = "30s")))]
    sweep_interval: Option<OffOr>,
    /// Archive sessions idle this long (at least `stale_after`).
    #[cfg_attr(feature = "schemars", schemars(extend("default" = "off")))]
    archive_after: Option<OffOr>,
    /// `budget`: a cap used at or above this while calls fail.
    #[cfg_attr(feature = "schemars", schemars(extend("default" = 0.8)))]
    budget_fraction: Option<f64>,
    /// `context`: the brain's context at or above this share of its window.
    #[cfg_attr(feature = "schemars", schemars(extend("default" = 0.85)))]
    context_fraction: Option<f64>,
    /// `glovebox doctor` warns past this many events since the last handoff.
    #[cfg_attr(feature = "schemars", schemars(extend("default" = 500)))]
    handoff_after_events: Option<i64>,
    /// Each rule's severity: `info`, `warning` or `critical` (critical pauses).
    #[serde(default)]
    #[cfg_attr(feature = "schemars", schemars(extend("x-key" = "<rule>")))]
    #[cfg_attr(feature = "schemars", schemars(extend("x-default" = "`budget`, `retry`: `critical`; the others `warning`")))]
    severity: BTreeMap<String, String>,
}

/// `[context]`: the projects' context index.
#[derive(Default, Deserialize)]
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub(super) struct RawContext {
    /// Who may add or retire context index entries
    /// ([`operators/rescues.md`](operators/rescues.md)): `"operator"`,
    /// `"rescue"`; `[]` makes the index read-only.
    #[cfg_attr(feature = "schemars", schemars(extend("default" = ["operator", "rescue"])))]
    writers: Option<Vec<String>>,
}

pub(super) fn validate_detector(
    src: &Source,
    raw: &RawDetector,
) -> Result<DetectorConfig, ConfigError> {
    let mut d = DetectorConfig::default();
    if let Some(on) = raw.enabled {
        d.enabled = on;
    }
    apply_counts(src, raw, &mut d)?;
    apply_timings(src, raw, &mut d)?;
    apply_sweep_and_archive(src, raw, &mut d)?;
    apply_thresholds(src, raw, &mut d)?;
    apply_severities(src, raw, &mut d)?;
    Ok(d)
}

/// The counts of the `retry` and `denials` rules (1 to 1000 each), and a
/// `denials` that can happen within its window.
fn apply_counts(
    src: &Source,
    raw: &RawDetector,
    d: &mut DetectorConfig,
) -> Result<(), ConfigError> {
    let counts = [
        ("retry_failures", raw.retry_failures, &mut d.retry_failures),
        ("adjust_after", raw.adjust_after, &mut d.adjust_after),
        ("denials", raw.denials, &mut d.denials),
        ("denials_window", raw.denials_window, &mut d.denials_window),
    ];
    for (name, value, slot) in counts {
        if let Some(v) = value {
            *slot = u32::try_from(v)
                .ok()
                .filter(|v| (1..=1000).contains(v))
                .ok_or_else(|| {
                    src.invalid(
                        &format!("detector.{name}"),
                        format!("{v} is out of range"),
                        "write a whole number from 1 to 1000",
                    )
                })?;
        }
    }
    if d.denials > d.denials_window {
        return Err(src.invalid(
            "detector.denials",
            format!(
                "{} denials can never happen within the last {} calls",
                d.denials, d.denials_window
            ),
            "make `denials` at most `denials_window`",
        ));
    }
    Ok(())
}

/// How long is too long: the `overrun` factor and the rules' durations
/// (none zero).
fn apply_timings(
    src: &Source,
    raw: &RawDetector,
    d: &mut DetectorConfig,
) -> Result<(), ConfigError> {
    if let Some(f) = raw.overrun_factor {
        if !(f.is_finite() && f >= 1.0) {
            return Err(src.invalid(
                "detector.overrun_factor",
                format!("{f} is not a factor of at least 1"),
                "write a number like 2.0 (twice the expected duration)",
            ));
        }
        d.overrun_factor = f;
    }
    if let Some(Millis(after)) = raw.no_progress_after {
        if after.is_zero() {
            return Err(src.invalid(
                "detector.no_progress_after",
                "the duration is zero",
                "write a duration like \"30m\"",
            ));
        }
        d.no_progress_after = after;
    }
    let limits = [
        ("stale_after", raw.stale_after, &mut d.stale_after, "\"7d\""),
        (
            "approval_wait_after",
            raw.approval_wait_after,
            &mut d.approval_wait_after,
            "\"1h\"",
        ),
        (
            "rescue_target",
            raw.rescue_target,
            &mut d.rescue_target,
            "\"45m\"",
        ),
    ];
    for (name, value, slot, example) in limits {
        if let Some(Millis(after)) = value {
            if after.is_zero() {
                return Err(src.invalid(
                    &format!("detector.{name}"),
                    "the duration is zero",
                    format!("write a duration like {example}"),
                ));
            }
            *slot = after;
        }
    }
    Ok(())
}

/// The sweep's interval (at least 100 ms), and when sessions are archived
/// (not before they are stale).
fn apply_sweep_and_archive(
    src: &Source,
    raw: &RawDetector,
    d: &mut DetectorConfig,
) -> Result<(), ConfigError> {
    if let Some(interval) = raw.sweep_interval {
        d.sweep_interval = interval.duration();
        if let Some(every) = d.sweep_interval
            && every < Duration::from_millis(100)
        {
            return Err(src.invalid(
                "detector.sweep_interval",
                format!("{every:?} is shorter than 100 ms"),
                "write a duration like \"30s\" (at least \"100ms\"), or \"off\" to turn the sweep off",
            ));
        }
    }
    if let Some(after) = raw.archive_after {
        d.archive_after = after.duration();
        if let Some(after) = d.archive_after
            && after < d.stale_after
        {
            return Err(src.invalid(
                "detector.archive_after",
                format!(
                    "{} is shorter than `stale_after` ({}): sessions would be archived before they are flagged stale",
                    humantime::format_duration(after),
                    humantime::format_duration(d.stale_after)
                ),
                "make `archive_after` at least `stale_after` (like \"30d\"), or \"off\"",
            ));
        }
    }
    Ok(())
}

/// `[detector] <key>` = `f`, a share above 0 and at most 1 (`what` it is
/// a share of, and a value `like` it, for the error).
fn share(src: &Source, key: &str, f: f64, what: &str, like: f64) -> Result<f64, ConfigError> {
    if f.is_finite() && f > 0.0 && f <= 1.0 {
        return Ok(f);
    }
    Err(src.invalid(
        &format!("detector.{key}"),
        format!("{f} is not {what}"),
        format!("write a number above 0 and at most 1, like {like}"),
    ))
}

/// The `budget` rule's fraction of a cap, and how many events since the
/// last handoff `glovebox doctor` warns past.
fn apply_thresholds(
    src: &Source,
    raw: &RawDetector,
    d: &mut DetectorConfig,
) -> Result<(), ConfigError> {
    if let Some(f) = raw.budget_fraction {
        d.budget_fraction = share(src, "budget_fraction", f, "a fraction of the budget", 0.8)?;
    }
    if let Some(f) = raw.context_fraction {
        d.context_fraction = share(
            src,
            "context_fraction",
            f,
            "a share of the context window",
            0.85,
        )?;
    }
    if let Some(n) = raw.handoff_after_events {
        d.handoff_after_events = u32::try_from(n).ok().filter(|n| *n >= 1).ok_or_else(|| {
            src.invalid(
                "detector.handoff_after_events",
                format!("{n} is not a number of events"),
                "write a whole number of at least 1, like 500",
            )
        })?;
    }
    Ok(())
}

/// `[detector.severity]`: a severity per named rule.
fn apply_severities(
    src: &Source,
    raw: &RawDetector,
    d: &mut DetectorConfig,
) -> Result<(), ConfigError> {
    for (rule, text) in &raw.severity {
        let key = format!("detector.severity.{rule}");
        if !RULES.contains(&rule.as_str()) {
            return Err(src.invalid(
                &key,
                format!("`{rule}` is not a detector rule"),
                format!("the rules are: {}", RULES.join(", ")),
            ));
        }
        let severity = match text.as_str() {
            "info" => Severity::Info,
            "warning" => Severity::Warning,
            "critical" => Severity::Critical,
            other => {
                return Err(src.invalid(
                    &key,
                    format!("`{other}` is not a severity"),
                    "write \"info\", \"warning\" or \"critical\" (critical pauses the session)",
                ));
            }
        };
        d.severity.insert(rule.clone(), severity);
    }
    Ok(())
}

/// A duration that may be turned off: `"off"`, `0`, or a duration.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) struct OffOr(Option<Duration>);

impl OffOr {
    pub(super) fn duration(self) -> Option<Duration> {
        self.0.filter(|d| !d.is_zero())
    }
}

impl<'de> Deserialize<'de> for OffOr {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Raw {
            Text(String),
            Other(Millis),
        }
        match Raw::deserialize(deserializer).map_err(|_| {
            serde::de::Error::custom(
                "expected a duration (a string like \"30s\" or an integer number of milliseconds), 0 or \"off\"",
            )
        })? {
            Raw::Text(t) if t.trim().eq_ignore_ascii_case("off") => Ok(OffOr(None)),
            Raw::Text(t) => super::units::parse_duration(&t)
                .map(|d| OffOr(Some(d)))
                .map_err(serde::de::Error::custom),
            Raw::Other(Millis(d)) => Ok(OffOr(Some(d))),
        }
    }
}

/// What TOML accepts for an [`OffOr`], for the config's JSON Schema.
#[cfg(feature = "schemars")]
impl schemars::JsonSchema for OffOr {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "DurationOrOff".into()
    }

    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({
            "description": "A duration that may be turned off: a string with a unit (`\"30s\"`, `\"7d\"`), an integer number of milliseconds, or `0` or `\"off\"` for off.",
            "anyOf": [
                { "type": "integer", "minimum": 0 },
                { "type": "string", "examples": ["30s", "7d", "off"] }
            ]
        })
    }
}

pub(super) fn validate_context(
    src: &Source,
    raw: &RawContext,
) -> Result<ContextConfig, ConfigError> {
    let mut c = ContextConfig::default();
    if let Some(writers) = &raw.writers {
        c.writers.clear();
        for w in writers {
            let writer = match w.as_str() {
                "operator" => ContextWriter::Operator,
                "rescue" => ContextWriter::Rescue,
                other => {
                    return Err(src.invalid(
                        "context.writers",
                        format!("`{other}` is not a context writer"),
                        "list any of \"operator\" and \"rescue\" (an empty list makes the index read-only)",
                    ));
                }
            };
            if !c.writers.contains(&writer) {
                c.writers.push(writer);
            }
        }
    }
    Ok(c)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::HostConfig;

    fn load(extra: &str) -> Result<HostConfig, ConfigError> {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("glovebox.toml");
        std::fs::write(&path, format!("hooks = \"none\"\n{extra}")).unwrap();
        HostConfig::load(&path)
    }

    #[test]
    fn defaults_and_overrides() {
        let c = load("").unwrap();
        assert_eq!(c.detector, DetectorConfig::default());
        assert_eq!(c.context, ContextConfig::default());
        let c = load(
            "[detector]\nretry_failures = 5\nno_progress_after = \"10m\"\noverrun_factor = 3.0\n\
             [detector.severity]\ndenials = \"critical\"\n[context]\nwriters = [\"operator\"]\n",
        )
        .unwrap();
        assert_eq!(c.detector.retry_failures, 5);
        assert_eq!(c.detector.no_progress_after, Duration::from_secs(600));
        assert_eq!(c.detector.overrun_factor, 3.0);
        assert_eq!(c.detector.severity_of("denials"), Severity::Critical);
        assert_eq!(c.detector.severity_of("retry"), Severity::Critical);
        assert_eq!(c.context.writers, [ContextWriter::Operator]);
        assert_eq!(c.detector.sweep_interval, Some(Duration::from_secs(30)));
        assert_eq!(c.detector.archive_after, None);
        let c = load(
            "[detector]\nsweep_interval = \"off\"\nstale_after = \"2d\"\napproval_wait_after = 60000\n\
             archive_after = \"30d\"\n[detector.severity]\nstale = \"info\"\n",
        )
        .unwrap();
        assert_eq!(c.detector.sweep_interval, None);
        assert_eq!(c.detector.stale_after, Duration::from_secs(2 * 86_400));
        assert_eq!(c.detector.approval_wait_after, Duration::from_secs(60));
        assert_eq!(
            c.detector.archive_after,
            Some(Duration::from_secs(30 * 86_400))
        );
        assert_eq!(c.detector.severity_of("stale"), Severity::Info);
        assert_eq!(c.detector.severity_of("approval_wait"), Severity::Warning);
        let c = load("[detector]\nsweep_interval = 0\narchive_after = \"off\"\n").unwrap();
        assert_eq!(c.detector.sweep_interval, None);
        assert_eq!(c.detector.archive_after, None);
    }
}
