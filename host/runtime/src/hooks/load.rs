//! Loading one hook: read and pin the file, compile it (or take it from the
//! cache), check its imports and its world, and ask it once for its triggers.
//! Every failure is a [`HookLoadError`], whose text is a sentence about the
//! hook ("it imports ..."), kept as the reason the hook denies every call.

use std::path::{Path, PathBuf};

use wasmtime::Engine;
use wasmtime::component::types::ComponentItem;
use wasmtime::component::{Component, Linker};

use super::pattern::{pattern_matches, valid_pattern};
use super::run::{HookLimits, run_hook};
use super::sandbox::{HookState, forbidden_imports};
use super::world::{HOOK_INTERFACE, HookPre, HookVersion};
use crate::component_file::{self, ComponentFile, FileProblem};
use crate::manifest::{HookConfig, format_size};
use crate::runtime::CompiledCache;
use crate::signature::{Statement, hook_signature_path};
use crate::trust;

/// Hook component files bigger than this are refused before they are read.
pub const MAX_HOOK_COMPONENT_BYTES: u64 = 64 << 20;
/// The most triggers a hook may list.
pub const MAX_TRIGGERS: usize = 256;
/// The longest trigger, in bytes.
pub const MAX_TRIGGER_BYTES: usize = 256;

/// A hook ready to judge calls.
pub(crate) struct LoadedHook {
    pub name: String,
    /// The sha256 of its component file (hex): which build judged a call.
    pub digest: String,
    pub triggers: Vec<String>,
    /// `[hook.settings]` as JSON text, passed to every call of the hook.
    pub settings: String,
    pub limits: HookLimits,
    pub pre: HookPre,
    /// Whether its `after` is called (`[[hook]] after = true`).
    pub after: bool,
    /// Its instances kept across evaluations (`[[hook]] reuse` above 1).
    pub kept: Option<super::kept::Kept>,
}

impl LoadedHook {
    /// The first trigger that covers `action`.
    pub fn trigger_for(&self, action: &str) -> Option<&str> {
        self.triggers
            .iter()
            .find(|t| pattern_matches(t, action))
            .map(String::as_str)
    }
}

/// Why a hook cannot be loaded. Its text is lowercase and leaves out the
/// hook's name (the chain shows it as the reason the hook denies every
/// call); each names the file, import, export or trigger at fault and says
/// what to do.
#[derive(thiserror::Error, Debug)]
#[non_exhaustive]
pub(crate) enum HookLoadError {
    /// The host's hook linker could not be made (the same for every hook).
    #[error("the host cannot link hooks: {message}")]
    Link { message: String },
    /// The component file cannot be read, is not pinned as configured, or
    /// is not a component.
    #[error("{}", file_problem(.path, .problem))]
    File { path: PathBuf, problem: FileProblem },
    /// The compile task panicked or was cancelled.
    #[error("the compiler crashed on `{}`: {reason}", .path.display())]
    CompilerCrashed { path: PathBuf, reason: String },
    /// Wasmtime refused the component.
    #[error("`{}` is not a valid component: {message}", .path.display())]
    NotComponent { path: PathBuf, message: String },
    /// It imports something hooks are not given (first one named, then up
    /// to four of the others).
    #[error(
        "it imports `{import}`: hooks get no filesystem, network, env or stdio; rebuild it without that import{}",
        also_imports(.others)
    )]
    ForbiddenImport { import: String, others: Vec<String> },
    /// Its hook interface export is not an instance.
    #[error(
        "it exports `{interface}` as something other than an instance: rebuild it against `{}`",
        wit_of(.interface)
    )]
    ExportNotInstance { interface: &'static str },
    /// Its hook interface lacks one of the three functions.
    #[error(
        "its `{interface}` export lacks the function `{function}`: rebuild it against `{}`",
        wit_of(.interface)
    )]
    MissingFunction {
        interface: &'static str,
        function: &'static str,
    },
    /// It exports no hook interface (`found`: what it exports, each quoted).
    #[error(
        "it does not export `{}` (or the older `{}`), so it is not a `hook-plugin` component (it exports {}); build it against `wit/v0.2/plugin.wit`",
        HOOK_INTERFACE,
        super::world::HOOK_INTERFACE_V0_1,
        list_or_nothing(.found)
    )]
    WrongWorld { found: Vec<String> },
    /// Its imports do not link against what hooks are given.
    #[error("its imports do not match what Glovebox gives hooks (clocks and random): {message}")]
    Imports { message: String },
    /// Its export's types do not match the hook world.
    #[error(
        "its `{interface}` export does not match `{wit}`: {message}; rebuild it against `{wit}`",
        wit = wit_of(.interface)
    )]
    Interface {
        interface: &'static str,
        message: String,
    },
    /// It faulted while listing its triggers (`fault`: what happened, as
    /// the predicate of a sentence about the hook).
    #[error("it {fault} while listing its triggers")]
    TriggersFault { fault: String },
    /// It lists more than [`MAX_TRIGGERS`] triggers.
    #[error("it lists {count} triggers, more than {MAX_TRIGGERS}")]
    TooManyTriggers { count: usize },
    /// One trigger is longer than [`MAX_TRIGGER_BYTES`].
    #[error("one of its triggers is {len} bytes, more than {MAX_TRIGGER_BYTES}")]
    LongTrigger { len: usize },
    /// A trigger is not an action pattern.
    #[error(
        "its trigger `{}` is not an action pattern: write `*`, an action like `execute:file:delete`, or a prefix like `execute:database:*`",
        .trigger.escape_debug()
    )]
    BadTrigger { trigger: String },
    /// `[trust]` covers the hook and its component's signature does not hold.
    #[error("{problem}")]
    Untrusted {
        problem: Box<crate::trust::TrustProblem>,
    },
}

/// The others of a hook's forbidden imports, up to four named.
fn also_imports(others: &[String]) -> String {
    match others.len() {
        0 => String::new(),
        n => format!(
            " (it also imports {}{})",
            others
                .iter()
                .take(4)
                .map(|o| format!("`{o}`"))
                .collect::<Vec<_>>()
                .join(", "),
            if n > 4 {
                format!(" and {} more", n - 4)
            } else {
                String::new()
            }
        ),
    }
}

/// The WIT file that defines `interface`.
fn wit_of(interface: &str) -> &'static str {
    if interface == HOOK_INTERFACE {
        "wit/v0.2/plugin.wit"
    } else {
        "wit/plugin.wit"
    }
}

fn list_or_nothing(found: &[String]) -> String {
    if found.is_empty() {
        "nothing".to_string()
    } else {
        found.join(", ")
    }
}

/// Loads one hook, or says why it cannot be (lowercase, without the hook's name).
pub(crate) async fn load_hook(
    engine: &Engine,
    cache: &CompiledCache,
    linker: &Linker<HookState>,
    config: &HookConfig,
) -> Result<LoadedHook, HookLoadError> {
    let path = &config.component;
    let ComponentFile { bytes, digest } =
        component_file::read(path, MAX_HOOK_COMPONENT_BYTES, config.sha256.as_deref()).map_err(
            |problem| HookLoadError::File {
                path: path.clone(),
                problem,
            },
        )?;
    if let Some(signers) = &config.signers {
        let subject = trust::Subject {
            expected: Statement::Hook {
                component_sha256: digest.clone(),
            },
            signature: hook_signature_path(path),
            component: path,
            manifest: None,
        };
        trust::check(signers, &subject).map_err(|problem| HookLoadError::Untrusted {
            problem: Box::new(problem),
        })?;
    }

    let (compile_engine, cache) = (engine.clone(), cache.clone());
    let component = tokio::task::spawn_blocking(move || cache.component(&compile_engine, &bytes))
        .await
        .map_err(|e| HookLoadError::CompilerCrashed {
            path: path.clone(),
            reason: e.to_string(),
        })?
        .map_err(|e| HookLoadError::NotComponent {
            path: path.clone(),
            message: format!("{e:#}"),
        })?;

    if let Some((import, others)) = forbidden_imports(engine, &component).split_first() {
        return Err(HookLoadError::ForbiddenImport {
            import: import.to_string(),
            others: others.iter().map(ToString::to_string).collect(),
        });
    }
    let version = check_hook_exports(engine, &component)?;
    let instance_pre = linker
        .instantiate_pre(&component)
        .map_err(|e| HookLoadError::Imports {
            message: format!("{e:#}"),
        })?;
    let pre = HookPre::new(version, instance_pre).map_err(|e| HookLoadError::Interface {
        interface: version.interface(),
        message: format!("{e:#}"),
    })?;

    let limits = HookLimits {
        deadline: config.deadline,
        memory: config.memory,
        fuel: config.fuel,
        engine_fuel: super::run::engine_meters_fuel(engine),
    };
    let triggers = run_hook(engine, &pre, &limits, async |hook, store| {
        hook.triggers(store).await
    })
    .await
    .map_err(|fault| HookLoadError::TriggersFault {
        fault: fault.describe(&limits),
    })?;
    check_triggers(&triggers)?;
    if triggers.is_empty() {
        tracing::warn!(hook = %config.name, "permission hook lists no triggers: it judges no call");
    }

    Ok(LoadedHook {
        name: config.name.clone(),
        digest,
        triggers,
        settings: config.settings.to_string(),
        limits,
        pre,
        after: config.after,
        kept: super::kept::Kept::new(config.reuse),
    })
}

/// A component file's problem, as a sentence about the hook.
fn file_problem(path: &Path, problem: &FileProblem) -> String {
    let path = path.display();
    match problem {
        FileProblem::Read(e) => format!(
            "cannot read `{path}`: {}: build the hook, or fix `component` in its `[[hook]]` entry",
            lowercase_first(&e.to_string())
        ),
        FileProblem::NotAFile => {
            format!("`{path}` is not a file: fix `component` in its `[[hook]]` entry")
        }
        FileProblem::TooLarge { size, limit } => format!(
            "`{path}` is {size} bytes, more than the {} a hook component may have",
            format_size(*limit)
        ),
        FileProblem::DigestMismatch { expected, actual } => format!(
            "digest mismatch for `{path}`: the config pins sha256 {expected} but the file has {actual}; rebuild the pinned version or update `sha256` in its `[[hook]]` entry after reviewing the new build"
        ),
        FileProblem::NotWasm => {
            format!("`{path}` is not a WebAssembly file (no `\\0asm` header)")
        }
        FileProblem::CoreModule => format!(
            "`{path}` is a core WebAssembly module, not a component: build it for `wasm32-wasip2`"
        ),
    }
}

/// Checks the component exports `permission-hook` (0.2.0, else 0.1.0) with its
/// three functions, so a wrong world gets a message that says so instead of a
/// type error; returns the version it exports.
fn check_hook_exports(
    engine: &Engine,
    component: &Component,
) -> Result<HookVersion, HookLoadError> {
    let ty = component.component_type();
    let mut found = Vec::new();
    let mut hook = None;
    for (export, item) in ty.exports(engine) {
        match HookVersion::of_export(export) {
            // The newest version wins when a component exports both.
            Some(version) => {
                if hook.is_none() || version == HookVersion::V0_2 {
                    hook = Some((version, item));
                }
            }
            None => found.push(format!("`{export}`")),
        }
    }
    let Some((version, item)) = hook else {
        return Err(HookLoadError::WrongWorld { found });
    };
    let interface = version.interface();
    let ComponentItem::ComponentInstance(instance) = item.ty else {
        return Err(HookLoadError::ExportNotInstance { interface });
    };
    let funcs: Vec<&str> = instance.exports(engine).map(|(n, _)| n).collect();
    for function in ["triggers", "validate", "after"] {
        if !funcs.contains(&function) {
            return Err(HookLoadError::MissingFunction {
                interface,
                function,
            });
        }
    }
    Ok(version)
}

fn check_triggers(triggers: &[String]) -> Result<(), HookLoadError> {
    if triggers.len() > MAX_TRIGGERS {
        return Err(HookLoadError::TooManyTriggers {
            count: triggers.len(),
        });
    }
    for trigger in triggers {
        if trigger.len() > MAX_TRIGGER_BYTES {
            return Err(HookLoadError::LongTrigger { len: trigger.len() });
        }
        if !valid_pattern(trigger) {
            return Err(HookLoadError::BadTrigger {
                trigger: trigger.clone(),
            });
        }
    }
    Ok(())
}

// io::Error messages come from the OS capitalised ("No such file or directory").
fn lowercase_first(message: &str) -> String {
    let mut chars = message.chars();
    match chars.next() {
        Some(first) => first.to_lowercase().chain(chars).collect(),
        None => String::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn triggers_must_be_patterns_few_and_short() {
        check_triggers(&[]).unwrap();
        check_triggers(&["*".into(), "execute:database:*".into()]).unwrap();
        let error = check_triggers(&["execute:*:delete".into()])
            .unwrap_err()
            .to_string();
        assert!(
            error.starts_with("its trigger `execute:*:delete` is not an action pattern"),
            "{error}"
        );
        let error = check_triggers(&vec!["*".to_string(); 257])
            .unwrap_err()
            .to_string();
        assert_eq!(error, "it lists 257 triggers, more than 256");
        let error = check_triggers(&["a".repeat(257)]).unwrap_err().to_string();
        assert_eq!(error, "one of its triggers is 257 bytes, more than 256");
    }
}
