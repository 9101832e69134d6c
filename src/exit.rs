//! The process's exit codes, decided here and nowhere else.
//!
//! Why here: an exit code is a promise of the command line to the scripts
//! that run it, not a property of an error. The libraries say what went
//! wrong with error kinds (`CallError::kind`, `SessionError`, ...); the
//! binary alone turns them into numbers, so a library's new error kind
//! cannot change what a script sees without a change in this file. The
//! table in `docs/operators/cli.md` says the same as [`Exit::meaning`]; a
//! test holds them together.

use std::process::ExitCode;

use glovebox::CallError;
use glovebox::operations::{ErrorClass, OperationError};

/// What a command's exit code says. The numbers are stable.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum Exit {
    /// A fault in the host, or a check that found problems.
    Failed = 1,
    /// Bad usage, a bad config or manifest, a plugin that cannot load.
    Usage = 2,
    /// A permission hook (or an operator's rule) denied it.
    Denied = 3,
    /// Invalid input, an unknown tool or record.
    Invalid = 4,
    /// The tool failed or crashed, or a delivery failed.
    ToolFailed = 5,
    /// A timeout or a limit.
    Limit = 6,
    /// Busy: admission refused it, or the disk is low.
    Busy = 7,
    /// The session refused it, or the store is damaged.
    Refused = 8,
    /// It awaits a human's approval.
    AwaitingApproval = 9,
    /// Cancelled.
    Cancelled = 10,
}

impl Exit {
    /// Every code, in order.
    #[cfg(test)]
    const ALL: [Exit; 10] = [
        Exit::Failed,
        Exit::Usage,
        Exit::Denied,
        Exit::Invalid,
        Exit::ToolFailed,
        Exit::Limit,
        Exit::Busy,
        Exit::Refused,
        Exit::AwaitingApproval,
        Exit::Cancelled,
    ];

    /// The code a failed call exits with.
    pub fn of_call(e: &CallError) -> Exit {
        match e {
            CallError::Denied { .. } => Exit::Denied,
            CallError::AwaitingApproval { .. } => Exit::AwaitingApproval,
            CallError::UnknownTool { .. }
            | CallError::AmbiguousTool { .. }
            | CallError::NotOffered { .. }
            | CallError::InvalidInput { .. } => Exit::Invalid,
            CallError::ToolFailed { .. } | CallError::Trap { .. } => Exit::ToolFailed,
            CallError::Timeout { .. }
            | CallError::MemoryLimit { .. }
            | CallError::FuelExhausted { .. }
            | CallError::StackOverflow { .. }
            | CallError::OutputTooLarge { .. }
            | CallError::HostLimit { .. }
            | CallError::Quota { .. } => Exit::Limit,
            CallError::Busy { .. } | CallError::LowDisk { .. } => Exit::Busy,
            CallError::Internal { .. } => Exit::Failed,
            CallError::Cancelled { .. } => Exit::Cancelled,
        }
    }

    /// The code a failed operation exits with: `Refused`, for every
    /// class. A session operation's refusal has always exited 8 (the session
    /// refused it, or the store is damaged), whatever its kind, and scripts
    /// rely on it; the match makes a new class a decision here.
    pub fn of_operation(e: &OperationError) -> Exit {
        match e.class {
            ErrorClass::Invalid
            | ErrorClass::NotFound
            | ErrorClass::NotAllowed
            | ErrorClass::Conflict
            | ErrorClass::Limited
            | ErrorClass::Unavailable
            | ErrorClass::Failed => Exit::Refused,
        }
    }
}

impl Exit {
    /// The code a failed rescue operation (`glovebox rescue ...`) exits
    /// with, as it did before the rescues were operations: refused by the
    /// operator's settings 3, a rescue that is not there or an argument
    /// that is not right 4, the session or the store 8.
    pub fn of_rescue(e: &OperationError) -> Exit {
        match e.kind.as_str() {
            "rescue_refused" => Exit::Denied,
            "rescue_not_found" | "rescue_invalid_input" | "invalid_arguments" => Exit::Invalid,
            _ => Exit::Refused,
        }
    }
}

impl From<Exit> for ExitCode {
    fn from(exit: Exit) -> ExitCode {
        ExitCode::from(exit as u8)
    }
}

#[cfg(test)]
mod tests {
    use super::Exit;

    /// Why: the codes were numbers spread over the commands and a library
    /// (`CallError::exit_code`), and the page that promises them could
    /// drift from what the binary did. Every code has its row in
    /// `docs/operators/cli.md`, and every row a code.
    #[test]
    fn the_cli_page_lists_every_exit_code_and_no_other() {
        let page = include_str!("../docs/operators/cli.md");
        let listed: Vec<u8> = page
            .lines()
            .filter_map(|line| line.strip_prefix("| "))
            .filter_map(|rest| rest.split(" |").next()?.trim().parse().ok())
            .collect();
        let mut codes: Vec<u8> = Exit::ALL.iter().map(|e| *e as u8).collect();
        codes.insert(0, 0);
        assert_eq!(
            listed, codes,
            "the exit code table of docs/operators/cli.md"
        );
    }
}
