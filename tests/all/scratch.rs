//! Per-session scratch directories, through the real binary: a notebook within a
//! session, across processes, pauses and resumes; invisible to other sessions;
//! gone when the session is archived; throwaway outside a session.
//!
//! The `files` plugin stands in for a code runner here: it reads and writes
//! wherever it is granted, so it shows exactly what the grant reaches.

use std::path::{Path, PathBuf};

use crate::sessions::Site;
use crate::util::plugins;

/// A site with the `files` plugin, granted the session scratch dir at `/scratch`.
fn site() -> Site {
    Site::with_plugins(&[(
        "files.toml",
        format!(
            "name = \"files\"\ncomponent = \"{}\"\nscratch = \"/scratch\"\n",
            plugins::TOOL_FILES
        ),
    )])
}

fn scratch_root(site: &Site) -> PathBuf {
    site.path().join("data").join("scratch")
}

fn start(site: &Site, name: &str) -> String {
    let s = site.json(&[
        "session",
        "start",
        "--role",
        "workagent",
        "--project",
        "p",
        "--name",
        name,
    ]);
    s["id"].as_str().expect("session id").to_string()
}

fn write(site: &Site, session: Option<&str>, path: &str, content: &str) -> (i32, String) {
    let input = serde_json::json!({ "path": path, "content": content }).to_string();
    call(site, session, "files.write", &input)
}

fn read(site: &Site, session: Option<&str>, path: &str) -> (i32, String) {
    let input = serde_json::json!({ "path": path }).to_string();
    call(site, session, "files.read", &input)
}

fn call(site: &Site, session: Option<&str>, tool: &str, input: &str) -> (i32, String) {
    let mut args = vec!["call", tool, "--input", input];
    if let Some(s) = session {
        args.extend(["--session", s]);
    }
    let (code, out, err) = site.run(&args);
    (code, format!("{out}{err}"))
}

fn entries(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .map(|rd| {
            rd.map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    names.sort();
    names
}

#[test]
fn a_session_keeps_its_scratch_files_through_pause_and_resume_and_loses_them_on_archive() {
    let site = site();
    let a = start(&site, "a");
    let b = start(&site, "b");

    let (code, out) = write(&site, Some("a"), "/scratch/notes.txt", "step 1 done");
    assert_eq!(code, 0, "{out}");
    // Each call is a new process and a fresh instance: only the directory persists.
    let (code, out) = read(&site, Some("a"), "/scratch/notes.txt");
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("step 1 done"), "{out}");
    assert_eq!(
        std::fs::read_to_string(scratch_root(&site).join(&a).join("notes.txt")).unwrap(),
        "step 1 done"
    );

    // Another session sees its own, empty directory.
    let (code, out) = read(&site, Some("b"), "/scratch/notes.txt");
    assert_eq!(code, 5, "{out}");
    assert!(out.to_lowercase().contains("no such file"), "{out}");
    let (code, out) = write(&site, Some("b"), "/scratch/mine.txt", "b's");
    assert_eq!(code, 0, "{out}");
    let (code, out) = read(&site, Some("a"), "/scratch/mine.txt");
    assert_eq!(code, 5, "session a read session b's file: {out}");

    site.json(&["session", "pause", "a", "--reason", "lunch"]);
    site.json(&["session", "resume", "a"]);
    let (code, out) = read(&site, Some("a"), "/scratch/notes.txt");
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("step 1 done"), "{out}");

    site.json(&["session", "end", "a"]);
    site.json(&["session", "archive", "a"]);
    assert!(
        !scratch_root(&site).join(&a).exists(),
        "archived session's scratch dir is still there: {:?}",
        entries(&scratch_root(&site))
    );
    assert_eq!(entries(&scratch_root(&site)), vec![b.clone()]);
    assert!(scratch_root(&site).join(&b).join("mine.txt").is_file());
}

#[test]
fn a_call_outside_a_session_gets_a_throwaway_scratch_dir() {
    let site = site();
    let (code, out) = write(&site, None, "/scratch/x.txt", "gone soon");
    assert_eq!(code, 0, "{out}");
    let (code, out) = read(&site, None, "/scratch/x.txt");
    assert_eq!(
        code, 5,
        "a standalone call saw an earlier one's file: {out}"
    );
    assert_eq!(entries(&scratch_root(&site)), Vec::<String>::new());
}

#[test]
fn an_archived_session_whose_removal_was_cut_short_is_swept_at_the_next_start() {
    let site = site();
    let a = start(&site, "a");
    let (code, out) = write(&site, Some("a"), "/scratch/f", "x");
    assert_eq!(code, 0, "{out}");
    site.json(&["session", "end", "a"]);
    site.json(&["session", "archive", "a"]);
    // As if the host died between logging the archive and removing the directory,
    // and as if a standalone call's throwaway directory was left by a kill.
    std::fs::create_dir_all(scratch_root(&site).join(&a)).unwrap();
    std::fs::write(scratch_root(&site).join(&a).join("f"), "x").unwrap();
    std::fs::create_dir_all(scratch_root(&site).join(".call-left")).unwrap();
    let (code, _, err) = site.run(&["session", "list"]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(entries(&scratch_root(&site)), Vec::<String>::new());
}
