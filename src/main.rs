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
mod dev;
mod doctor;
mod exit;
mod hook;
mod jobs;
mod log;
mod memory;
mod new_file;
mod notify;
mod oci;
mod operate;
mod operation;
#[cfg(feature = "otlp")]
mod otlp;
mod output;
mod paging;
mod plugin;
mod plugin_test;
mod policy;
mod principal;
mod process;
mod reach;
mod rescue;
mod scaffold;
mod schedule;
mod serve;
mod served;
mod session_args;
mod session_flag;
mod session_list;
mod sessions;
mod signing;
mod store;
mod workspace;

// What several subcommands share: a call report printed, a refusal worded.
pub(crate) use call::{operation_refused, print_report, read_input, session_refused};

use std::path::PathBuf;
use std::process::ExitCode;

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
/// running server (`control/`) as JSON; the others never leave this
/// process (`serde(skip)`).
#[derive(Subcommand, Serialize, Deserialize)]
enum Command {
    /// Start a plugin project: `new tool NAME --lang rust|python|js`, `new hook NAME`.
    #[serde(skip)]
    New {
        #[command(subcommand)]
        command: scaffold::NewCommand,
    },
    /// Work with plugins.
    #[serde(skip)]
    Plugin {
        #[command(subcommand)]
        command: plugin::PluginCommand,
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
        command: Box<sessions::SessionCommand>,
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
    /// The sessions' git worktrees of the `[[workspace]]`s: list, merge a
    /// session's branch into its base, abandon it.
    Workspace {
        #[command(subcommand)]
        command: workspace::WorkspaceCommand,
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
    /// Serve as `serve` does, and watch the plugins' sources, manifests and
    /// the config: on a change, rebuild the plugin (its manifest's
    /// `[build]`), load it and serve it, printing the tool list's changes
    /// to stderr. A build or load that fails keeps the last good one serving.
    #[serde(skip)]
    Dev(dev::DevArgs),
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
        /// With --json: print an object with the compliance score, its
        /// weights and the findings (the text always ends with the score).
        #[arg(long, requires = "json")]
        #[serde(default)]
        score: bool,
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

fn main() -> ExitCode {
    // First, before any thread exists and before the arguments are read.
    let process = process::Process::begin();
    let cli = Cli::parse();
    process.run(run(cli))
}

async fn run(mut cli: Cli) -> Result<ExitCode> {
    if let Some(code) = control::forward(&cli.config, &mut cli.command).await? {
        return Ok(code);
    }
    if matches!(cli.command, Command::Serve(_) | Command::Dev(_)) {
        // A server's own work is the host's; each request names its principal.
        return dispatch(&cli.config, cli.command).await;
    }
    // Run here, what the command writes to a log is its user's doing.
    let by = glovebox::cli_operator().name;
    glovebox::tasks::acting(by, dispatch(&cli.config, cli.command)).await
}

/// Runs a command here: in this process, or inside the server a command
/// was forwarded to (`control/`).
async fn dispatch(config: &std::path::Path, command: Command) -> Result<ExitCode> {
    match command {
        Command::New { command } => scaffold::run(command),
        Command::Plugin { command } => plugin::run(config, command).await,
        Command::Tools { json } => plugin::tools(config, json).await,
        Command::Call {
            tool,
            input,
            input_file,
            json,
            session,
        } => call::run(config, &tool, input, input_file, json, session).await,
        Command::Session { command } => sessions::run_session(config, *command).await,
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
        Command::Rescue { command } => rescue::run_rescue(config, command).await,
        Command::Workspace { command } => workspace::run_workspace(config, command).await,
        Command::Context { command } => rescue::run_context(config, command),
        Command::Memory { command } => memory::run(config, command),
        Command::Billing(args) => billing::run(config, args),
        Command::Budget(args) => budget::run(config, args),
        Command::Job { command } => jobs::run(config, command).await,
        Command::Serve(args) => serve::run(config, args).await,
        Command::Dev(args) => dev::run(config, args).await,
        Command::Principal { command } => principal::run(config, command),
        Command::Hook { command } => hook::run(config, command).await,
        Command::Config { command } => crate::config::run(command),
        Command::Store { command } => store::run(config, command),
        Command::Reload => serve::reload(config).await,
        Command::Notify { command } => notify::run(config, command).await,
        Command::Schedule { command } => schedule::run(config, command).await,
        Command::Doctor { json, score } => doctor::run(config, json, score).await,
        Command::Operation { name, args, schema } => {
            operation::run(config, name, args, schema).await
        }
    }
}
