//! `glovebox doctor`: the antipatterns of docs/operators/doctor.md in the config and the data dir
//! (`glovebox::doctor` finds them; this prints them).
//!
//! The text ends with the compliance score (`glovebox::doctor::score`: 100
//! less 10 per warning and 2 per notice, never below 0); `--json` prints the
//! findings' array as it always has, and `--json --score` an object with
//! the score, its weights and the findings.
//!
//! Exit codes: 0 no warning (notices alone are printed but pass), 1 at least
//! one warning, 2 the config or store cannot be opened.

use crate::exit::Exit;
use std::path::Path;
use std::process::ExitCode;

use anyhow::Result;
use glovebox::doctor::{NOTICE_WEIGHT, Severity, WARNING_WEIGHT, score};
use glovebox::operations::{Doctor, NoArguments};
use serde_json::json;

pub async fn run(config: &Path, json: bool, with_score: bool) -> Result<ExitCode> {
    let findings = match crate::operate::run::<Doctor>(config, NoArguments {}).await? {
        Ok(f) => f,
        Err(e) => return Ok(crate::operation_refused(&e)),
    };
    let warnings = findings
        .iter()
        .filter(|f| f.severity == Severity::Warning)
        .count();
    let notices = findings.len() - warnings;
    let scored = score(&findings);
    if json && with_score {
        let object = json!({
            "score": scored.score,
            "warnings": scored.warnings,
            "notices": scored.notices,
            "weights": {"warning": WARNING_WEIGHT, "notice": NOTICE_WEIGHT},
            "findings": findings,
        });
        out!("{}", serde_json::to_string_pretty(&object)?);
    } else if json {
        out!("{}", serde_json::to_string_pretty(&findings)?);
    } else if findings.is_empty() {
        out!("no antipatterns found");
        out!("compliance score: {scored}");
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
        out!("compliance score: {scored}");
    }
    Ok(if warnings > 0 {
        Exit::Failed.into()
    } else {
        ExitCode::SUCCESS
    })
}
