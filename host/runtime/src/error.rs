//! Errors callers match on: a call that failed, a plugin that could not be loaded,
//! a component that did not compile.

use std::path::PathBuf;
use std::time::Duration;

use crate::manifest::format_size;
use crate::sandbox::quota::{QuotaHit, QuotaKey};

/// Why a tool call did not produce a result.
///
/// Every variant is an expected outcome of running untrusted code: none of them
/// takes the host down, and the instance that produced it is dropped.
#[derive(Clone, Debug, thiserror::Error)]
pub enum CallError {
    /// No configured plugin offers a tool by that name.
    #[error("unknown tool `{name}`: configured tools are {}", list_or_none(.known))]
    UnknownTool { name: String, known: Vec<String> },
    /// The name matches tools in several plugins.
    #[error("tool name `{name}` is ambiguous: say which one of {}", .candidates.join(", "))]
    AmbiguousTool {
        name: String,
        candidates: Vec<String>,
    },
    /// The tool is not offered to the caller in this session: its
    /// principal's or role's toolsets do not list it, or the session is
    /// read-only and the tool is not annotated read-only. It is not
    /// listed to that caller either; refused before anything is logged
    /// or judged, as an unknown tool is.
    #[error("tool `{tool}` is not offered here: {reason}")]
    NotOffered { tool: String, reason: String },
    /// A permission hook refused the call; it did not run.
    // Worded here only: `headline` is this without the alternatives.
    #[error("call to `{tool}` denied by hook `{hook}` (pattern `{pattern}`): {reason}{}", alternatives_text(.alternatives))]
    Denied {
        tool: String,
        hook: String,
        pattern: String,
        reason: String,
        alternatives: Vec<String>,
    },
    /// A hook asked a human to approve the call: it waits, its session is paused.
    #[error(
        "call to `{tool}` awaits approval `{approval_id}` ({hook}: {reason}): `glovebox approve {approval_id}` runs it, `glovebox deny {approval_id} --reason ...` refuses it"
    )]
    AwaitingApproval {
        tool: String,
        approval_id: String,
        hook: String,
        reason: String,
    },
    /// The caller's input was refused before the tool ran, or the tool said it
    /// does not fit its schema.
    #[error("invalid input for `{tool}`: {reason}")]
    InvalidInput { tool: String, reason: String },
    /// The tool ran and reported a failure of its own.
    #[error("tool `{tool}` failed: {reason}")]
    ToolFailed { tool: String, reason: String },
    /// The call ran past its deadline and was stopped.
    #[error("tool `{tool}` timed out: stopped at its deadline of {deadline:?}")]
    Timeout { tool: String, deadline: Duration },
    /// The guest tried to use more linear memory than its manifest allows.
    #[error(
        "tool `{tool}` exceeded its memory limit of {limit} bytes: raise `limits.memory` in its manifest if this is expected"
    )]
    MemoryLimit { tool: String, limit: u64 },
    /// The guest ran out of fuel.
    #[error(
        "tool `{tool}` ran out of fuel ({fuel} units): raise `limits.fuel` in its manifest if this is expected"
    )]
    FuelExhausted { tool: String, fuel: u64 },
    /// The guest wrote past its write budget (`limits.write`, or what was left
    /// of its session's `runtime.scratch_quota`): the write failed as "no space"
    /// and the call with this. What it wrote up to the budget stays.
    #[error("tool `{tool}` passed its write quota: {reason}")]
    Quota { tool: String, reason: String },
    /// The data dir's disk has less free space than `storage.min_free`: new
    /// work is refused before the store meets a full disk. Nothing was written.
    #[error("{reason}")]
    LowDisk { reason: String },
    /// The guest overflowed its stack (unbounded recursion).
    #[error("tool `{tool}` overflowed its stack (unbounded recursion?)")]
    StackOverflow { tool: String },
    /// The result was larger than the manifest's output cap; it was discarded.
    #[error(
        "tool `{tool}` returned more than its output limit of {limit} bytes: the result was discarded; raise `limits.output` in its manifest if this is expected (in a session, a result up to `limits.stored_output` is kept whole and its head answered)"
    )]
    OutputTooLarge { tool: String, limit: u64 },
    /// The guest asked the host to hold more than a fixed per-call bound allows
    /// (resource-table entries, open files, random bytes): it was stopped.
    #[error(
        "tool `{tool}` asked the host to hold more than {limit} {what}: it was stopped (a fixed bound per call, see threat 40 in docs/security.md)"
    )]
    HostLimit {
        tool: String,
        limit: u64,
        what: &'static str,
    },
    /// The guest trapped (a panic, `unreachable`, an out-of-bounds access...).
    #[error("tool `{tool}` crashed: {message}")]
    Trap { tool: String, message: String },
    /// Admission control refused the call: too many calls, or too much memory
    /// reserved by calls already running.
    #[error("busy: {reason}; retry later")]
    Busy { reason: String },
    /// A fault in the host while serving this call (a panic in host glue). The
    /// call failed; the host keeps serving.
    #[error("internal error while calling `{tool}`: {message}")]
    Internal { tool: String, message: String },
    /// The caller cancelled the call (a background job was cancelled); if it
    /// was running, its instance was dropped.
    #[error("call to `{tool}` was cancelled: {reason}")]
    Cancelled { tool: String, reason: String },
}

impl CallError {
    /// The quota error of a call of `tool` that wrote past `hit`'s budget.
    pub fn quota(tool: &str, hit: &QuotaHit) -> CallError {
        let reason = match (hit.key, hit.scratch) {
            (QuotaKey::Scratch, Some((quota, used))) => format!(
                "{} of its session's scratch quota of {} (`runtime.scratch_quota`) was taken when it started (files, and what the session's other running calls reserved), which left this call {}: delete files from the scratch directory, or raise `runtime.scratch_quota` in the host config",
                format_size(used),
                format_size(quota),
                format_size(hit.budget)
            ),
            _ => format!(
                "a call may write {} to its directories (`limits.write`): raise `limits.write` in its manifest if this is expected",
                format_size(hit.budget)
            ),
        };
        CallError::Quota {
            tool: tool.to_string(),
            reason,
        }
    }

    /// The message without a denial's alternatives, for a front end that lists
    /// them itself (one per line); the same as `to_string()` otherwise.
    pub fn headline(&self) -> String {
        match self {
            CallError::Denied {
                tool,
                hook,
                pattern,
                reason,
                ..
            } => {
                format!("call to `{tool}` denied by hook `{hook}` (pattern `{pattern}`): {reason}")
            }
            other => other.to_string(),
        }
    }

    /// A stable, machine-readable name for the kind of failure.
    pub fn kind(&self) -> &'static str {
        match self {
            CallError::Denied { .. } => "denied",
            CallError::AwaitingApproval { .. } => "awaiting_approval",
            CallError::UnknownTool { .. } => "unknown_tool",
            CallError::AmbiguousTool { .. } => "ambiguous_tool",
            CallError::NotOffered { .. } => "not_offered",
            CallError::InvalidInput { .. } => "invalid_input",
            CallError::ToolFailed { .. } => "tool_failed",
            CallError::Timeout { .. } => "timeout",
            CallError::MemoryLimit { .. } => "memory_limit",
            CallError::FuelExhausted { .. } => "fuel_exhausted",
            CallError::Quota { .. } => "quota",
            CallError::LowDisk { .. } => "low_disk",
            CallError::StackOverflow { .. } => "stack_overflow",
            CallError::OutputTooLarge { .. } => "output_too_large",
            CallError::HostLimit { .. } => "host_limit",
            CallError::Trap { .. } => "trap",
            CallError::Busy { .. } => "busy",
            CallError::Internal { .. } => "internal",
            CallError::Cancelled { .. } => "cancelled",
        }
    }
}

fn alternatives_text(alternatives: &[String]) -> String {
    if alternatives.is_empty() {
        String::new()
    } else {
        format!("; alternatives: {}", alternatives.join("; "))
    }
}

fn list_or_none(names: &[String]) -> String {
    if names.is_empty() {
        "none: add a `[[plugin]]` to the host config".to_string()
    } else {
        names.join(", ")
    }
}

/// Why a component did not compile ([`crate::Runtime::compile`]). The caller
/// names the component and the plugin (see [`LoadError::Invalid`]).
#[derive(Debug, thiserror::Error)]
pub enum CompileError {
    /// The compile task panicked or was cancelled.
    #[error("the compiler crashed: {0}")]
    Crashed(tokio::task::JoinError),
    /// Wasmtime refused the bytes: what it said, with its causes.
    #[error("{0:#}")]
    Rejected(wasmtime::Error),
}

/// Why a plugin could not be loaded. Each message names the plugin and says what to do.
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    #[error("plugin `{plugin}`: cannot read `{}`: {source}", .path.display())]
    Read {
        plugin: String,
        path: PathBuf,
        source: std::io::Error,
    },
    #[error(
        "plugin `{plugin}`: `{}` is {size} bytes, more than the limit of {limit} bytes: raise `runtime.max_component_bytes` if this component is expected to be that large",
        .path.display()
    )]
    TooLarge {
        plugin: String,
        path: PathBuf,
        size: u64,
        limit: u64,
    },
    #[error(
        "plugin `{plugin}`: digest mismatch for `{}`: the manifest pins sha256 {expected} but the file has {actual}; rebuild the pinned version or update `sha256` after reviewing the new build",
        .path.display()
    )]
    DigestMismatch {
        plugin: String,
        path: PathBuf,
        expected: String,
        actual: String,
    },
    #[error("plugin `{plugin}`: `{}` is not a WebAssembly file (no `\\0asm` header)", .path.display())]
    NotWasm { plugin: String, path: PathBuf },
    #[error(
        "plugin `{plugin}`: `{}` is a core WebAssembly module, not a component: build it for `wasm32-wasip2` (or wrap it with `wasm-tools component new`)",
        .path.display()
    )]
    CoreModule { plugin: String, path: PathBuf },
    #[error("plugin `{plugin}`: `{}` is not a valid component: {message}", .path.display())]
    Invalid {
        plugin: String,
        path: PathBuf,
        message: String,
    },
    #[error(
        "plugin `{plugin}`: the component does not export `{expected}`, so it is not a `{world}` plugin (it exports: {}); build it against `wit/plugin.wit`",
        list_or_nothing(.found)
    )]
    WrongWorld {
        plugin: String,
        world: &'static str,
        expected: String,
        found: Vec<String>,
    },
    #[error(
        "plugin `{plugin}`: its `{interface}` export lacks the function `{function}` (or it has the wrong type): rebuild it against `wit/plugin.wit`"
    )]
    MissingExport {
        plugin: String,
        interface: String,
        function: String,
    },
    #[error(
        "plugin `{plugin}`: it imports `{import}`, which Glovebox does not provide to {world} plugins"
    )]
    ForbiddenImport {
        plugin: String,
        world: &'static str,
        import: String,
    },
    #[error("plugin `{plugin}`: {message}")]
    Instantiate { plugin: String, message: String },
    #[error(
        "plugin `{plugin}`: it asks to be pre-initialized (it exports `wizer-initialize`), but that failed: {message}"
    )]
    PreInit { plugin: String, message: String },
    #[error("plugin `{plugin}`: tool `{tool}`: {message}")]
    BadToolSpec {
        plugin: String,
        tool: String,
        message: String,
    },
    #[error(
        "plugin `{plugin}`: the manifest overrides tool `{tool}`, which the component does not offer (it offers: {}); fix the `[tools.{tool}]` key",
        list_or_nothing(.offered)
    )]
    UnknownOverride {
        plugin: String,
        tool: String,
        offered: Vec<String>,
    },
    /// `[trust]` covers the plugin and its signature does not hold: it is
    /// unsigned, signed by a key not trusted for it, or its component or
    /// manifest is not the one signed (the problem says which, the key
    /// expected and how to sign).
    #[error("plugin `{plugin}`: {problem}")]
    Untrusted {
        plugin: String,
        problem: Box<crate::trust::TrustProblem>,
    },
}

fn list_or_nothing(names: &[String]) -> String {
    if names.is_empty() {
        "nothing".to_string()
    } else {
        names.join(", ")
    }
}
