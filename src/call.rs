//! `glovebox call`: one call, standalone or in a session, and how a call's
//! report is printed and turned into an exit code (also for `approve` and jobs).

use crate::exit::Exit;
use std::io::{IsTerminal, Read};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, Result, bail};
use glovebox::{CallContext, Host};

/// Runs `tool` with the input given inline, in a file or on stdin; in
/// `session` when one is named (the call is logged there).
pub async fn run(
    config: &Path,
    tool: &str,
    input: Option<String>,
    input_file: Option<PathBuf>,
    json: bool,
    session: Option<String>,
) -> Result<ExitCode> {
    let input = read_input(input, input_file)?;
    match session {
        None => {
            let host = Host::from_config_file(config).await?;
            let report = host.call(tool, &input, CallContext::standalone()).await;
            print_report(&report, json)
        }
        Some(session) => {
            let gateway = crate::reach::gateway(config).await?;
            match gateway
                .scope(&crate::reach::operator())
                .call_in_session(&session, tool, &input)
                .await
            {
                Ok(report) => print_report(&report, json),
                Err(e) => Ok(session_refused(&e)),
            }
        }
    }
}

pub fn read_input(input: Option<String>, file: Option<PathBuf>) -> Result<String> {
    match (input, file) {
        (Some(text), None) if text != "-" => Ok(text),
        (None, Some(path)) => std::fs::read_to_string(&path)
            .with_context(|| format!("cannot read the input file `{}`", path.display())),
        _ => {
            let stdin = std::io::stdin();
            if stdin.is_terminal() {
                bail!(
                    "no input: pass `--input '<json>'`, `--input-file PATH`, or pipe JSON into stdin"
                );
            }
            let mut text = String::new();
            stdin
                .lock()
                .read_to_string(&mut text)
                .context("cannot read the input from stdin")?;
            Ok(text)
        }
    }
}

/// [`Exit::Refused`]: the session refused the call, or its log failed.
pub fn session_refused(e: &glovebox::SessionError) -> ExitCode {
    err!("error: {e}");
    Exit::Refused.into()
}

/// An operation that failed (`glovebox::operations`): its message, and the
/// exit code its class means ([`Exit::of_operation`]).
pub fn operation_refused(e: &glovebox::operations::OperationError) -> ExitCode {
    err!("error: {e}");
    Exit::of_operation(e).into()
}

/// Prints a call's result (stdout) and metering (stderr), and picks the exit code.
pub fn print_report(report: &glovebox::CallReport, json: bool) -> Result<ExitCode> {
    let m = &report.metering;
    let metering = format!(
        "wall {:.2} ms, peak memory {} KiB, {} bytes in, {} bytes out{}",
        m.wall.as_secs_f64() * 1000.0,
        m.peak_memory_bytes / 1024,
        m.bytes_in,
        m.bytes_out,
        m.fuel.map(|f| format!(", fuel {f}")).unwrap_or_default()
    );
    if json {
        let doc = serde_json::json!({
            "tool": report.tool,
            "ok": report.outcome.is_ok(),
            "output": report.outcome.as_ref().ok(),
            "error": report.outcome.as_ref().err().map(|e| serde_json::json!({"kind": e.kind(), "message": e.to_string()})),
            "metering": report.metering,
            "stdout": report.stdout,
            "stderr": report.stderr,
            "http_denials": report.http_denials,
            "verification": report.verification,
        });
        out!("{}", serde_json::to_string_pretty(&doc)?);
    }
    match &report.outcome {
        Ok(output) => {
            if !json {
                out!("{}", serde_json::to_string_pretty(output)?);
                for failed in report.failed_checks() {
                    err!("{failed}");
                }
                err!("{}: {metering}", report.tool);
            }
            Ok(ExitCode::SUCCESS)
        }
        Err(e) => {
            if !json {
                err!("error: {}", e.headline());
                if let glovebox::CallError::Denied { alternatives, .. } = e {
                    for alt in alternatives {
                        err!("  instead: {alt}");
                    }
                }
                for denial in &report.http_denials {
                    err!("  network: {denial}");
                }
                if !m.wall.is_zero() {
                    err!("{}: {metering}", report.tool);
                }
            }
            Ok(Exit::of_call(e).into())
        }
    }
}
