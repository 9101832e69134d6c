//! The store under the sessions: the crash harness, `glovebox store
//! check|backup|restore`, and what an operator sees when a store does not
//! open. docs/threats.md "Durability", against the real binary.
//!
//! Why here and not in the `all` binary: every trial needs the workload (the crash
//! loop kills it; the others fill a data dir with it, or hold the data dir with a
//! process that writes), which only this binary has.

use std::io::{BufRead, BufReader};
use std::process::{Child, Stdio};

use crate::crash_binary;
use crate::util::Site;

/// Kills made by the crash test on the default backend: 200 in CI, more with
/// `GLOVEBOX_CRASH_KILLS` (docs/durability.md's `GLOVEBOX_CRASH_KILLS=1000 cargo test
/// --release --test crash -- store::crash_test_sigkill`).
fn kills() -> usize {
    std::env::var("GLOVEBOX_CRASH_KILLS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(200)
}

/// Runs the crash harness in a fresh directory and asserts it passed.
fn crash_loop(kills: usize, extra: &[&str]) -> String {
    let dir = tempfile::tempdir().unwrap();
    let out = crash_binary()
        .args(["crash-loop", "--dir"])
        .arg(dir.path())
        .args(["--kills", &kills.to_string()])
        .args(extra)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.stderr);
    if !out.status.success() {
        // Keep the damaged data dir for whoever reads the failure.
        let kept = dir.keep();
        panic!(
            "the crash harness failed ({}); its dir is kept at {}\n{stdout}\n{stderr}",
            out.status,
            kept.display()
        );
    }
    assert!(
        stdout.contains(&format!("crash-loop: passed: {kills} kills")),
        "{stdout}"
    );
    stdout
}

/// Threats 24-25: SIGKILL at random moments (while the store opens and
/// recovers, and among writes of every kind from four threads); a full check
/// every 10 kills in a separate process and in this one; every acknowledged
/// write is there, every chain whole, every checkpointed resume equal to a
/// full replay.
pub fn crash_test_sigkill_during_mixed_writes_loses_nothing_acknowledged() {
    crash_loop(kills(), &[]);
}

/// The same on the backend that is not the default, fewer kills.
pub fn crash_test_on_the_other_backend() {
    let other = match glovebox::manifest::StorageBackend::DEFAULT {
        glovebox::manifest::StorageBackend::Sqlite => "sled",
        glovebox::manifest::StorageBackend::Sled => "sqlite",
        glovebox::manifest::StorageBackend::Nats => unreachable!("the default backend is embedded"),
    };
    crash_loop(50, &["--backend", other]);
}

/// Kills at syscalls a timer almost never hits (strace fault injection: the
/// N-th write, pwrite64, fsync, fdatasync, sync_file_range, rename, ftruncate
/// or unlink), every other round.
pub fn crash_test_with_kills_at_injected_syscalls() {
    crate::util::ensure_debian_tool("strace", "strace");
    let out = crash_loop(40, &["--inject"]);
    assert!(!out.contains("(0 at an injected syscall)"), "{out}");
}

/// Strict durability survives kill -9 just as flush does (what it adds, a
/// power cut, cannot be tested here: see docs/durability.md).
pub fn crash_test_in_strict_mode() {
    crash_loop(30, &["--durability", "strict"]);
}

/// A site with sessions and records of every kind in it, written by the
/// crash harness's workload (run to completion, not killed).
fn site_with_writes(backend: &str) -> Site {
    let site = Site::new(true);
    site.set_config(&format!("backend = \"{backend}\"\n"));
    let out = crash_binary()
        .arg("write-mix")
        .arg("--config")
        .arg(site.config())
        .args(["--writers", "3", "--count", "40", "--seed", "5"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    site
}

fn session_names(site: &Site) -> Vec<String> {
    let list = site.json(&["session", "list", "--json"]);
    let mut names: Vec<String> = list
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["id"].as_str().unwrap().to_string())
        .collect();
    names.sort();
    names
}

pub fn store_check_reports_a_whole_store() {
    for backend in ["sqlite", "sled"] {
        let site = site_with_writes(backend);
        let (code, out, err) = site.run(&["store", "check"]);
        assert_eq!(code, 0, "{backend}: {out}{err}");
        assert!(out.contains("ok: the store is whole"), "{out}");
        assert!(out.contains(&format!("{backend} store in")), "{out}");
        let report = site.json(&["store", "check", "--json"]);
        assert!(report["problems"].as_array().unwrap().is_empty());
        assert!(report["events"].as_u64().unwrap() > 40, "{report}");
        let buckets: Vec<&str> = report["buckets"]
            .as_array()
            .unwrap()
            .iter()
            .map(|b| b[0].as_str().unwrap())
            .collect();
        for bucket in ["approvals", "checkpoints", "jobs", "rescues", "sessions"] {
            assert!(buckets.contains(&bucket), "{backend}: {buckets:?}");
        }
    }
}

/// Threat 26 through `store check`: an altered event is found, named, and the
/// command says what to do; exit code 8.
pub fn store_check_names_a_damaged_session_and_exits_8() {
    let site = site_with_writes("sqlite");
    let stress = site.json(&["session", "show", "stress-0"]);
    let id = stress["id"].as_str().unwrap();
    glovebox_store::sqlite_raw::overwrite_entry(&site.data(), id, 3, b"{\"not\": \"an event\"}");
    let (code, out, err) = site.run(&["store", "check"]);
    assert_eq!(code, 8, "{out}{err}");
    assert!(
        out.contains(&format!(
            "DAMAGED: session {id} (stress-0): its log is damaged from event 3"
        )),
        "{out}"
    );
    assert!(out.contains("glovebox store restore"), "{out}");
}

/// The `append` workload holding the data dir and writing, until killed.
fn writer(site: &Site) -> Child {
    let mut child = crash_binary()
        .arg("append")
        .arg("--config")
        .arg(site.config())
        .args(["--sessions", "2", "--writers", "2"])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    // Wait until it holds the store (it has acknowledged an append).
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    assert!(lines.next().unwrap().unwrap().starts_with("ack "));
    std::thread::spawn(move || for _ in lines {});
    child
}

/// The backup of a SQLite store is made while another process holds the data
/// dir and writes; restored into another data dir it has every session, and
/// every chain verifies.
pub fn store_backup_while_a_process_writes_and_restore_elsewhere() {
    let site = site_with_writes("sqlite");
    let mut live = writer(&site);
    // Check works while it writes, too.
    let (code, out, err) = site.run(&["store", "check"]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains("opened read-only"), "{out}");
    let backup = site.path().join("backup.db");
    let (code, out, err) = site.run(&["store", "backup", backup.to_str().unwrap()]);
    live.kill().unwrap();
    live.wait().unwrap();
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains("backed up the sqlite store"), "{out}");
    // A backup never overwrites.
    let (code, _, err) = site.run(&["store", "backup", backup.to_str().unwrap()]);
    assert_eq!(code, 2);
    assert!(err.contains("exists"), "{err}");

    let other = Site::new(true);
    other.set_config("backend = \"sqlite\"\n");
    let (code, out, err) = other.run(&["store", "restore", backup.to_str().unwrap()]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains("sessions verify"), "{out}");
    let (code, out, err) = other.run(&["store", "check"]);
    assert_eq!(code, 0, "{out}{err}");
    // Every session of the original that existed before the backup is there.
    let restored = session_names(&other);
    for id in session_names(&site) {
        // Sessions started after the backup (none: the writer only appends).
        assert!(restored.contains(&id), "{id} missing from the restore");
    }
}

/// A sled store moves to SQLite: backup with sled configured (server
/// stopped), restore with sqlite configured.
pub fn a_sled_store_moves_to_sqlite_through_backup_and_restore() {
    let site = site_with_writes("sled");
    let before = session_names(&site);
    let events_before = site.json(&["store", "check", "--json"])["events"].clone();
    let backup = site.path().join("sled-backup.db");
    let (code, out, err) = site.run(&["store", "backup", backup.to_str().unwrap()]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains("backed up the sled store"), "{out}");
    // The config now says sqlite: the sled store is refused, with the way out.
    site.set_config("backend = \"sqlite\"\n");
    let (code, _, err) = site.run(&["session", "list"]);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("holds a sled store") && err.contains("glovebox store restore"),
        "{err}"
    );
    let (code, out, err) = site.run(&["store", "restore", backup.to_str().unwrap()]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains("the store that was there is kept in"), "{out}");
    assert_eq!(session_names(&site), before);
    let after = site.json(&["store", "check", "--json"]);
    assert_eq!(after["events"], events_before);
    assert_eq!(after["backend"], "sqlite");
}

/// A restore replaces the whole store: refused while a process holds it.
pub fn store_restore_is_refused_while_a_process_holds_the_data_dir() {
    let site = site_with_writes("sqlite");
    let backup = site.path().join("b.db");
    let (code, _, err) = site.run(&["store", "backup", backup.to_str().unwrap()]);
    assert_eq!(code, 0, "{err}");
    let mut live = writer(&site);
    let (code, _, err) = site.run(&["store", "restore", backup.to_str().unwrap()]);
    live.kill().unwrap();
    live.wait().unwrap();
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("in use by another glovebox process") && err.contains("stop the server"),
        "{err}"
    );
}

/// The store never takes the host down: a database file that is not one is a
/// clear error naming the store dir and the commands that help, not a panic.
pub fn a_store_that_does_not_open_is_an_error_that_says_what_to_run() {
    let site = site_with_writes("sqlite");
    let db = site.data().join("sqlite").join("store.db");
    let _ = std::fs::remove_file(db.with_extension("db-wal"));
    let _ = std::fs::remove_file(db.with_extension("db-shm"));
    std::fs::write(&db, vec![0xa5_u8; 64 * 1024]).unwrap();
    let (code, out, err) = site.run(&["session", "list"]);
    assert_eq!(code, 2, "{out}{err}");
    assert!(!err.contains("panicked"), "{err}");
    assert!(err.contains(&site.data().display().to_string()), "{err}");
    assert!(
        err.contains("glovebox store check") && err.contains("glovebox store restore"),
        "{err}"
    );
}

/// Compaction gives free pages back where the engine can (SQLite), keeps
/// everything, and says what to do where it cannot (sled).
pub fn store_compact_keeps_everything_and_says_what_sled_needs() {
    let site = site_with_writes("sqlite");
    let before = site.json(&["store", "check", "--json"]);
    let report = site.json(&["store", "compact", "--json"]);
    assert_eq!(report["backend"], "sqlite");
    assert!(report["after_bytes"].as_u64().unwrap() > 0, "{report}");
    let after = site.json(&["store", "check", "--json"]);
    assert_eq!(after["events"], before["events"]);
    assert_eq!(after["buckets"], before["buckets"]);

    let sled = site_with_writes("sled");
    let (code, _, err) = sled.run(&["store", "compact"]);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("store backup") && err.contains("store restore"),
        "{err}"
    );
}

/// Strict mode, an I/O error at the disk flush: strace makes the `append`
/// workload's `fsync`/`fdatasync` fail with EIO from the 40th call on (past the
/// open and the two sessions' starts: about 30 on SQLite, where each start's
/// index entries are commits of their own), among the appends. Nothing
/// waiting on a failed flush is acknowledged, the writers stop with the
/// error, and a restart (the real binary's `store check` and `log export`)
/// finds every acknowledged write.
pub fn strict_mode_acknowledges_nothing_a_failed_disk_flush_covered() {
    crate::util::ensure_debian_tool("strace", "strace");
    for backend in ["sqlite", "sled"] {
        let site = Site::new(true);
        site.set_config(&format!(
            "backend = \"{backend}\"\ndurability = \"strict\"\n"
        ));
        let out = std::process::Command::new("strace")
            .args(["-f", "-qq", "-o", "/dev/null", "--trace=fsync,fdatasync"])
            .arg("--inject=fsync,fdatasync:error=EIO:when=40+")
            .arg(std::env::current_exe().unwrap())
            .arg("append")
            .arg("--config")
            .arg(site.config())
            .args(["--sessions", "2", "--writers", "2", "--count", "300"])
            .env_remove("RUST_LOG")
            .output()
            .unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout);
        let stderr = String::from_utf8_lossy(&out.stderr);
        let acked: Vec<(String, String)> = stdout
            .lines()
            .filter_map(|l| match l.split(' ').collect::<Vec<_>>()[..] {
                ["ack", session, _, hash] if hash.len() == 64 => {
                    Some((session.to_string(), hash.to_string()))
                }
                _ => None,
            })
            .collect();
        assert!(
            stderr.contains("append failed")
                && (stderr.contains("Input/output error") || stderr.contains("disk I/O error")),
            "{backend}: the writers saw the failed flush: {stderr}"
        );
        assert!(
            acked.len() < 600,
            "{backend}: writes after the failure were acknowledged: {} acks",
            acked.len()
        );
        // Restarted without the fault: every acknowledged event is there.
        let (code, out, err) = site.run(&["store", "check"]);
        assert_eq!(code, 0, "{backend}: {out}{err}");
        let mut logs = std::collections::HashMap::new();
        for (session, hash) in &acked {
            let log = logs
                .entry(session.clone())
                .or_insert_with(|| site.run(&["log", "export", session]).1);
            assert!(
                log.contains(hash.as_str()),
                "{backend}: acknowledged event {hash} of {session} is missing"
            );
        }
    }
}
