//! The manifest's UI tests: what an operator writes, and what Glovebox answers, as files.
//!
//! Each case under `tests/ui/` is one trial, named after its path:
//!
//! - `invalid/config/NAME.toml` is loaded as a `glovebox.toml`, `invalid/plugin/NAME.toml`
//!   as a plugin manifest; each must be refused, with exactly the message in `NAME.err`
//!   beside it (file, key, culprit and fix).
//! - `invalid/config/NAME/` is a case of several files: a folder with a `glovebox.toml`
//!   (or, under `plugin/`, a `plugin.toml`) and what it refers to (an empty directory
//!   holds a `.keep`); its message is `NAME.err` beside the folder.
//! - `valid/{config,plugin}/NAME.toml` (or a folder) must load; `NAME.debug` holds what
//!   it parsed to, pretty-printed with `Debug`.
//!
//! A case runs in a temporary directory of its own, holding a copy of the case (every file
//! owner-only, as secret files must be) and a stub component `tool.wasm` (what a manifest's
//! `component = "tool.wasm"` finds unless the case brings one). That directory is written
//! `<dir>` in the expected output. Every message is also held to the rules all of them
//! follow: it starts by naming the file it is about (so lowercase), and names its key
//! followed by what to do.
//!
//! A changed output fails its trial with a diff; `GLOVEBOX_BLESS=1 cargo test -p
//! glovebox-manifest --test ui` (or snapbox's own `SNAPSHOTS=overwrite`) rewrites the
//! expected files (docs/contributing.md).

use std::fmt::Debug;
use std::fs;
use std::path::{Path, PathBuf};

use glovebox_manifest::{ConfigError, HostConfig, Limits, PluginManifest};
use libtest_mimic::{Arguments, Failed, Trial};
use snapbox::assert::Action;
use snapbox::assert::DEFAULT_ACTION_ENV;
use snapbox::{Assert, Data};

/// Whether a case must load or must be refused: the first folder under `tests/ui`.
#[derive(Clone, Copy, PartialEq)]
enum Expect {
    Valid,
    Invalid,
}

impl Expect {
    const ALL: [(Expect, &str); 2] = [(Expect::Valid, "valid"), (Expect::Invalid, "invalid")];

    /// The extension of the expected output beside a case.
    fn snapshot(self) -> &'static str {
        match self {
            Expect::Valid => "debug",
            Expect::Invalid => "err",
        }
    }
}

/// What a case is loaded as: the second folder.
#[derive(Clone, Copy)]
enum Kind {
    Config,
    Plugin,
}

impl Kind {
    const ALL: [(Kind, &str); 2] = [(Kind::Config, "config"), (Kind::Plugin, "plugin")];

    /// The file a case is copied to, or that a folder case must hold.
    fn entry(self) -> &'static str {
        match self {
            Kind::Config => "glovebox.toml",
            Kind::Plugin => "plugin.toml",
        }
    }
}

/// One case: its input (a file or a folder) and its expected output.
struct Case {
    expect: Expect,
    kind: Kind,
    input: PathBuf,
    snapshot: PathBuf,
}

fn main() {
    let args = Arguments::from_args();
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/ui");
    let mut trials = Vec::new();
    let mut inputs = Vec::new();
    for (expect, expect_dir) in Expect::ALL {
        for (kind, kind_dir) in Kind::ALL {
            let dir = root.join(expect_dir).join(kind_dir);
            for input in entries(&dir) {
                let Some(stem) = case_name(&input) else {
                    continue;
                };
                let case = Case {
                    expect,
                    kind,
                    snapshot: dir.join(format!("{stem}.{}", expect.snapshot())),
                    input,
                };
                inputs.push(case.snapshot.clone());
                trials.push(Trial::test(
                    format!("{expect_dir}::{kind_dir}::{stem}"),
                    move || run(&case),
                ));
            }
        }
    }
    trials.push(Trial::test("orphaned_snapshots", move || {
        orphans(&root, &inputs)
    }));
    libtest_mimic::run(&args, trials).exit_if_failed();
}

/// The entries of `dir`, sorted.
fn entries(dir: &Path) -> Vec<PathBuf> {
    let Ok(read) = fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut entries: Vec<PathBuf> = read
        .map(|e| e.expect("a readable case directory").path())
        .collect();
    entries.sort();
    entries
}

/// The name of the case at `path`: a `.toml` file's stem or a folder's name; `None` for
/// an expected output.
fn case_name(path: &Path) -> Option<String> {
    let name = path.file_name()?.to_string_lossy();
    if path.is_dir() {
        Some(name.into_owned())
    } else {
        name.strip_suffix(".toml").map(str::to_owned)
    }
}

fn run(case: &Case) -> Result<(), Failed> {
    let dir = tempfile::tempdir()?;
    let entry = stage(case, dir.path())?;
    let outcome = match case.kind {
        Kind::Config => HostConfig::load(&entry).map(|c| dump(&c)),
        Kind::Plugin => PluginManifest::load(&entry, &Limits::default()).map(|m| dump(&m)),
    };
    let actual = match (case.expect, outcome) {
        (Expect::Valid, Ok(parsed)) => parsed,
        (Expect::Valid, Err(error)) => return Err(format!("refused: {error}").into()),
        (Expect::Invalid, Ok(parsed)) => return Err(format!("loaded: {parsed}").into()),
        (Expect::Invalid, Err(error)) => {
            check_rules(&error)?;
            error.to_string()
        }
    };
    let actual = placeholders(actual, dir.path());
    let mut assert = Assert::new()
        .action_env(DEFAULT_ACTION_ENV)
        .normalize_paths(false);
    // The project's one switch for rewriting expected files (as `QuotasConfig::table`'s page).
    if std::env::var_os("GLOVEBOX_BLESS").is_some() {
        assert = assert.action(Action::Overwrite);
    }
    assert
        .try_eq(
            Some(&case.input.display()),
            Data::text(format!("{actual}\n")),
            // Raw: the expected text is compared as it is, without snapbox's wildcards.
            Data::read_from(&case.snapshot, None).raw(),
        )
        .map_err(|e| Failed::from(e.to_string()))
}

/// Copies the case into `dir` beside a stub component, and returns the file to load.
fn stage(case: &Case, dir: &Path) -> std::io::Result<PathBuf> {
    fs::write(dir.join("tool.wasm"), b"\0asm")?;
    let entry = dir.join(case.kind.entry());
    if case.input.is_dir() {
        copy_dir(&case.input, dir)?;
    } else {
        copy_file(&case.input, &entry)?;
    }
    Ok(entry)
}

fn copy_dir(from: &Path, to: &Path) -> std::io::Result<()> {
    fs::create_dir_all(to)?;
    for entry in fs::read_dir(from)? {
        let entry = entry?;
        let target = to.join(entry.file_name());
        if entry.file_type()?.is_dir() {
            copy_dir(&entry.path(), &target)?;
        } else {
            copy_file(&entry.path(), &target)?;
        }
    }
    Ok(())
}

/// Copies one file, owner-only: the loader refuses a secret file others may read.
fn copy_file(from: &Path, to: &Path) -> std::io::Result<()> {
    fs::copy(from, to)?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        fs::set_permissions(to, fs::Permissions::from_mode(0o600))?;
    }
    Ok(())
}

fn dump(parsed: &impl Debug) -> String {
    format!("{parsed:#?}")
}

/// `dir` (as given and canonical) written `<dir>`.
fn placeholders(text: String, dir: &Path) -> String {
    let mut text = text;
    if let Ok(canonical) = dir.canonicalize() {
        text = text.replace(&canonical.display().to_string(), "<dir>");
    }
    text.replace(&dir.display().to_string(), "<dir>")
}

/// What every refusal says, whatever its case: the file it is about, lowercase, and its key
/// followed by what to do.
fn check_rules(error: &ConfigError) -> Result<(), Failed> {
    let message = error.to_string();
    if !(message.starts_with("in `") || message.starts_with("cannot read `")) {
        return Err(format!("names no file: {message}").into());
    }
    if let Some(key) = error.key() {
        let quoted = format!("`{key}`");
        let Some(at) = message.find(&quoted) else {
            return Err(format!("does not name its key {quoted}: {message}").into());
        };
        let hint = message[at..].split_once(": ").map_or("", |(_, hint)| hint);
        if hint.trim().is_empty() {
            return Err(format!("says nothing to do after {quoted}: {message}").into());
        }
    }
    Ok(())
}

/// An expected output with no case beside it fails: a renamed or removed case leaves none.
fn orphans(root: &Path, snapshots: &[PathBuf]) -> Result<(), Failed> {
    let mut orphans = Vec::new();
    for (_, expect_dir) in Expect::ALL {
        for (_, kind_dir) in Kind::ALL {
            for path in entries(&root.join(expect_dir).join(kind_dir)) {
                if case_name(&path).is_none() && !snapshots.contains(&path) {
                    orphans.push(path.display().to_string());
                }
            }
        }
    }
    if orphans.is_empty() {
        Ok(())
    } else {
        Err(format!("expected output with no case: {}", orphans.join(", ")).into())
    }
}
