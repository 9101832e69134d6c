//! The checks: what the workload acknowledged, and whether a data dir still holds it.
//!
//! Why a module of its own: this is the judge, and it must not share the writers'
//! state. It knows the workload only by the lines the workload printed before it died
//! (a line the kill cut short lacks its closing ` .` and counts for nothing), and it
//! reads the data dir back the two ways an operator would: `glovebox store check` (the
//! real binary) in a process of its own, then an open in this process the way a server
//! opens (recovery included), which must find every acknowledged event with its hash,
//! every record at least as far along its lifecycle as acknowledged, every chain whole,
//! every checkpointed resume equal to a full replay, and no scratch directory of an
//! archived session.

use std::collections::HashMap;
use std::path::Path;
use std::process::Command;

use anyhow::{Context, Result, bail};
use glovebox::HostConfig;
use glovebox::approvals::{ApprovalStatus, Approvals};
use glovebox::jobs::{JobStatus, JobStore};
use glovebox::rescue::Rescues;
use glovebox::session::SessionStatus;

/// What the workload acknowledged, by kind, as it printed it.
#[derive(Default)]
pub struct Acked {
    /// Session id → (sequence, hash) of each acknowledged event.
    pub events: HashMap<String, Vec<(u64, String)>>,
    /// (kind, id) → the furthest state acknowledged, as a rank in its lifecycle.
    pub records: HashMap<(Kind, String), u8>,
    pub total: u64,
    /// Repairs the store made at open (sled's unfinished snapshots): each
    /// one a failed open the repair turned into a good one.
    pub repairs: u64,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Kind {
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
    pub fn take(&mut self, line: &str) {
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

/// `glovebox store check` in a process of its own.
pub fn check_in_child(config: &Path) -> Result<()> {
    let out = Command::new(env!("CARGO_BIN_EXE_glovebox"))
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
pub fn check_here(config: &HostConfig, acked: &Acked) -> Result<u64> {
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
