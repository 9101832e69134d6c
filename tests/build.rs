//! Build script of `glovebox-tests`: builds every plugin in `plugins/` and tells the
//! tests where the artifacts are.
//!
//! 1. makes sure the `wasm32-wasip2` target is installed (installs it with rustup if not);
//! 2. builds the `plugins/` workspace and the `plugins/hooks/` workspace (the `no_std`
//!    permission hooks) for `wasm32-wasip2` in release mode, into `plugins/target`;
//! 3. assembles the artifacts that cannot be written in Rust (from WAT sources in
//!    `plugins/`) and the deliberately broken files (not Wasm, truncated), and builds the
//!    plugins written in Python (`plugins/python/`, see `build_python.rs`);
//! 4. writes `$OUT_DIR/plugins.rs`: one `pub const NAME: &str = "<absolute path>"` per
//!    artifact, plus `PLUGINS_DIR` and `WIT_DIR`. The tests include it with
//!    `include!(concat!(env!("OUT_DIR"), "/plugins.rs"))`;
//! 5. insists that every plugin has a test: each artifact constant must appear in some
//!    `.rs` file under `tests/all/`, or the build fails and lists the missing ones.
//!    Set `GLOVEBOX_ALLOW_UNTESTED_PLUGINS=1` to turn that failure into a warning while
//!    the tests for a new plugin are being written.

#![forbid(unsafe_code)]

use std::env;
use std::fmt::Write as _;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, SystemTime};

#[path = "build_python.rs"]
mod python;

/// The Wasm target plugins are built for.
const WASM_TARGET: &str = "wasm32-wasip2";

/// Artifacts built by cargo from the [`PLUGIN_WORKSPACES`]: (constant, file stem, what it is).
#[rustfmt::skip]
const CARGO_ARTIFACTS: &[(&str, &str, &str)] = &[
    ("TOOL_ECHO", "tool_echo", "`echo`: returns its input unchanged."),
    ("TOOL_TEXT", "tool_text", "`upper`, `lower`, `reverse`, `word-count` on `{\"text\"}`."),
    ("TOOL_FILES", "tool_files", "`list`, `read`, `write` in the preopened directories."),
    ("TOOL_HTTP_FETCH", "tool_http_fetch", "`fetch`: HTTP over wasi:http, redirects followed hop by hop."),
    ("TOOL_CPU", "tool_cpu", "`burn`: computes a hash chain for `ms` of wall time or `iterations` rounds."),
    ("TOOL_GATE", "tool_gate", "`report` (FAILED lines in a test report), `json_schema` (a JSON, TOML or YAML file against a schema), `valid` (a JSON, TOML or YAML file parses): completion-gate and `[[verify]]` checks."),
    ("CODE_JS", "code_js", "`run`: runs JavaScript (boa, pre-initialized) with console, fs, fetch and the session's tools."),
    ("TOOL_JS_JSON", "tool_js_json", "`get`, `pick`, `filter` on JSON by path: a tool plugin written in JavaScript."),
    ("HOSTILE_INFINITE_LOOP", "hostile_infinite_loop", "`spin`: loops forever."),
    ("HOSTILE_SLEEP", "hostile_sleep", "`sleep`: blocks in a host call (default 3600 s)."),
    ("HOSTILE_RECURSION", "hostile_recursion", "`recurse`, `recurse-big-frames`: unbounded recursion."),
    ("HOSTILE_MEMORY_BOMB", "hostile_memory_bomb", "`grow`: allocates towards 4 GiB."),
    ("HOSTILE_HUGE_OUTPUT", "hostile_huge_output", "`huge`: returns `mib` MiB of JSON (default 300)."),
    ("HOSTILE_STDOUT_FLOOD", "hostile_stdout_flood", "`flood`: writes `mib` MiB to stdout and stderr (default 2048)."),
    ("HOSTILE_FS", "hostile_fs", "Filesystem probes; answers `{\"ok\": bool, ...}`."),
    ("HOSTILE_NET", "hostile_net", "`resolve`, `connect`, `udp-send` over wasi:sockets."),
    ("HOSTILE_RESOURCES", "hostile_resources", "`pollables`, `descriptors`, `random`, `headers`: grows host-side structures."),
    ("HOSTILE_ENV", "hostile_env", "`env`: dumps env vars and args."),
    ("HOSTILE_PANIC", "hostile_panic", "`panic`: panics (traps)."),
    ("HOSTILE_PREINIT", "hostile_preinit", "Exports `wizer-initialize`, which panics: never loads."),
    ("HOSTILE_STATE", "hostile_state", "`count`: a static counter; always 1 with fresh instances."),
    ("HOSTILE_TOOL_TEXT", "hostile_tool_text", "`shifty` (its description changes at every load), `poisoned` (instructions for the model in its text)."),
    ("HOSTILE_MISSING_EXPORT", "hostile_missing_export", "Exports the `tool` interface without `call`."),
    ("HOSTILE_WRONG_WORLD", "hostile_wrong_world", "A `wasi:cli/command` component, not a tool plugin."),
    // Permission hooks, from the `plugins/hooks/` workspace (but the std one, `HOSTILE_HOOK_FS_IMPORT`).
    ("HOOK_COST_CONTROL", "hook_cost_control", "Hook: denies a call whose estimated cost exceeds its role's per-call limit."),
    ("HOOK_DESTRUCTIVE", "hook_destructive", "Hook: asks about (or denies) destructive calls and calls with `force`/`cascade` set."),
    ("HOOK_ROLE_ALLOWLIST", "hook_role_allowlist", "Hook: which roles may use which tools (settings `roles`)."),
    ("HOOK_RATCHET", "hook_ratchet", "Hook: denies deleting or rewriting files under the test paths (settings `test_paths`, `tools`)."),
    ("HOOK_DATA_POLICY", "hook_data_policy", "Hook (0.2.0 world): keeps each principal out of other projects' tools and paths (settings `projects`, `principals`)."),
    ("HOOK_HTTP_GUARD", "hook_http_guard", "Hook (0.2.0 world): denies or asks about HTTP requests by method, host and path (settings `deny`, `ask`)."),
    ("COMPAT_HOOK_V0_1", "compat_hook_v0_1", "Hook of the 0.1.0 world: denies the tools named in settings `deny`."),
    ("HOSTILE_HOOK_TRAP", "hostile_hook_trap", "Hook whose `validate` traps (panics)."),
    ("HOSTILE_HOOK_LOOP", "hostile_hook_loop", "Hook whose `validate` loops forever."),
    ("HOSTILE_HOOK_MALFORMED", "hostile_hook_malformed", "Hook whose `validate` denies with an empty reason and 10,000 alternatives."),
    ("HOSTILE_HOOK_BAD_TRIGGERS", "hostile_hook_bad_triggers", "Hook whose `triggers` are invalid: `\"\"` and `\"EXECUTE::bad pattern\"`; `validate` allows."),
    ("HOSTILE_HOOK_FS_IMPORT", "hostile_hook_fs_import", "A std hook that reads /etc/passwd: imports wasi:filesystem (and wasi:cli, wasi:io)."),
    ("HOSTILE_HOOK_SLOW_AFTER", "hostile_hook_slow_after", "Hook that allows, then traps in `after` (loops there with settings `{\"after\": \"loop\"}`)."),
    ("HOSTILE_HOOK_STATE", "hostile_hook_state", "Hook that keeps state: denies every call with its instance's evaluation count and the principals it judged before."),
];

/// Cargo workspaces built into `plugins/target`, relative to `plugins/`: the tool plugins
/// (and the one std hook) and the `no_std` permission hooks. They are separate because
/// cargo unifies features within a workspace, and the tools' `std` would leak into the hooks.
const PLUGIN_WORKSPACES: &[&str] = &[".", "hooks"];

/// Artifacts made here: (constant, file name, what it is).
#[rustfmt::skip]
const OTHER_ARTIFACTS: &[(&str, &str, &str)] = &[
    ("HOSTILE_START_LOOP", "hostile_start_loop.wasm", "A tool plugin whose start function loops forever."),
    ("HOSTILE_CORE_MODULE", "hostile_core_module.wasm", "A core Wasm module, not a component."),
    ("NOT_WASM", "not_wasm.wasm", "A text file, not Wasm at all."),
    ("TRUNCATED_ECHO", "truncated_echo.wasm", "The first half of `tool_echo.wasm`."),
];

/// Environment variables of the outer cargo that must not leak into the plugin build:
/// they would point it at the host's target dir, profile, flags or clippy wrapper.
const CLEARED_VARS: &[&str] = &[
    "CARGO_ENCODED_RUSTFLAGS",
    "CARGO_ENCODED_RUSTDOCFLAGS",
    "RUSTFLAGS",
    "RUSTDOCFLAGS",
    "CARGO_TARGET_DIR",
    "CARGO_BUILD_TARGET",
    "CARGO_BUILD_TARGET_DIR",
    "CARGO_BUILD_RUSTFLAGS",
    "RUSTC_WORKSPACE_WRAPPER",
    "CARGO_MANIFEST_DIR",
    "CARGO_MANIFEST_PATH",
    "CARGO_PRIMARY_PACKAGE",
    "OUT_DIR",
    "TARGET",
    "HOST",
    "PROFILE",
    "OPT_LEVEL",
    "DEBUG",
];
/// Prefixes of variables cleared for the same reason.
const CLEARED_PREFIXES: &[&str] = &[
    "CARGO_PROFILE_",
    "CARGO_CFG_",
    "CARGO_FEATURE_",
    "CARGO_PKG_",
];

type Result<T> = std::result::Result<T, String>;

fn main() {
    if let Err(e) = run() {
        eprintln!("\nerror: building the test plugins failed:\n{e}\n");
        std::process::exit(1);
    }
}

fn run() -> Result<()> {
    let root = PathBuf::from(env::var("CARGO_MANIFEST_DIR").map_err(|e| e.to_string())?);
    let out_dir = PathBuf::from(env::var("OUT_DIR").map_err(|e| e.to_string())?);
    let plugins_dir = root.join("plugins");
    let wit_dir = root.join("wit");
    let tests_dir = root.join("tests").join("all");
    let target_dir = plugins_dir.join("target");
    let release_dir = target_dir.join(WASM_TARGET).join("release");

    emit_rerun_if_changed(&plugins_dir, &wit_dir, &tests_dir, &release_dir)?;

    // Cheap check first, so a missing test fails the build before a long plugin build.
    check_every_plugin_is_tested(&tests_dir)?;

    ensure_wasm_target()?;
    for workspace in PLUGIN_WORKSPACES {
        cargo_build_plugins(&workspace_dir(&plugins_dir, workspace), &target_dir)?;
    }

    let mut missing = Vec::new();
    for (_, stem, _) in CARGO_ARTIFACTS {
        let path = release_dir.join(format!("{stem}.wasm"));
        if !path.is_file() {
            missing.push(path.display().to_string());
        }
    }
    if !missing.is_empty() {
        return Err(format!(
            "cargo built the plugins but these artifacts are missing:\n  {}",
            missing.join("\n  ")
        ));
    }

    build_start_loop(
        &plugins_dir,
        &wit_dir,
        &release_dir.join("hostile_start_loop.wasm"),
    )?;
    let core_module = wat_to_wasm(&plugins_dir.join("hostile-core-module").join("module.wat"))?;
    write(&release_dir.join("hostile_core_module.wasm"), &core_module)?;
    write(&release_dir.join("not_wasm.wasm"), b"this is not wasm\n")?;
    let echo = read(&release_dir.join("tool_echo.wasm"))?;
    write(
        &release_dir.join("truncated_echo.wasm"),
        &echo[..echo.len() / 2],
    )?;

    python::build(&plugins_dir, &wit_dir, &target_dir, &release_dir)?;

    write_stamp(&release_dir)?;
    write_constants(&out_dir, &plugins_dir, &wit_dir, &release_dir)
}

/// Reruns the script when plugin sources, the WIT contract or the tests change, or when
/// the plugin artifacts were deleted (see `write_stamp`).
fn emit_rerun_if_changed(
    plugins_dir: &Path,
    wit_dir: &Path,
    tests_dir: &Path,
    release_dir: &Path,
) -> Result<()> {
    println!("cargo:rerun-if-env-changed=GLOVEBOX_ALLOW_UNTESTED_PLUGINS");
    // A directory makes cargo scan everything below it, so a workspace directory itself
    // is not listed (its `target/` may be huge): each of its entries is, except `target/`.
    for workspace in PLUGIN_WORKSPACES {
        let dir = workspace_dir(plugins_dir, workspace);
        let entries =
            fs::read_dir(&dir).map_err(|e| format!("cannot list `{}`: {e}", dir.display()))?;
        for entry in entries {
            let entry = entry.map_err(|e| format!("cannot list `{}`: {e}", dir.display()))?;
            let name = entry.file_name();
            // A nested workspace is listed entry by entry on its own turn.
            let nested = *workspace == "." && PLUGIN_WORKSPACES.iter().any(|w| name == *w);
            if name == "target" || nested {
                continue;
            }
            println!("cargo:rerun-if-changed={}", entry.path().display());
        }
    }
    println!("cargo:rerun-if-changed={}", wit_dir.display());
    println!("cargo:rerun-if-changed={}", tests_dir.display());
    println!(
        "cargo:rerun-if-changed={}",
        stamp_path(release_dir).display()
    );
    println!("cargo:rerun-if-changed=tests/build.rs");
    python::emit_rerun_if_changed();
    Ok(())
}

/// The directory of a workspace in [`PLUGIN_WORKSPACES`].
fn workspace_dir(plugins_dir: &Path, workspace: &str) -> PathBuf {
    if workspace == "." {
        plugins_dir.to_path_buf()
    } else {
        plugins_dir.join(workspace)
    }
}

fn stamp_path(release_dir: &Path) -> PathBuf {
    release_dir.join(".glovebox-tests-stamp")
}

/// Writes a stamp next to the artifacts, dated in the past. Cargo reruns this script when
/// a `rerun-if-changed` file is newer than its last run or missing; the stamp is never
/// newer, so it only triggers a rerun when `plugins/target` was cleaned.
fn write_stamp(release_dir: &Path) -> Result<()> {
    let stamp = stamp_path(release_dir);
    write(
        &stamp,
        b"Written by tests/build.rs; deleting it makes the test build rebuild the plugins.\n",
    )?;
    let file = fs::File::options()
        .write(true)
        .open(&stamp)
        .map_err(|e| format!("cannot open `{}`: {e}", stamp.display()))?;
    file.set_modified(SystemTime::UNIX_EPOCH + Duration::from_secs(86_400))
        .map_err(|e| format!("cannot set the mtime of `{}`: {e}", stamp.display()))
}

/// Every plugin has a test: each artifact constant must be named in `tests/all/`.
fn check_every_plugin_is_tested(tests_dir: &Path) -> Result<()> {
    let mut sources = String::new();
    collect_rust_sources(tests_dir, &mut sources)?;
    let untested: Vec<&str> = CARGO_ARTIFACTS
        .iter()
        .chain(OTHER_ARTIFACTS)
        .chain(python::ARTIFACTS)
        .map(|(name, _, _)| *name)
        .filter(|name| !mentions(&sources, name))
        .collect();
    if untested.is_empty() {
        return Ok(());
    }
    let list = untested.join(", ");
    // GLOVEBOX_ALLOW_UNTESTED_PLUGINS=1 lets the suite build while tests for new plugins
    // are still being written; the gap is then reported as a warning.
    if env::var("GLOVEBOX_ALLOW_UNTESTED_PLUGINS").as_deref() == Ok("1") {
        println!("cargo:warning=plugins without a test in tests/all/: {list}");
        return Ok(());
    }
    Err(format!(
        "every plugin needs a test, but no file under {} mentions: {list}\n\
         Write a test that uses each of these constants (from plugins.rs), or set \
         GLOVEBOX_ALLOW_UNTESTED_PLUGINS=1 while the tests are being written.",
        tests_dir.display()
    ))
}

fn collect_rust_sources(dir: &Path, into: &mut String) -> Result<()> {
    let entries = match fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(format!("cannot list `{}`: {e}", dir.display())),
    };
    for entry in entries {
        let path = entry
            .map_err(|e| format!("cannot list `{}`: {e}", dir.display()))?
            .path();
        if path.is_dir() {
            collect_rust_sources(&path, into)?;
        } else if path.extension().is_some_and(|ext| ext == "rs") {
            into.push_str(
                &fs::read_to_string(&path)
                    .map_err(|e| format!("cannot read `{}`: {e}", path.display()))?,
            );
            into.push('\n');
        }
    }
    Ok(())
}

/// Whether `text` contains `word` as a whole identifier.
fn mentions(text: &str, word: &str) -> bool {
    let is_ident = |c: char| c.is_ascii_alphanumeric() || c == '_';
    text.match_indices(word).any(|(at, _)| {
        let before = text[..at].chars().next_back();
        let after = text[at + word.len()..].chars().next();
        !before.is_some_and(is_ident) && !after.is_some_and(is_ident)
    })
}

/// Installs the `wasm32-wasip2` target with rustup when the toolchain lacks it.
fn ensure_wasm_target() -> Result<()> {
    if wasm_target_installed() {
        return Ok(());
    }
    let status = Command::new("rustup")
        .args(["target", "add", WASM_TARGET])
        .status()
        .map_err(|e| {
            format!(
                "the {WASM_TARGET} target is not installed and rustup could not be run ({e}).\n\
                 Install the target for this toolchain, e.g. `rustup target add {WASM_TARGET}`."
            )
        })?;
    if !status.success() || !wasm_target_installed() {
        return Err(format!(
            "the {WASM_TARGET} target is not installed and `rustup target add {WASM_TARGET}` \
             did not install it ({status}).\nInstall it by hand for this toolchain."
        ));
    }
    Ok(())
}

fn wasm_target_installed() -> bool {
    let rustc = env::var("RUSTC").unwrap_or_else(|_| "rustc".to_owned());
    Command::new(rustc)
        .args(["--print", "target-libdir", "--target", WASM_TARGET])
        .output()
        .ok()
        .filter(|out| out.status.success())
        .map(|out| PathBuf::from(String::from_utf8_lossy(&out.stdout).trim()))
        .is_some_and(|dir| dir.is_dir())
}

/// `cargo build --release --target wasm32-wasip2` on one plugin workspace.
fn cargo_build_plugins(workspace_dir: &Path, target_dir: &Path) -> Result<()> {
    let cargo = env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned());
    let manifest = workspace_dir.join("Cargo.toml");
    let mut cmd = Command::new(&cargo);
    cmd.current_dir(workspace_dir)
        .arg("build")
        .arg("--release")
        .args(["--target", WASM_TARGET])
        .arg("--manifest-path")
        .arg(&manifest)
        .arg("--target-dir")
        .arg(target_dir);
    for var in CLEARED_VARS {
        cmd.env_remove(var);
    }
    for (var, _) in env::vars_os() {
        let Some(var) = var.to_str() else { continue };
        if CLEARED_PREFIXES.iter().any(|p| var.starts_with(p)) {
            cmd.env_remove(var);
        }
    }
    let output = cmd
        .output()
        .map_err(|e| format!("cannot run `{cargo}` to build the plugins: {e}"))?;
    if !output.status.success() {
        return Err(format!(
            "`{cargo} build --release --target {WASM_TARGET} --manifest-path {}` failed ({}):\n\
             --- stdout ---\n{}\n--- stderr ---\n{}",
            manifest.display(),
            output.status,
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        ));
    }
    Ok(())
}

/// `hostile-start-loop`: a WAT core module with the `tool-plugin` world embedded, made
/// into a component.
fn build_start_loop(plugins_dir: &Path, wit_dir: &Path, dest: &Path) -> Result<()> {
    let source = plugins_dir.join("hostile-start-loop").join("module.wat");
    let mut module = wat_to_wasm(&source)?;
    let mut resolve = wit_parser::Resolve::default();
    let (package, _) = resolve
        .push_dir(wit_dir)
        .map_err(|e| format!("cannot parse the WIT in `{}`: {e:#}", wit_dir.display()))?;
    let world = resolve
        .select_world(&[package], Some("tool-plugin"))
        .map_err(|e| format!("no `tool-plugin` world in `{}`: {e:#}", wit_dir.display()))?;
    wit_component::embed_component_metadata(
        &mut module,
        &resolve,
        world,
        wit_component::StringEncoding::UTF8,
    )
    .map_err(|e| {
        format!(
            "cannot embed the component type into `{}`: {e:#}",
            source.display()
        )
    })?;
    let component = wit_component::ComponentEncoder::default()
        .module(&module)
        .and_then(|encoder| encoder.validate(true).encode())
        .map_err(|e| {
            format!(
                "cannot make a component of `{}` (are its exports' signatures still those of \
                 the `tool` interface in wit/plugin.wit?): {e:#}",
                source.display()
            )
        })?;
    write(dest, &component)
}

fn wat_to_wasm(path: &Path) -> Result<Vec<u8>> {
    wat::parse_file(path).map_err(|e| format!("cannot assemble `{}`: {e}", path.display()))
}

fn write_constants(
    out_dir: &Path,
    plugins_dir: &Path,
    wit_dir: &Path,
    release_dir: &Path,
) -> Result<()> {
    let mut code =
        String::from("// Generated by tests/build.rs: absolute paths of the test plugins.\n\n");
    let mut constant = |name: &str, doc: &str, path: &Path| -> Result<()> {
        let path = path
            .to_str()
            .ok_or_else(|| format!("path is not UTF-8: {}", path.display()))?;
        writeln!(
            code,
            "/// {doc}\n#[allow(dead_code)]\npub const {name}: &str = {path:?};"
        )
        .map_err(|e| e.to_string())
    };
    constant("PLUGINS_DIR", "The `plugins/` workspace.", plugins_dir)?;
    constant("WIT_DIR", "The WIT contract, `wit/`.", wit_dir)?;
    for (name, stem, doc) in CARGO_ARTIFACTS {
        constant(name, doc, &release_dir.join(format!("{stem}.wasm")))?;
    }
    for (name, file, doc) in OTHER_ARTIFACTS.iter().chain(python::ARTIFACTS) {
        constant(name, doc, &release_dir.join(file))?;
    }
    write(&out_dir.join("plugins.rs"), code.as_bytes())
}

fn read(path: &Path) -> Result<Vec<u8>> {
    fs::read(path).map_err(|e| format!("cannot read `{}`: {e}", path.display()))
}

fn write(path: &Path, bytes: &[u8]) -> Result<()> {
    if let Some(parent) = path.parent() {
        fs::create_dir_all(parent)
            .map_err(|e| format!("cannot create `{}`: {e}", parent.display()))?;
    }
    fs::write(path, bytes).map_err(|e| format!("cannot write `{}`: {e}", path.display()))
}
