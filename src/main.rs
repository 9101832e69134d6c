//! The `glovebox` command: a thin layer over the library that parses
//! arguments and prints. Exit codes: 0 success, 1 internal error, 2 bad usage or
//! config, 3 denied, 4 invalid input or unknown tool, 5 tool error or crash,
//! 6 timeout or limit, 7 busy, 8 refused by the session (its state or log).
//! `glovebox doctor` exits 1 when it finds a warning (ripgrep-style: a
//! finding, not a failure), 0 when it finds none.

// Denied, not forbidden: `allocator.rs` holds the binary's one `unsafe` call.
#![deny(unsafe_code)]

/// `println!` that returns an error instead of panicking when stdout is
/// closed early (`glovebox log show x | head`), and that writes into the
/// request's answer when the command runs inside the server (`output.rs`).
macro_rules! out {
    () => {
        crate::output::write_out(format_args!(""))?
    };
    ($($arg:tt)*) => {
        crate::output::write_out(format_args!($($arg)*))?
    };
}

/// `eprintln!` for commands, which writes into the request's answer when
/// the command runs inside the server (`output.rs`).
macro_rules! err {
    ($($arg:tt)*) => {
        crate::output::write_err(format_args!($($arg)*))
    };
}

mod allocator;
mod approvals;
mod billing;
mod budget;
mod cache_dir;
mod call;
mod children;
mod completion;
mod config;
mod control;
mod doctor;
mod exit;
mod hook;
mod jobs;
mod log;
mod memory;
mod notify;
mod operate;
mod operation;
#[cfg(feature = "otlp")]
mod otlp;
mod output;
mod paging;
mod plugin;
mod policy;
mod principal;
mod reach;
mod rescue;
mod schedule;
mod serve;
mod served;
mod session_args;
mod session_list;
mod sessions;
mod store;

// What several subcommands share: a call report printed, a refusal worded.
pub(crate) use call::{operation_refused, print_report, read_input, session_refused};

use std::path::PathBuf;
use std::process::ExitCode;

use exit::Exit;

use anyhow::Result;
use clap::{Parser, Subcommand};
use serde::{Deserialize, Serialize};

#[derive(Parser)]
#[command(
    name = "glovebox",
    version,
    about = "Safe hands for AI agents: every tool call in a fresh, capability-restricted Wasm instance"
)]
struct Cli {
    /// The host config.
    #[arg(
        long,
        short,
        global = true,
        env = "GLOVEBOX_CONFIG",
        default_value = "glovebox.toml"
    )]
    config: PathBuf,
    #[command(subcommand)]
    command: Command,
}

/// The commands. Those that work on the data dir's store travel to the
/// running server (`control.rs`) as JSON; the others never leave this
/// process (`serde(skip)`).
#[derive(Subcommand, Serialize, Deserialize)]
enum Command {
    /// Work with plugins.
    #[serde(skip)]
    Plugin {
        #[command(subcommand)]
        command: PluginCommand,
    },
    /// List the tools the configured plugins offer.
    #[serde(skip)]
    Tools {
        /// Print JSON instead of a table.
        #[arg(long)]
        json: bool,
    },
    /// Call a tool in a fresh sandbox and print its JSON result.
    Call {
        /// The tool, as `plugin.tool` (or just `tool` when unambiguous).
        tool: String,
        /// The input as JSON text; `-` reads it from stdin.
        #[arg(long, short, conflicts_with = "input_file")]
        input: Option<String>,
        /// Read the input from a file.
        #[arg(long)]
        input_file: Option<PathBuf>,
        /// Print one JSON document with the result, the metering and captured output.
        #[arg(long)]
        json: bool,
        /// Run the call in this session (id or name): it is logged there.
        #[arg(long, short)]
        session: Option<String>,
    },
    /// Sessions: start, list, show, pause, resume, end, archive, hand off.
    Session {
        #[command(subcommand)]
        command: sessions::SessionCommand,
    },
    /// Billing: what sessions used (calls, failures, wall time, fuel, bytes,
    /// estimated tool cost, model cost) over a date range, grouped; or the
    /// session-end records as JSON lines (`billing export`).
    Billing(billing::BillingArgs),
    /// Spend ceilings across sessions (per principal, project and role, per
    /// day, week and month): their use this period; `budget raise` a
    /// ceiling for the current period; `budget lift` the pause one took.
    Budget(budget::BudgetArgs),
    /// Rescue missions for stuck sessions: open, diagnose, inject, resolve, list, report.
    Rescue {
        #[command(subcommand)]
        command: rescue::RescueCommand,
    },
    /// The context index: entries every new session of a project starts with.
    Context {
        #[command(subcommand)]
        command: rescue::ContextCommand,
    },
    /// The memory bank: review what agents and rescues proposed (approve,
    /// reject), retire, list. Only approved entries reach new sessions.
    Memory {
        #[command(subcommand)]
        command: memory::MemoryCommand,
    },
    /// The session log: verify its hash chain, show it, export it.
    Log {
        #[command(subcommand)]
        command: log::LogCommand,
    },
    /// List pending approvals: calls a permission hook asked a human about.
    /// Each input is shown whole (past 64 KiB, a preview of every key with
    /// its SHA-256), the keys a hook named and the tool's schema order first,
    /// invisible characters marked (`<U+202E>`).
    Approvals {
        /// Include approvals already settled (after the pending ones, the
        /// most recently settled first).
        #[arg(long)]
        all: bool,
        #[arg(long)]
        json: bool,
        #[command(flatten)]
        page: paging::PageArgs,
        /// Print only this approval's input, exactly as the tool gets it
        /// (`> input.json`, then `sha256sum input.json`).
        #[arg(long, value_name = "ID", conflicts_with_all = ["all", "json"])]
        input: Option<String>,
    },
    /// Approve a pending call: it runs now, exactly as it was judged.
    Approve { id: String },
    /// Deny a pending call: it fails for good.
    Deny {
        id: String,
        #[arg(long)]
        reason: String,
    },
    /// Policies: replay a hook chain against a recorded session.
    Policy {
        #[command(subcommand)]
        command: policy::PolicyCommand,
    },
    /// Background jobs: spawn, status, wait, cancel, list. `job spawn` only
    /// queues a job; `job wait` (or `serve`) runs the data dir's queued jobs.
    Job {
        #[command(subcommand)]
        command: jobs::JobCommand,
    },
    /// Re-read the config, its plugins and hooks on the running server (as
    /// SIGHUP does): a config that does not load is refused and the current
    /// one keeps serving; calls in flight finish under the policy that
    /// admitted them.
    Reload,
    /// Serve the configured tools over MCP (stdio, or streamable HTTP with `--http`).
    #[serde(skip)]
    Serve(serve::ServeArgs),
    /// Principals: who may connect (`principal add` makes a token).
    #[serde(skip)]
    Principal {
        #[command(subcommand)]
        command: principal::PrincipalCommand,
    },
    /// The data dir's store: check it, back it up, restore it.
    #[serde(skip)]
    Store {
        #[command(subcommand)]
        command: store::StoreCommand,
    },
    /// The config's JSON Schema, for editors (`config schema`).
    #[serde(skip)]
    Config {
        #[command(subcommand)]
        command: config::ConfigCommand,
    },
    /// Permission hooks: dry-run one decision (`hook test`).
    #[serde(skip)]
    Hook {
        #[command(subcommand)]
        command: hook::HookCommand,
    },
    /// Antipattern warnings: unwaited background jobs, unnamed sessions,
    /// hooks that allow everything (probed), roles without budgets, long
    /// sessions without a handoff, plugins without a digest pin, read-write
    /// directories shared by plugins. Exits 1 when there is a warning.
    Doctor {
        /// Print the findings as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Run an operation of the registry by name, its arguments a JSON
    /// object, its output JSON (what the HTTP API at `/api/v1` takes and
    /// gives); without a name, list them.
    Operation {
        /// The operation (`approvals.list`, `sessions.pause`, ...).
        name: Option<String>,
        /// Its arguments, a JSON object (`{"id": "ap-…", "reason": "…"}`).
        #[arg(long, value_name = "JSON", requires = "name")]
        args: Option<String>,
        /// Print its argument and output schemas instead of running it.
        #[arg(long, requires = "name", conflicts_with = "args")]
        schema: bool,
    },
    /// Notifications to the `[[notify]]` targets: delivery status, a test send.
    Notify {
        #[command(subcommand)]
        command: notify::NotifyCommand,
    },
    /// The `[[schedule]]` and `[[trigger]]` entries: their next and last
    /// runs, and a schedule run now.
    Schedule {
        #[command(subcommand)]
        command: schedule::ScheduleCommand,
    },
}

#[derive(Subcommand)]
enum PluginCommand {
    /// Validate a plugin (a manifest `.toml` or a component `.wasm`) and list its
    /// tools; a permission-hook component is validated as a hook.
    Check {
        /// A plugin manifest or a component file.
        path: PathBuf,
    },
}

fn main() -> ExitCode {
    // First, before any thread exists (see `allocator.rs`).
    let malloc = allocator::tune();
    #[cfg(feature = "otlp")]
    let (otlp, exporter) = match otlp::layer() {
        Some((layer, exporter)) => (Some(layer), Some(exporter)),
        None => (None, None),
    };
    {
        use tracing_subscriber::prelude::*;
        // The host's log on stderr (`RUST_LOG`, warnings by default), and
        // the lines an MCP connection asked for about its own requests;
        // with `OTEL_EXPORTER_OTLP_ENDPOINT`, the spans to a collector.
        let filter =
            tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| "warn".into());
        let subscriber = tracing_subscriber::registry()
            .with(
                tracing_subscriber::fmt::layer()
                    .with_writer(std::io::stderr)
                    .with_filter(filter),
            )
            .with(glovebox_mcp::connection_log());
        #[cfg(feature = "otlp")]
        let subscriber = subscriber.with(otlp);
        subscriber.init();
    }
    allocator::report(malloc);
    let code = run_main();
    #[cfg(feature = "otlp")]
    if let Some(exporter) = exporter {
        exporter.shutdown();
    }
    code
}

fn run_main() -> ExitCode {
    let cli = Cli::parse();
    // Everything this process creates is its user's alone: the store's files (sled
    // and SQLite open them with the default mode), snapshots, exports, and the
    // files tools create in read-write grants and scratch dirs (0600, dirs 0700).
    rustix::process::umask(rustix::fs::Mode::from_raw_mode(0o077));
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("error: cannot start the async runtime: {e}");
            return Exit::Failed.into();
        }
    };
    let result = runtime.block_on(async {
        // A file-size limit (`ulimit -f`) reached by a write makes that write
        // fail (EFBIG), as a full disk does, instead of killing the process
        // with SIGXFSZ: the store fails and is reopened once it can (see
        // `glovebox_store::Reopening`). Once handled, the signal stays
        // handled for the life of the process.
        let xfsz = tokio::signal::unix::SignalKind::from_raw(
            rustix::process::Signal::XFSZ.as_raw(),
        );
        if let Err(e) = tokio::signal::unix::signal(xfsz) {
            tracing::warn!(error = %e, "cannot handle SIGXFSZ: a file-size limit would stop the process");
        }
        run(cli).await
    });
    // A blocking read of stdin (a stdio server stopped by a signal while its
    // client keeps stdin open) never ends by itself: don't wait for it.
    // Everything acknowledged is durable already.
    runtime.shutdown_timeout(std::time::Duration::from_secs(1));
    match result {
        Ok(code) => code,
        Err(e) if is_broken_pipe(&e) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e:#}");
            Exit::Usage.into()
        }
    }
}

/// The reader of our stdout went away: not an error of ours.
fn is_broken_pipe(e: &anyhow::Error) -> bool {
    e.chain()
        .filter_map(|c| c.downcast_ref::<std::io::Error>())
        .any(|io| io.kind() == std::io::ErrorKind::BrokenPipe)
}

async fn run(mut cli: Cli) -> Result<ExitCode> {
    if let Some(code) = control::forward(&cli.config, &mut cli.command).await? {
        return Ok(code);
    }
    if matches!(cli.command, Command::Serve(_)) {
        // A server's own work is the host's; each request names its principal.
        return dispatch(&cli.config, cli.command).await;
    }
    // Run here, what the command writes to a log is its user's doing.
    let by = glovebox::cli_operator().name;
    glovebox::tasks::acting(by, dispatch(&cli.config, cli.command)).await
}

/// Runs a command here: in this process, or inside the server a command
/// was forwarded to (`control.rs`).
async fn dispatch(config: &std::path::Path, command: Command) -> Result<ExitCode> {
    match command {
        Command::Plugin {
            command: PluginCommand::Check { path },
        } => plugin::check(config, &path).await,
        Command::Tools { json } => plugin::tools(config, json).await,
        Command::Call {
            tool,
            input,
            input_file,
            json,
            session,
        } => call::run(config, &tool, input, input_file, json, session).await,
        Command::Session { command } => sessions::run_session(config, command).await,
        Command::Approvals {
            input: Some(id), ..
        } => approvals::print_input(config, &id).await,
        Command::Approvals {
            all, json, page, ..
        } => approvals::list(config, all, json, &page).await,
        Command::Approve { id } => approvals::approve(config, &id).await,
        Command::Deny { id, reason } => approvals::deny(config, &id, &reason).await,
        Command::Policy { command } => policy::run(config, command).await,
        Command::Log { command } => log::run(config, command),
        Command::Rescue { command } => rescue::run_rescue(config, command),
        Command::Context { command } => rescue::run_context(config, command),
        Command::Memory { command } => memory::run(config, command),
        Command::Billing(args) => billing::run(config, args),
        Command::Budget(args) => budget::run(config, args),
        Command::Job { command } => jobs::run(config, command).await,
        Command::Serve(args) => serve::run(config, args).await,
        Command::Principal { command } => principal::run(config, command),
        Command::Hook { command } => hook::run(config, command).await,
        Command::Config { command } => crate::config::run(command),
        Command::Store { command } => store::run(config, command),
        Command::Reload => serve::reload(config).await,
        Command::Notify { command } => notify::run(config, command).await,
        Command::Schedule { command } => schedule::run(config, command).await,
        Command::Doctor { json } => doctor::run(config, json).await,
        Command::Operation { name, args, schema } => {
            operation::run(config, name, args, schema).await
        }
    }
}
