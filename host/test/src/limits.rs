//! [`CallLimits`]: the `[limits]` of the manifest a harness writes, the keys
//! an operator may set per plugin.

use std::time::Duration;

/// What one call may use: each limit set here is written into the
/// manifest's `[limits]` table (and checked there as an operator's would
/// be); one left unset keeps the host's default (`docs/configuration.md`).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct CallLimits {
    /// `deadline`: wall-clock time per call.
    pub deadline: Option<Duration>,
    /// `memory`: bytes of linear memory per instance.
    pub memory: Option<u64>,
    /// `fuel`: instructions (roughly) per call.
    pub fuel: Option<u64>,
    /// `output`: bytes of the largest JSON result.
    pub output: Option<u64>,
    /// `write`: bytes a call may write into its read-write grants.
    pub write: Option<u64>,
    /// `stdio`: bytes of stdout and of stderr kept per call.
    pub stdio: Option<u64>,
}

impl CallLimits {
    /// No limit set: the host's defaults.
    pub fn new() -> CallLimits {
        CallLimits::default()
    }

    /// Wall-clock time per call; past it the call is a `timeout`.
    pub fn deadline(mut self, deadline: Duration) -> CallLimits {
        self.deadline = Some(deadline);
        self
    }

    /// Bytes of linear memory per instance; past it a `memory_limit`.
    pub fn memory(mut self, bytes: u64) -> CallLimits {
        self.memory = Some(bytes);
        self
    }

    /// Fuel per call; when it runs out the call is `fuel_exhausted`.
    pub fn fuel(mut self, fuel: u64) -> CallLimits {
        self.fuel = Some(fuel);
        self
    }

    /// Bytes of the largest result; a larger one is `output_too_large`.
    pub fn output(mut self, bytes: u64) -> CallLimits {
        self.output = Some(bytes);
        self
    }

    /// Bytes a call may write into its read-write grants; past it a `quota`.
    pub fn write(mut self, bytes: u64) -> CallLimits {
        self.write = Some(bytes);
        self
    }

    /// Bytes of stdout and of stderr kept per call.
    pub fn stdio(mut self, bytes: u64) -> CallLimits {
        self.stdio = Some(bytes);
        self
    }

    /// The `[limits]` table: integers, bytes and milliseconds, as the
    /// manifest takes them.
    pub(crate) fn table(&self) -> toml::Table {
        let mut table = toml::Table::new();
        let mut put = |key: &str, value: Option<u64>| {
            if let Some(value) = value {
                // TOML integers are i64: a larger value is written as the
                // largest, which the manifest then judges.
                let value = i64::try_from(value).unwrap_or(i64::MAX);
                table.insert(key.into(), toml::Value::Integer(value));
            }
        };
        put(
            "deadline",
            self.deadline
                .map(|d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX)),
        );
        put("memory", self.memory);
        put("fuel", self.fuel);
        put("output", self.output);
        put("write", self.write);
        put("stdio", self.stdio);
        table
    }
}
