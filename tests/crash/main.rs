//! The crash harness, and the tests that need its workload: a test binary of its own
//! (`cargo test --test crash`), so that the production `glovebox` binary carries no
//! test code (it has no `debug` command).
//!
//! Run as `cargo test` runs it (no subcommand), it is a test harness with libtest's
//! command line (libtest-mimic): one named trial per test, filters, `--exact`,
//! `--list`, `--test-threads`, and libtest's `test result:` line. The trials keep the
//! module paths they had in the `all` binary (`store::...`, `sessions::...`).
//!
//! Given a workload subcommand as its first argument, it runs that workload instead;
//! the trials re-execute this binary (`std::env::current_exe()`) with one, as the
//! process they kill or run:
//!
//! - `write-mix --config FILE` and `append --config FILE` (`workload.rs`): the writers,
//!   each acknowledged write printed once it is durable;
//! - `crash-loop (--dir DIR | --config FILE) --kills N ...` (`kill_loop.rs`): the kill
//!   loop, which judges the data dir with `checks.rs` every few kills.
//!
//! The `glovebox` binary the trials and the checks ask about the store (`store check`,
//! `store backup`, `session list`, ...) is the real one, `CARGO_BIN_EXE_glovebox`.
//!
//! By hand, from the repository root (docs/durability.md):
//!
//! ```text
//! cargo test --release --test crash --no-run   # prints the binary's path
//! target/release/deps/crash-<hash> crash-loop --dir /tmp/crash --kills 1000 --inject
//! GLOVEBOX_CRASH_KILLS=1000 cargo test --release --test crash -- store::crash_test_sigkill
//! ```

#![forbid(unsafe_code)]

mod checks;
mod kill_loop;
mod sessions;
mod store;
/// The `all` binary's helpers (`Site`, `glovebox()`, the plugin paths), the same file.
#[path = "../all/util.rs"]
mod util;
mod workload;

use std::process::{Command, ExitCode};

use clap::Parser;
use libtest_mimic::{Arguments, Trial};

/// The workloads, by the first argument that selects them.
#[derive(Parser)]
#[command(
    name = "crash",
    about = "The crash harness's workloads (without a subcommand: the crash test trials)"
)]
enum Workload {
    /// Append notes to sessions from several writer threads, printing one line
    /// per acknowledged event: `ack <session id> <seq> <hash>`.
    Append(workload::AppendArgs),
    /// Every kind of write Glovebox makes, from several threads, until killed (or
    /// `--count` operations per writer); prints `ack <kind> <id> <what> .` once each
    /// write is durable.
    WriteMix(workload::WriteMixArgs),
    /// The crash harness: kills `write-mix` at random moments, over and over, and
    /// checks after every few kills that the data dir opens and holds every
    /// acknowledged write.
    CrashLoop(kill_loop::CrashArgs),
}

/// The first arguments that run a workload instead of the trials.
const WORKLOADS: [&str; 3] = ["append", "write-mix", "crash-loop"];

/// Every trial, named `module::function`.
macro_rules! trials {
    ($($module:ident :: $test:ident),* $(,)?) => {
        vec![$(
            Trial::test(concat!(stringify!($module), "::", stringify!($test)), || {
                $module::$test();
                Ok(())
            })
        ),*]
    };
}

fn main() -> ExitCode {
    let first = std::env::args_os().nth(1);
    if first.is_some_and(|first| WORKLOADS.iter().any(|w| first == *w)) {
        return run_workload(Workload::parse());
    }
    let trials = trials![
        store::crash_test_sigkill_during_mixed_writes_loses_nothing_acknowledged,
        store::crash_test_on_the_other_backend,
        store::crash_test_with_kills_at_injected_syscalls,
        store::crash_test_in_strict_mode,
        store::store_check_reports_a_whole_store,
        store::store_check_names_a_damaged_session_and_exits_8,
        store::store_backup_while_a_process_writes_and_restore_elsewhere,
        store::a_sled_store_moves_to_sqlite_through_backup_and_restore,
        store::store_restore_is_refused_while_a_process_holds_the_data_dir,
        store::a_store_that_does_not_open_is_an_error_that_says_what_to_run,
        store::store_compact_keeps_everything_and_says_what_sled_needs,
        store::strict_mode_acknowledges_nothing_a_failed_disk_flush_covered,
        sessions::a_second_process_on_the_same_data_dir_is_refused,
    ];
    libtest_mimic::run(&Arguments::from_args(), trials).exit_code()
}

/// Runs a workload the way the `glovebox` binary runs a command: its log (warnings,
/// or `RUST_LOG`) on stderr, files its user's alone (umask 077), inside an async
/// runtime.
fn run_workload(workload: Workload) -> ExitCode {
    let filter =
        tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| "warn".into());
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_env_filter(filter)
        .init();
    rustix::process::umask(rustix::fs::Mode::from_raw_mode(0o077));
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(e) => {
            eprintln!("error: cannot start the async runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    let result = runtime.block_on(async {
        match workload {
            Workload::Append(args) => workload::append(args),
            Workload::WriteMix(args) => workload::write_mix(args),
            Workload::CrashLoop(args) => kill_loop::run(args),
        }
    });
    runtime.shutdown_timeout(std::time::Duration::from_secs(1));
    match result {
        Ok(code) => code,
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::from(2)
        }
    }
}

/// This binary, to run a workload (`write-mix`, `append`, `crash-loop`), with no
/// config or log level from the environment.
fn crash_binary() -> Command {
    let exe = std::env::current_exe().expect("the crash test binary finds itself");
    let mut cmd = Command::new(exe);
    cmd.env_remove("GLOVEBOX_CONFIG").env_remove("RUST_LOG");
    cmd
}
