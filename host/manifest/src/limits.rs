//! `[limits]` in a manifest and `[defaults]` in `glovebox.toml`: the same keys, applied
//! over a base.

use serde::Deserialize;

use super::source::Source;
use super::units::{Fuel, Millis, Size};
use super::{ConfigError, Limits};

/// The limits of one call of a plugin (each key left out keeps the base's).
#[derive(Default, Deserialize)]
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub(super) struct RawLimits {
    /// Linear memory per instance; at most `runtime.max_memory_per_instance`.
    #[cfg_attr(feature = "schemars", schemars(extend("default" = "64 MiB")))]
    pub(super) memory: Option<Size>,
    /// Wall-clock time per call; the call is interrupted when it runs out.
    #[cfg_attr(feature = "schemars", schemars(extend("default" = "10s")))]
    pub(super) deadline: Option<Millis>,
    /// The largest JSON result.
    #[cfg_attr(feature = "schemars", schemars(extend("default" = "1 MiB")))]
    pub(super) output: Option<Size>,
    /// Bytes of stdout and of stderr kept per call (the rest dropped, marked
    /// truncated); `0` keeps none.
    #[cfg_attr(feature = "schemars", schemars(extend("default" = "64 KiB")))]
    pub(super) stdio: Option<Size>,
    /// Instructions (roughly) per call.
    #[cfg_attr(feature = "schemars", schemars(extend("default" = "off")))]
    pub(super) fuel: Option<Fuel>,
    /// Native stack for wasm code (host-wide: only in `[defaults]`; a
    /// manifest's `[limits]` may not change it).
    #[cfg_attr(feature = "schemars", schemars(extend("default" = "512 KiB")))]
    pub(super) max_wasm_stack: Option<Size>,
    /// Bytes a call may write into its read-write grants and scratch dir;
    /// `0` allows none; past it a `quota` error.
    #[cfg_attr(feature = "schemars", schemars(extend("default" = "64 MiB")))]
    pub(super) write: Option<Size>,
    /// The largest result kept whole when it passes `output`, in a session:
    /// the call answers its first bytes and where the whole is (counted
    /// against the session's `runtime.scratch_quota`); `0` keeps none (a
    /// larger result is an `output_too_large` error).
    #[cfg_attr(feature = "schemars", schemars(extend("default" = "16 MiB")))]
    pub(super) stored_output: Option<Size>,
    /// Tools one call may call from inside its run (code mode: the `tools`
    /// import, which the Python and JavaScript runners use); each is a
    /// call of the calling session, judged by its hooks and logged with
    /// the run that made it. `0` allows none.
    #[cfg_attr(feature = "schemars", schemars(extend("default" = 0)))]
    pub(super) nested_calls: Option<u32>,
    /// How deep calls may nest below a call of this plugin: at `1` the
    /// tools it calls may not call tools themselves (a runner calling
    /// itself or another runner is refused); raise it to allow that.
    #[cfg_attr(feature = "schemars", schemars(extend("default" = 1)))]
    pub(super) nested_depth: Option<u32>,
}

/// `base` with the keys of `raw` applied; `table` is `limits` or `defaults`, for messages.
pub(super) fn apply_limits(
    src: &Source,
    table: &str,
    raw: &RawLimits,
    base: &Limits,
) -> Result<Limits, ConfigError> {
    let zero = |key: &str, what: &str, hint: &str| {
        src.invalid(&format!("{table}.{key}"), format!("{what} is zero"), hint)
    };
    let mut limits = base.clone();
    if let Some(Size(memory)) = raw.memory {
        if memory == 0 {
            return Err(zero(
                "memory",
                "the memory limit",
                "set a size like `\"64 MiB\"`",
            ));
        }
        limits.memory = memory;
    }
    if let Some(Millis(deadline)) = raw.deadline {
        if deadline.is_zero() {
            return Err(zero(
                "deadline",
                "the deadline",
                "set a duration like `\"5s\"`",
            ));
        }
        limits.deadline = deadline;
    }
    if let Some(Size(output)) = raw.output {
        if output == 0 {
            return Err(zero(
                "output",
                "the output limit",
                "set a size like `\"1 MiB\"`: even an empty result needs a few bytes",
            ));
        }
        limits.output = output;
    }
    if let Some(Size(stdio)) = raw.stdio {
        // Zero is meaningful: keep no stdout or stderr at all.
        limits.stdio = stdio;
    }
    match raw.fuel {
        None => {}
        Some(Fuel::Off) => limits.fuel = None,
        Some(Fuel::Amount(0)) => {
            return Err(zero(
                "fuel",
                "fuel",
                "write a positive amount, or `\"off\"` (or no key) to turn fuel metering off",
            ));
        }
        Some(Fuel::Amount(fuel)) => limits.fuel = Some(fuel),
    }
    if let Some(Size(stack)) = raw.max_wasm_stack {
        if stack == 0 {
            return Err(zero(
                "max_wasm_stack",
                "the wasm stack limit",
                "set a size like `\"512 KiB\"`",
            ));
        }
        limits.max_wasm_stack = stack;
    }
    if let Some(Size(write)) = raw.write {
        // Zero is meaningful: a plugin that may not write at all.
        limits.write = write;
    }
    if let Some(Size(stored)) = raw.stored_output {
        // Zero is meaningful: keep no result whole.
        limits.stored_output = stored;
    }
    if let Some(calls) = raw.nested_calls {
        // Zero is meaningful: no calls from inside a run.
        limits.nested_calls = calls;
    }
    if let Some(depth) = raw.nested_depth {
        if depth == 0 {
            return Err(zero(
                "nested_depth",
                "the nesting depth",
                "set `1` to let this plugin's calls call tools that call none, or leave `nested_calls` at 0 to allow no calls at all",
            ));
        }
        limits.nested_depth = depth;
    }
    Ok(limits)
}
