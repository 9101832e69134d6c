//! `glovebox debug ...`: hidden commands that test the host itself.

use std::io::Write;
use std::path::Path;
use std::process::ExitCode;
use std::sync::Mutex;

use anyhow::Result;
use clap::Subcommand;
use glovebox::HostConfig;
use glovebox::session::{EventKind, Role, StartSession};

#[derive(Subcommand)]
pub enum DebugCommand {
    /// Append notes to sessions from several writer threads, printing one line
    /// per acknowledged event: `ack <session id> <seq> <hash>`. Used by the
    /// crash test, which kills this process at random moments.
    Append {
        /// Sessions to spread the appends over (created if fewer exist).
        #[arg(long, default_value_t = 4)]
        sessions: usize,
        #[arg(long, default_value_t = 4)]
        writers: usize,
        /// Appends per writer (0: until killed).
        #[arg(long, default_value_t = 0)]
        count: u64,
    },
}

pub fn run(config: &Path, command: DebugCommand) -> Result<ExitCode> {
    let DebugCommand::Append {
        sessions: n,
        writers,
        count,
    } = command;
    let config = HostConfig::load(config)?;
    let sessions = glovebox::open_sessions(&config)?.sessions;
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
            })?,
        };
        ids.push(state.id);
    }
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
                            let mut out = out
                                .lock()
                                .unwrap_or_else(std::sync::PoisonError::into_inner);
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
