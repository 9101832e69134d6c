//! `glovebox new tool NAME --lang rust|python|js` and `glovebox new hook NAME`: a
//! ready plugin project in a new directory, independent of this repository.
//!
//! Each project has the source with one example (a tool `NAME.greet`; for a hook,
//! triggers and a deny with alternatives), a manifest granting nothing, a
//! `glovebox.toml` to run it, a `build.sh` that installs what the build needs (the
//! `wasm32-wasip2` target, componentize-py in a virtualenv of the project's own), a
//! README with the three commands (build, check, test), and a test in the language's
//! own framework that builds the component and calls it through the `glovebox` binary.
//!
//! The templates are the files under `templates/` in the repository, embedded in the
//! binary; `{{name}}` (the plugin's name), `{{crate}}` (the name as Cargo's library
//! name) and `{{componentize_py}}` are replaced when a project is written. Besides
//! them, a project gets the binary's copy of `wit/plugin.wit` and, for the Cargo-based
//! templates, copies of the small SDKs of `plugins/` under `vendor/` (none of them is
//! on crates.io), with the `Cargo.lock` of the workspace they are tested in here.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, Result};
use clap::Subcommand;

use crate::exit::Exit;

#[derive(Subcommand)]
pub enum NewCommand {
    /// A tool plugin project: one example tool, its manifest, a build script, a
    /// README and a test that calls it through `glovebox`.
    Tool {
        /// The plugin's name, its tools' prefix (`NAME.greet`): lowercase letters,
        /// digits, `-` and `_`.
        name: String,
        /// The language: `rust`, `python` or `js`.
        #[arg(long, default_value = "rust")]
        lang: String,
        /// Where to write the project (default: `./NAME`); must be empty or absent.
        #[arg(long)]
        dir: Option<PathBuf>,
    },
    /// A permission-hook project in Rust: triggers, a deny with alternatives, a
    /// build script, a README and a test that runs it through `glovebox hook test`.
    Hook {
        /// The hook's name: lowercase letters, digits, `-` and `_`.
        name: String,
        /// Where to write the project (default: `./NAME`); must be empty or absent.
        #[arg(long)]
        dir: Option<PathBuf>,
    },
}

/// componentize-py from PyPI, at the version the repository's Python plugins are
/// built and tested with (`tests/build_python.rs`).
pub const COMPONENTIZE_PY_VERSION: &str = "0.25.1";

/// One file of a project: where it goes, its text, and whether the placeholders
/// are replaced in it (never in copied sources, whose braces are Rust's).
struct File {
    path: &'static str,
    text: &'static str,
    template: bool,
}

/// A file of `templates/`, placeholders replaced.
macro_rules! template {
    ($path:literal, $source:literal) => {
        File {
            path: $path,
            text: include_str!(concat!("../templates/", $source)),
            template: true,
        }
    };
}

/// A file of the repository, copied as it is.
macro_rules! copy {
    ($path:literal, $source:literal) => {
        File {
            path: $path,
            text: include_str!(concat!("../", $source)),
            template: false,
        }
    };
}

/// The contract every plugin is built against.
const WIT: File = copy!("wit/plugin.wit", "wit/plugin.wit");

/// The tool SDK (`plugins/sdk`).
const PLUGIN_SDK: [File; 3] = [
    template!(
        "vendor/glovebox-plugin-sdk/Cargo.toml",
        "vendor/glovebox-plugin-sdk.toml"
    ),
    copy!(
        "vendor/glovebox-plugin-sdk/src/lib.rs",
        "plugins/sdk/src/lib.rs"
    ),
    copy!(
        "vendor/glovebox-plugin-sdk/src/tools.rs",
        "plugins/sdk/src/tools.rs"
    ),
];

const RUST_TOOL: &[File] = &[
    template!("Cargo.toml", "rust-tool/Cargo.toml"),
    template!("src/lib.rs", "rust-tool/src/lib.rs"),
    template!("tests/glovebox.rs", "rust-tool/tests/glovebox.rs"),
    template!("build.sh", "rust-tool/build.sh"),
    template!("{{name}}.toml", "rust-tool/plugin.toml"),
    template!("glovebox.toml", "rust-tool/glovebox.toml"),
    template!("README.md", "rust-tool/README.md"),
    template!(".gitignore", "rust-tool/gitignore"),
    copy!("Cargo.lock", "plugins/Cargo.lock"),
];

const RUST_HOOK: &[File] = &[
    template!("Cargo.toml", "rust-hook/Cargo.toml"),
    template!("src/lib.rs", "rust-hook/src/lib.rs"),
    template!("tests/glovebox.rs", "rust-hook/tests/glovebox.rs"),
    template!("build.sh", "rust-hook/build.sh"),
    template!("glovebox.toml", "rust-hook/glovebox.toml"),
    template!("README.md", "rust-hook/README.md"),
    template!(".gitignore", "rust-hook/gitignore"),
    copy!("Cargo.lock", "plugins/hooks/Cargo.lock"),
    template!(
        "vendor/glovebox-hook-sdk/Cargo.toml",
        "vendor/glovebox-hook-sdk.toml"
    ),
    copy!(
        "vendor/glovebox-hook-sdk/src/lib.rs",
        "plugins/hooks/sdk/src/lib.rs"
    ),
    copy!(
        "vendor/glovebox-hook-sdk/src/path.rs",
        "plugins/hooks/sdk/src/path.rs"
    ),
    copy!(
        "vendor/glovebox-hook-sdk/src/pattern.rs",
        "plugins/hooks/sdk/src/pattern.rs"
    ),
    copy!(
        "vendor/glovebox-hook-sdk/src/settings.rs",
        "plugins/hooks/sdk/src/settings.rs"
    ),
    copy!(
        "vendor/glovebox-hook-sdk/src/testing.rs",
        "plugins/hooks/sdk/src/testing.rs"
    ),
    template!(
        "vendor/glovebox-hook-rt/Cargo.toml",
        "vendor/glovebox-hook-rt.toml"
    ),
    copy!(
        "vendor/glovebox-hook-rt/src/lib.rs",
        "plugins/hooks/rt/src/lib.rs"
    ),
    // The hook world hooks are built against now (the request names the caller).
    copy!("wit/v0.2/plugin.wit", "wit/v0.2/plugin.wit"),
];

const PYTHON_TOOL: &[File] = &[
    template!("app.py", "python-tool/app.py"),
    template!("test_tool.py", "python-tool/test_tool.py"),
    template!("build.sh", "python-tool/build.sh"),
    template!("{{name}}.toml", "python-tool/plugin.toml"),
    template!("glovebox.toml", "python-tool/glovebox.toml"),
    template!("README.md", "python-tool/README.md"),
    template!(".gitignore", "python-tool/gitignore"),
];

const JS_TOOL: &[File] = &[
    template!("tool.js", "js-tool/tool.js"),
    template!("Cargo.toml", "js-tool/Cargo.toml"),
    template!("src/lib.rs", "js-tool/src/lib.rs"),
    copy!("build.rs", "plugins/js/json/build.rs"),
    template!("test/tool.test.mjs", "js-tool/test/tool.test.mjs"),
    template!("build.sh", "js-tool/build.sh"),
    template!("{{name}}.toml", "js-tool/plugin.toml"),
    template!("glovebox.toml", "js-tool/glovebox.toml"),
    template!("README.md", "js-tool/README.md"),
    template!(".gitignore", "js-tool/gitignore"),
    copy!("Cargo.lock", "plugins/Cargo.lock"),
    template!(
        "vendor/glovebox-js-shell/Cargo.toml",
        "vendor/glovebox-js-shell.toml"
    ),
    copy!(
        "vendor/glovebox-js-shell/src/lib.rs",
        "plugins/js-shell/src/lib.rs"
    ),
    copy!(
        "vendor/glovebox-js-shell/src/http.rs",
        "plugins/js-shell/src/http.rs"
    ),
    copy!(
        "vendor/glovebox-js-shell/src/natives.rs",
        "plugins/js-shell/src/natives.rs"
    ),
    copy!(
        "vendor/glovebox-js-shell/src/plugin.rs",
        "plugins/js-shell/src/plugin.rs"
    ),
    copy!(
        "vendor/glovebox-js-shell/src/prelude.js",
        "plugins/js-shell/src/prelude.js"
    ),
];

/// What kind of project, and the files it is made of.
struct Template {
    /// For messages: "Rust tool", "permission hook in Rust", ...
    what: &'static str,
    files: Vec<&'static File>,
    /// Whether Cargo builds it (its package name must then suit Cargo).
    cargo: bool,
    /// The project's own test command, for the message at the end.
    test: &'static str,
    /// The check command.
    check: &'static str,
}

impl Template {
    fn of(command: &NewCommand) -> Result<Template, String> {
        let wit = std::iter::once(&WIT);
        Ok(match command {
            NewCommand::Hook { .. } => Template {
                what: "permission hook in Rust",
                files: wit.chain(RUST_HOOK).collect(),
                cargo: true,
                test: "cargo test",
                check: "glovebox plugin check build/{{name}}.wasm",
            },
            NewCommand::Tool { lang, .. } => match lang.as_str() {
                "rust" => Template {
                    what: "tool plugin in Rust",
                    files: wit.chain(RUST_TOOL).chain(&PLUGIN_SDK).collect(),
                    cargo: true,
                    test: "cargo test",
                    check: "glovebox plugin check {{name}}.toml",
                },
                "python" => Template {
                    what: "tool plugin in Python",
                    files: wit.chain(PYTHON_TOOL).collect(),
                    cargo: false,
                    test: ".venv/bin/pytest",
                    check: "glovebox plugin check {{name}}.toml",
                },
                "js" => Template {
                    what: "tool plugin in JavaScript",
                    files: wit.chain(JS_TOOL).chain(&PLUGIN_SDK).collect(),
                    cargo: true,
                    test: "node --test test/tool.test.mjs",
                    check: "glovebox plugin check {{name}}.toml",
                },
                other => {
                    return Err(format!(
                        "unknown language `--lang {other}`: choose `--lang rust`, `--lang python` or `--lang js`"
                    ));
                }
            },
        })
    }
}

/// Writes the project `command` asks for.
pub fn run(command: NewCommand) -> Result<ExitCode> {
    let (NewCommand::Tool { name, dir, .. } | NewCommand::Hook { name, dir }) = &command;
    let template = match Template::of(&command) {
        Ok(template) => template,
        Err(problem) => return Ok(usage(&problem)),
    };
    if let Err(problem) = check_name(name, template.cargo) {
        return Ok(usage(&problem));
    }
    let dir = dir.clone().unwrap_or_else(|| PathBuf::from(name));
    if let Err(problem) = check_dir(&dir) {
        return Ok(usage(&problem));
    }
    let fill = |text: &str| {
        text.replace("{{name}}", name)
            .replace("{{crate}}", &name.replace('-', "_"))
            .replace("{{componentize_py}}", COMPONENTIZE_PY_VERSION)
    };
    for file in &template.files {
        let path = dir.join(fill(file.path));
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent)
                .with_context(|| format!("cannot create the directory `{}`", parent.display()))?;
        }
        let text = if file.template {
            fill(file.text)
        } else {
            // The copied SDKs find the WIT at `../../wit` from `vendor/<crate>/`
            // (the hook SDK's own is one level deeper in the repository).
            file.text
                .replace("path: \"../../../wit", "path: \"../../wit")
        };
        std::fs::write(&path, text)
            .with_context(|| format!("cannot write `{}`", path.display()))?;
        if file.path.ends_with(".sh") {
            make_executable(&path)?;
        }
    }
    out!(
        "created the {} `{name}` in {}",
        template.what,
        dir.display()
    );
    out!("next:");
    out!("  cd {}", dir.display());
    out!("  ./build.sh                       # build: build/{name}.wasm");
    out!("  {:<32} # check", fill(template.check));
    out!("  {:<32} # test", template.test);
    Ok(ExitCode::SUCCESS)
}

/// The plugin-name rule of manifests and `[[hook]]`s; for a Cargo-built project,
/// also a name Cargo takes as a package name.
fn check_name(name: &str, cargo: bool) -> Result<(), String> {
    if !glovebox::manifest::valid_plugin_name(name) {
        return Err(format!(
            "invalid plugin name `{name}`: use lowercase letters, digits, `-` and `_`, starting with a letter or digit, at most 64 characters (e.g. `glovebox new tool my-tool`)"
        ));
    }
    if cargo && name.starts_with(|c: char| c.is_ascii_digit()) {
        return Err(format!(
            "invalid name `{name}` for a project built with Cargo: a package name cannot start with a digit; start it with a letter"
        ));
    }
    const RESERVED: [&str; 6] = ["test", "core", "std", "alloc", "proc_macro", "proc-macro"];
    if cargo && RESERVED.contains(&name) {
        return Err(format!(
            "invalid name `{name}` for a project built with Cargo: it is the name of a Rust library; choose another name"
        ));
    }
    Ok(())
}

/// The target directory may be absent or empty, nothing else: nothing is overwritten.
fn check_dir(dir: &Path) -> Result<(), String> {
    match std::fs::read_dir(dir) {
        Ok(mut entries) => match entries.next() {
            None => Ok(()),
            Some(_) => Err(format!(
                "`{}` is not empty: give another directory with `--dir`, or remove that one first",
                dir.display()
            )),
        },
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) if dir.is_file() => Err(format!(
            "`{}` is a file ({e}): give a new directory with `--dir`",
            dir.display()
        )),
        Err(e) => Err(format!(
            "cannot read `{}` ({e}): give another directory with `--dir`",
            dir.display()
        )),
    }
}

fn usage(problem: &str) -> ExitCode {
    err!("error: {problem}");
    Exit::Usage.into()
}

/// `chmod +x`: the build script is run as `./build.sh`.
fn make_executable(path: &Path) -> Result<()> {
    use std::os::unix::fs::PermissionsExt;
    let mut permissions = std::fs::metadata(path)?.permissions();
    permissions.set_mode(permissions.mode() | 0o111);
    std::fs::set_permissions(path, permissions)
        .with_context(|| format!("cannot make `{}` executable", path.display()))
}
