//! `[runtime]`: host-wide capacity (call slots, the admission queue and
//! its shares, the size bounds) and where compiled components are cached.

use std::path::Path;

use serde::Deserialize;

use crate::paths::resolve_dir;
use crate::source::{SIZE_HINT, Source};
use crate::units::{Millis, Size};
use crate::{ConfigError, MAX_ADMISSION_QUEUE, MAX_CONCURRENT_CALLS, RuntimeConfig};

/// `[runtime]`: host-wide capacity.
#[derive(Default, Deserialize)]
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub(crate) struct RawRuntime {
    /// Calls running at once, across all sessions (1 to 1000).
    #[cfg_attr(feature = "schemars", schemars(extend("default" = 16)))]
    max_concurrent_calls: Option<i64>,
    /// The sum of the memory limits of the calls running at once.
    #[cfg_attr(feature = "schemars", schemars(extend("default" = "4 GiB")))]
    memory_budget: Option<Size>,
    /// How long a call that finds no room waits before `busy`; never past
    /// its deadline; `"0s"` refuses at once.
    #[cfg_attr(feature = "schemars", schemars(extend("default" = "5s")))]
    admission_wait: Option<Millis>,
    /// Calls waiting at once; one more is `busy` at once (0 to 1,000,000).
    #[cfg_attr(feature = "schemars", schemars(extend("default" = 1024)))]
    admission_queue: Option<i64>,
    /// While others wait, the fraction of slots one principal may hold (at
    /// least one slot).
    #[cfg_attr(feature = "schemars", schemars(extend("default" = 0.5)))]
    principal_share: Option<f64>,
    /// A tool whose calls averaged this long (or not called yet) is slow.
    #[cfg_attr(feature = "schemars", schemars(extend("default" = "100ms")))]
    slow_call: Option<Millis>,
    /// The fraction of slots slow calls may hold; `1` turns this off.
    #[cfg_attr(feature = "schemars", schemars(extend("default" = 0.5)))]
    slow_share: Option<f64>,
    /// The largest input a call accepts.
    #[cfg_attr(feature = "schemars", schemars(extend("default" = "1 MiB")))]
    max_input_bytes: Option<Size>,
    /// Larger component files are refused before they are read.
    #[cfg_attr(feature = "schemars", schemars(extend("default" = "256 MiB")))]
    max_component_bytes: Option<Size>,
    /// The upper bound of any plugin's `memory`.
    #[cfg_attr(feature = "schemars", schemars(extend("default" = "4 GiB")))]
    max_memory_per_instance: Option<Size>,
    /// Compiled components and pre-initialized snapshots.
    #[cfg_attr(feature = "schemars", schemars(extend("x-default" = "`cache` in `data_dir`")))]
    cache_dir: Option<String>,
    /// SHA-256 records of every cached file; a cached file is used only if it matches.
    #[cfg_attr(feature = "schemars", schemars(extend("x-default" = "`digests` in `data_dir`")))]
    digests_dir: Option<String>,
    /// Bytes one session's scratch dir may hold (more than 100,000 entries
    /// counts as full).
    #[cfg_attr(feature = "schemars", schemars(extend("default" = "256 MiB")))]
    scratch_quota: Option<Size>,
}

pub(super) fn validate_runtime(
    src: &Source,
    raw: &RawRuntime,
    dir: &Path,
) -> Result<RuntimeConfig, ConfigError> {
    let mut runtime = RuntimeConfig::default();
    apply_admission(src, raw, &mut runtime)?;
    apply_shares(src, raw, &mut runtime)?;
    apply_sizes(src, raw, &mut runtime)?;
    if let Some(cache) = &raw.cache_dir {
        runtime.cache_dir = Some(resolve_dir(src, dir, "runtime.cache_dir", cache)?);
    }
    if let Some(digests) = &raw.digests_dir {
        runtime.digests_dir = Some(resolve_dir(src, dir, "runtime.digests_dir", digests)?);
    }
    Ok(runtime)
}

/// How many calls run at once, and how many wait how long for a slot.
fn apply_admission(
    src: &Source,
    raw: &RawRuntime,
    runtime: &mut RuntimeConfig,
) -> Result<(), ConfigError> {
    if let Some(calls) = raw.max_concurrent_calls {
        match u32::try_from(calls) {
            Ok(calls) if (1..=MAX_CONCURRENT_CALLS).contains(&calls) => {
                runtime.max_concurrent_calls = calls;
            }
            _ => {
                return Err(src.invalid(
                    "runtime.max_concurrent_calls",
                    format!("{calls} concurrent calls is out of range"),
                    "write an integer from 1 to 1000",
                ));
            }
        }
    }
    if let Some(Millis(wait)) = raw.admission_wait {
        runtime.admission_wait = wait;
    }
    if let Some(queue) = raw.admission_queue {
        match u32::try_from(queue) {
            Ok(queue) if queue <= MAX_ADMISSION_QUEUE => runtime.admission_queue = queue,
            _ => {
                return Err(src.invalid(
                    "runtime.admission_queue",
                    format!("{queue} waiting calls is out of range"),
                    "write an integer from 0 (no queue: busy at once) to 1000000",
                ));
            }
        }
    }
    Ok(())
}

/// What share of the slots one principal, and slow calls, may hold while
/// others wait; and what a slow call is.
fn apply_shares(
    src: &Source,
    raw: &RawRuntime,
    runtime: &mut RuntimeConfig,
) -> Result<(), ConfigError> {
    if let Some(share) = raw.principal_share {
        if !(share > 0.0 && share <= 1.0) {
            return Err(src.invalid(
                "runtime.principal_share",
                format!("{share} is not a share of the call slots"),
                "write a fraction above 0 and at most 1, e.g. `principal_share = 0.5` (one principal holds at most half the slots while others wait)",
            ));
        }
        runtime.principal_share = share;
    }
    if let Some(Millis(slow)) = raw.slow_call {
        if slow.is_zero() {
            return Err(src.invalid(
                "runtime.slow_call",
                "0s would make every call slow".to_string(),
                "write a duration above zero, e.g. `slow_call = \"100ms\"` (tools whose calls average longer share `slow_share` of the slots while quicker calls wait)",
            ));
        }
        runtime.slow_call = slow;
    }
    if let Some(share) = raw.slow_share {
        if !(share > 0.0 && share <= 1.0) {
            return Err(src.invalid(
                "runtime.slow_share",
                format!("{share} is not a share of the call slots"),
                "write a fraction above 0 and at most 1, e.g. `slow_share = 0.5` (slow calls hold at most half the slots while quicker calls wait; 1 turns this off)",
            ));
        }
        runtime.slow_share = share;
    }
    Ok(())
}

/// The size bounds, none of them zero.
fn apply_sizes(
    src: &Source,
    raw: &RawRuntime,
    runtime: &mut RuntimeConfig,
) -> Result<(), ConfigError> {
    let sizes = [
        (
            "memory_budget",
            raw.memory_budget,
            &mut runtime.memory_budget,
        ),
        (
            "max_input_bytes",
            raw.max_input_bytes,
            &mut runtime.max_input_bytes,
        ),
        (
            "max_component_bytes",
            raw.max_component_bytes,
            &mut runtime.max_component_bytes,
        ),
        (
            "max_memory_per_instance",
            raw.max_memory_per_instance,
            &mut runtime.max_memory_per_instance,
        ),
        (
            "scratch_quota",
            raw.scratch_quota,
            &mut runtime.scratch_quota,
        ),
    ];
    for (name, value, slot) in sizes {
        if let Some(Size(bytes)) = value {
            if bytes == 0 {
                return Err(src.invalid(
                    &format!("runtime.{name}"),
                    format!("`{name}` is zero"),
                    SIZE_HINT,
                ));
            }
            *slot = bytes;
        }
    }
    Ok(())
}
