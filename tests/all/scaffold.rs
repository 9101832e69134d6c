//! `glovebox new` (issue 41): each of the four templates, written into a temporary
//! directory outside the repository by the real binary, builds with its own build
//! step and passes its own tests (`cargo test`, pytest, `node --test`), which call
//! the component through that same binary. And the refusals: an unknown language, a
//! bad name, a directory that is not empty.
//!
//! Kept cheap: the Cargo-built templates share one target dir under the test target
//! dir (the engine of the JavaScript shell and wit-bindgen are compiled once, and
//! only again when they change), pip uses its own cache, and every project's config is
//! pointed at the test run's shared compile cache.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use crate::util::{self, glovebox};

/// The target dir the Cargo-built projects share.
fn shared_target() -> PathBuf {
    PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("scaffold-target")
}

/// `glovebox new ARGS --dir DIR/NAME`: the project's directory.
fn new_project(dir: &Path, name: &str, args: &[&str]) -> PathBuf {
    let project = dir.join(name);
    let out = glovebox()
        .args(["new"])
        .args(args)
        .arg("--dir")
        .arg(&project)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "`glovebox new {}` failed: {}{stdout}",
        args.join(" "),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.contains("./build.sh"), "{stdout}");
    // The project's config also uses the test run's compile cache.
    let config = project.join("glovebox.toml");
    let mut text = std::fs::read_to_string(&config).unwrap();
    text.push_str(&format!("\n[runtime]\n{}\n", util::cache_keys()));
    std::fs::write(&config, text).unwrap();
    project
}

/// Runs `program ARGS` in `project` as its author would, with the binary under test
/// as `$GLOVEBOX` and the shared Cargo target dir; its stdout, or a panic with its
/// output when it fails. Says how long it took (`--nocapture` shows it).
fn run_in(project: &Path, program: &str, args: &[&str]) -> String {
    let started = Instant::now();
    // `./build.sh`, `.venv/bin/pytest`: the project's own, whatever this process's
    // working directory.
    let path = if program.contains('/') {
        project.join(program)
    } else {
        PathBuf::from(program)
    };
    let out = Command::new(path)
        .args(args)
        .current_dir(project)
        .env("GLOVEBOX", env!("CARGO_BIN_EXE_glovebox"))
        .env("CARGO_TARGET_DIR", shared_target())
        .env_remove("GLOVEBOX_CONFIG")
        .env_remove("RUST_LOG")
        .env_remove("VIRTUAL_ENV")
        .output()
        .unwrap_or_else(|e| panic!("cannot run `{program}`: {e}"));
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "`{program} {}` failed in {} ({}):\n--- stdout\n{stdout}\n--- stderr\n{}",
        args.join(" "),
        project.display(),
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    eprintln!(
        "`{program} {}` in {}: {:.1} s",
        args.join(" "),
        project.display(),
        started.elapsed().as_secs_f64()
    );
    stdout
}

/// Runs the project's own tests, which must pass, and checks that each of `names`
/// ran (a test run that found no tests would pass too).
fn run_tests(project: &Path, program: &str, args: &[&str], names: &[&str]) {
    let stdout = run_in(project, program, args);
    for name in names {
        assert!(
            stdout.contains(name),
            "the project's test `{name}` did not run:\n{stdout}"
        );
    }
}

#[test]
fn a_rust_tool_builds_and_passes_its_tests() {
    let dir = tempfile::tempdir().unwrap();
    let project = new_project(dir.path(), "greeter-rs", &["tool", "greeter-rs"]);
    run_in(&project, "./build.sh", &[]);
    assert!(project.join("build/greeter-rs.wasm").is_file());
    let out = glovebox()
        .args(["plugin", "check", "greeter-rs.toml"])
        .current_dir(&project)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.contains("greet"), "{stdout}");
    run_tests(
        &project,
        "cargo",
        &["test"],
        &[
            "greets_by_name",
            "refuses_a_blank_name",
            "the_host_checks_the_schema_first",
        ],
    );
}

#[test]
fn a_rust_hook_builds_and_passes_its_tests() {
    let dir = tempfile::tempdir().unwrap();
    let project = new_project(dir.path(), "no-rm-rf", &["hook", "no-rm-rf"]);
    run_in(&project, "./build.sh", &[]);
    let out = glovebox()
        .args(["plugin", "check", "build/no-rm-rf.wasm"])
        .current_dir(&project)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.contains("execute:file:delete"), "{stdout}");
    run_tests(
        &project,
        "cargo",
        &["test"],
        &[
            "denies_a_recursive_deletion_with_alternatives",
            "allows_a_single_deletion",
            "is_not_consulted_for_other_actions",
            "fails_closed_on_settings_it_does_not_know",
        ],
    );
}

#[test]
fn a_python_tool_builds_and_passes_its_tests() {
    let dir = tempfile::tempdir().unwrap();
    let project = new_project(
        dir.path(),
        "greeter-py",
        &["tool", "greeter-py", "--lang", "python"],
    );
    run_in(&project, "./build.sh", &[]);
    run_tests(
        &project,
        ".venv/bin/pytest",
        &["-v"],
        &[
            "test_greets_by_name PASSED",
            "test_refuses_a_blank_name PASSED",
        ],
    );
}

#[test]
fn a_javascript_tool_builds_and_passes_its_tests() {
    util::ensure_debian_tool("node", "nodejs");
    let dir = tempfile::tempdir().unwrap();
    let project = new_project(
        dir.path(),
        "greeter-js",
        &["tool", "greeter-js", "--lang", "js"],
    );
    run_in(&project, "./build.sh", &[]);
    run_tests(
        &project,
        "node",
        &["--test", "--test-reporter=spec", "test/tool.test.mjs"],
        &["greets by name", "refuses a blank name", "pass 3"],
    );
}

/// `glovebox new` with `args`: the exit code and stderr.
fn refused(args: &[&str], dir: &Path) -> (i32, String) {
    let out = glovebox()
        .arg("new")
        .args(args)
        .current_dir(dir)
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn refuses_what_it_cannot_make_and_names_the_fix() {
    let dir = tempfile::tempdir().unwrap();
    let (code, stderr) = refused(&["tool", "x", "--lang", "go"], dir.path());
    assert_eq!(code, 2, "{stderr}");
    assert!(
        stderr.contains("`--lang go`") && stderr.contains("`--lang python`"),
        "{stderr}"
    );

    let (code, stderr) = refused(&["tool", "My Tool"], dir.path());
    assert_eq!(code, 2, "{stderr}");
    assert!(
        stderr.contains("invalid plugin name `My Tool`") && stderr.contains("lowercase"),
        "{stderr}"
    );

    let (code, stderr) = refused(&["hook", "1st"], dir.path());
    assert_eq!(code, 2, "{stderr}");
    assert!(stderr.contains("cannot start with a digit"), "{stderr}");

    std::fs::create_dir(dir.path().join("taken")).unwrap();
    std::fs::write(dir.path().join("taken/notes.txt"), "mine").unwrap();
    let (code, stderr) = refused(&["tool", "taken"], dir.path());
    assert_eq!(code, 2, "{stderr}");
    assert!(
        stderr.contains("`taken` is not empty") && stderr.contains("--dir"),
        "{stderr}"
    );
    assert_eq!(
        std::fs::read_to_string(dir.path().join("taken/notes.txt")).unwrap(),
        "mine"
    );
    // Nothing was written for any refusal.
    let entries: Vec<_> = std::fs::read_dir(dir.path()).unwrap().collect();
    assert_eq!(entries.len(), 1);

    // The default directory is `./NAME`; an empty one is fine.
    std::fs::create_dir(dir.path().join("empty")).unwrap();
    let out = glovebox()
        .args(["new", "tool", "empty", "--lang", "python"])
        .current_dir(dir.path())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(dir.path().join("empty/app.py").is_file());
    assert!(dir.path().join("empty/empty.toml").is_file());
}

/// The copied SDKs' dependencies are the ones their originals are built and tested
/// with in `plugins/`, and the Python template's componentize-py is the one the
/// repository's Python plugins are built with.
#[test]
fn the_templates_pin_what_the_repository_tests() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let read = |path: &str| std::fs::read_to_string(root.join(path)).unwrap();
    let workspaces = read("plugins/Cargo.toml") + &read("plugins/hooks/Cargo.toml");
    for copy in [
        "glovebox-plugin-sdk",
        "glovebox-hook-sdk",
        "glovebox-hook-rt",
        "glovebox-js-shell",
    ] {
        let manifest = read(&format!("templates/vendor/{copy}.toml"));
        let mut section = String::new();
        for line in manifest.lines() {
            if line.starts_with('[') {
                section = line.to_owned();
            } else if section.contains("dependencies]")
                && line.contains(" = ")
                && !line.contains("path = ")
            {
                assert!(
                    workspaces.contains(line),
                    "templates/vendor/{copy}.toml has `{line}`, which plugins/ does not: use the version plugins/ tests"
                );
            }
        }
    }
    let pinned = read("tests/build_python.rs");
    let dir = tempfile::tempdir().unwrap();
    let project = dir.path().join("p");
    let out = glovebox()
        .args(["new", "tool", "p", "--lang", "python", "--dir"])
        .arg(&project)
        .output()
        .unwrap();
    assert!(out.status.success());
    let build = std::fs::read_to_string(project.join("build.sh")).unwrap();
    let version = build
        .lines()
        .find_map(|l| l.strip_prefix("COMPONENTIZE_PY="))
        .expect("build.sh sets COMPONENTIZE_PY");
    assert!(
        pinned.contains(&format!("COMPONENTIZE_PY_VERSION: &str = \"{version}\"")),
        "the Python template installs componentize-py {version}, tests/build_python.rs another"
    );
}
