//! One call in fresh hands: a new store, limits armed, the guest run under its
//! deadline, every way it can end turned into a typed outcome.

use std::time::Duration;

use serde::Serialize;
use wasmtime::{Store, Trap, UpdateDeadline};

use crate::bindings::tool::{ToolPlugin, ToolPluginPre};
use crate::error::CallError;
use crate::runtime::{Runtime, deadline_ticks};
use crate::sandbox::capture::Captured;
use crate::sandbox::quota::{QuotaHit, WriteBudget};
use crate::sandbox::{CallState, Grants};
use crate::scratch::CallScratch;

/// Who is calling: passed to the tool for information, and to the log.
#[derive(Clone, Debug, Serialize)]
pub struct CallContext {
    pub session_id: String,
    pub session_name: Option<String>,
    pub role: String,
    /// The session's project, when it has one: what `{project}` and `only`
    /// in a plugin's grants read.
    pub project: Option<String>,
    pub call_id: String,
    pub job_id: Option<String>,
}

impl CallContext {
    /// The session id of a call made outside any session.
    pub const STANDALONE: &'static str = "standalone";

    /// A call made outside any session (the CLI without `--session`, tests).
    pub fn standalone() -> CallContext {
        CallContext {
            session_id: Self::STANDALONE.to_string(),
            session_name: None,
            role: "operator".to_string(),
            project: None,
            call_id: new_call_id(),
            job_id: None,
        }
    }

    /// The id of the calling session; `None` for a call made outside any session.
    pub fn session(&self) -> Option<&str> {
        (self.session_id != Self::STANDALONE).then_some(self.session_id.as_str())
    }
}

/// A call id unique for this host: time-ordered and random enough.
pub fn new_call_id() -> String {
    use std::sync::atomic::{AtomicU64, Ordering};
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0);
    format!("call-{nanos:x}-{:x}", NEXT.fetch_add(1, Ordering::Relaxed))
}

/// What a call cost.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Metering {
    /// Wall time from the start of instantiation to the end of the call.
    #[serde(serialize_with = "as_millis")]
    pub wall: Duration,
    /// Fuel consumed, when fuel metering is on for this plugin.
    pub fuel: Option<u64>,
    /// Highest total linear memory the instance held.
    pub peak_memory_bytes: u64,
    /// Size of the input passed to the tool.
    pub bytes_in: u64,
    /// Size of the result returned by the tool (0 if it failed).
    pub bytes_out: u64,
}

fn as_millis<S: serde::Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_f64(d.as_secs_f64() * 1000.0)
}

/// The whole story of one call: its outcome, what it cost and what it printed.
#[derive(Clone, Debug)]
pub struct CallReport {
    /// `plugin.tool`, or the name asked for if it did not resolve.
    pub tool: String,
    pub outcome: Result<serde_json::Value, CallError>,
    pub metering: Metering,
    pub stdout: Captured,
    pub stderr: Captured,
    /// Outgoing HTTP requests the sandbox refused, with reasons.
    pub http_denials: Vec<String>,
    /// The `[[verify]]` checks run after the call, in a session (none for a
    /// call that failed, or that no check follows).
    pub verification: Vec<Verified>,
}

/// A `[[verify]]` check run after a call: its gate call's verdict.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Verified {
    /// The check's name.
    pub check: String,
    /// Its gate's tool.
    pub tool: String,
    pub passed: bool,
    /// The gate's result, or why it failed (bounded).
    pub detail: String,
}

impl CallReport {
    /// The report of a call refused before it ran: nothing ran, nothing was used.
    pub fn refused(tool: &str, err: CallError) -> CallReport {
        CallReport {
            tool: tool.to_string(),
            outcome: Err(err),
            metering: Metering::default(),
            stdout: Captured::default(),
            stderr: Captured::default(),
            http_denials: Vec::new(),
            verification: Vec::new(),
        }
    }

    /// The checks that failed, one line each: what an agent reads beside the
    /// call's result.
    pub fn failed_checks(&self) -> Vec<String> {
        self.verification
            .iter()
            .filter(|v| !v.passed)
            .map(|v| {
                format!(
                    "check `{}` ({}) failed after this call: {}",
                    v.check, v.tool, v.detail
                )
            })
            .collect()
    }

    pub fn into_result(self) -> Result<serde_json::Value, CallError> {
        self.outcome
    }
}

/// Epoch ticks between two yields of a computing guest.
const YIELD_TICKS: u64 = 2;

/// Host calls take up to this much data in one go whatever the output cap:
/// WASI streams and wasi:http write in chunks of up to 1 MiB.
const MIN_HOSTCALL_DATA: u64 = 2 * 1024 * 1024;

/// Limits for one run in a store.
#[derive(Clone, Debug)]
pub struct RunLimits {
    pub memory: u64,
    pub deadline: Duration,
    pub output: u64,
    pub stdio: u64,
    pub fuel: Option<u64>,
    /// Bytes the call may write to its directories (`limits.write`).
    pub write: u64,
    /// Bytes of a result kept whole past `output` (`limits.stored_output`;
    /// 0 when the call has nowhere to keep it).
    pub stored_output: u64,
    /// Tools the run may call from inside (`limits.nested_calls`).
    pub nested_calls: u32,
}

impl RunLimits {
    /// The limits of one call of a plugin with `limits`.
    pub fn of(limits: &crate::manifest::Limits) -> RunLimits {
        RunLimits {
            memory: limits.memory,
            deadline: limits.deadline,
            output: limits.output,
            stdio: limits.stdio,
            fuel: limits.fuel,
            write: limits.write,
            stored_output: limits.stored_output,
            nested_calls: limits.nested_calls,
        }
    }
}

/// A store ready to run one instance, and what it observed afterwards.
pub struct Hands {
    pub store: Store<CallState>,
    fuel_start: Option<u64>,
}

impl Hands {
    /// A store for one call with `grants`; `scratch` is the directory mounted
    /// at the grants' scratch path, if they have one. The call may write
    /// `limits.write` bytes, and no more than is left of the scratch quota.
    pub fn new(
        runtime: &Runtime,
        grants: &Grants,
        scratch: Option<&CallScratch>,
        limits: &RunLimits,
    ) -> anyhow::Result<Hands> {
        let mounted = scratch.filter(|_| grants.wants_scratch());
        let writes = WriteBudget::new(limits.write, mounted.map(CallScratch::room));
        let state = CallState::new(
            grants,
            mounted.map(CallScratch::path),
            limits.memory,
            limits.stdio,
            writes,
        )?;
        let mut store = Store::new(runtime.engine(), state);
        store.limiter(|s| &mut s.limiter);
        // At every epoch tick a computing guest yields to the async runtime,
        // so one CPU-bound call cannot starve the others (or the server's
        // I/O) on its worker thread; past its deadline it is interrupted.
        let started = std::time::Instant::now();
        let deadline = limits.deadline;
        store.epoch_deadline_callback(move |_| {
            if started.elapsed() >= deadline {
                Ok(UpdateDeadline::Interrupt)
            } else {
                Ok(UpdateDeadline::Yield(YIELD_TICKS))
            }
        });
        store.set_epoch_deadline(deadline_ticks(limits.deadline).min(YIELD_TICKS));
        // Caps what the guest can hand the host in one go (its result, or the
        // arguments of one host call), so an oversized result is refused
        // before the host allocates it: one the host may keep whole passes.
        let data_cap = limits
            .output
            .max(limits.stored_output)
            .max(MIN_HOSTCALL_DATA)
            + 64 * 1024;
        store.set_hostcall_fuel(usize::try_from(data_cap).unwrap_or(usize::MAX));
        let mut fuel_start = None;
        if runtime.fuel_enabled() {
            let fuel = limits.fuel.unwrap_or(u64::MAX);
            store.set_fuel(fuel)?;
            if limits.fuel.is_some() {
                fuel_start = Some(fuel);
            }
        }
        Ok(Hands { store, fuel_start })
    }

    /// Instantiates the plugin and runs `f` on it, all under the deadline: the
    /// epoch stops a guest that computes; the timer stops one blocked in a host
    /// call. Either way the store is left to be dropped, never reused.
    pub async fn run<R>(
        &mut self,
        pre: &ToolPluginPre<CallState>,
        deadline: Duration,
        f: impl AsyncFnOnce(&ToolPlugin, &mut Store<CallState>) -> wasmtime::Result<R>,
    ) -> Result<R, Ended> {
        self.run_with(deadline, async |store| {
            let plugin = pre.instantiate_async(&mut *store).await?;
            f(&plugin, store).await
        })
        .await
    }

    /// Runs `f` on the store under the deadline, like [`Hands::run`], for
    /// callers that instantiate something else than a tool plugin.
    pub async fn run_with<R>(
        &mut self,
        deadline: Duration,
        f: impl AsyncFnOnce(&mut Store<CallState>) -> wasmtime::Result<R>,
    ) -> Result<R, Ended> {
        let store = &mut self.store;
        match tokio::time::timeout(deadline, f(store)).await {
            Ok(Ok(r)) => Ok(r),
            Ok(Err(e)) => Err(self.classify(e)),
            Err(_) => Err(Ended::Timeout),
        }
    }

    fn classify(&self, err: wasmtime::Error) -> Ended {
        classify(&err, self.store.data().limiter.exceeded())
    }

    pub fn fuel_used(&self) -> Option<u64> {
        let start = self.fuel_start?;
        let left = self.store.get_fuel().ok()?;
        Some(start.saturating_sub(left))
    }

    pub fn peak_memory(&self) -> u64 {
        self.store.data().limiter.peak_bytes()
    }

    pub fn stdout(&self) -> Captured {
        self.store.data().stdout.captured()
    }

    pub fn stderr(&self) -> Captured {
        self.store.data().stderr.captured()
    }

    pub fn http_denials(&self) -> Vec<String> {
        self.store.data().http.denials()
    }

    /// Lets the guest of plugin `plugin` call other tools through `calls`,
    /// at most `cap` of them in this run (`sandbox::tools`); with no
    /// `calls` its calls are refused, naming the plugin.
    pub fn allow_tool_calls(
        &mut self,
        plugin: &str,
        calls: Option<std::sync::Arc<dyn crate::sandbox::tools::ToolCalls>>,
        cap: u32,
    ) {
        self.store.data_mut().tools = crate::sandbox::tools::Nested::new(plugin, calls, cap);
    }

    /// `Some` if the guest tried to write past its write budget.
    pub fn quota_hit(&self) -> Option<QuotaHit> {
        self.store.data().writes.hit()
    }
}

/// How a guest run that returned an error ended: a limit, or a trap. Shared
/// by tool calls and permission hooks.
pub(crate) fn classify(err: &wasmtime::Error, memory_exceeded: bool) -> Ended {
    if memory_exceeded {
        return Ended::Memory;
    }
    if let Some(bound) = crate::sandbox::bounds::exceeded(err) {
        return Ended::Bound(bound);
    }
    match err.downcast_ref::<Trap>() {
        Some(Trap::Interrupt) => Ended::Timeout,
        Some(Trap::StackOverflow) => Ended::StackOverflow,
        Some(Trap::OutOfFuel) => Ended::Fuel,
        // Its text starts with "wasm trap: ".
        Some(trap) => Ended::Trap(trap.to_string()),
        // wasmtime refuses to lift more than the store's hostcall fuel
        // (set from the output cap) out of the guest; it says so only in
        // its message. Pinned to wasmtime 48 and covered by a test.
        None if format!("{err:#}").contains("fuel allocated for hostcalls") => Ended::DataLimit,
        None => Ended::Trap(first_line(&err.root_cause().to_string()).to_string()),
    }
}

/// The message of a caught panic.
pub fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    if let Some(s) = payload.downcast_ref::<&str>() {
        (*s).to_string()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else {
        "a panic without a message".to_string()
    }
}

impl Ended {
    /// Says, for an operator, how a run at load time ended: `what` is the run
    /// ("instantiating it and listing its tools").
    pub fn at_load(&self, what: &str, limits: &RunLimits) -> String {
        match self {
            Ended::Timeout => format!(
                "{what} did not finish within its deadline of {:?} (an infinite loop at start-up?)",
                limits.deadline
            ),
            Ended::Memory => format!(
                "{what} needs more than its memory limit of {} bytes: raise `limits.memory` in its manifest",
                limits.memory
            ),
            Ended::StackOverflow => format!("{what} overflowed the stack"),
            Ended::Fuel => format!("{what} ran out of fuel: raise `limits.fuel`"),
            Ended::DataLimit => format!(
                "{what} passed the host more data than its output limit: raise `limits.output`"
            ),
            Ended::Bound(bound) => format!(
                "{what} asked the host to hold more than {} {}",
                bound.limit(),
                bound.what()
            ),
            Ended::Trap(m) => format!("{what} trapped: {m}"),
        }
    }
}

/// How a run in a store ended, when it did not return.
#[derive(Debug)]
pub enum Ended {
    Timeout,
    Memory,
    StackOverflow,
    Fuel,
    /// The guest passed the host more data in one go than the output cap allows.
    DataLimit,
    /// The guest asked the host to hold more than a bound of `sandbox::bounds`.
    Bound(crate::sandbox::bounds::Bound),
    Trap(String),
}

impl Ended {
    pub fn into_call_error(self, tool: &str, limits: &RunLimits, stderr: &Captured) -> CallError {
        let tool = tool.to_string();
        match self {
            Ended::Timeout => CallError::Timeout {
                tool,
                deadline: limits.deadline,
            },
            Ended::Memory => CallError::MemoryLimit {
                tool,
                limit: limits.memory,
            },
            Ended::StackOverflow => CallError::StackOverflow { tool },
            Ended::Fuel => CallError::FuelExhausted {
                tool,
                fuel: limits.fuel.unwrap_or(0),
            },
            Ended::DataLimit => CallError::OutputTooLarge {
                tool,
                limit: limits.output.max(limits.stored_output),
            },
            Ended::Bound(bound) => CallError::HostLimit {
                tool,
                limit: bound.limit(),
                what: bound.what(),
            },
            Ended::Trap(message) => {
                // A Rust guest prints its panic message to stderr before it
                // traps: it says more than the trap itself.
                let last = stderr
                    .text
                    .lines()
                    .rev()
                    .find(|l| !l.trim().is_empty() && !l.starts_with("note:"));
                let message = match last {
                    Some(line) => format!("{}; stderr: {line}", first_line(&message)),
                    None => first_line(&message).to_string(),
                };
                CallError::Trap { tool, message }
            }
        }
    }
}

fn first_line(s: &str) -> &str {
    s.lines().next().unwrap_or(s)
}

/// Checks and parses a call's input: size, JSON syntax, nesting depth
/// (`glovebox_input::parse`), refused as `tool`'s invalid input.
pub fn parse_input(
    tool: &str,
    input: &str,
    max_bytes: u64,
) -> Result<serde_json::Value, CallError> {
    glovebox_input::parse(input, max_bytes).map_err(|reason| CallError::InvalidInput {
        tool: tool.to_string(),
        reason: reason.to_string(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What picks a throwaway scratch directory (`ScratchDirs::for_call`).
    #[test]
    fn only_a_call_in_a_session_has_a_session() {
        let mut ctx = CallContext::standalone();
        assert_eq!(ctx.session(), None);
        ctx.session_id = "s-1".into();
        assert_eq!(ctx.session(), Some("s-1"));
    }
}
