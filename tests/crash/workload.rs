//! The workloads: the processes the trials kill or run, each acknowledged write
//! printed as one line once it is durable.
//!
//! Why a module of its own: the workload is the half of the harness that writes, and it
//! must stay apart from the half that judges (`checks.rs`), which trusts only what was
//! printed here before the kill. It runs in a process of its own (this test binary
//! re-executed with `write-mix` or `append`), so a SIGKILL takes it down mid-write the
//! way it takes a server down, while the harness and the checks live on.
//!
//! - `write-mix`: every kind of write Glovebox makes, from several threads, each
//!   acknowledged write printed as `ack <kind> <id> <what> .`; what the crash loop
//!   (`kill_loop.rs`) kills at random moments, and what the store tests run to
//!   completion to fill a data dir with records of every kind.
//! - `append`: notes appended to sessions from several writer threads, each printed as
//!   `ack <session id> <seq> <hash>`; a process that holds the data dir and writes (the
//!   second-process, backup-while-writing and strict-durability trials).

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::{Arc, Mutex, PoisonError};

use anyhow::Result;
use glovebox::HostConfig;
use glovebox::approvals::{Approval, ApprovalStatus, Approvals};
use glovebox::jobs::{JobInfo, JobStatus, JobStore};
use glovebox::manifest::ContextWriter;
use glovebox::rescue::{Category, Outcome, Rescues};
use glovebox::session::{
    Commit, EndOutcome, EventKind, Handoff, HandoffKind, Role, Sessions, StartSession, digest,
};

/// `append`: notes appended to sessions from several writer threads, one line per
/// acknowledged event: `ack <session id> <seq> <hash>`.
#[derive(clap::Args)]
pub struct AppendArgs {
    /// The host config whose data dir to write to.
    #[arg(long)]
    config: PathBuf,
    /// Sessions to spread the appends over (created if fewer exist).
    #[arg(long, default_value_t = 4)]
    sessions: usize,
    #[arg(long, default_value_t = 4)]
    writers: usize,
    /// Appends per writer (0: until killed).
    #[arg(long, default_value_t = 0)]
    count: u64,
}

/// `write-mix`: every kind of write Glovebox makes (session events and checkpoints,
/// handoffs, job records, approvals, rescues, context entries, archived sessions and
/// their scratch directories), from several threads, until killed. Prints
/// `ack <kind> <id> <what> .` once each write is durable (see `checks.rs` for the kinds).
#[derive(clap::Args)]
pub struct WriteMixArgs {
    /// The host config whose data dir to write to.
    #[arg(long)]
    config: PathBuf,
    /// Sessions the event writers share (created if fewer exist).
    #[arg(long, default_value_t = 3)]
    sessions: usize,
    #[arg(long, default_value_t = 4)]
    writers: usize,
    /// Seed of the writers' choices.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Operations per writer (0: until killed).
    #[arg(long, default_value_t = 0)]
    count: u64,
}

/// The shared sessions the writers append to, created if missing.
fn stress_sessions(sessions: &Sessions, n: usize) -> Result<Vec<String>> {
    let mut ids = Vec::new();
    for i in 0..n {
        let name = format!("stress-{i}");
        let state = match sessions.show(&name) {
            Ok(s) => s,
            Err(_) => sessions.start(StartSession {
                role: Role::Workagent,
                project: "crash-test".into(),
                name: Some(name),
                tags: vec!["stress".into()],
                expected_duration: None,
                budget: Default::default(),
                completion: Default::default(),
            })?,
        };
        ids.push(state.header.id);
    }
    Ok(ids)
}

pub fn append(args: AppendArgs) -> Result<ExitCode> {
    let AppendArgs {
        config,
        sessions: n,
        writers,
        count,
    } = args;
    let config = HostConfig::load(&config)?;
    let sessions = glovebox::open_sessions(&config)?.sessions;
    let ids = stress_sessions(&sessions, n)?;
    let out = Mutex::new(std::io::stdout());
    std::thread::scope(|scope| {
        for w in 0..writers {
            let (sessions, ids, out) = (&sessions, &ids, &out);
            scope.spawn(move || {
                let mut i = 0u64;
                while count == 0 || i < count {
                    let id = &ids[(w + i as usize) % ids.len()];
                    let kind = EventKind::Note {
                        text: format!("writer {w} note {i}"),
                    };
                    match sessions.append(id, kind) {
                        Ok(event) => {
                            let mut out = out.lock().unwrap_or_else(PoisonError::into_inner);
                            // The line is printed only after the append is durable.
                            let _ =
                                writeln!(out, "ack {} {} {}", event.session, event.seq, event.hash);
                            let _ = out.flush();
                        }
                        Err(e) => {
                            eprintln!("append failed: {e}");
                            return;
                        }
                    }
                    i += 1;
                }
            });
        }
    });
    Ok(ExitCode::SUCCESS)
}

/// What the write-mix writers share.
struct Mix {
    sessions: Arc<Sessions>,
    approvals: Approvals,
    jobs: JobStore,
    rescues: Rescues,
    scratch_root: PathBuf,
    ids: Vec<String>,
    out: Mutex<std::io::Stdout>,
}

impl Mix {
    /// Prints one acknowledged write. Called only once the write returned,
    /// that is, once it is durable.
    fn ack(&self, line: std::fmt::Arguments<'_>) {
        let mut out = self.out.lock().unwrap_or_else(PoisonError::into_inner);
        let _ = writeln!(out, "ack {line} .");
        let _ = out.flush();
    }

    fn event(&self, event: &glovebox::session::Event) {
        self.ack(format_args!(
            "event {} {} {}",
            event.session, event.seq, event.hash
        ));
    }
}

pub fn write_mix(args: WriteMixArgs) -> Result<ExitCode> {
    let WriteMixArgs {
        config,
        sessions: n,
        writers,
        seed,
        count,
    } = args;
    let config = HostConfig::load(&config)?;
    let durable = glovebox::open_sessions(&config)?;
    for repair in &durable.repairs {
        // Counted by the crash harness.
        println!("repaired {repair}");
    }
    let ids = stress_sessions(&durable.sessions, n.max(1))?;
    let mix = Mix {
        approvals: Approvals::new(durable.storage.clone()),
        jobs: JobStore::new(durable.storage.clone()),
        rescues: Rescues::new(
            durable.sessions.clone(),
            durable.storage.clone(),
            config.context.clone(),
        ),
        sessions: durable.sessions.clone(),
        scratch_root: config.scratch_dir(),
        ids,
        out: Mutex::new(std::io::stdout()),
    };
    let failed = std::sync::atomic::AtomicBool::new(false);
    std::thread::scope(|scope| {
        for w in 0..writers {
            let (mix, failed) = (&mix, &failed);
            scope.spawn(move || {
                let mut rng = seed
                    ^ (w as u64 + 1).wrapping_mul(0x9e37_79b9_7f4a_7c15)
                    ^ u64::from(std::process::id());
                let mut i = 0u64;
                while count == 0 || i < count {
                    rng = rng
                        .wrapping_mul(6_364_136_223_846_793_005)
                        .wrapping_add(1_442_695_040_888_963_407);
                    // Writer 0 makes one write of every kind first, so a
                    // finished run holds records of every kind (a random
                    // pick left one out about once in a few hundred runs).
                    let pick = match (w, i) {
                        (0, i) if i < 20 => i,
                        _ => (rng >> 33) % 20,
                    };
                    if let Err(e) = one_write(mix, w, i, pick) {
                        eprintln!("writer {w}: write {i} failed: {e:#}");
                        failed.store(true, std::sync::atomic::Ordering::SeqCst);
                        return;
                    }
                    i += 1;
                }
            });
        }
    });
    Ok(if failed.into_inner() {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    })
}

/// One write (or a short sequence of them) of the kind `pick` selects.
fn one_write(mix: &Mix, w: usize, i: u64, pick: u64) -> Result<()> {
    let shared = &mix.ids[(w + i as usize) % mix.ids.len()];
    let now = mix.rescues.now();
    match pick {
        // A call's records as the pipeline writes them: the write-ahead batch
        // (requested, a decision, started), then finished. An idempotent call's
        // batch is not waited for (it is acknowledged with its durable
        // `finished`); another's is durable before the call "runs".
        8..=11 => {
            let idempotent = pick < 10;
            let call_id = format!("call-w{w}-{i}-{:06x}", now & 0xff_ffff);
            let commit = if idempotent {
                Commit::Deferred
            } else {
                Commit::Durable
            };
            let input = format!("{{\"writer\":{w},\"i\":{i}}}");
            let batch = vec![
                EventKind::CallRequested {
                    call_id: call_id.clone(),
                    tool: "echo.echo".into(),
                    input_digest: digest(input.as_bytes()),
                    input: Some(input),
                    job_id: None,
                    trace_id: None,
                    parent_call: None,
                },
                EventKind::CallDecided {
                    call_id: call_id.clone(),
                    hook: "crash-test".into(),
                    pattern: "*".into(),
                    decision: "allow".into(),
                    reason: None,
                    alternatives: Vec::new(),
                    took_ms: 0,
                    hook_digest: None,
                },
                EventKind::CallStarted {
                    call_id: call_id.clone(),
                    tool: "echo.echo".into(),
                    idempotency_key: format!("{shared}/{call_id}"),
                    idempotent,
                    tool_digest: "0".repeat(64),
                    cost_micros: 0,
                },
            ];
            let (recorded, ()) = mix
                .sessions
                .append_with_commit(shared, commit, |_, _| (batch, ()))?;
            if !idempotent {
                recorded.iter().for_each(|e| mix.event(e));
            }
            let finished = mix.sessions.append(
                shared,
                EventKind::CallFinished {
                    call_id,
                    outcome: "ok".into(),
                    error: None,
                    output: Some("{}".into()),
                    output_digest: digest(b"{}"),
                    metering: Default::default(),
                },
            )?;
            if idempotent {
                recorded.iter().for_each(|e| mix.event(e));
            }
            mix.event(&finished);
        }
        // Notes: most of what a session log holds; every `checkpoint_every`
        // events a checkpoint is written with them.
        0..=7 => {
            let event = mix.sessions.append(
                shared,
                EventKind::Note {
                    text: format!("writer {w} note {i}"),
                },
            )?;
            mix.event(&event);
        }
        // A handoff: an event and a checkpoint.
        12 => {
            let mut handoff = Handoff::new(
                HandoffKind::Continuation,
                Role::Workagent,
                format!("writer {w} step {i}"),
            );
            handoff.notes.current_phase = "crash-test".into();
            handoff.notes.next_steps = vec![format!("step {}", i + 1)];
            let event = mix.sessions.handoff(shared, handoff)?;
            mix.event(&event);
        }
        // A background job's record through its lifecycle.
        13 | 14 => {
            let id = format!("job-w{w}x{i}x{:06x}", now & 0xff_ffff);
            let input = format!("{{\"writer\":{w},\"i\":{i}}}");
            let mut job = JobInfo::queued(&id, shared, "echo.echo", input, true, now);
            mix.jobs.put(&job)?;
            mix.ack(format_args!("job {id} queued"));
            job.status = JobStatus::Running;
            job.started_at_ms = Some(now);
            job.attempts = 1;
            mix.jobs.put(&job)?;
            mix.ack(format_args!("job {id} running"));
            mix.jobs.update(&id, |job| {
                job.status = JobStatus::Completed;
                job.finished_at_ms = Some(now);
                true
            })?;
            mix.ack(format_args!("job {id} completed"));
        }
        // An approval asked, then settled.
        15 => {
            let id = Approvals::new_id();
            let mut approval = Approval {
                id: id.clone(),
                session: shared.clone(),
                session_name: None,
                call_id: format!("call-w{w}-{i}"),
                tool: "files.write".into(),
                tool_digest: "0".repeat(64),
                input_hash: "0".repeat(64),
                input: "{}".into(),
                action: "write:files".into(),
                hook: "destructive-gate".into(),
                pattern: "write:*".into(),
                reason: "crash test".into(),
                requested_at_ms: now,
                status: ApprovalStatus::Pending,
                principal: None,
                job: None,
            };
            mix.approvals.put(&approval)?;
            mix.ack(format_args!("approval {id} pending"));
            approval.status = ApprovalStatus::Approved {
                at_ms: now,
                by: Some("crash-test".into()),
            };
            mix.approvals.settle(&approval)?;
            mix.ack(format_args!("approval {id} approved"));
        }
        // A rescue of a fresh session, from open to resolved with a context
        // entry; its events go to that session's log.
        16 => {
            let state = mix.sessions.start(StartSession {
                role: Role::Workagent,
                project: "crash-test".into(),
                name: None,
                tags: vec!["rescued".into()],
                expected_duration: None,
                budget: Default::default(),
                completion: Default::default(),
            })?;
            mix.ack(format_args!("session {} created", state.header.id));
            let session = state.header.id;
            let rescue = mix.rescues.open(&session, None)?;
            mix.ack(format_args!("rescue {} open", rescue.id));
            mix.rescues.diagnose(
                &rescue.id,
                Category::MissingContext,
                vec![format!("writer {w} op {i}")],
                "the crash test asked for it",
            )?;
            mix.ack(format_args!("rescue {} diagnosed", rescue.id));
            let resolved = mix.rescues.resolve(
                &rescue.id,
                Outcome::Resolved,
                &[format!("writer {w} learned {i}")],
            )?;
            mix.ack(format_args!("rescue {} resolved", resolved.id));
        }
        // A context entry added, then retired.
        17 => {
            let entry = mix.rescues.index().add(
                "crash-test",
                &format!("writer {w} fact {i}"),
                ContextWriter::Operator,
                None,
                now,
            )?;
            mix.ack(format_args!("context {} added", entry.id));
            mix.rescues
                .index()
                .retire(&entry.id, ContextWriter::Operator, now)?;
            mix.ack(format_args!("context {} retired", entry.id));
        }
        // A short session with a scratch file, ended and archived: archiving
        // removes the scratch directory (the sweep at the next start does,
        // if the kill came between the two).
        _ => {
            let state = mix.sessions.start(StartSession {
                role: Role::Workagent,
                project: "crash-test".into(),
                name: None,
                tags: vec!["scratch".into()],
                expected_duration: None,
                budget: Default::default(),
                completion: Default::default(),
            })?;
            mix.ack(format_args!("session {} created", state.header.id));
            let dir = glovebox::scratch::ScratchDirs::new(mix.scratch_root.clone())
                .path_of(&state.header.id)?;
            std::fs::create_dir_all(&dir)?;
            std::fs::write(dir.join("notes.txt"), format!("writer {w} op {i}"))?;
            mix.sessions.end(&state.header.id, EndOutcome::Completed)?;
            mix.sessions.archive(&state.header.id)?;
            mix.ack(format_args!("session {} archived", state.header.id));
        }
    }
    Ok(())
}
