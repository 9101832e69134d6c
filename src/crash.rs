//! `glovebox debug crash-loop`: the crash harness.
//!
//! Runs `glovebox debug write-mix` (every kind of write Glovebox makes, from
//! several threads) and kills it with SIGKILL at a random moment, over and
//! over, on one data dir: every other kill is timed from the process start,
//! so it may land while the store opens and recovers, the others from the
//! first acknowledged write, so they land among the writes. Each acknowledged write the workload printed before
//! it died is remembered. Every `--verify-every` kills, and after the last,
//! the data dir is checked twice: by `glovebox store check` in a separate
//! process, then in this process the way a server opens it (recovery
//! included), which must find every acknowledged write, every session's hash
//! chain whole, and a checkpointed resume equal to a full replay. The store
//! is dropped before the next kill, so the next workload opens a data dir
//! this process has just closed (the condition of the failure that led to
//! this harness; see `docs/durability.md`).
//!
//! On the first failure the harness stops and leaves everything in place:
//! the data dir as the failed open found it and the killed workload's stderr,
//! and says where they are. Exit code 0 when every check passed, 1 otherwise.

use crate::exit::Exit;
use std::collections::HashMap;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use glovebox::HostConfig;
use glovebox::approvals::{ApprovalStatus, Approvals};
use glovebox::jobs::{JobStatus, JobStore};
use glovebox::rescue::Rescues;
use glovebox::session::SessionStatus;

#[derive(clap::Args)]
pub struct CrashArgs {
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

/// What the workload acknowledged, by kind, as it printed it.
#[derive(Default)]
struct Acked {
    /// Session id → (sequence, hash) of each acknowledged event.
    events: HashMap<String, Vec<(u64, String)>>,
    /// (kind, id) → the furthest state acknowledged, as a rank in its lifecycle.
    records: HashMap<(Kind, String), u8>,
    total: u64,
    /// Repairs the store made at open (sled's unfinished snapshots): each
    /// one a failed open the repair turned into a good one.
    repairs: u64,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum Kind {
    Job,
    Approval,
    Rescue,
    Context,
    Session,
}

impl Kind {
    fn parse(word: &str) -> Option<Kind> {
        Some(match word {
            "job" => Kind::Job,
            "approval" => Kind::Approval,
            "rescue" => Kind::Rescue,
            "context" => Kind::Context,
            "session" => Kind::Session,
            _ => return None,
        })
    }

    /// The rank of state `what` in this kind's lifecycle: a record read back
    /// must be at least as far along as the furthest state acknowledged (a
    /// later write may have landed without being acknowledged).
    fn rank(self, what: &str) -> Option<u8> {
        Some(match (self, what) {
            (Kind::Job, "queued") => 0,
            (Kind::Job, "running") => 1,
            (Kind::Job, "completed") => 2,
            (Kind::Approval, "pending") => 0,
            (Kind::Approval, "approved") => 1,
            (Kind::Rescue, "open") => 0,
            (Kind::Rescue, "diagnosed") => 1,
            (Kind::Rescue, "resolved") => 2,
            (Kind::Context, "added") => 0,
            (Kind::Context, "retired") => 1,
            (Kind::Session, "created") => 0,
            (Kind::Session, "archived") => 1,
            _ => return None,
        })
    }
}

impl Acked {
    /// Takes one line of the workload's stdout. A line the kill cut short
    /// lacks its closing ` .` and was never acknowledged to us: skipped.
    fn take(&mut self, line: &str) {
        if line.starts_with("repaired ") {
            self.repairs += 1;
            return;
        }
        let words: Vec<&str> = line.split(' ').collect();
        match words[..] {
            ["ack", "event", session, seq, hash, "."] if hash.len() == 64 => {
                if let Ok(seq) = seq.parse() {
                    self.events
                        .entry(session.to_string())
                        .or_default()
                        .push((seq, hash.to_string()));
                    self.total += 1;
                }
            }
            ["ack", kind, id, what, "."] => {
                let Some(kind) = Kind::parse(kind) else {
                    return;
                };
                let Some(rank) = kind.rank(what) else {
                    return;
                };
                let slot = self.records.entry((kind, id.to_string())).or_insert(0);
                *slot = (*slot).max(rank);
                self.total += 1;
            }
            _ => {}
        }
    }
}

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

pub fn run(config: &Path, args: CrashArgs) -> Result<ExitCode> {
    if args.max_ms < args.min_ms {
        bail!(
            "--max-ms {} is below --min-ms {}: give a window to kill in",
            args.max_ms,
            args.min_ms
        );
    }
    let config = match &args.dir {
        Some(dir) => write_config(dir, args.backend.as_deref(), args.durability.as_deref())?,
        None => config.to_path_buf(),
    };
    let loaded = HostConfig::load(&config)?;
    let data_dir = loaded.data_dir.clone();
    let exe = std::env::current_exe().context("cannot find the glovebox executable")?;
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
            .arg("--config")
            .arg(&config)
            .args(["debug", "write-mix"])
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
            if let Err(e) = check_in_child(&exe, &config) {
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
        return Ok(Exit::Failed.into());
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
    Ok(Exit::Failed.into())
}

/// `DIR/glovebox.toml` for a harness run of its own, with a checkpoint every
/// 16 events so checkpoints are written often.
fn write_config(dir: &Path, backend: Option<&str>, durability: Option<&str>) -> Result<PathBuf> {
    std::fs::create_dir_all(dir).with_context(|| format!("cannot create `{}`", dir.display()))?;
    let path = dir.join("glovebox.toml");
    let mut text = String::from(
        "# Written by `glovebox debug crash-loop --dir`.\ndata_dir = \"data\"\nhooks = \"none\"\n\n[storage]\ncheckpoint_every = 16\n",
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

/// `glovebox store check` in a process of its own.
fn check_in_child(exe: &Path, config: &Path) -> Result<()> {
    let out = Command::new(exe)
        .arg("--config")
        .arg(config)
        .args(["store", "check"])
        .output()
        .context("cannot run `glovebox store check`")?;
    if !out.status.success() {
        bail!(
            "`glovebox store check` failed ({}): {}{}",
            out.status,
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }
    Ok(())
}

/// Opens the data dir here, as a server does, and checks every acknowledged
/// write; the store is dropped on return.
fn check_here(config: &HostConfig, acked: &Acked) -> Result<u64> {
    let durable = glovebox::open_sessions(config).context("the data dir does not open")?;
    for repair in &durable.repairs {
        println!("crash-loop: repaired at open: {repair}");
    }
    let sessions = &durable.sessions;
    for report in sessions.verify_all()? {
        if !report.ok {
            bail!(
                "the hash chain of session {} is broken: {report:?}",
                report.session
            );
        }
    }
    for (session, acks) in &acked.events {
        let events = sessions
            .events(session, 1, usize::MAX)
            .with_context(|| format!("cannot read session {session}"))?;
        for (i, e) in events.iter().enumerate() {
            if e.seq != i as u64 + 1 {
                bail!("session {session} has a gap before event {}", e.seq);
            }
        }
        for (seq, hash) in acks {
            let Some(event) = events.get((*seq - 1) as usize) else {
                bail!(
                    "acknowledged event {session}#{seq} is missing (the log ends at {})",
                    events.len()
                );
            };
            if &event.hash != hash {
                bail!(
                    "acknowledged event {session}#{seq} differs: hash {} now, {hash} when acknowledged",
                    event.hash
                );
            }
        }
        let (with, _) = sessions.reload(session, true)?;
        let (without, _) = sessions.reload(session, false)?;
        if serde_json::to_value(&with)? != serde_json::to_value(&without)? {
            bail!("session {session}: the resume from a checkpoint differs from a full replay");
        }
    }
    let jobs = JobStore::new(durable.storage.clone());
    let approvals = Approvals::new(durable.storage.clone());
    let rescues = Rescues::new(
        durable.sessions.clone(),
        durable.storage.clone(),
        config.context.clone(),
    );
    let scratch = glovebox::scratch::ScratchDirs::new(config.scratch_dir());
    for ((kind, id), &rank) in &acked.records {
        let found: Option<u8> = match kind {
            Kind::Job => jobs.get(id).ok().map(|j| match j.status {
                JobStatus::Queued => 0,
                JobStatus::Running => 1,
                _ => 2,
            }),
            Kind::Approval => approvals.get(id).ok().map(|a| match a.status {
                ApprovalStatus::Pending => 0,
                _ => 1,
            }),
            Kind::Rescue => rescues
                .get(id)
                .ok()
                .and_then(|r| Kind::Rescue.rank(r.status())),
            Kind::Context => rescues
                .index()
                .get(id)
                .ok()
                .map(|e| u8::from(e.retired_at_ms.is_some())),
            Kind::Session => sessions
                .show(id)
                .ok()
                .map(|s| u8::from(s.header.status == SessionStatus::Archived)),
        };
        match found {
            None => bail!("acknowledged {kind:?} `{id}` is missing"),
            Some(found) if found < rank => bail!(
                "acknowledged {kind:?} `{id}` went back: it is at step {found} of its lifecycle, step {rank} was acknowledged"
            ),
            Some(_) => {}
        }
        // An archived session's scratch directory is gone once the store
        // has been opened (archive removes it; the sweep at open does if the
        // kill came in between).
        if *kind == Kind::Session && rank == 1 && scratch.path_of(id)?.exists() {
            bail!("session {id} is archived but its scratch directory is still there");
        }
    }
    Ok(durable.repairs.len() as u64)
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
