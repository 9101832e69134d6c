//! `glovebox doctor`: the antipatterns of docs/operators/doctor.md in the config and the data dir
//! (`glovebox::doctor` finds them; this prints them).
//!
//! Exit codes: 0 no warning (notices alone are printed but pass), 1 at least
//! one warning, 2 the config or store cannot be opened.

use crate::exit::Exit;
use std::path::Path;
use std::process::ExitCode;

use anyhow::Result;
use glovebox::doctor::Severity;
use glovebox::operations::{Doctor, NoArguments};

pub async fn run(config: &Path, json: bool) -> Result<ExitCode> {
    let findings = match crate::operate::run::<Doctor>(config, NoArguments {}).await? {
        Ok(f) => f,
        Err(e) => return Ok(crate::operation_refused(&e)),
    };
    let warnings = findings
        .iter()
        .filter(|f| f.severity == Severity::Warning)
        .count();
    let notices = findings.len() - warnings;
    if json {
        out!("{}", serde_json::to_string_pretty(&findings)?);
    } else if findings.is_empty() {
        out!("no antipatterns found");
    } else {
        for f in &findings {
            out!(
                "{}: {} [{}]",
                f.severity.as_str(),
                f.culprit,
                f.rule.as_str()
            );
            out!("  {}", f.message);
            out!("  fix: {}", f.fix);
        }
        out!(
            "{warnings} warning{}, {notices} notice{}",
            if warnings == 1 { "" } else { "s" },
            if notices == 1 { "" } else { "s" }
        );
    }
    Ok(if warnings > 0 {
        Exit::Failed.into()
    } else {
        ExitCode::SUCCESS
    })
}
