//! Per-session scratch directories, through the real binary: a notebook within a
//! session, across processes, pauses and resumes; invisible to other sessions;
//! gone when the session is archived; throwaway outside a session.
//!
//! The `files` plugin stands in for a code runner here: it reads and writes
//! wherever it is granted, so it shows exactly what the grant reaches.

use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::util::{self, glovebox, plugins};

struct Site {
    dir: tempfile::TempDir,
}

impl Site {
    fn new() -> Site {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path();
        std::fs::write(
            p.join("glovebox.toml"),
            format!(
                "data_dir = \"data\"\nhooks = \"none\"\n[runtime]\ncache_dir = \"{}\"\n[[plugin]]\nmanifest = \"files.toml\"\n",
                util::cache_dir().display()
            ),
        )
        .unwrap();
        std::fs::write(
            p.join("files.toml"),
            format!(
                "name = \"files\"\ncomponent = \"{}\"\nscratch = \"/scratch\"\n",
                plugins::TOOL_FILES
            ),
        )
        .unwrap();
        Site { dir }
    }

    fn scratch_root(&self) -> PathBuf {
        self.dir.path().join("data").join("scratch")
    }

    fn run(&self, args: &[&str]) -> (i32, String, String) {
        let out = glovebox()
            .arg("--config")
            .arg(self.dir.path().join("glovebox.toml"))
            .args(args)
            .output()
            .unwrap();
        (
            out.status.code().unwrap_or(-1),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    }

    fn ok(&self, args: &[&str]) -> Value {
        let (code, out, err) = self.run(args);
        assert_eq!(code, 0, "glovebox {args:?}: {err}");
        serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out}"))
    }

    fn start(&self, name: &str) -> String {
        let s = self.ok(&[
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

    fn write(&self, session: Option<&str>, path: &str, content: &str) -> (i32, String) {
        let input = serde_json::json!({ "path": path, "content": content }).to_string();
        self.call(session, "files.write", &input)
    }

    fn read(&self, session: Option<&str>, path: &str) -> (i32, String) {
        let input = serde_json::json!({ "path": path }).to_string();
        self.call(session, "files.read", &input)
    }

    fn call(&self, session: Option<&str>, tool: &str, input: &str) -> (i32, String) {
        let mut args = vec!["call", tool, "--input", input];
        if let Some(s) = session {
            args.extend(["--session", s]);
        }
        let (code, out, err) = self.run(&args);
        (code, format!("{out}{err}"))
    }
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
    let site = Site::new();
    let a = site.start("a");
    let b = site.start("b");

    let (code, out) = site.write(Some("a"), "/scratch/notes.txt", "step 1 done");
    assert_eq!(code, 0, "{out}");
    // Each call is a new process and a fresh instance: only the directory persists.
    let (code, out) = site.read(Some("a"), "/scratch/notes.txt");
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("step 1 done"), "{out}");
    assert_eq!(
        std::fs::read_to_string(site.scratch_root().join(&a).join("notes.txt")).unwrap(),
        "step 1 done"
    );

    // Another session sees its own, empty directory.
    let (code, out) = site.read(Some("b"), "/scratch/notes.txt");
    assert_eq!(code, 5, "{out}");
    assert!(out.to_lowercase().contains("no such file"), "{out}");
    let (code, out) = site.write(Some("b"), "/scratch/mine.txt", "b's");
    assert_eq!(code, 0, "{out}");
    let (code, out) = site.read(Some("a"), "/scratch/mine.txt");
    assert_eq!(code, 5, "session a read session b's file: {out}");

    site.ok(&["session", "pause", "a", "--reason", "lunch"]);
    site.ok(&["session", "resume", "a"]);
    let (code, out) = site.read(Some("a"), "/scratch/notes.txt");
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("step 1 done"), "{out}");

    site.ok(&["session", "end", "a"]);
    site.ok(&["session", "archive", "a"]);
    assert!(
        !site.scratch_root().join(&a).exists(),
        "archived session's scratch dir is still there: {:?}",
        entries(&site.scratch_root())
    );
    assert_eq!(entries(&site.scratch_root()), vec![b.clone()]);
    assert!(site.scratch_root().join(&b).join("mine.txt").is_file());
}

#[test]
fn a_call_outside_a_session_gets_a_throwaway_scratch_dir() {
    let site = Site::new();
    let (code, out) = site.write(None, "/scratch/x.txt", "gone soon");
    assert_eq!(code, 0, "{out}");
    let (code, out) = site.read(None, "/scratch/x.txt");
    assert_eq!(
        code, 5,
        "a standalone call saw an earlier one's file: {out}"
    );
    assert_eq!(entries(&site.scratch_root()), Vec::<String>::new());
}

#[test]
fn an_archived_session_whose_removal_was_cut_short_is_swept_at_the_next_start() {
    let site = Site::new();
    let a = site.start("a");
    let (code, out) = site.write(Some("a"), "/scratch/f", "x");
    assert_eq!(code, 0, "{out}");
    site.ok(&["session", "end", "a"]);
    site.ok(&["session", "archive", "a"]);
    // As if the host died between logging the archive and removing the directory,
    // and as if a standalone call's throwaway directory was left by a kill.
    std::fs::create_dir_all(site.scratch_root().join(&a)).unwrap();
    std::fs::write(site.scratch_root().join(&a).join("f"), "x").unwrap();
    std::fs::create_dir_all(site.scratch_root().join(".call-left")).unwrap();
    let (code, _, err) = site.run(&["session", "list"]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(entries(&site.scratch_root()), Vec::<String>::new());
}
