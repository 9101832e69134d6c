//! Sessions of a given length, and timed reloads of them (used by `resume`
//! and `compare`).

use std::time::{Duration, Instant};

use glovebox::Sessions;
use glovebox::session::{EventKind, Role, StartSession};

/// Starts a session and appends `n` note events to it from 4 threads, as
/// concurrent calls of one session would; returns its id.
pub fn fill(sessions: &Sessions, n: u64) -> String {
    let id = sessions
        .start(StartSession {
            role: Role::Workagent,
            project: "bench".into(),
            name: None,
            tags: vec![],
            expected_duration: None,
            budget: Default::default(),
        })
        .expect("start")
        .id;
    std::thread::scope(|s| {
        for w in 0..4 {
            let id = &id;
            s.spawn(move || {
                for i in 0..(n - 1) / 4 + 1 {
                    let text = format!("writer {w} step {i}: {}", "x".repeat(120));
                    sessions
                        .append(id, EventKind::Note { text })
                        .expect("append");
                }
            });
        }
    });
    id
}

/// The median of 7 reloads of session `id` from storage, and the events each read.
pub fn median_load(sessions: &Sessions, id: &str, checkpoints: bool) -> (Duration, u64) {
    let mut times = Vec::new();
    let mut read = 0;
    for _ in 0..7 {
        let start = Instant::now();
        let (_, stats) = sessions.reload(id, checkpoints).expect("reload");
        times.push(start.elapsed());
        read = stats.events_read;
    }
    times.sort();
    (times[times.len() / 2], read)
}

pub fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}
