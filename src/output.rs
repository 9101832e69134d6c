//! Where a command's output goes: this process's stdout and stderr, or the
//! request's buffers when the command runs inside the server (`served.rs`).
//! The `out!` and `err!` macros (`main.rs`) write through here.

use std::io::Write as _;
use std::sync::Mutex;

use anyhow::Result;

use crate::served::SERVED;

/// Writes to the command's stdout: the request's buffer inside the server.
pub fn write_out(args: std::fmt::Arguments<'_>) -> std::io::Result<()> {
    match SERVED.try_with(|s| append(&s.stdout, args)) {
        Ok(r) => r,
        Err(_) => writeln!(std::io::stdout().lock(), "{args}"),
    }
}

/// Writes `text` to the command's stdout as it is, with no newline added.
pub fn write_raw(text: &str) -> std::io::Result<()> {
    match SERVED.try_with(|s| {
        s.stdout
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .extend_from_slice(text.as_bytes());
    }) {
        Ok(()) => Ok(()),
        Err(_) => {
            let mut stdout = std::io::stdout().lock();
            stdout.write_all(text.as_bytes())?;
            stdout.flush()
        }
    }
}

/// Writes to the command's stderr: the request's buffer inside the server.
pub fn write_err(args: std::fmt::Arguments<'_>) {
    match SERVED.try_with(|s| append(&s.stderr, args)) {
        Ok(_) => {}
        Err(_) => {
            let _ = writeln!(std::io::stderr().lock(), "{args}");
        }
    }
}

fn append(buffer: &Mutex<Vec<u8>>, args: std::fmt::Arguments<'_>) -> std::io::Result<()> {
    let mut buffer = buffer
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    writeln!(buffer, "{args}")
}

/// A value as pretty JSON on the command's stdout.
pub(crate) fn print_json<T: serde::Serialize>(value: &T) -> Result<()> {
    out!("{}", serde_json::to_string_pretty(value)?);
    Ok(())
}
