//! `[quotas]`: how much of the host one agent principal, or one session, may
//! hold at a time. Without them an agent that loops (or a hostile one) can
//! grow the store and the host's memory without end: thousands of live
//! sessions, jobs queued faster than they run, handoffs of megabytes,
//! sessions with thousands of tags. Each quota has a safe default; a request
//! past one is refused with an error that names the key, and nothing is
//! written.
//!
//! Operators (the command line, the dashboard) are not held to the
//! per-principal quotas: they are the ones who clean up. The per-session
//! quotas (tags, handoff sizes, jobs) hold for everyone.

use std::time::Duration;

use serde::Deserialize;

use super::ConfigError;
use super::detector::OffOr;
use super::source::Source;
use super::units::{Size, format_size};

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
    /// `tags_per_session`: tags one session may carry. Default 32.
    pub tags_per_session: u64,
    /// `handoff_bytes`: the size of one handoff, every field together.
    /// Default 64 KiB.
    pub handoff_bytes: u64,
    /// `handoff_items`: entries in each list of a handoff (requirements,
    /// files, success criteria, ...). Default 64.
    pub handoff_items: u64,
    /// `retain_finished`: how long final jobs and settled approvals are
    /// kept after they ended; the sweep removes older ones (their calls stay
    /// in the session logs). Default 30 days; `"off"` keeps them forever.
    pub retain_finished: Option<Duration>,
}

impl Default for QuotasConfig {
    fn default() -> Self {
        QuotasConfig {
            sessions_per_principal: 64,
            jobs_per_session: 64,
            jobs_per_principal: 256,
            tags_per_session: 32,
            handoff_bytes: 64 * 1024,
            handoff_items: 64,
            retain_finished: Some(Duration::from_secs(30 * 24 * 3600)),
        }
    }
}

/// The most ids one `job_wait` takes: a wait is a set of jobs, not a scan.
pub const MAX_WAIT_IDS: usize = 256;

#[derive(Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawQuotas {
    sessions_per_principal: Option<i64>,
    jobs_per_session: Option<i64>,
    jobs_per_principal: Option<i64>,
    tags_per_session: Option<i64>,
    handoff_bytes: Option<Size>,
    handoff_items: Option<i64>,
    retain_finished: Option<OffOr>,
}

/// Upper bounds: a quota is a bound, and a bound past these is no bound.
const MAX_COUNT: i64 = 1_000_000;
const MAX_HANDOFF_BYTES: u64 = 16 * 1024 * 1024;

pub(super) fn validate_quotas(src: &Source, raw: &RawQuotas) -> Result<QuotasConfig, ConfigError> {
    let mut config = QuotasConfig::default();
    let counts = [
        (
            "sessions_per_principal",
            raw.sessions_per_principal,
            &mut config.sessions_per_principal,
        ),
        (
            "jobs_per_session",
            raw.jobs_per_session,
            &mut config.jobs_per_session,
        ),
        (
            "jobs_per_principal",
            raw.jobs_per_principal,
            &mut config.jobs_per_principal,
        ),
        (
            "tags_per_session",
            raw.tags_per_session,
            &mut config.tags_per_session,
        ),
        (
            "handoff_items",
            raw.handoff_items,
            &mut config.handoff_items,
        ),
    ];
    for (key, value, slot) in counts {
        let Some(value) = value else { continue };
        if !(1..=MAX_COUNT).contains(&value) {
            return Err(src.invalid(
                &format!("quotas.{key}"),
                format!("{value} is not a count from 1 to {MAX_COUNT}"),
                format!(
                    "set `{key}` to a whole number from 1 to {MAX_COUNT}, or leave it out for the default ({})",
                    *slot
                ),
            ));
        }
        *slot = value as u64;
    }
    if let Some(Size(bytes)) = raw.handoff_bytes {
        if !(1024..=MAX_HANDOFF_BYTES).contains(&bytes) {
            return Err(src.invalid(
                "quotas.handoff_bytes",
                format!("{} is not between 1 KiB and 16 MiB", format_size(bytes)),
                "set `handoff_bytes` to a size such as \"64KiB\", or leave it out for the default (64 KiB)",
            ));
        }
        config.handoff_bytes = bytes;
    }
    if let Some(retain) = raw.retain_finished {
        config.retain_finished = retain.duration();
    }
    Ok(config)
}
