//! The shared runtime of Glovebox tools written in JavaScript, over boa (pure Rust).
//!
//! One JavaScript realm per instance, built once: a component built on this crate
//! targets the `preinit-tool-plugin` world, and its `wizer-initialize` builds the realm
//! (the builtins, `console`, `fs`, `fetch`, the plugin's own source) so that the host's
//! snapshot contains it. Every call starts from that snapshot and only parses and runs
//! its own code. A host that does not pre-initialize gets the same realm, built lazily
//! on the first call (slower, same behaviour).
//!
//! What the realm offers to JavaScript, and nothing else (no `require`, no `process`):
//!
//! - `console.log/info/debug/dir/count/timeEnd` (stdout) and `console.error/warn/trace/assert`
//!   (stderr), captured in buffers of at most [`MAX_CAPTURE`] bytes each;
//! - `fs.readFile/writeFile/appendFile/readdir/exists/remove/mkdir`, synchronous, over
//!   the directories the operator granted; relative paths are under [`SCRATCH`];
//! - `fetch(url, {method, headers, body, redirect})` over `wasi:http`, which the host
//!   checks against the hosts the operator granted;
//! - `Math.random`, seeded on its first use in each call (never in the snapshot);
//! - `tools.call(name, input)` (a Promise of the tool's result) and `tools.list()`: the
//!   calling session's other tools, over the `tools` import, when the operator allows
//!   the plugin some (`limits.nested_calls`); a failure rejects with a `ToolError`
//!   (`ToolDenied`, `ApprovalRequired`, `BudgetExceeded`, `ToolLimitExceeded`,
//!   `ToolInputError`, `ToolFailed`).
//!
//! Two users: the `code-js` runner (see [`Shell`]) and tool plugins written in
//! JavaScript ([`js_plugin!`], see `plugins/js/README.md`).

use std::cell::RefCell;

use boa_engine::object::builtins::JsPromise;
use boa_engine::property::Attribute;
use boa_engine::vm::RuntimeLimits;
use boa_engine::{
    Context, JsError, JsObject, JsResult, JsString, JsValue, NativeFunction, Source,
    builtins::promise::PromiseState, js_string, object::ObjectInitializer,
};
use glovebox_plugin_sdk::serde_json::{self, Value};

mod http;
mod natives;
#[doc(hidden)]
pub mod plugin;

pub use boa_engine;
pub use glovebox_plugin_sdk;

/// Bindings of the `preinit-tool-plugin` world (wit/plugin.wit); its types are the SDK's
/// (and its `tools` import, the SDK's feature `tools`).
/// Export an implementation with `glovebox_js_shell::export!(T with_types_in glovebox_js_shell::bindings)`.
pub mod bindings {
    wit_bindgen::generate!({
        path: "../../wit",
        world: "preinit-tool-plugin",
        pub_export_macro: true,
        default_bindings_module: "glovebox_js_shell::bindings",
        with: { "glovebox:plugin/types@0.1.0": glovebox_plugin_sdk::glovebox::plugin::types },
    });
}

/// The world's own export, `wizer-initialize`.
pub use bindings::Guest;
pub use bindings::export;
/// The `tool` interface of the `preinit-tool-plugin` world.
pub use bindings::exports::glovebox::plugin::tool::Guest as ToolGuest;
pub use glovebox_plugin_sdk::{CallContext, ToolError, ToolSpec};

/// At most this many bytes of stdout, and as many of stderr, are kept per call.
pub const MAX_CAPTURE: usize = 256 * 1024;
/// Where relative `fs` paths lead: the per-session scratch directory the host mounts
/// (when the operator grants one).
pub const SCRATCH: &str = "/scratch";
/// Nested calls before a call fails with a RangeError. boa counts JavaScript frames
/// plus native code calling back into JavaScript (`map` callbacks, getters, `toString`);
/// only the latter use the native wasm stack (up to about 0.7 KiB each), so this stays within
/// the host's default 512 KiB wasm stack for the usual patterns. A pattern that still
/// overflows it ends in the host's typed stack-overflow error.
pub const MAX_RECURSION: usize = 700;
/// Values on the VM's stack (arguments, registers) before a call fails with a RangeError.
pub const MAX_STACK_VALUES: usize = 1 << 20;
/// Iterations of the loops of one function activation before it fails with a RangeError.
pub const MAX_LOOP_ITERATIONS: u64 = 1_000_000_000;

/// The prelude: JavaScript that installs the globals, evaluated once per realm.
const PRELUDE: &str = include_str!("prelude.js");
/// Its name in stack traces; the prelude leaves its own frames out of the stacks it shows.
const PRELUDE_FILE: &str = "glovebox-prelude.js";

/// A realm ready to run code: the boa context plus the functions of the prelude the
/// shell uses itself (kept here, so that code that overwrites the globals does not
/// change how the shell reports).
pub struct Shell {
    /// The boa context; use it freely.
    pub context: Context,
    inspect: JsObject,
    describe: JsObject,
    stringify: JsObject,
    string: JsObject,
}

thread_local! {
    static SHELL: RefCell<Option<Shell>> = const { RefCell::new(None) };
}

impl Shell {
    /// Builds a realm with every global installed.
    pub fn new() -> Result<Shell, String> {
        let mut context = Context::builder()
            .host_hooks(std::rc::Rc::new(natives::Hooks))
            .build()
            .map_err(|e| format!("cannot build the JavaScript realm: {e}"))?;
        let mut limits = RuntimeLimits::default();
        limits.set_recursion_limit(MAX_RECURSION);
        limits.set_stack_size_limit(MAX_STACK_VALUES);
        limits.set_loop_iteration_limit(MAX_LOOP_ITERATIONS);
        limits.set_backtrace_limit(20);
        context.set_runtime_limits(limits);

        let native = natives::object(&mut context);
        let prelude = context
            .eval(Source::from_bytes(PRELUDE).with_path(std::path::Path::new(PRELUDE_FILE)))
            .map_err(|e| format!("the prelude does not compile: {e}"))?;
        let exported = prelude
            .as_callable()
            .ok_or("the prelude is not a function")?
            .call(&JsValue::undefined(), &[native.into()], &mut context)
            .map_err(|e| format!("the prelude failed: {e}"))?;
        let exported = exported
            .as_object()
            .ok_or("the prelude returned no object")?;
        let get = |context: &mut Context, obj: &JsObject, name: JsString| {
            obj.get(name, context)
                .ok()
                .and_then(|v| v.as_callable())
                .ok_or("a function of the prelude or a builtin is missing")
        };
        let inspect = get(&mut context, &exported, js_string!("inspect"))?;
        let describe = get(&mut context, &exported, js_string!("describe"))?;
        let global = context.global_object();
        let json = global
            .get(js_string!("JSON"), &mut context)
            .ok()
            .and_then(|v| v.as_object())
            .ok_or("no JSON")?;
        let stringify = get(&mut context, &json, js_string!("stringify"))?;
        let string = get(&mut context, &global, js_string!("String"))?;
        Ok(Shell {
            context,
            inspect,
            describe,
            stringify,
            string,
        })
    }

    /// Defines (or redefines) a global data property.
    pub fn set_global(&mut self, name: &str, value: JsValue) -> JsResult<()> {
        let global = self.context.global_object();
        global.set(JsString::from(name), value, true, &mut self.context)?;
        Ok(())
    }

    /// Runs the job queue (promise reactions) until it is empty; then a promise that
    /// was given is settled, or it never will be.
    pub fn settle(&mut self, value: JsValue) -> Result<JsValue, JsError> {
        self.context.run_jobs()?;
        let Some(promise) = value
            .as_object()
            .and_then(|o| JsPromise::from_object(o).ok())
        else {
            return Ok(value);
        };
        match promise.state() {
            PromiseState::Fulfilled(v) => Ok(v),
            PromiseState::Rejected(e) => Err(JsError::from_opaque(e)),
            PromiseState::Pending => Err(JsError::from_opaque(JsValue::from(js_string!(
                "the promise never settled: nothing was left to run (a missing resolve call?)"
            )))),
        }
    }

    /// The first promise rejection of this call that nothing handled (a `.then` chain
    /// without `.catch`, a call of an async function whose result was dropped), as
    /// `Uncaught (in promise) ...`. Call it after [`Shell::settle`].
    pub fn unhandled_rejection(&mut self) -> Option<String> {
        let promise = natives::unhandled_rejections().into_iter().next()?;
        let reason = match JsPromise::from_object(promise).ok()?.state() {
            PromiseState::Rejected(reason) => reason,
            _ => return None,
        };
        let text = self.describe_error(JsError::from_opaque(reason));
        Some(format!(
            "Uncaught (in promise) {}",
            text.strip_prefix("Uncaught ").unwrap_or(&text)
        ))
    }

    /// `value` as JSON, with `JSON.stringify`'s semantics; `None` when it has no JSON
    /// form (undefined, a function, a symbol, a cycle, a BigInt).
    pub fn to_json(&mut self, value: &JsValue) -> Option<Value> {
        let text = self
            .stringify
            .call(
                &JsValue::undefined(),
                std::slice::from_ref(value),
                &mut self.context,
            )
            .ok()?;
        let text = text.as_string()?.to_std_string_lossy();
        serde_json::from_str(&text).ok()
    }

    /// `String(value)`, which never throws for primitives (symbols included).
    pub fn to_display(&mut self, value: &JsValue) -> String {
        match self.string.call(
            &JsValue::undefined(),
            std::slice::from_ref(value),
            &mut self.context,
        ) {
            Ok(s) => s
                .as_string()
                .map(|s| s.to_std_string_lossy())
                .unwrap_or_default(),
            Err(_) => value.display().to_string(),
        }
    }

    /// `value` converted for a JSON result: its JSON form when it has one, else
    /// `String(value)`; `None` for undefined.
    pub fn to_result(&mut self, value: &JsValue) -> Option<Value> {
        if value.is_undefined() {
            return None;
        }
        if let Some(json) = self.to_json(value) {
            return Some(json);
        }
        Some(Value::String(self.to_display(value)))
    }

    /// An uncaught error as text: `Name: message` and the stack boa recorded, as
    /// `console.error` would print it. Limits the engine enforces (recursion, stack,
    /// loop iterations) read as the RangeError they stand for.
    pub fn describe_error(&mut self, error: JsError) -> String {
        if let Some(engine) = error.as_engine() {
            let text = engine.to_string();
            return if text.contains("recursive calls") {
                format!(
                    "RangeError: Maximum call stack size exceeded (more than {MAX_RECURSION} nested calls)"
                )
            } else if text.contains("stack size") {
                format!(
                    "RangeError: Maximum call stack size exceeded (more than {MAX_STACK_VALUES} values on the stack)"
                )
            } else if text.contains("iteration loops") {
                format!(
                    "RangeError: a loop ran more than {MAX_LOOP_ITERATIONS} iterations in one function call"
                )
            } else {
                format!("InternalError: {text}")
            };
        }
        match error.into_opaque(&mut self.context) {
            Ok(value) => match self.describe.call(
                &JsValue::undefined(),
                std::slice::from_ref(&value),
                &mut self.context,
            ) {
                Ok(s) => s
                    .as_string()
                    .map(|s| s.to_std_string_lossy())
                    .unwrap_or_default(),
                Err(_) => format!("Uncaught {}", self.to_display(&value)),
            },
            Err(e) => format!("InternalError: {e}"),
        }
    }

    /// What `console.log` prints for `value` (as one nested value: strings quoted).
    pub fn inspect_value(&mut self, value: &JsValue) -> String {
        match self.inspect.call(
            &JsValue::undefined(),
            std::slice::from_ref(value),
            &mut self.context,
        ) {
            Ok(s) => s
                .as_string()
                .map(|s| s.to_std_string_lossy())
                .unwrap_or_default(),
            Err(_) => self.to_display(value),
        }
    }
}

/// Builds the realm of this instance now, with `setup` run on it (a plugin evaluates
/// its source there), and collects the garbage of building it, so that the snapshot
/// starts every call with a clean heap (no collection in a small call). For
/// `wizer-initialize`; a no-op when the realm exists.
pub fn initialize(setup: impl FnOnce(&mut Shell) -> Result<(), String>) {
    build(setup);
    boa_engine::gc::force_collect();
}

fn build(setup: impl FnOnce(&mut Shell) -> Result<(), String>) {
    SHELL.with(|cell| {
        let mut slot = cell.borrow_mut();
        if slot.is_none() {
            let mut shell = Shell::new().unwrap_or_else(|e| panic!("{e}"));
            setup(&mut shell).unwrap_or_else(|e| panic!("{e}"));
            *slot = Some(shell);
        }
    });
}

/// Runs `f` on this instance's realm, building it first (with `setup`) when
/// `wizer-initialize` did not. Resets the per-call state first: the capture buffers
/// and the random seed.
pub fn with_shell<R>(
    setup: impl FnOnce(&mut Shell) -> Result<(), String>,
    f: impl FnOnce(&mut Shell) -> R,
) -> R {
    build(setup);
    natives::start_call();
    SHELL.with(|cell| {
        let mut slot = cell.borrow_mut();
        let shell = slot.as_mut().expect("initialized above");
        f(shell)
    })
}

/// What a call printed: stdout and stderr, each cut at [`MAX_CAPTURE`] bytes with a
/// marker saying how much was dropped.
pub fn take_output() -> (String, String) {
    natives::take_output()
}

/// `JsValue` from a JSON value.
pub fn from_json(value: &Value, context: &mut Context) -> JsResult<JsValue> {
    JsValue::from_json(value, context)
}

/// An object with the given string properties (for a call's context).
pub fn string_object(context: &mut Context, fields: &[(&str, Option<&str>)]) -> JsObject {
    let mut init = ObjectInitializer::new(context);
    for (name, value) in fields {
        let value = match value {
            Some(v) => JsValue::from(JsString::from(*v)),
            None => JsValue::null(),
        };
        init.property(JsString::from(*name), value, Attribute::all());
    }
    init.build()
}

/// A native function for the realm from a plain function pointer.
pub fn native(f: boa_engine::native_function::NativeFunctionPointer) -> NativeFunction {
    NativeFunction::from_fn_ptr(f)
}
