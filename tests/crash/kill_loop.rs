//! The kill loop (`crash-loop`): the workload killed with SIGKILL at random moments,
//! over and over, on one data dir, and checked every few kills.
//!
//! Why a module of its own: this is the half of the harness that decides when the
//! workload dies, and only that. It runs the workload (`workload.rs`: this binary
//! re-executed with `write-mix`, in a process group of its own) and kills it: every
//! other kill is timed from the process start, so it may land while the store opens
//! and recovers, the others from the first acknowledged write, so they land among the
//! writes; with `--inject`, every other kill instead comes from `strace` at the N-th
//! call of a write-side syscall, a window of microseconds a timer almost never hits.
//! Each acknowledged write the workload printed before it died is remembered, and every
//! `--verify-every` kills, and after the last, `checks.rs` judges the data dir. The
//! store is dropped before the next kill, so the next workload opens a data dir this
//! process has just closed (the condition of the failure that led to this harness; see
//! `docs/durability.md`).
//!
//! On the first failure the loop stops and leaves everything in place: the data dir as
//! the failed open found it and the killed workload's stderr, and says where they are.
//! Exit code 0 when every check passed, 1 otherwise.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use glovebox::HostConfig;

use crate::checks::{Acked, check_here, check_in_child};

/// `crash-loop`: kills `write-mix` at random moments, over and over, and checks after
/// every few kills that the data dir opens and holds every acknowledged write.
#[derive(clap::Args)]
pub struct CrashArgs {
    /// The host config whose data dir to run in (or `--dir`).
    #[arg(long, required_unless_present = "dir", conflicts_with = "dir")]
    config: Option<PathBuf>,
    /// How many times to kill the workload.
    #[arg(long, default_value_t = 50)]
    kills: usize,
    /// Check the data dir after every this many kills (and after the last).
    #[arg(long, default_value_t = 10)]
    verify_every: usize,
    /// Kill no sooner than this many milliseconds after the workload started
    /// (every other kill: after its first acknowledged write).
    #[arg(long, default_value_t = 0)]
    min_ms: u64,
    /// Kill no later than this many milliseconds after the workload started
    /// (or after its first acknowledged write).
    #[arg(long, default_value_t = 300)]
    max_ms: u64,
    /// Writer threads in the workload.
    #[arg(long, default_value_t = 4)]
    writers: usize,
    /// Sessions the workload's event writers share.
    #[arg(long, default_value_t = 3)]
    sessions: usize,
    /// Seed of the kill times and the workload's choices (default: from the clock).
    #[arg(long)]
    seed: Option<u64>,
    /// Run in this directory with a config of its own (`DIR/glovebox.toml`,
    /// data dir `DIR/data`), created if missing, instead of `--config`.
    #[arg(long)]
    dir: Option<PathBuf>,
    /// With `--dir`: the storage backend to write the config with.
    #[arg(long, requires = "dir")]
    backend: Option<String>,
    /// With `--dir`: the durability to write the config with (`flush` or `strict`).
    #[arg(long, requires = "dir")]
    durability: Option<String>,
    /// Every other kill comes from `strace` fault injection instead of a
    /// timer: SIGKILL at the N-th call (N up to 8) of a randomly
    /// picked write-side syscall (write, pwrite64, fsync, fdatasync,
    /// sync_file_range, rename, ftruncate, unlink), which hits windows of
    /// microseconds that a timer almost never does. Needs `strace`.
    #[arg(long)]
    inject: bool,
}

/// The syscalls `--inject` kills at: every way the backends change a file.
const INJECT_SYSCALLS: [&str; 8] = [
    "write",
    "pwrite64",
    "fsync",
    "fdatasync",
    "sync_file_range",
    "rename",
    "ftruncate",
    "unlink",
];

/// A tiny deterministic generator for kill times.
struct Lcg(u64);

impl Lcg {
    fn next(&mut self) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        self.0 >> 33
    }
}

pub fn run(args: CrashArgs) -> Result<ExitCode> {
    if args.max_ms < args.min_ms {
        bail!(
            "--max-ms {} is below --min-ms {}: give a window to kill in",
            args.max_ms,
            args.min_ms
        );
    }
    let config = match (&args.dir, &args.config) {
        (Some(dir), _) => write_config(dir, args.backend.as_deref(), args.durability.as_deref())?,
        (None, Some(config)) => config.clone(),
        (None, None) => bail!("give `--dir DIR` (a run of its own) or `--config FILE`"),
    };
    let loaded = HostConfig::load(&config)?;
    let data_dir = loaded.data_dir.clone();
    let exe =
        std::env::current_exe().context("cannot find this test binary to run the workload")?;
    let seed = args.seed.unwrap_or_else(|| {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos() as u64)
            .unwrap_or(1)
    });
    let child_log = data_dir
        .parent()
        .unwrap_or(Path::new("."))
        .join("crash-workload.stderr");
    println!(
        "crash-loop: {} kills, check every {}, kill {}..{} ms after start, {} writers, seed {seed}",
        args.kills, args.verify_every, args.min_ms, args.max_ms, args.writers
    );
    println!(
        "crash-loop: config {}, data dir {}, backend {}, durability {:?}",
        config.display(),
        data_dir.display(),
        loaded.storage.backend,
        loaded.storage.durability
    );
    let mut rng = Lcg(seed);
    let mut acked = Acked::default();
    let started = Instant::now();
    let mut checks = 0;
    let mut first_acks: Vec<Duration> = Vec::new();
    let mut injected_kills = 0;
    for round in 0..args.kills {
        let injected = (args.inject && round % 2 == 1).then(|| {
            let syscall = INJECT_SYSCALLS[(rng.next() % INJECT_SYSCALLS.len() as u64) as usize];
            (syscall, 1 + rng.next() % 8)
        });
        let mut command = match injected {
            Some((syscall, nth)) => {
                let mut c = Command::new("strace");
                // (Not `--seccomp-bpf`: strace 6.1 then never injects.)
                c.args(["-f", "-qq", "-o", "/dev/null"])
                    .arg(format!("--trace={syscall}"))
                    .arg(format!("--inject={syscall}:signal=KILL:when={nth}"))
                    .arg(&exe);
                c
            }
            None => Command::new(&exe),
        };
        // Its own process group, so a kill reaches strace's tracee too.
        std::os::unix::process::CommandExt::process_group(&mut command, 0);
        let mut child = command
            .arg("write-mix")
            .arg("--config")
            .arg(&config)
            .args(["--writers", &args.writers.to_string()])
            .args(["--sessions", &args.sessions.to_string()])
            .args(["--seed", &rng.next().to_string()])
            .stdout(Stdio::piped())
            .stderr(
                std::fs::File::create(&child_log)
                    .with_context(|| format!("cannot create `{}`", child_log.display()))?,
            )
            .spawn()
            .with_context(|| match injected {
                Some(_) => {
                    "cannot start `strace` (needed by --inject: apt-get install strace)".to_string()
                }
                None => format!("cannot start `{}`", exe.display()),
            })?;
        let spawned = Instant::now();
        let stdout = child.stdout.take().context("the workload has no stdout")?;
        let (first_tx, first_rx) = std::sync::mpsc::channel();
        let reader = std::thread::spawn(move || {
            let mut first = None;
            let mut lines = Vec::new();
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                if first.is_none() {
                    first = Some(spawned.elapsed());
                    let _ = first_tx.send(());
                }
                lines.push(line);
            }
            (first, lines)
        });
        // Every other kill is timed from the start, so some land while the
        // store opens and recovers; the others from the first acknowledged
        // write, so they land among the writes however long the start takes.
        let window = args.max_ms - args.min_ms;
        let delay = args.min_ms + if window == 0 { 0 } else { rng.next() % window };
        let ended_early = if injected.is_some() {
            // strace kills it at the chosen syscall; the timer is the
            // fallback for a run that never makes that many such calls.
            let until = Instant::now() + Duration::from_secs(3);
            loop {
                if let Some(status) = child.try_wait()? {
                    break Some(status);
                }
                if Instant::now() >= until {
                    break None;
                }
                std::thread::sleep(Duration::from_millis(5));
            }
        } else {
            if rng.next() % 2 == 1 {
                let _ = first_rx.recv_timeout(Duration::from_secs(30));
            }
            std::thread::sleep(Duration::from_millis(delay));
            child.try_wait()?
        };
        kill_group(&mut child);
        child.wait()?;
        let (first, lines) = reader
            .join()
            .map_err(|_| anyhow::anyhow!("the reader of the workload's output panicked"))?;
        first_acks.extend(first);
        for line in &lines {
            acked.take(line);
        }
        if injected.is_some()
            && ended_early
                .is_some_and(|s| std::os::unix::process::ExitStatusExt::signal(&s) == Some(9))
        {
            // strace's SIGKILL came first: its exit is the workload's death.
            injected_kills += 1;
        } else if let Some(status) = ended_early {
            return failed(
                round,
                &data_dir,
                &child_log,
                format!("the workload ended by itself ({status}) before it was killed"),
            );
        }
        if round % args.verify_every.max(1) == args.verify_every.max(1) - 1
            || round + 1 == args.kills
        {
            checks += 1;
            if let Err(e) = check_in_child(&config) {
                return failed(round, &data_dir, &child_log, format!("{e:#}"));
            }
            match check_here(&loaded, &acked) {
                Ok(repairs) => acked.repairs += repairs,
                Err(e) => return failed(round, &data_dir, &child_log, format!("{e:#}")),
            }
            println!(
                "crash-loop: {} kills, {} acknowledged writes, check {checks} ok ({:.0?})",
                round + 1,
                acked.total,
                started.elapsed()
            );
        }
    }
    first_acks.sort();
    let median = first_acks
        .get(first_acks.len() / 2)
        .map(|d| format!("{d:.1?}"))
        .unwrap_or_else(|| "-".into());
    println!(
        "crash-loop: passed: {} kills ({injected_kills} at an injected syscall), {} acknowledged writes ({} events in {} sessions, {} records), {checks} checks, 0 failed opens ({} repaired at open), 0 lost, 0 broken chains; median time to the first ack {median}; data dir {}; {:.0?}",
        args.kills,
        acked.total,
        acked.events.values().map(Vec::len).sum::<usize>(),
        acked.events.len(),
        acked.records.len(),
        acked.repairs,
        glovebox::manifest::approximate_size(glovebox::store_admin::dir_size(&data_dir)),
        started.elapsed()
    );
    if acked.total < args.kills as u64 {
        println!(
            "crash-loop: failed: only {} acknowledged writes in {} runs: the workload barely got going; raise --max-ms",
            acked.total, args.kills
        );
        return Ok(ExitCode::FAILURE);
    }
    Ok(ExitCode::SUCCESS)
}

fn failed(round: usize, data_dir: &Path, child_log: &Path, what: String) -> Result<ExitCode> {
    println!("crash-loop: FAILED after kill {}: {what}", round + 1);
    println!(
        "crash-loop: the data dir is left as it was found: {}",
        data_dir.display()
    );
    println!(
        "crash-loop: the last workload's stderr: {}",
        child_log.display()
    );
    Ok(ExitCode::FAILURE)
}

/// `DIR/glovebox.toml` for a harness run of its own, with a checkpoint every
/// 16 events so checkpoints are written often.
fn write_config(dir: &Path, backend: Option<&str>, durability: Option<&str>) -> Result<PathBuf> {
    std::fs::create_dir_all(dir).with_context(|| format!("cannot create `{}`", dir.display()))?;
    let path = dir.join("glovebox.toml");
    let mut text = String::from(
        "# Written by the crash harness (`crash-loop --dir`, tests/crash/).\ndata_dir = \"data\"\nhooks = \"none\"\n\n[storage]\ncheckpoint_every = 16\n",
    );
    if let Some(backend) = backend {
        text.push_str(&format!("backend = {backend:?}\n"));
    }
    if let Some(durability) = durability {
        text.push_str(&format!("durability = {durability:?}\n"));
    }
    std::fs::write(&path, text).with_context(|| format!("cannot write `{}`", path.display()))?;
    Ok(path)
}

/// SIGKILL to the workload's process group (the workload, or strace and
/// the workload it traces).
fn kill_group(child: &mut std::process::Child) {
    let group = format!("-{}", child.id());
    let killed = Command::new("kill")
        .args(["-KILL", "--", &group])
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if !killed {
        let _ = child.kill();
    }
}
