//! The Rust functions behind the prelude: `write` (console), `fs`, `http` (fetch) and
//! `random`, plus the per-call state they keep (capture buffers, the random state).
//! They are reachable only through the prelude's closures, never as globals.

use std::cell::{Cell, RefCell};
use std::fs;
use std::io::{ErrorKind, Write as _};
use std::path::{Component, Path, PathBuf};

use boa_engine::builtins::promise::{OperationType, Promise};
use boa_engine::context::HostHooks;
use boa_engine::object::ObjectInitializer;
use boa_engine::object::builtins::JsArray;
use boa_engine::{
    Context, JsArgs, JsNativeError, JsObject, JsResult, JsString, JsValue, NativeFunction,
    js_string,
};

use crate::{MAX_CAPTURE, SCRATCH};

/// One captured stream.
#[derive(Default)]
struct Capture {
    text: String,
    /// Characters dropped once `text` was full.
    dropped: u64,
}

impl Capture {
    fn push(&mut self, line: &JsString) {
        let len = line.len() as u64 + 1;
        if self.text.len() >= MAX_CAPTURE {
            // Full: count, never convert (printing gigabytes stays cheap).
            self.dropped += len;
            return;
        }
        let line = line.to_std_string_lossy();
        let room = MAX_CAPTURE - self.text.len();
        if line.len() < room {
            self.text.push_str(&line);
            self.text.push('\n');
            return;
        }
        let mut cut = room;
        while !line.is_char_boundary(cut) {
            cut -= 1;
        }
        self.text.push_str(&line[..cut]);
        self.dropped += line[cut..].chars().count() as u64 + 1;
    }

    fn take(&mut self, name: &str) -> String {
        let mut text = std::mem::take(&mut self.text);
        let dropped = std::mem::take(&mut self.dropped);
        if dropped > 0 {
            if !text.ends_with('\n') {
                text.push('\n');
            }
            text.push_str(&format!(
                "[{name} truncated: {dropped} more characters were printed and dropped; \
                 at most {} KiB are kept]\n",
                MAX_CAPTURE / 1024
            ));
        }
        text
    }
}

#[cfg(target_os = "wasi")]
unsafe extern "C" {
    fn __wasilibc_reset_preopens();
}

thread_local! {
    static STDOUT: RefCell<Capture> = RefCell::default();
    static STDERR: RefCell<Capture> = RefCell::default();
    static RANDOM: Cell<Option<u64>> = const { Cell::new(None) };
    /// Promises rejected with no handler, in order (a handler added later removes one).
    static REJECTED: RefCell<Vec<JsObject>> = const { RefCell::new(Vec::new()) };
    /// Characters printed since the last forced garbage collection.
    static PRINTED: Cell<u64> = const { Cell::new(0) };
}

/// Printed characters after which `write` forces a garbage collection. boa's collector
/// runs on the size of its own heap, which does not count string contents, so a loop
/// that prints large strings would keep every one of them alive (through the argument
/// arrays) until memory runs out.
const COLLECT_EVERY: u64 = 16 * 1024 * 1024;

/// Resets the per-call state. Called at the start of every call, so that nothing the
/// snapshot holds (output printed while initializing, a random state) reaches a call.
pub(crate) fn start_call() {
    // wasi-libc reads the granted directories (preopens) on the first path it
    // resolves and keeps the table: code that touched `fs` while the snapshot was taken
    // (with no grants) would leave an empty table behind. Reset it: each call reads
    // its own grants.
    #[cfg(target_os = "wasi")]
    // SAFETY: a wasi-libc function without arguments; it frees the table, which is
    // read again when next needed. Nothing else holds a pointer into it.
    unsafe {
        __wasilibc_reset_preopens();
    }
    STDOUT.with(|c| *c.borrow_mut() = Capture::default());
    STDERR.with(|c| *c.borrow_mut() = Capture::default());
    RANDOM.with(|r| r.set(None));
    REJECTED.with(|r| r.borrow_mut().clear());
}

/// The promises of this call that were rejected and are still unhandled.
pub(crate) fn unhandled_rejections() -> Vec<JsObject> {
    REJECTED.with(|r| r.borrow().clone())
}

/// The realm's host hooks: boa's defaults, plus tracking of unhandled rejections.
pub(crate) struct Hooks;

impl HostHooks for Hooks {
    fn promise_rejection_tracker(
        &self,
        promise: &JsObject<Promise>,
        operation: OperationType,
        _: &mut Context,
    ) {
        let promise = promise.clone().upcast();
        REJECTED.with(|r| {
            let mut rejected = r.borrow_mut();
            match operation {
                OperationType::Reject => rejected.push(promise),
                OperationType::Handle => rejected.retain(|p| !JsObject::equals(p, &promise)),
            }
        });
    }
}

pub(crate) fn take_output() -> (String, String) {
    (
        STDOUT.with(|c| c.borrow_mut().take("stdout")),
        STDERR.with(|c| c.borrow_mut().take("stderr")),
    )
}

/// Writes what a call captured to the instance's real stdout and stderr (for plugins,
/// whose console output the host captures).
pub(crate) fn flush_to_stdio() {
    let (out, err) = take_output();
    if !out.is_empty() {
        let _ = std::io::stdout().write_all(out.as_bytes());
    }
    if !err.is_empty() {
        let _ = std::io::stderr().write_all(err.as_bytes());
    }
}

/// The object handed to the prelude.
pub(crate) fn object(context: &mut Context) -> JsObject {
    ObjectInitializer::new(context)
        .function(NativeFunction::from_fn_ptr(write), js_string!("write"), 2)
        .function(NativeFunction::from_fn_ptr(fs_op), js_string!("fs"), 3)
        .function(
            NativeFunction::from_fn_ptr(crate::http::fetch),
            js_string!("http"),
            5,
        )
        .function(NativeFunction::from_fn_ptr(random), js_string!("random"), 0)
        .function(NativeFunction::from_fn_ptr(tools), js_string!("tools"), 3)
        .build()
}

fn error(message: String) -> boa_engine::JsError {
    JsNativeError::error().with_message(message).into()
}

fn string_arg(args: &[JsValue], i: usize) -> JsString {
    args.get_or_undefined(i).as_string().unwrap_or_default()
}

/// `write(stream, text)`: 1 is stdout, anything else stderr.
fn write(_: &JsValue, args: &[JsValue], _: &mut Context) -> JsResult<JsValue> {
    let line = string_arg(args, 1);
    let stream = if args.get_or_undefined(0).as_number() == Some(1.0) {
        &STDOUT
    } else {
        &STDERR
    };
    stream.with(|c| c.borrow_mut().push(&line));
    let printed = PRINTED.with(|p| p.get()) + line.len() as u64;
    if printed >= COLLECT_EVERY {
        boa_engine::gc::force_collect();
        PRINTED.with(|p| p.set(0));
    } else {
        PRINTED.with(|p| p.set(printed));
    }
    Ok(JsValue::undefined())
}

/// `tools(0)`: the tools the session may call, as JSON text (an array of
/// `{name, description, inputSchema, readOnly, destructive}`, the schema as text);
/// `tools(1, name, input)`: calls `name` with `input` (JSON text) through the host,
/// and returns `{"ok": result text}` or `{"err": {kind, message, alternatives,
/// approvalId}}` as JSON text, which the prelude's `tools` turns into a Promise.
fn tools(_: &JsValue, args: &[JsValue], _: &mut Context) -> JsResult<JsValue> {
    use glovebox_plugin_sdk::serde_json::json;
    use glovebox_plugin_sdk::tools as host;
    let answer = if args.get_or_undefined(0).as_number() == Some(0.0) {
        let offered: Vec<_> = host::list()
            .into_iter()
            .map(|t| {
                json!({
                    "name": t.name,
                    "description": t.description,
                    "inputSchema": t.input_schema,
                    "readOnly": t.read_only,
                    "destructive": t.destructive,
                })
            })
            .collect();
        json!(offered)
    } else {
        let name = string_arg(args, 1).to_std_string_escaped();
        let input = string_arg(args, 2).to_std_string_escaped();
        match host::call_text(&name, &input) {
            Ok(result) => json!({ "ok": result }),
            Err(f) => json!({ "err": {
                "kind": f.kind,
                "message": f.message,
                "alternatives": f.alternatives,
                "approvalId": f.approval_id,
            }}),
        }
    };
    Ok(JsString::from(answer.to_string().as_str()).into())
}

/// `random()`: splitmix64, seeded from `wasi:random` on its first use in a call.
fn random(_: &JsValue, _: &[JsValue], _: &mut Context) -> JsResult<JsValue> {
    let state = RANDOM
        .with(|r| r.get())
        .unwrap_or_else(wasip2::random::random::get_random_u64);
    let state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
    RANDOM.with(|r| r.set(Some(state)));
    let mut z = state;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^= z >> 31;
    Ok(JsValue::from((z >> 11) as f64 / (1u64 << 53) as f64))
}

/// Resolves a path the way `fs` does: relative paths are under [`SCRATCH`]; `.` and `..`
/// are resolved lexically, and a relative path may not climb out of the scratch dir.
fn resolve(path: &str) -> Result<PathBuf, String> {
    if path.is_empty() {
        return Err("the path is empty".to_owned());
    }
    if path.contains('\0') {
        return Err("the path contains a NUL character".to_owned());
    }
    let relative = !path.starts_with('/');
    let joined = if relative {
        Path::new(SCRATCH).join(path)
    } else {
        PathBuf::from(path)
    };
    let mut out = PathBuf::from("/");
    for part in joined.components() {
        match part {
            Component::ParentDir => {
                out.pop();
            }
            Component::Normal(p) => out.push(p),
            Component::RootDir | Component::CurDir | Component::Prefix(_) => {}
        }
    }
    if relative && !out.starts_with(SCRATCH) {
        return Err(format!(
            "`{path}` leads out of the scratch directory {SCRATCH} (to {})",
            out.display()
        ));
    }
    Ok(out)
}

/// The directories this instance was granted, as the guest sees them.
fn granted_dirs() -> Vec<String> {
    let mut dirs: Vec<String> = wasip2::filesystem::preopens::get_directories()
        .into_iter()
        .map(|(_, path)| path)
        .collect();
    dirs.sort();
    dirs
}

/// Explains an I/O error on `path`, naming the granted directories when the path is
/// outside all of them.
fn io_error(op: &str, shown: &str, path: &Path, e: &std::io::Error) -> boa_engine::JsError {
    let dirs = granted_dirs();
    let inside = dirs.iter().any(|d| path.starts_with(d));
    let message = if !inside {
        if dirs.is_empty() {
            format!(
                "fs.{op}('{shown}'): {} is not reachable: this tool was granted no directory \
                 (the operator grants the scratch directory {SCRATCH} in the plugin's manifest)",
                path.display()
            )
        } else {
            format!(
                "fs.{op}('{shown}'): {} is outside the directories granted to this tool ({})",
                path.display(),
                dirs.join(", ")
            )
        }
    } else {
        let what = match e.kind() {
            ErrorKind::NotFound if matches!(op, "writeFile" | "appendFile") => {
                "its directory does not exist (create it first with fs.mkdir)".to_owned()
            }
            ErrorKind::NotFound => "no such file or directory".to_owned(),
            ErrorKind::PermissionDenied => "permission denied (read-only grant?)".to_owned(),
            ErrorKind::AlreadyExists => "it already exists".to_owned(),
            _ => e.to_string(),
        };
        format!("fs.{op}('{shown}'): {}: {what}", path.display())
    };
    error(message)
}

/// `fs(op, path, arg)`: `arg` is the text for write/append, `recursive` for remove.
fn fs_op(_: &JsValue, args: &[JsValue], context: &mut Context) -> JsResult<JsValue> {
    let op = string_arg(args, 0).to_std_string_lossy();
    let shown = string_arg(args, 1).to_std_string_lossy();
    let name = match op.as_str() {
        "read" => "readFile",
        "write" => "writeFile",
        "append" => "appendFile",
        other => other,
    };
    let path = resolve(&shown).map_err(|e| error(format!("fs.{name}('{shown}'): {e}")))?;
    let fail = |e: std::io::Error| io_error(name, &shown, &path, &e);
    match op.as_str() {
        "read" => {
            let bytes = fs::read(&path).map_err(fail)?;
            Ok(JsString::from(String::from_utf8_lossy(&bytes).as_ref()).into())
        }
        "write" | "append" => {
            let text = string_arg(args, 2).to_std_string_lossy();
            let mut file = fs::OpenOptions::new()
                .create(true)
                .write(true)
                .append(op == "append")
                .truncate(op == "write")
                .open(&path)
                .map_err(fail)?;
            file.write_all(text.as_bytes()).map_err(fail)?;
            Ok(JsValue::undefined())
        }
        "readdir" => {
            let mut names = Vec::new();
            for entry in fs::read_dir(&path).map_err(fail)? {
                let entry = entry.map_err(fail)?;
                names.push(entry.file_name().to_string_lossy().into_owned());
            }
            names.sort();
            let values = names
                .iter()
                .map(|n| JsValue::from(JsString::from(n.as_str())));
            Ok(JsArray::from_iter(values, context).into())
        }
        "exists" => Ok(JsValue::from(fs::metadata(&path).is_ok())),
        "remove" => {
            let meta = fs::symlink_metadata(&path).map_err(fail)?;
            if meta.is_dir() {
                if args.get_or_undefined(2).to_boolean() {
                    fs::remove_dir_all(&path).map_err(fail)?;
                } else {
                    fs::remove_dir(&path).map_err(|e| {
                        if e.kind() == ErrorKind::DirectoryNotEmpty {
                            error(format!(
                                "fs.remove('{shown}'): the directory is not empty; \
                                 pass {{recursive: true}} to remove it with its contents"
                            ))
                        } else {
                            fail(e)
                        }
                    })?;
                }
            } else {
                fs::remove_file(&path).map_err(fail)?;
            }
            Ok(JsValue::undefined())
        }
        "mkdir" => {
            fs::create_dir_all(&path).map_err(fail)?;
            Ok(JsValue::undefined())
        }
        other => Err(error(format!("fs: unknown operation `{other}`"))),
    }
}

#[cfg(test)]
mod tests {
    use super::resolve;

    #[test]
    fn relative_paths_stay_in_scratch() {
        assert_eq!(
            resolve("a/b.txt").unwrap().to_str(),
            Some("/scratch/a/b.txt")
        );
        assert_eq!(resolve("./a/../b").unwrap().to_str(), Some("/scratch/b"));
        assert!(resolve("../x").unwrap_err().contains("out of the scratch"));
        assert!(resolve("a/../../etc/passwd").is_err());
        assert_eq!(resolve("/etc/../tmp/x").unwrap().to_str(), Some("/tmp/x"));
        assert!(resolve("").is_err());
    }
}
