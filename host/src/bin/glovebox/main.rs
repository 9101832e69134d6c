//! The `glovebox` command: a thin layer over the library that parses
//! arguments and prints. Exit codes: 0 success, 1 internal error, 2 bad usage or
//! config, 3 denied, 4 invalid input or unknown tool, 5 tool error or crash,
//! 6 timeout or limit, 7 busy, 8 refused by the session (its state or log).

/// `println!` that returns an error instead of panicking when stdout is
/// closed early (`glovebox log show x | head`).
macro_rules! out {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        writeln!(std::io::stdout().lock(), $($arg)*)?
    }};
}

mod billing;
mod crash;
mod debug;
mod jobs;
mod rescue;
mod serve;
mod sessions;
mod store;

use std::io::{IsTerminal, Read};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, Result, bail};
use clap::{Parser, Subcommand};
use glovebox::{CallContext, Host, HostConfig, Limits, PluginManifest};

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

#[derive(Subcommand)]
enum Command {
    /// Work with plugins.
    Plugin {
        #[command(subcommand)]
        command: PluginCommand,
    },
    /// List the tools the configured plugins offer.
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
    /// The session log: verify its hash chain, show it, export it.
    Log {
        #[command(subcommand)]
        command: sessions::LogCommand,
    },
    /// List pending approvals: calls a permission hook asked a human about.
    Approvals {
        /// Include approvals already settled.
        #[arg(long)]
        all: bool,
        #[arg(long)]
        json: bool,
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
        command: sessions::PolicyCommand,
    },
    /// Background jobs: spawn, status, wait, cancel, list. `job spawn` only
    /// queues a job; `job wait` (or `serve`) runs the data dir's queued jobs.
    Job {
        #[command(subcommand)]
        command: jobs::JobCommand,
    },
    /// Serve the configured tools over MCP (stdio, or streamable HTTP with `--http`).
    Serve(serve::ServeArgs),
    /// The data dir's store: check it, back it up, restore it.
    Store {
        #[command(subcommand)]
        command: store::StoreCommand,
    },
    /// Tools for testing the host itself.
    #[command(hide = true)]
    Debug {
        #[command(subcommand)]
        command: debug::DebugCommand,
    },
}

#[derive(Subcommand)]
enum PluginCommand {
    /// Validate a plugin (a manifest `.toml` or a component `.wasm`) and list its tools.
    Check {
        /// A plugin manifest or a component file.
        path: PathBuf,
    },
}

fn main() -> ExitCode {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| "warn".into()),
        )
        .with_writer(std::io::stderr)
        .init();
    let cli = Cli::parse();
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("error: cannot start the async runtime: {e}");
            return ExitCode::from(1);
        }
    };
    match runtime.block_on(run(cli)) {
        Ok(code) => code,
        Err(e) if is_broken_pipe(&e) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::from(2)
        }
    }
}

/// A size for people: `12.3 MiB`.
fn human_size(bytes: u64) -> String {
    const UNITS: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut value = bytes as f64;
    let mut unit = 0;
    while value >= 1024.0 && unit + 1 < UNITS.len() {
        value /= 1024.0;
        unit += 1;
    }
    if unit == 0 {
        format!("{bytes} B")
    } else {
        format!("{value:.1} {}", UNITS[unit])
    }
}

/// The reader of our stdout went away: not an error of ours.
fn is_broken_pipe(e: &anyhow::Error) -> bool {
    e.chain()
        .filter_map(|c| c.downcast_ref::<std::io::Error>())
        .any(|io| io.kind() == std::io::ErrorKind::BrokenPipe)
}

async fn run(cli: Cli) -> Result<ExitCode> {
    match cli.command {
        Command::Plugin {
            command: PluginCommand::Check { path },
        } => plugin_check(&cli.config, &path).await,
        Command::Tools { json } => {
            let host = Host::from_config_file(&cli.config).await?;
            print_tools(&host, json)?;
            Ok(ExitCode::SUCCESS)
        }
        Command::Call {
            tool,
            input,
            input_file,
            json,
            session,
        } => {
            let input = read_input(input, input_file)?;
            let host = Host::from_config_file(&cli.config).await?;
            match session {
                None => {
                    let report = host.call(&tool, &input, CallContext::standalone()).await;
                    print_report(&report, json)
                }
                Some(session) => {
                    let durable = glovebox::open_sessions(host.config())?;
                    match host
                        .call_in_session(&durable, &session, &tool, &input, None)
                        .await
                    {
                        Ok(report) => print_report(&report, json),
                        Err(e) => Ok(session_refused(&e)),
                    }
                }
            }
        }
        Command::Session { command } => sessions::run_session(&cli.config, command).await,
        Command::Approvals { all, json } => sessions::approvals(&cli.config, all, json),
        Command::Approve { id } => sessions::approve(&cli.config, &id).await,
        Command::Deny { id, reason } => sessions::deny(&cli.config, &id, &reason).await,
        Command::Policy { command } => sessions::policy(&cli.config, command).await,
        Command::Log { command } => sessions::run_log(&cli.config, command),
        Command::Rescue { command } => rescue::run_rescue(&cli.config, command),
        Command::Context { command } => rescue::run_context(&cli.config, command),
        Command::Billing(args) => billing::run(&cli.config, args),
        Command::Job { command } => jobs::run(&cli.config, command).await,
        Command::Serve(args) => serve::run(&cli.config, args).await,
        Command::Debug { command } => debug::run(&cli.config, command),
        Command::Store { command } => store::run(&cli.config, command),
    }
}

async fn plugin_check(config: &Path, path: &Path) -> Result<ExitCode> {
    // Use the configured data dir (and its compile cache) when there is a config.
    let (data_dir, defaults) = match HostConfig::load(config) {
        Ok(c) => (c.data_dir, c.defaults),
        Err(_) => (user_cache_dir(), Limits::default()),
    };
    let is_manifest = path.extension().is_some_and(|e| e == "toml");
    let manifest = if is_manifest {
        PluginManifest::load(path, &defaults)?
    } else {
        if !path.exists() {
            bail!(
                "`{}` does not exist: give a plugin manifest (.toml) or a component (.wasm)",
                path.display()
            );
        }
        let absolute = std::path::absolute(path)
            .with_context(|| format!("cannot resolve `{}`", path.display()))?;
        PluginManifest::for_component(absolute, &defaults)
    };
    let host = Host::load(HostConfig::from_plugins(data_dir, vec![manifest])).await?;
    let plugin = &host.plugins()[0];
    out!(
        "ok: plugin `{}` is a valid tool plugin",
        plugin.manifest.name
    );
    out!("component: {}", plugin.manifest.component.display());
    out!("sha256:    {}", plugin.digest);
    out!();
    for tool in &plugin.tools {
        out!("{}", tool.name);
        out!("  {}", tool.description);
        out!(
            "  action: {}  destructive: {}  idempotent: {}",
            tool.action,
            tool.destructive,
            tool.idempotent
        );
        out!(
            "  input schema: {}",
            serde_json::to_string(&tool.input_schema)?
        );
    }
    Ok(ExitCode::SUCCESS)
}

/// Where `plugin check` keeps its compile cache when there is no config:
/// `$XDG_CACHE_HOME/glovebox`, else `~/.cache/glovebox`, else the temp dir.
fn user_cache_dir() -> PathBuf {
    let base = std::env::var_os("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .filter(|p| p.is_absolute())
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache")))
        .unwrap_or_else(std::env::temp_dir);
    base.join("glovebox")
}

fn print_tools(host: &Host, json: bool) -> Result<()> {
    let tools = host.tools();
    if json {
        out!("{}", serde_json::to_string_pretty(&tools)?);
        return Ok(());
    }
    if tools.is_empty() {
        out!(
            "no tools: add a `[[plugin]]` to {}",
            host.config().path.display()
        );
    }
    let width = tools.iter().map(|t| t.name.len()).max().unwrap_or(0);
    for t in tools {
        let mut flags = Vec::new();
        if t.destructive {
            flags.push("destructive");
        }
        if t.idempotent {
            flags.push("idempotent");
        }
        out!(
            "{:width$}  {:28}  {:24}  {}",
            t.name,
            t.action,
            flags.join(","),
            t.description
        );
    }
    Ok(())
}

fn read_input(input: Option<String>, file: Option<PathBuf>) -> Result<String> {
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

/// Exit code 8: the session refused the call, or its log failed.
pub fn session_refused(e: &glovebox::SessionError) -> ExitCode {
    eprintln!("error: {e}");
    ExitCode::from(8)
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
        });
        out!("{}", serde_json::to_string_pretty(&doc)?);
    }
    match &report.outcome {
        Ok(output) => {
            if !json {
                out!("{}", serde_json::to_string_pretty(output)?);
                eprintln!("{}: {metering}", report.tool);
            }
            Ok(ExitCode::SUCCESS)
        }
        Err(e) => {
            if !json {
                match e {
                    glovebox::CallError::Denied {
                        tool,
                        hook,
                        pattern,
                        reason,
                        alternatives,
                    } => {
                        eprintln!(
                            "error: call to `{tool}` denied by hook `{hook}` (pattern `{pattern}`): {reason}"
                        );
                        for alt in alternatives {
                            eprintln!("  instead: {alt}");
                        }
                    }
                    other => eprintln!("error: {other}"),
                }
                for denial in &report.http_denials {
                    eprintln!("  network: {denial}");
                }
                if !m.wall.is_zero() {
                    eprintln!("{}: {metering}", report.tool);
                }
            }
            Ok(ExitCode::from(u8::try_from(e.exit_code()).unwrap_or(1)))
        }
    }
}
