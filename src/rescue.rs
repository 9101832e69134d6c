//! `glovebox rescue ...` and `glovebox session check`. A rescue command runs
//! the registry's operation (`rescues.open`, `rescues.inject`, ...: on the
//! running server when one holds the data dir) and prints what it gave
//! back; this file only reads the operator's files for `inject` and lays
//! the answers out for a terminal. `glovebox context ...` is `context.rs`.

use crate::exit::Exit;
use std::path::Path;
use std::process::ExitCode;

use anyhow::Result;
use clap::Subcommand;
use glovebox::operations::{
    AssignRescue, AssignRescueArgs, DiagnoseRescue, DiagnoseRescueArgs, InjectRescue,
    InjectRescueArgs, InjectedFile, ListRescues, ListRescuesArgs, OpenRescue, OpenRescueArgs,
    OperationError, RescueFigures, RescueFiguresArgs, ResolveRescue, ResolveRescueArgs, ShowRescue,
    ShowRescueArgs,
};
use glovebox::page::MAX_PAGE;
use glovebox::rescue::{Category, Outcome, Rescue, RescueReport};

use crate::operate::run;
use crate::output::print_json;

mod context;

pub use context::{ContextCommand, run_context};

#[derive(Subcommand, serde::Serialize, serde::Deserialize)]
pub enum RescueCommand {
    /// Open a rescue of a stuck session: it moves to the `rescue` step and pauses.
    Open {
        session: String,
        /// The call it concerns (default: the one its blocker flags name).
        #[arg(long = "call")]
        call: Option<String>,
        /// Who works on it (the designated engineer); `rescue assign` changes it.
        #[arg(long)]
        assignee: Option<String>,
    },
    /// Name who works on a rescue (the designated engineer).
    Assign {
        id: String,
        /// Their name, as your team knows them.
        #[arg(long)]
        to: String,
    },
    /// Record the diagnosis: the root cause's category, the evidence, the root cause.
    Diagnose {
        id: String,
        /// missing_context, ambiguous_spec, constraint_violation, tool_defect, budget or other.
        #[arg(long)]
        category: Category,
        /// A piece of evidence (repeatable).
        #[arg(long = "evidence")]
        evidence: Vec<String>,
        #[arg(long)]
        root_cause: String,
    },
    /// Hand the session a description, files with their content and spec
    /// changes; its next resume returns them.
    Inject {
        id: String,
        /// What you found and want the agent to know.
        #[arg(long)]
        description: Option<String>,
        /// A file for the agent to read (repeatable): read here, its content
        /// (UTF-8, at most 32 KiB) handed over with its SHA-256; a path that
        /// does not exist here is handed over as a path alone.
        #[arg(long = "file")]
        files: Vec<String>,
        /// A change to the task's specification (repeatable).
        #[arg(long = "spec-change")]
        spec_changes: Vec<String>,
        /// The files as read on the command line's side, when the command
        /// runs in a server (`control::client`): never a flag.
        #[arg(skip)]
        read: Option<Vec<InjectedFile>>,
    },
    /// Close the rescue; `--enrich` proposes entries to the project's memory
    /// (`glovebox memory review` approves them).
    Resolve {
        id: String,
        /// resolved, re_escalated or abandoned.
        #[arg(long)]
        outcome: Outcome,
        /// A lesson for every new session of the project, once approved (repeatable).
        #[arg(long = "enrich")]
        enrich: Vec<String>,
    },
    /// List rescues, the latest opened first, a page at a time.
    List {
        #[arg(long)]
        json: bool,
        #[command(flatten)]
        page: crate::paging::PageArgs,
    },
    /// Show one rescue record.
    Show { id: String },
    /// Rescues of the last days: count, mean times to diagnose and to unblock,
    /// context updates, those closed without a lesson, root causes.
    Report {
        #[arg(long, default_value_t = 30)]
        days: u64,
        #[arg(long)]
        json: bool,
    },
}

/// Reads the files of `rescue inject --file` on this side (the operator's):
/// a file that exists is handed over with its content; a path that does not
/// exist here (one in the agent's workspace, say) as a path alone, said on
/// stderr. A file too big or not UTF-8 text is refused, naming it.
pub fn read_files(paths: &[String]) -> Result<Vec<InjectedFile>> {
    use std::io::Read as _;
    let limit = glovebox::rescue::MAX_FILE_BYTES;
    paths
        .iter()
        .map(|path| {
            let file = match std::fs::File::open(path) {
                Ok(file) => file,
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                    err!(
                        "note: `{path}` does not exist here: the agent gets its path, not its content"
                    );
                    return Ok(InjectedFile {
                        path: path.clone(),
                        content: None,
                    });
                }
                Err(e) => anyhow::bail!("cannot read `{path}`: {e}"),
            };
            let mut bytes = Vec::new();
            file.take(limit as u64 + 1)
                .read_to_end(&mut bytes)
                .map_err(|e| anyhow::anyhow!("cannot read `{path}`: {e}"))?;
            if bytes.len() > limit {
                anyhow::bail!(
                    "`{path}` is over {limit} bytes: an injected file carries at most that; hand over the part that matters (a smaller file, or `--spec-change`)"
                );
            }
            let content = String::from_utf8(bytes).map_err(|_| {
                anyhow::anyhow!(
                    "`{path}` is not UTF-8 text: an injection hands over text; describe a binary file with `--description`"
                )
            })?;
            Ok(InjectedFile {
                path: path.clone(),
                content: Some(content),
            })
        })
        .collect()
}

fn minutes(ms: u64) -> String {
    format!("{:.1} min", ms as f64 / 60_000.0)
}

/// What a rescue operation gave back, printed as `glovebox rescue` always
/// printed it: the rescue as JSON, or the error and its exit code.
fn one(result: Result<Rescue, OperationError>) -> Result<ExitCode> {
    match result {
        Ok(rescue) => {
            print_json(&rescue)?;
            Ok(ExitCode::SUCCESS)
        }
        Err(e) => Ok(rescue_refused(&e)),
    }
}

/// A rescue operation's refusal, with the exit code `glovebox rescue` gives it.
fn rescue_refused(e: &OperationError) -> ExitCode {
    err!("error: {e}");
    Exit::of_rescue(e).into()
}

/// `glovebox rescue ...`: the registry's `rescues.*` operations (on the
/// running server when one holds the data dir), printed for a terminal.
pub async fn run_rescue(config: &Path, command: RescueCommand) -> Result<ExitCode> {
    match command {
        RescueCommand::Open {
            session,
            call,
            assignee,
        } => {
            let args = OpenRescueArgs {
                session,
                call,
                assignee,
            };
            one(run::<OpenRescue>(config, args).await?)
        }
        RescueCommand::Assign { id, to } => {
            one(run::<AssignRescue>(config, AssignRescueArgs { id, to }).await?)
        }
        RescueCommand::Diagnose {
            id,
            category,
            evidence,
            root_cause,
        } => {
            let args = DiagnoseRescueArgs {
                id,
                category,
                evidence,
                root_cause,
            };
            one(run::<DiagnoseRescue>(config, args).await?)
        }
        RescueCommand::Inject {
            id,
            description,
            files,
            spec_changes,
            read,
        } => {
            let files = match read {
                Some(read) => read,
                None => read_files(&files)?,
            };
            let args = InjectRescueArgs {
                id,
                description,
                files,
                spec_changes,
            };
            one(run::<InjectRescue>(config, args).await?)
        }
        RescueCommand::Resolve {
            id,
            outcome,
            enrich,
        } => {
            let args = ResolveRescueArgs {
                id,
                outcome,
                enrich,
            };
            one(run::<ResolveRescue>(config, args).await?)
        }
        RescueCommand::Show { id } => one(run::<ShowRescue>(config, ShowRescueArgs { id }).await?),
        RescueCommand::List { json, page } => {
            // A limit outside 1 to 500 is taken as the nearest, as it always was.
            let args = ListRescuesArgs {
                limit: page.limit.map(|l| l.clamp(1, MAX_PAGE)),
                cursor: page.cursor,
            };
            let (list, next) = match run::<ListRescues>(config, args).await? {
                Ok(p) => (p.items, p.next_cursor),
                Err(e) => return Ok(rescue_refused(&e)),
            };
            if json {
                print_json(&list)?;
            } else if list.is_empty() {
                out!("no rescues");
            } else {
                for x in &list {
                    out!(
                        "{}  {:12}  {:20}  {:20}  {}",
                        x.id,
                        x.status(),
                        x.session_name.as_deref().unwrap_or(&x.session),
                        x.diagnosis
                            .as_ref()
                            .map(|d| d.category.as_str())
                            .unwrap_or("-"),
                        x.time_to_unblock_ms()
                            .map(|ms| format!("unblocked in {}", minutes(ms)))
                            .unwrap_or_default()
                    );
                }
            }
            crate::paging::print_next(next.as_deref());
            Ok(ExitCode::SUCCESS)
        }
        RescueCommand::Report { days, json } => {
            let report = match run::<RescueFigures>(config, RescueFiguresArgs { days }).await? {
                Ok(rep) => rep,
                Err(e) => return Ok(rescue_refused(&e)),
            };
            if json {
                print_json(&report)?;
                return Ok(ExitCode::SUCCESS);
            }
            print_report(&report, days)?;
            Ok(ExitCode::SUCCESS)
        }
    }
}

/// `glovebox rescue report`, for a terminal.
fn print_report(report: &RescueReport, days: u64) -> Result<()> {
    out!("Rescue report: the last {days} days");
    out!(
        "rescues:              {} ({} resolved, {} re-escalated, {} abandoned, {} open)",
        report.rescues,
        report.resolved,
        report.re_escalated,
        report.abandoned,
        report.open
    );
    out!(
        "mean time to unblock: {}",
        report
            .mean_time_to_unblock_ms
            .map(minutes)
            .unwrap_or_else(|| "- (none resolved)".into())
    );
    out!(
        "mean time to diagnose: {}",
        report
            .mean_time_to_diagnose_ms
            .map(minutes)
            .unwrap_or_else(|| "- (none diagnosed)".into())
    );
    out!("context updates:      {}", report.context_updates);
    if let Some(share) = report.share_closed_without_enrichment {
        out!(
            "closed, no lesson:    {} ({:.0}% of the closed)",
            report.closed_without_enrichment,
            share * 100.0
        );
    }
    out!("root causes:");
    let mut cats: Vec<_> = report.by_category.iter().collect();
    cats.sort_by(|a, b| b.1.cmp(a.1).then_with(|| a.0.cmp(b.0)));
    for (cat, n) in cats {
        out!(
            "  {cat:22} {n} ({:.0}%)",
            *n as f64 * 100.0 / report.rescues.max(1) as f64
        );
    }
    Ok(())
}

/// `glovebox session check SESSION`: runs the stuck-agent detector now.
pub fn check(config: &Path, session: &str, json: bool) -> Result<ExitCode> {
    let o = context::open(config)?;
    let check = match glovebox::detect::check(&o.durable.sessions, &o.config.detector, session) {
        Ok(c) => c,
        Err(e) => return Ok(crate::session_refused(&e)),
    };
    if json {
        print_json(&check)?;
        return Ok(ExitCode::SUCCESS);
    }
    let w = &check.state.watch;
    out!(
        "session {}: {}, escalation step `{}` ({})",
        check.state.label(),
        check.state.header.status,
        w.escalation,
        w.escalation.suggestion()
    );
    if w.flags.is_empty() {
        out!("no active blocker flags");
    }
    for (rule, f) in &w.flags {
        let new = check.raised.iter().any(|r| &r.rule == rule);
        out!(
            "{} {rule} [{}]: {}",
            if new { "NEW " } else { "    " },
            f.severity,
            f.reason
        );
        out!("       suggested: {}", f.suggested_action);
    }
    if check.paused {
        out!("the session is paused on a critical flag");
    }
    Ok(ExitCode::SUCCESS)
}
