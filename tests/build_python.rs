//! Part of the build script `tests/build.rs`: the tool plugins written in Python.
//!
//! Each directory `plugins/python/<name>/` holds a Python app (`app.py`, plus any other
//! modules it imports) that componentize-py turns into a component of the `tool-plugin`
//! world: `plugins/target/wasm32-wasip2/release/<name with _>.wasm`. componentize-py
//! comes from PyPI, pinned, into a virtualenv under `plugins/target/python-venv` that
//! this script makes on first use with the machine's `python3` (or `$GLOVEBOX_PYTHON`).
//!
//! A component is rebuilt only when its inputs change: the app's files, the WIT, the
//! componentize-py version or the command line (a fingerprint of them is kept next to the
//! artifacts). The apps are built from a copy of their directory, because componentize-py
//! writes `__pycache__` next to the sources.
//!
//! An app listed in [`EXTRA_WORLDS`] also imports WASI interfaces beyond what
//! componentize-py's runtime uses (the runner's `fetch` imports
//! `wasi:http/outgoing-handler`): its directory has a `wit/` holding only its own world,
//! which includes `tool-plugin` and adds those imports. (Merging two worlds with two
//! `--world` flags instead makes componentize-py 0.25.1 panic in `summary.rs`.) The WASI
//! WIT that world uses is not copied into the repository: it is taken at build time from
//! the source of the host's own dependency `wasmtime-wasi-http` (its `wit/deps/`, found
//! with `cargo metadata`), so the interface versions are the ones the host links. The
//! app is built against a WIT directory assembled under `plugins/target/python-build/`:
//! its world, with `deps/` holding those WASI packages and `../../wit` (`glovebox:plugin`).

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use super::Result;

/// componentize-py from PyPI, pinned: it decides the CPython inside every component.
const COMPONENTIZE_PY_VERSION: &str = "0.25.1";

/// The world every Python plugin targets.
const WORLD: &str = "tool-plugin";

/// Apps that import more than `tool-plugin` gives them: (file stem, world in the app's
/// `wit/` directory, which includes `glovebox:plugin/tool-plugin`). The WASI packages it
/// uses come from the crate [`WASI_WIT_CRATE`].
const EXTRA_WORLDS: &[(&str, &str)] = &[("code_python", "glovebox:python-runner/http")];

/// The host's crate whose `wit/deps/` holds the WASI WIT the host links.
const WASI_WIT_CRATE: &str = "wasmtime-wasi-http";

/// The Python plugins: (constant, file name, what it is). Each is built from the
/// directory `plugins/python/<file stem with `-` for `_`>/`, whose `app.py` is the app.
#[rustfmt::skip]
pub const ARTIFACTS: &[(&str, &str, &str)] = &[
    ("CODE_PYTHON", "code_python.wasm", "`run`: runs Python code (CPython, stdlib only, `fetch` to granted hosts) in a fresh interpreter; stdout, stderr, value, error."),
    ("TOOL_PY_STATS", "py_stats.wasm", "`describe`, `correlate`: statistics of lists of numbers, a tool plugin written in Python."),
];

/// Tells cargo what the Python build depends on besides `plugins/python/` itself
/// (which `emit_rerun_if_changed` lists with the other entries of `plugins/`).
pub fn emit_rerun_if_changed() {
    println!("cargo:rerun-if-env-changed=GLOVEBOX_PYTHON");
    println!("cargo:rerun-if-changed=tests/build_python.rs");
    // The version of the WASI WIT (see `wasi_wit_deps`) follows the lock file.
    println!("cargo:rerun-if-changed=Cargo.lock");
}

/// Builds every Python plugin whose inputs changed since its last build.
pub fn build(
    plugins_dir: &Path,
    wit_dir: &Path,
    target_dir: &Path,
    release_dir: &Path,
) -> Result<()> {
    let work_dir = target_dir.join("python-build");
    let wasi_deps = if EXTRA_WORLDS.is_empty() {
        None
    } else {
        Some(wasi_wit_deps()?)
    };
    let mut jobs = Vec::new();
    for (_, file, _) in ARTIFACTS {
        let stem = file.trim_end_matches(".wasm");
        let source = plugins_dir.join("python").join(stem.replace('_', "-"));
        let dest = release_dir.join(file);
        let mut wit = (wit_dir.to_path_buf(), WORLD);
        let mut wit_inputs = vec![wit_dir.to_path_buf()];
        if let Some((_, world)) = EXTRA_WORLDS.iter().find(|(s, _)| *s == stem) {
            let deps = wasi_deps.as_deref().unwrap_or(wit_dir);
            let own = source.join("wit");
            check_wasi_versions(&own, deps)?;
            // Its own world, the host's WASI WIT and the plugin contract, put together
            // as one WIT directory.
            let assembled = work_dir.join(format!("{stem}-wit"));
            remove_dir(&assembled)?;
            copy_sources(&own, &assembled)?;
            copy_sources(deps, &assembled.join("deps"))?;
            copy_sources(wit_dir, &assembled.join("deps").join("glovebox-plugin"))?;
            wit = (assembled, world);
            wit_inputs.push(deps.to_path_buf());
        }
        let fingerprint = fingerprint(&source, &wit_inputs, wit.1)?;
        let stamp = work_dir.join(format!("{stem}.fingerprint"));
        if dest.is_file() && fs::read_to_string(&stamp).ok().as_deref() == Some(&fingerprint) {
            continue;
        }
        jobs.push((stem, source, dest, fingerprint, stamp, wit));
    }
    if jobs.is_empty() {
        return Ok(());
    }
    let componentize_py = ensure_componentize_py(&target_dir.join("python-venv"))?;

    // componentize-py is mostly single-threaded: build the apps side by side.
    let mut running = Vec::new();
    for (stem, source, dest, fingerprint, stamp, (wit, world)) in jobs {
        let staging = work_dir.join(stem);
        remove_dir(&staging)?;
        copy_sources(&source, &staging)?;
        let partial = dest.with_extension("wasm.partial");
        let shown = format!(
            "{} --wit-path {} --world {world}",
            componentize_py.display(),
            wit.display()
        );
        let mut cmd = Command::new(&componentize_py);
        cmd.current_dir(&staging)
            .arg("--wit-path")
            .arg(&wit)
            .args(["--world", world])
            .args(["componentize", "app", "--python-path", "."])
            .arg("--output")
            .arg(&partial)
            // Only the app's own directory is searched for modules: no active
            // virtualenv or PYTHONPATH of the caller's leaks into the component.
            .env_remove("VIRTUAL_ENV")
            .env_remove("PYTHONPATH")
            .env_remove("PYTHONHOME")
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        if let Some(parent) = dest.parent() {
            fs::create_dir_all(parent)
                .map_err(|e| format!("cannot create `{}`: {e}", parent.display()))?;
        }
        let child = cmd
            .spawn()
            .map_err(|e| format!("cannot run `{}`: {e}", componentize_py.display()))?;
        running.push((child, source, partial, dest, fingerprint, stamp, shown));
    }
    let mut failures = Vec::new();
    for (child, source, partial, dest, fingerprint, stamp, shown) in running {
        let app = source.join("app.py");
        match child.wait_with_output() {
            Ok(output) if output.status.success() && partial.is_file() => {
                fs::rename(&partial, &dest).map_err(|e| {
                    format!(
                        "cannot move `{}` to `{}`: {e}",
                        partial.display(),
                        dest.display()
                    )
                })?;
                super::write(&stamp, fingerprint.as_bytes())?;
            }
            Ok(output) => failures.push(format!(
                "`{shown} componentize app` for `{}` failed ({}):\n\
                 --- stdout ---\n{}\n--- stderr ---\n{}\n\
                 Fix the app (a Python error at import time shows above: the module's top \
                 level runs at build time) and build again.",
                app.display(),
                output.status,
                String::from_utf8_lossy(&output.stdout),
                String::from_utf8_lossy(&output.stderr)
            )),
            Err(e) => failures.push(format!(
                "cannot wait for componentize-py building `{}`: {e}",
                app.display()
            )),
        }
    }
    if failures.is_empty() {
        Ok(())
    } else {
        Err(failures.join("\n\n"))
    }
}

/// The venv's `componentize-py`, at [`COMPONENTIZE_PY_VERSION`]: made on first use.
fn ensure_componentize_py(venv: &Path) -> Result<PathBuf> {
    let bin = venv.join("bin");
    let componentize_py = bin.join("componentize-py");
    let wanted = format!("componentize-py {COMPONENTIZE_PY_VERSION}");
    let installed = || {
        Command::new(&componentize_py)
            .arg("--version")
            .output()
            .ok()
            .filter(|out| out.status.success())
            .is_some_and(|out| String::from_utf8_lossy(&out.stdout).trim() == wanted)
    };
    if installed() {
        return Ok(componentize_py);
    }
    let python_bin = bin.join("python");
    if !python_bin.is_file() || !runs(&python_bin) {
        // Missing, or left broken (its interpreter moved): make it anew.
        let python = std::env::var("GLOVEBOX_PYTHON").unwrap_or_else(|_| "python3".to_owned());
        let mut cmd = Command::new(&python);
        cmd.args(["-m", "venv", "--clear"]).arg(venv);
        let shown = format!("{python} -m venv --clear {}", venv.display());
        run(cmd, &shown).map_err(|e| {
            format!(
                "{e}\nThe Python plugins are built with componentize-py, installed into a \
                 virtualenv made with Python 3. Install Python 3 with its venv module \
                 (Debian/Ubuntu: `apt-get install python3 python3-venv`), or point \
                 GLOVEBOX_PYTHON at a Python 3 interpreter that has it."
            )
        })?;
    }
    let spec = format!("componentize-py=={COMPONENTIZE_PY_VERSION}");
    let mut cmd = Command::new(&python_bin);
    cmd.args([
        "-m",
        "pip",
        "install",
        "--disable-pip-version-check",
        "--quiet",
        &spec,
    ]);
    let shown = format!("{} -m pip install {spec}", python_bin.display());
    run(cmd, &shown).map_err(|e| {
        format!(
            "{e}\nThe Python plugins need componentize-py from PyPI. Check that PyPI can be \
             reached (pip honours PIP_INDEX_URL and the usual proxy variables), or run the \
             command above by hand and build again. Deleting `{}` starts the virtualenv over.",
            venv.display()
        )
    })?;
    if !installed() {
        return Err(format!(
            "`{shown}` succeeded, but `{} --version` does not say `{wanted}`",
            componentize_py.display()
        ));
    }
    Ok(componentize_py)
}

fn runs(python: &Path) -> bool {
    Command::new(python)
        .arg("--version")
        .output()
        .is_ok_and(|out| out.status.success())
}

/// Runs `cmd` (shown to people as `shown`) to completion; its output goes into the error.
fn run(mut cmd: Command, shown: &str) -> Result<()> {
    let output = cmd
        .output()
        .map_err(|e| format!("cannot run `{shown}`: {e}"))?;
    if output.status.success() {
        return Ok(());
    }
    Err(format!(
        "`{shown}` failed ({}):\n--- stdout ---\n{}\n--- stderr ---\n{}",
        output.status,
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    ))
}

/// A digest of everything a Python plugin's build depends on: its sources, the WIT
/// directories it is built against and the worlds it targets.
fn fingerprint(source: &Path, wit_dirs: &[PathBuf], world: &str) -> Result<String> {
    if !source.join("app.py").is_file() {
        return Err(format!(
            "`{}` is missing: every Python plugin directory has an `app.py`",
            source.join("app.py").display()
        ));
    }
    let mut hash = Fnv::new();
    hash.add(format!("componentize-py {COMPONENTIZE_PY_VERSION} world {WORLD} app").as_bytes());
    if world != WORLD {
        hash.add(world.as_bytes());
    }
    for dir in std::iter::once(source).chain(wit_dirs.iter().map(PathBuf::as_path)) {
        let mut files = Vec::new();
        list_files(dir, &mut files)?;
        files.sort();
        for file in files {
            let relative = file.strip_prefix(dir).unwrap_or(&file);
            hash.add(relative.to_string_lossy().as_bytes());
            hash.add(&super::read(&file)?);
        }
    }
    Ok(format!("{:016x}\n", hash.0))
}

/// The files under `dir`, but for `__pycache__`.
fn list_files(dir: &Path, into: &mut Vec<PathBuf>) -> Result<()> {
    let entries = fs::read_dir(dir).map_err(|e| format!("cannot list `{}`: {e}", dir.display()))?;
    for entry in entries {
        let path = entry
            .map_err(|e| format!("cannot list `{}`: {e}", dir.display()))?
            .path();
        if path.file_name().is_some_and(|name| name == "__pycache__") {
            continue;
        }
        if path.is_dir() {
            list_files(&path, into)?;
        } else {
            into.push(path);
        }
    }
    Ok(())
}

/// Copies the app's directory (but `__pycache__`) to `to`.
fn copy_sources(from: &Path, to: &Path) -> Result<()> {
    let mut files = Vec::new();
    list_files(from, &mut files)?;
    for file in files {
        let relative = file.strip_prefix(from).unwrap_or(&file);
        super::write(&to.join(relative), &super::read(&file)?)?;
    }
    Ok(())
}

fn remove_dir(dir: &Path) -> Result<()> {
    match fs::remove_dir_all(dir) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(format!("cannot remove `{}`: {e}", dir.display())),
    }
}

/// 64-bit FNV-1a: stable across Rust releases, unlike `DefaultHasher`.
struct Fnv(u64);

impl Fnv {
    fn new() -> Fnv {
        Fnv(0xcbf2_9ce4_8422_2325)
    }

    fn add(&mut self, bytes: &[u8]) {
        // The length first, so that ("ab", "c") and ("a", "bc") differ.
        for byte in (bytes.len() as u64).to_le_bytes().iter().chain(bytes) {
            self.0 ^= u64::from(*byte);
            self.0 = self.0.wrapping_mul(0x0100_0000_01b3);
        }
    }
}

/// `wit/deps/` of [`WASI_WIT_CRATE`] as the host builds it: the directory of its
/// `Cargo.toml` per `cargo metadata` (registry, vendored or git source alike).
fn wasi_wit_deps() -> Result<PathBuf> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned());
    let root = std::env::var("CARGO_MANIFEST_DIR").map_err(|e| e.to_string())?;
    let mut cmd = Command::new(&cargo);
    cmd.args(["metadata", "--format-version", "1", "--manifest-path"])
        .arg(Path::new(&root).join("Cargo.toml"));
    // Only the packages of the platform being built: those are downloaded already.
    if let Ok(host) = std::env::var("HOST") {
        cmd.args(["--filter-platform", &host]);
    }
    let shown = format!("{cargo} metadata --format-version 1");
    let output = cmd
        .stderr(Stdio::inherit())
        .output()
        .map_err(|e| format!("cannot run `{shown}`: {e}"))?;
    if !output.status.success() {
        return Err(format!(
            "`{shown}` failed ({}); it finds the WASI WIT in the source of `{WASI_WIT_CRATE}`",
            output.status
        ));
    }
    let text = String::from_utf8_lossy(&output.stdout);
    let metadata: serde_json::Value =
        serde_json::from_str(&text).map_err(|e| format!("`{shown}` printed bad JSON: {e}"))?;
    let mut found = Vec::new();
    let packages = metadata["packages"]
        .as_array()
        .map(Vec::as_slice)
        .unwrap_or_default();
    for package in packages {
        if package["name"].as_str() == Some(WASI_WIT_CRATE)
            && let Some(manifest) = package["manifest_path"].as_str()
        {
            let version = package["version"].as_str().unwrap_or("?");
            found.push((version.to_owned(), PathBuf::from(manifest)));
        }
    }
    found.dedup();
    let [(version, manifest)] = found.as_slice() else {
        return Err(format!(
            "`{shown}` lists {} packages named `{WASI_WIT_CRATE}` ({found:?}); the Python \
             runner's WASI WIT is taken from exactly one",
            found.len()
        ));
    };
    let deps = manifest
        .parent()
        .unwrap_or(Path::new("."))
        .join("wit")
        .join("deps");
    if !deps.join("http.wit").is_file() {
        return Err(format!(
            "`{WASI_WIT_CRATE}` {version} has no `{}`: where does it keep its WIT now?",
            deps.join("http.wit").display()
        ));
    }
    Ok(deps)
}

/// Checks that the WASI packages `own` (an app's `wit/`) names are at the versions of
/// `deps`, with a message that says what to change when the host's wasmtime moved on.
fn check_wasi_versions(own: &Path, deps: &Path) -> Result<()> {
    let mut declared = Vec::new();
    let mut files = Vec::new();
    list_files(deps, &mut files)?;
    for file in files {
        let text = String::from_utf8_lossy(&super::read(&file)?).into_owned();
        if let Some(package) = text
            .lines()
            .find_map(|line| line.trim().strip_prefix("package "))
        {
            declared.push(package.trim_end_matches(';').trim().to_owned());
        }
    }
    let mut files = Vec::new();
    list_files(own, &mut files)?;
    for file in files {
        let text = String::from_utf8_lossy(&super::read(&file)?).into_owned();
        let code = text.lines().filter(|l| !l.trim_start().starts_with("//"));
        for word in code.flat_map(|l| l.split(|c: char| c.is_whitespace() || c == ';' || c == ','))
        {
            let Some((package, rest)) = word.split_once('/') else {
                continue;
            };
            if !package.starts_with("wasi:") {
                continue;
            }
            let version = rest.split_once('@').map(|(_, v)| v).unwrap_or("");
            let wanted = format!("{package}@{version}");
            if !declared.contains(&wanted) {
                let have: Vec<_> = declared
                    .iter()
                    .filter(|d| d.starts_with(&format!("{package}@")))
                    .collect();
                return Err(format!(
                    "`{}` uses `{word}`, but the host's WASI WIT (`{}`) has {have:?}: change \
                     the version there to the one the host links",
                    file.display(),
                    deps.display()
                ));
            }
        }
    }
    Ok(())
}
