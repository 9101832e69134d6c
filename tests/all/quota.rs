//! Write quotas and the disk watermark, through the real binary: a guest that
//! writes without end into a read-write grant or its scratch directory stops at
//! its budget with a `quota` error while its session, and the others, go on;
//! a disk below `storage.min_free` refuses new work and writes nothing.

use std::path::Path;

use serde_json::Value;

use crate::util::{Site, plugins};

const KIB: u64 = 1024;
const MIB: u64 = 1024 * KIB;
/// What a new directory entry takes from a write budget.
const ENTRY: u64 = 4 * KIB;

/// The hostile file-system plugin, with `extra` manifest text.
fn hostile_fs(extra: &str) -> (&'static str, String) {
    (
        "fs.toml",
        format!(
            "name = \"fs\"\ncomponent = \"{}\"\n{extra}",
            plugins::HOSTILE_FS
        ),
    )
}

/// `fs.fill` of `bytes` bytes at `path` through `via`, in `session`: the exit
/// code, and stdout and stderr together.
fn fill(site: &Site, session: &str, path: &str, bytes: u64, via: &str) -> (i32, String) {
    let input = serde_json::json!({ "path": path, "bytes": bytes.to_string(), "via": via });
    let (code, out, err) = site.run(&[
        "call",
        "fs.fill",
        "--input",
        &input.to_string(),
        "--session",
        session,
    ]);
    (code, format!("{out}{err}"))
}

/// A `fill` the quota let through whole.
fn filled(site: &Site, session: &str, path: &str, bytes: u64) {
    let (code, out) = fill(site, session, path, bytes, "stream");
    assert_eq!(code, 0, "{out}");
    assert!(
        out.contains("\"ok\": true") || out.contains("\"ok\":true"),
        "{out}"
    );
}

fn size(path: &Path) -> u64 {
    std::fs::metadata(path).map(|m| m.len()).unwrap_or(0)
}

/// The events of session `name`'s log.
fn events(site: &Site, name: &str) -> Vec<Value> {
    let (code, export, err) = site.run(&["log", "export", name]);
    assert_eq!(code, 0, "{err}");
    export
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

#[test]
fn threat_42_a_call_writing_past_limits_write_gets_a_quota_error_and_its_session_goes_on() {
    let site = Site::with_plugins(&[hostile_fs(
        "[limits]\nwrite = \"1 MiB\"\n[[fs]]\nhost = \"work\"\nguest = \"/work\"\naccess = \"read-write\"\n",
    )]);
    let work = site.path().join("work");
    std::fs::create_dir(&work).unwrap();
    site.start_workagent("a");
    site.start_workagent("b");

    // Every way WASI writes a file: std's stream writes, an append-mode
    // stream, `descriptor.write` at offsets, and growing with `set-size`.
    for via in ["stream", "append", "pwrite", "set-size"] {
        let file = format!("{via}.bin");
        let (code, out) = fill(&site, "a", &format!("/work/{file}"), 16 * MIB, via);
        assert_eq!(code, 6, "{via}: {out}");
        assert!(out.contains("passed its write quota"), "{via}: {out}");
        assert!(out.contains("`limits.write`"), "{via}: {out}");
        // It wrote up to its budget, never past it.
        let on_disk = size(&work.join(&file));
        assert!(on_disk <= MIB, "{via}: {on_disk} bytes on disk");
        if via != "set-size" {
            // The new file's entry took a block of the budget.
            assert_eq!(on_disk, MIB - ENTRY, "{via}: wrote up to the budget");
        }
    }

    // The session's log has the calls, failed as `quota`, and it goes on.
    let failed: Vec<Value> = events(&site, "a")
        .into_iter()
        .filter(|e| e.to_string().contains("passed its write quota"))
        .collect();
    assert_eq!(failed.len(), 4, "{failed:?}");
    filled(&site, "a", "/work/after.bin", 100 * KIB);
    filled(&site, "b", "/work/other.bin", 900 * KIB);
    assert_eq!(size(&work.join("after.bin")), 100 * KIB);
    assert_eq!(site.run(&["log", "verify", "a"]).0, 0);

    // Empty files and directories without end: each new entry takes a block,
    // so the call stops at 1 MiB / 4 KiB = 256 entries.
    for via in ["files", "dirs"] {
        let dir = work.join(via);
        std::fs::create_dir(&dir).unwrap();
        let (code, out) = fill(&site, "a", &format!("/work/{via}"), 100_000, via);
        assert_eq!(code, 6, "{via}: {out}");
        assert!(out.contains("passed its write quota"), "{via}: {out}");
        let made = std::fs::read_dir(&dir).unwrap().count() as u64;
        assert_eq!(made, MIB / ENTRY, "{via}: entries made");
    }
}

#[test]
fn threat_42_the_scratch_quota_holds_across_the_calls_of_a_session() {
    let site = Site::with_plugins(&[hostile_fs("scratch = \"/scratch\"\n")]);
    // `[runtime]` is the site's own table: add the key to it.
    let config = std::fs::read_to_string(site.config()).unwrap();
    let config = config.replace("[runtime]\n", "[runtime]\nscratch_quota = \"1 MiB\"\n");
    std::fs::write(site.config(), config).unwrap();
    let a = site.start_workagent("a")["id"]
        .as_str()
        .unwrap()
        .to_string();
    site.start_workagent("b");
    let dir = site.path().join("data/scratch").join(&a);

    filled(&site, "a", "/scratch/one.bin", 700 * KIB);
    // The second call finds 320 KiB left of the session's MiB (one.bin's
    // entry counts a block), and two.bin's own entry takes a block of it.
    let (code, out) = fill(&site, "a", "/scratch/two.bin", 700 * KIB, "stream");
    assert_eq!(code, 6, "{out}");
    assert!(out.contains("`runtime.scratch_quota`"), "{out}");
    assert!(
        out.contains("704 KiB of its session's scratch quota of 1 MiB"),
        "{out}"
    );
    assert_eq!(size(&dir.join("two.bin")), 320 * KIB - ENTRY);
    // Full now: even a byte is refused.
    let (code, out) = fill(&site, "a", "/scratch/three.bin", 1, "pwrite");
    assert_eq!(code, 6, "{out}");
    assert_eq!(size(&dir.join("three.bin")), 0);

    // Another session has its own quota.
    filled(&site, "b", "/scratch/one.bin", 900 * KIB);
    // Deleting files makes room again.
    let (code, out, err) = site.run(&[
        "call",
        "fs.delete",
        "--input",
        r#"{"path": "/scratch/one.bin"}"#,
        "--session",
        "a",
    ]);
    assert_eq!(code, 0, "{out}{err}");
    filled(&site, "a", "/scratch/four.bin", 600 * KIB);
}

#[test]
fn threat_28_below_the_disk_watermark_new_work_is_refused_and_nothing_is_written() {
    let site = Site::with_plugins(&[(
        "echo.toml",
        format!("name = \"echo\"\ncomponent = \"{}\"\n", plugins::TOOL_ECHO),
    )]);
    site.start_workagent("w");
    let before = events(&site, "w").len();

    // `extra` lands in the site's `[storage]` table. No disk has an EiB free.
    site.set_config("min_free = \"1 EiB\"\n");
    let (code, out, err) = site.run(&[
        "call",
        "echo.echo",
        "--input",
        r#"{"message": "hi"}"#,
        "--session",
        "w",
    ]);
    assert_eq!(code, 7, "{out}{err}");
    for words in ["low disk", "free, less than `storage.min_free` (1 EiB)"] {
        assert!(err.contains(words), "{err}");
    }
    let (code, _, err) = site.run(&[
        "session",
        "start",
        "--role",
        "workagent",
        "--project",
        "p",
        "--name",
        "x",
    ]);
    assert_ne!(code, 0);
    assert!(err.contains("`storage.min_free`"), "{err}");
    let (code, _, err) = site.run(&[
        "job",
        "spawn",
        "--session",
        "w",
        "echo.echo",
        "--input",
        r#"{"message": "hi"}"#,
    ]);
    assert_ne!(code, 0);
    assert!(err.contains("`storage.min_free`"), "{err}");
    assert_eq!(events(&site, "w").len(), before, "nothing was written");

    // Room again (the watermark lowered): work is admitted at once.
    site.set_config("");
    let (code, out, err) = site.run(&[
        "call",
        "echo.echo",
        "--input",
        r#"{"message": "hi"}"#,
        "--session",
        "w",
    ]);
    assert_eq!(code, 0, "{out}{err}");
}

/// Sets the file-size limit (`soft`, in bytes or `unlimited`) of process
/// `pid`; the hard limit stays unlimited, so it can be raised again.
fn set_file_size_limit(pid: &str, soft: &str) {
    let out = std::process::Command::new("prlimit")
        .args(["--pid", pid, &format!("--fsize={soft}:unlimited")])
        .output()
        .expect("run prlimit (util-linux)");
    assert!(
        out.status.success(),
        "prlimit: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// The size of the largest file under `dir`.
fn largest_file(dir: &Path) -> u64 {
    let mut largest = 0;
    for entry in std::fs::read_dir(dir).unwrap() {
        let entry = entry.unwrap();
        let meta = entry.metadata().unwrap();
        largest = largest.max(if meta.is_dir() {
            largest_file(&entry.path())
        } else {
            meta.len()
        });
    }
    largest
}

// Threat 28, its second half, with a real write failure: a file-size limit
// set on the running server (`prlimit`) makes the store's writes fail
// (EFBIG) as a full disk would. Calls fail naming the fix and the server
// stays up; once the limit is lifted, the store is reopened in place: calls
// work again without a restart, and the log, read through the same server,
// verifies, holds every acknowledged call and leaves none in flight.
#[test]
fn threat_28_a_failed_store_is_reopened_without_a_restart_once_writes_work_again() {
    let site = Site::with_plugins(&[(
        "echo.toml",
        format!("name = \"echo\"\ncomponent = \"{}\"\n", plugins::TOOL_ECHO),
    )]);
    site.start_workagent("w");
    let server = crate::mcp::Server::initialized(&site.config(), &[]);
    let pid = server.pid().to_string();
    let call = |n: usize| {
        let input = format!(r#"{{"message": "m{n}"}}"#);
        site.run(&["call", "echo.echo", "--input", &input, "--session", "w"])
    };
    for n in 0..3 {
        let (code, out, err) = call(n);
        assert_eq!(code, 0, "{out}{err}");
    }

    // Writes past the end of the store's largest file now fail.
    set_file_size_limit(&pid, &largest_file(&site.data()).to_string());
    let mut acked = 3;
    let mut failure = None;
    for n in 3..2000 {
        let (code, out, err) = call(n);
        if code == 0 {
            acked += 1;
        } else {
            failure = Some(format!("{out}{err}"));
            break;
        }
    }
    let failure = failure.expect("a write past the file-size limit failed");
    assert!(
        failure.contains("reopens the data dir by itself"),
        "{failure}"
    );
    // While writes still fail, so do calls (a reopen's first write fails again).
    std::thread::sleep(std::time::Duration::from_millis(1200));
    let (code, ..) = call(5000);
    assert_ne!(code, 0);

    set_file_size_limit(&pid, "unlimited");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    loop {
        let (code, out, err) = call(6000);
        if code == 0 {
            acked += 1;
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "not reopened: {out}{err}"
        );
        std::thread::sleep(std::time::Duration::from_millis(300));
    }
    assert!(
        Path::new(&format!("/proc/{pid}")).exists(),
        "the same server serves"
    );

    // Read through the running server: no restart's recovery ran.
    let (code, out, err) = site.run(&["log", "verify", "w"]);
    assert_eq!(code, 0, "{out}{err}");
    let events = events(&site, "w");
    let count = |kind: &str| events.iter().filter(|e| e["kind"]["type"] == kind).count();
    assert!(count("call_finished") >= acked, "{acked} acknowledged");
    assert_eq!(
        count("call_requested"),
        count("call_finished") + count("call_interrupted"),
        "no call left in flight: {events:?}"
    );
    drop(server);
}

#[test]
fn threat_49_below_the_disk_watermark_an_agents_notes_handoffs_usage_and_proposals_write_nothing() {
    // Why: annotations bypassed the watermark, so one agent could fill the disk for all.
    use crate::mcp::Server;
    use serde_json::json;
    let memory = "[memory.propose]\nproject = [\"workagent\"]\n";
    let site = Site::with_config(memory, &[]);
    {
        let mut server = Server::initialized(&site.config(), &[]);
        server.ok(
            1,
            "session_start",
            json!({"role": "workagent", "project": "p", "name": "w"}),
        );
        server.ok(2, "session_note", json!({"text": "room enough"}));
    }
    // `extra` lands in the site's `[storage]` table. No disk has an EiB free.
    site.set_config(&format!("min_free = \"1 EiB\"\n{memory}"));
    let mut server = Server::initialized(&site.config(), &[]);
    let socket = site.path().join("data/control.sock");
    let start = std::time::Instant::now();
    while !socket.exists() {
        assert!(start.elapsed() < std::time::Duration::from_secs(60));
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    server.ok(10, "session_resume", json!({"session": "w"}));
    let before = events(&site, "w").len();
    let writes = [
        ("session_note", json!({"text": "fill the disk"})),
        (
            "session_handoff",
            json!({"kind": "continuation", "objective": "fill the disk"}),
        ),
        ("session_usage", json!({"tokens_in": 10, "tokens_out": 10})),
        (
            "memory_propose",
            json!({"scope": "project", "text": "fill the disk"}),
        ),
    ];
    for (i, (tool, args)) in writes.into_iter().enumerate() {
        let (kind, message) = server.refused(20 + i as u64, tool, args);
        assert_eq!(kind, "low_disk", "{tool}: {message}");
        for words in ["low disk", "free, less than `storage.min_free` (1 EiB)"] {
            assert!(message.contains(words), "{tool}: {message}");
        }
    }
    assert_eq!(events(&site, "w").len(), before, "nothing was logged");
    let proposed = site.json(&["memory", "list", "--json"]);
    assert_eq!(proposed, json!([]), "nothing was proposed");
    // Closing the session still goes through.
    server.ok(30, "session_end", json!({"outcome": "exit"}));
    let log = events(&site, "w");
    assert_eq!(log.len(), before + 1);
    assert_eq!(log.last().unwrap()["kind"]["type"], "ended");
}

/// Why (threats 42, 49): an agent looping `session_note` over MCP grew one
/// session's log without a bound but the disk. Past `quotas.session_events`
/// the note is refused with the `quota` error naming the key and the fix,
/// nothing is logged, and `session_end` still goes through.
#[test]
fn threat_49_an_agent_looping_session_note_over_mcp_stops_at_session_events_and_still_ends() {
    use crate::mcp::Server;
    use serde_json::json;
    let site = Site::with_config("[quotas]\nsession_events = 100\n", &[]);
    let mut server = Server::initialized(&site.config(), &[]);
    server.ok(
        1,
        "session_start",
        json!({"role": "workagent", "project": "p", "name": "w"}),
    );
    let mut notes = 0u64;
    let (kind, message) = loop {
        let answer = server.call(10 + notes, "session_note", json!({"text": "again"}));
        if answer["result"]["isError"] == true {
            let error = &answer["result"]["structuredContent"]["error"];
            break (
                error["kind"].as_str().unwrap().to_string(),
                error["message"].as_str().unwrap().to_string(),
            );
        }
        assert_eq!(answer["result"]["isError"], false, "{answer}");
        notes += 1;
        assert!(notes < 200, "the loop of notes was never stopped");
    };
    assert_eq!(notes, 99, "the start and 99 notes make the 100");
    assert_eq!(kind, "quota", "{message}");
    for words in [
        "`quotas.session_events` = 100, set by the operator in [quotas]",
        "`session_end` still works",
    ] {
        assert!(message.contains(words), "{message}");
    }
    let socket = site.path().join("data/control.sock");
    let start = std::time::Instant::now();
    while !socket.exists() {
        assert!(start.elapsed() < std::time::Duration::from_secs(60));
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let before = events(&site, "w").len();
    assert_eq!(before, 100, "nothing past the quota was logged");
    server.ok(1000, "session_end", json!({"outcome": "exit"}));
    let log = events(&site, "w");
    assert_eq!(log.len(), before + 1);
    assert_eq!(log.last().unwrap()["kind"]["type"], "ended");
}
