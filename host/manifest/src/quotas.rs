//! `[quotas]`: how much of the host one agent principal, or one session, may
//! hold or grow. Without them an agent that loops (or a hostile one) can
//! grow the store, the disk and the host's memory without end: thousands of
//! live sessions, jobs queued faster than they run, gigabytes of job
//! outputs, approvals and proposals nobody settles, notes by the million.
//! Each quota has a default that holds such a loop to a size the host
//! survives; a request past one is refused with an error that names the
//! quota, its value, the key and who set it ([`QuotaLimit`]), and nothing is
//! written.
//!
//! Operators (the command line, the dashboard) are not held to the
//! per-principal quotas of the store: they are the ones who clean up. The
//! per-session quotas (tags, handoff sizes, jobs, events, children) and the
//! transport's (MCP sessions, requests in flight, queued calls: they share
//! the listener and the admission queue) hold for everyone.

use std::collections::BTreeSet;
use std::fmt;
use std::time::Duration;

use serde::Deserialize;

use super::ConfigError;
use super::detector::OffOr;
use super::source::Source;
use super::units::{format_size, parse_size};

/// `[quotas]`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct QuotasConfig {
    /// `sessions_per_principal`: live sessions (created, active or paused)
    /// one agent principal may own. Default 64.
    pub sessions_per_principal: u64,
    /// `jobs_per_session`: live jobs (queued or running) of one session.
    /// Default 64.
    pub jobs_per_session: u64,
    /// `jobs_per_principal`: live jobs one agent principal has spawned, over
    /// all its sessions. Default 256.
    pub jobs_per_principal: u64,
    /// `job_bytes_per_principal`: bytes of job records (inputs, outputs and
    /// captured output) one agent principal keeps in the store, live and
    /// finished, until `retain_finished` removes them. Default 256 MiB.
    pub job_bytes_per_principal: u64,
    /// `tags_per_session`: tags one session may carry. Default 32.
    pub tags_per_session: u64,
    /// `handoff_bytes`: the size of one handoff, every field together.
    /// Default 64 KiB.
    pub handoff_bytes: u64,
    /// `handoff_items`: entries in each list of a handoff (requirements,
    /// files, success criteria, ...). Default 64.
    pub handoff_items: u64,
    /// `approvals_per_principal`: pending approvals of one agent
    /// principal's calls, over all its sessions. Default 64.
    pub approvals_per_principal: u64,
    /// `session_events`: events agents and operators write into one
    /// session's log (not the host's own). Default 1,000,000.
    pub session_events: u64,
    /// `session_bytes`: bytes agents and operators write into one session's
    /// log, as stored. Default 1 GiB.
    pub session_bytes: u64,
    /// `principal_events_per_day`: events one agent principal causes in
    /// all its sessions' logs in a UTC day. Default 1,000,000.
    pub principal_events_per_day: u64,
    /// `principal_bytes_per_day`: bytes one agent principal adds to its
    /// sessions' logs in a UTC day. Default 2 GiB.
    pub principal_bytes_per_day: u64,
    /// `memory_proposals_per_principal`: memory proposals of one agent
    /// principal waiting for an operator. Default 256.
    pub memory_proposals_per_principal: u64,
    /// `children_per_session`: child sessions one session may spawn in
    /// all. Default 256.
    pub children_per_session: u64,
    /// `mcp_sessions_per_principal`: MCP sessions (over HTTP) one principal
    /// holds open at once. Default 64.
    pub mcp_sessions_per_principal: u64,
    /// `connections_per_principal`: HTTP requests (open streams included)
    /// one principal has in flight at once. Default 64.
    pub connections_per_principal: u64,
    /// `queued_calls_per_principal`: calls of one principal waiting for a
    /// slot in the admission queue. Default 256.
    pub queued_calls_per_principal: u64,
    /// `outbox_per_target`: notifications waiting for one `[[notify]]`
    /// target; past it the oldest are dropped, and counted. Default 10,000.
    pub outbox_per_target: u64,
    /// `retain_finished`: how long final jobs and settled approvals are
    /// kept after they ended; the sweep removes older ones (their calls stay
    /// in the session logs). Default 30 days; `"off"` keeps them forever.
    pub retain_finished: Option<Duration>,
    /// The keys the config sets; every other quota has its default. Who set
    /// a quota is part of every refusal ([`QuotaLimit`]).
    pub set: BTreeSet<&'static str>,
}

/// Whether a quota counts things or bytes (it is written and shown as a size).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Unit {
    Count,
    Bytes,
}

/// One quota: its key, unit, default and bounds, and where its value lives.
struct Def {
    key: &'static str,
    unit: Unit,
    default: u64,
    /// The range a value may take: a quota is a bound, and a bound past
    /// the top is no bound.
    min: u64,
    max: u64,
    field: fn(&mut QuotasConfig) -> &mut u64,
    /// What the quota bounds, for the config's schema and
    /// `docs/configuration.md` (read only when the schemas are built).
    #[cfg_attr(not(feature = "schemars"), expect(dead_code))]
    means: &'static str,
    /// What the quota protects, for the operators' table
    /// ([`QuotasConfig::table`]).
    protects: &'static str,
}

const KIB: u64 = 1024;
const MIB: u64 = 1024 * KIB;
const GIB: u64 = 1024 * MIB;
const MAX_COUNT: u64 = 1_000_000;

/// Every quota with a value, in the order the docs list them.
#[rustfmt::skip]
const DEFS: &[Def] = &[
    Def { key: "sessions_per_principal", unit: Unit::Count, default: 64, min: 1, max: MAX_COUNT, field: |q| &mut q.sessions_per_principal, means: "Live sessions (created, active or paused) of one agent principal.", protects: "an agent starting sessions in a loop: the store, the session cache, every listing (threats 43, 49)" },
    Def { key: "jobs_per_session", unit: Unit::Count, default: 64, min: 1, max: MAX_COUNT, field: |q| &mut q.jobs_per_session, means: "Live jobs (queued or running) of one session.", protects: "one session queueing jobs faster than they run (threat 43)" },
    Def { key: "jobs_per_principal", unit: Unit::Count, default: 256, min: 1, max: MAX_COUNT, field: |q| &mut q.jobs_per_principal, means: "Live jobs of one agent principal over all its sessions.", protects: "an agent spreading a job flood over many sessions (threat 43)" },
    Def { key: "job_bytes_per_principal", unit: Unit::Bytes, default: 256 * MIB, min: MIB, max: 1024 * GIB, field: |q| &mut q.job_bytes_per_principal, means: "Bytes one agent principal's jobs keep in the store (inputs, outputs, captured output), until `retain_finished` removes them.", protects: "an agent looping `job_spawn` with big inputs or outputs: the store and the disk (threat 49)" },
    Def { key: "tags_per_session", unit: Unit::Count, default: 32, min: 1, max: MAX_COUNT, field: |q| &mut q.tags_per_session, means: "Tags on one session.", protects: "a session's record and every listing that shows its tags (threat 49)" },
    Def { key: "handoff_bytes", unit: Unit::Bytes, default: 64 * KIB, min: KIB, max: 16 * MIB, field: |q| &mut q.handoff_bytes, means: "One handoff, every field together.", protects: "a handoff written whole into the log and a checkpoint (threat 49)" },
    Def { key: "handoff_items", unit: Unit::Count, default: 64, min: 1, max: MAX_COUNT, field: |q| &mut q.handoff_items, means: "Entries of each list of a handoff.", protects: "a handoff's lists, read back at every resume (threat 49)" },
    Def { key: "approvals_per_principal", unit: Unit::Count, default: 64, min: 1, max: MAX_COUNT, field: |q| &mut q.approvals_per_principal, means: "Pending approvals of one agent principal's calls.", protects: "an agent piling up approvals nobody settles (threats 43, 49)" },
    Def { key: "session_events", unit: Unit::Count, default: 1_000_000, min: 100, max: 1_000_000_000, field: |q| &mut q.session_events, means: "Events agents and operators write into one session's log (the host's own are not counted); past it new content is refused, ending or pausing the session still works.", protects: "one session's log growing without end: its resume, verify and replay (threats 42, 49)" },
    Def { key: "session_bytes", unit: Unit::Bytes, default: GIB, min: MIB, max: 1024 * GIB, field: |q| &mut q.session_bytes, means: "Bytes agents and operators write into one session's log, as stored; past it new content is refused, ending or pausing the session still works.", protects: "one session's log on disk (threats 42, 49)" },
    Def { key: "principal_events_per_day", unit: Unit::Count, default: 1_000_000, min: 100, max: 1_000_000_000, field: |q| &mut q.principal_events_per_day, means: "Events one agent principal causes in a UTC day.", protects: "an agent writing notes, usage and handoffs by the million across sessions (threat 49)" },
    Def { key: "principal_bytes_per_day", unit: Unit::Bytes, default: 2 * GIB, min: MIB, max: 1024 * GIB, field: |q| &mut q.principal_bytes_per_day, means: "Bytes one agent principal adds to its logs in a UTC day.", protects: "the disk every tenant shares, filled by one agent over many sessions (threat 49)" },
    Def { key: "memory_proposals_per_principal", unit: Unit::Count, default: 256, min: 1, max: MAX_COUNT, field: |q| &mut q.memory_proposals_per_principal, means: "Memory proposals of one agent principal awaiting review.", protects: "the operators' review queue and every memory search (threat 49)" },
    Def { key: "children_per_session", unit: Unit::Count, default: 256, min: 1, max: MAX_COUNT, field: |q| &mut q.children_per_session, means: "Child sessions one session may spawn in all.", protects: "a parent's family: its summary, its checkpoints, its wait (threat 49)" },
    Def { key: "mcp_sessions_per_principal", unit: Unit::Count, default: 64, min: 1, max: MAX_COUNT, field: |q| &mut q.mcp_sessions_per_principal, means: "MCP sessions over HTTP one principal holds open.", protects: "the MCP sessions the HTTP listener holds for everyone (threats 43, 58)" },
    Def { key: "connections_per_principal", unit: Unit::Count, default: 64, min: 1, max: MAX_COUNT, field: |q| &mut q.connections_per_principal, means: "HTTP requests in flight of one principal (open streams included).", protects: "the requests and open streams the listener serves at once (threats 43, 58)" },
    Def { key: "queued_calls_per_principal", unit: Unit::Count, default: 256, min: 1, max: MAX_COUNT, field: |q| &mut q.queued_calls_per_principal, means: "Calls of one principal waiting for a slot.", protects: "the admission queue other principals wait in (threats 44, 58)" },
    Def { key: "outbox_per_target", unit: Unit::Count, default: 10_000, min: 1, max: MAX_COUNT, field: |q| &mut q.outbox_per_target, means: "Notifications waiting for one `[[notify]]` target (and, apart, kept as failed for it); past it the oldest are dropped, counted in the store (`notify status`, `glovebox_notify_dropped_total`, the dashboard).", protects: "notifications piling up for an unreachable target (threat 57)" },
];

impl Default for QuotasConfig {
    fn default() -> Self {
        let mut config = QuotasConfig {
            sessions_per_principal: 0,
            jobs_per_session: 0,
            jobs_per_principal: 0,
            job_bytes_per_principal: 0,
            tags_per_session: 0,
            handoff_bytes: 0,
            handoff_items: 0,
            approvals_per_principal: 0,
            session_events: 0,
            session_bytes: 0,
            principal_events_per_day: 0,
            principal_bytes_per_day: 0,
            memory_proposals_per_principal: 0,
            children_per_session: 0,
            mcp_sessions_per_principal: 0,
            connections_per_principal: 0,
            queued_calls_per_principal: 0,
            outbox_per_target: 0,
            retain_finished: Some(Duration::from_secs(30 * 24 * 3600)),
            set: BTreeSet::new(),
        };
        for def in DEFS {
            *(def.field)(&mut config) = def.default;
        }
        config
    }
}

impl QuotasConfig {
    /// Quota `key` as it holds here: its value, and whether the config set
    /// it. What a refusal quotes. Panics on a key that is not a quota (a
    /// bug: the keys are the host's own constants).
    pub fn limit(&self, key: &str) -> QuotaLimit {
        let def = DEFS
            .iter()
            .find(|d| d.key == key)
            .unwrap_or_else(|| panic!("`{key}` is not a quota"));
        let mut copy = self.clone();
        QuotaLimit {
            key: def.key,
            value: *(def.field)(&mut copy),
            bytes: def.unit == Unit::Bytes,
            set: self.set.contains(def.key),
        }
    }

    /// Every quota key with a value, in the docs' order.
    pub fn keys() -> impl Iterator<Item = &'static str> {
        DEFS.iter().map(|d| d.key)
    }

    /// The operators' table of every quota (key, default, what it
    /// protects), as `docs/security.md` holds it between its `quotas`
    /// markers; a test fails when the page is stale.
    pub fn table() -> String {
        let mut table = String::from("| `[quotas]` key | default | protects |\n|---|---|---|\n");
        for def in DEFS {
            let default = match def.unit {
                Unit::Bytes => format_size(def.default),
                Unit::Count => def.default.to_string(),
            };
            table.push_str(&format!(
                "| `{}` | {default} | {} |\n",
                def.key, def.protects
            ));
        }
        table.push_str("| `retain_finished` | 30d | final jobs and settled approvals kept forever (threat 49) |\n");
        table
    }
}

/// One quota as a refusal quotes it: `` `quotas.KEY` = VALUE (WHO SET IT) ``.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct QuotaLimit {
    /// The key under `[quotas]`.
    pub key: &'static str,
    pub value: u64,
    /// Shown as a size.
    pub bytes: bool,
    /// Set in the config (else the default holds).
    pub set: bool,
}

impl fmt::Display for QuotaLimit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let value = if self.bytes {
            format_size(self.value)
        } else {
            self.value.to_string()
        };
        let by = if self.set {
            "set by the operator in [quotas]"
        } else {
            "the default"
        };
        write!(f, "`quotas.{}` = {value}, {by}", self.key)
    }
}

/// The most ids one `job_wait` takes: a wait is a set of jobs, not a scan.
pub const MAX_WAIT_IDS: usize = 256;

/// `[quotas]` as written: each key a count, a size or (`retain_finished`)
/// a duration, checked against [`DEFS`] by name so an unknown key is named
/// with the list of known ones.
#[derive(Default, Deserialize)]
#[serde(transparent)]
pub(super) struct RawQuotas {
    values: std::collections::BTreeMap<String, toml::Value>,
}
/// What `retain_finished` means, for the config's schema.
#[cfg(feature = "schemars")]
const RETAIN_FINISHED_MEANS: &str =
    "How long final jobs and settled approvals are kept; `\"off\"` keeps them.";

/// `[quotas]`'s schema, made from [`DEFS`] as its parsing is: each quota a
/// count or a size, with its default and range, and `retain_finished`.
#[cfg(feature = "schemars")]
impl schemars::JsonSchema for RawQuotas {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "RawQuotas".into()
    }

    fn json_schema(generator: &mut schemars::SchemaGenerator) -> schemars::Schema {
        let mut properties = serde_json::Map::new();
        for def in DEFS {
            let schema = match def.unit {
                Unit::Count => serde_json::json!({
                    "type": "integer",
                    "minimum": def.min,
                    "maximum": def.max,
                    "default": def.default,
                }),
                Unit::Bytes => {
                    let mut size = generator.subschema_for::<super::units::Size>().to_value();
                    size["default"] = format_size(def.default).into();
                    size
                }
            };
            let mut schema = schema;
            schema["description"] = def.means.into();
            properties.insert(def.key.to_string(), schema);
        }
        let mut retain = generator.subschema_for::<OffOr>().to_value();
        retain["description"] = RETAIN_FINISHED_MEANS.into();
        retain["default"] = "30d".into();
        properties.insert("retain_finished".to_string(), retain);
        schemars::json_schema!({
            "description": "`[quotas]`: how much one agent principal, or one session, may hold.",
            "type": "object",
            "properties": properties,
            "additionalProperties": false,
        })
    }
}

pub(super) fn validate_quotas(src: &Source, raw: &RawQuotas) -> Result<QuotasConfig, ConfigError> {
    let mut config = QuotasConfig::default();
    for (key, value) in &raw.values {
        if key == "retain_finished" {
            let retain = OffOr::deserialize(value.clone()).map_err(|e| {
                src.invalid(
                    "quotas.retain_finished",
                    e.to_string(),
                    "write a duration such as \"30d\", or \"off\" to keep them forever",
                )
            })?;
            config.retain_finished = retain.duration();
            config.set.insert("retain_finished");
            continue;
        }
        let Some(def) = DEFS.iter().find(|d| d.key == key) else {
            let mut known: Vec<&str> = QuotasConfig::keys().collect();
            known.push("retain_finished");
            return Err(src.invalid(
                &format!("quotas.{key}"),
                "unknown key",
                format!("the quotas are: {}", known.join(", ")),
            ));
        };
        let value = match (def.unit, value) {
            (_, toml::Value::Integer(n)) => u64::try_from(*n).ok(),
            (Unit::Bytes, toml::Value::String(text)) => parse_size(text).ok(),
            _ => None,
        }
        .filter(|v| (def.min..=def.max).contains(v));
        let Some(value) = value else {
            let default = *(def.field)(&mut QuotasConfig::default());
            return Err(match def.unit {
                Unit::Count => src.invalid(
                    &format!("quotas.{key}"),
                    format!("not a whole number from {} to {}", def.min, def.max),
                    format!(
                        "set `{key}` to a whole number from {} to {}, or leave it out for the default ({default})",
                        def.min, def.max
                    ),
                ),
                Unit::Bytes => src.invalid(
                    &format!("quotas.{key}"),
                    format!(
                        "not a size between {} and {}",
                        format_size(def.min),
                        format_size(def.max)
                    ),
                    format!(
                        "set `{key}` to a size such as \"{}\", or leave it out for the default ({})",
                        format_size(default),
                        format_size(default)
                    ),
                ),
            });
        };
        *(def.field)(&mut config) = value;
        config.set.insert(def.key);
    }
    Ok(config)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The quotas' table in docs/security.md is the one `table` makes: a
    /// quota added, or a default changed, without the page fails here
    /// (`GLOVEBOX_BLESS=1` rewrites the page).
    #[test]
    fn the_security_page_lists_every_quota_with_its_default() {
        const BEGIN: &str =
            "<!-- quotas: made by QuotasConfig::table (host/manifest/src/quotas.rs) -->\n";
        const END: &str = "<!-- /quotas -->";
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/security.md");
        let page = std::fs::read_to_string(&path).unwrap();
        let (Some(start), Some(end)) = (page.find(BEGIN), page.find(END)) else {
            panic!("docs/security.md has no `{BEGIN}` ... `{END}` block");
        };
        let made = QuotasConfig::table();
        let held = &page[start + BEGIN.len()..end];
        if held != made {
            if std::env::var_os("GLOVEBOX_BLESS").is_some() {
                let fresh = format!("{}{made}{}", &page[..start + BEGIN.len()], &page[end..]);
                std::fs::write(&path, fresh).unwrap();
                return;
            }
            panic!(
                "docs/security.md's quota table is stale: run with GLOVEBOX_BLESS=1, or write\n{made}"
            );
        }
    }

    #[test]
    fn a_refusal_quotes_the_key_its_value_and_who_set_it() {
        let mut quotas = QuotasConfig::default();
        assert_eq!(
            quotas.limit("job_bytes_per_principal").to_string(),
            "`quotas.job_bytes_per_principal` = 256 MiB, the default"
        );
        quotas.tags_per_session = 5;
        quotas.set.insert("tags_per_session");
        assert_eq!(
            quotas.limit("tags_per_session").to_string(),
            "`quotas.tags_per_session` = 5, set by the operator in [quotas]"
        );
    }
}
