//! `code-js`: runs JavaScript that an agent wrote, in a boa realm built once.
//!
//! One tool, `run`: input `{code, stdin?, args?}`, output `{stdout, stderr, value?, error?}`.
//! The realm (builtins, `console`, `fs`, `fetch`, `tools`) is built in `wizer-initialize`, so a
//! host that pre-initializes the component starts every call from a snapshot that
//! holds it; a host that does not gets it built on the first call. See
//! glovebox-js-shell for what the realm offers.

use std::path::Path;

use glovebox_js_shell::boa_engine::object::builtins::JsArray;
use glovebox_js_shell::boa_engine::{JsError, JsResult, JsString, JsValue, Source};
use glovebox_js_shell::{CallContext, Shell, ToolError, ToolSpec};
use glovebox_plugin_sdk::{Input, Map, Value, invalid, json, output, spec, unknown_tool};

/// The name of the code in stack traces.
const FILE: &str = "code.js";

struct Runner;

/// Typical work, run once while the snapshot is taken: what it leaves behind (a grown
/// heap and VM stack, object shapes, interned names) is then part of every call's
/// starting state instead of being built in each call. A block, so that it declares no
/// globals; its output is discarded.
const WARM_UP: &str = r#"{
    console.log([...Array(10).keys()].reduce((a, b) => a + b, 0), { a: [1, 'x'] }, args, stdin.length);
    console.error(JSON.stringify({ a: [1, 2, { b: 'c' }] }), [1, 2, 3].map((x) => x * 2).filter(Boolean).join());
    for (const [k, v] of Object.entries({ x: 1, y: 2 })) `${k}=${v}`;
    new Set([1, 2]).has(new Map([[1, 'a']]).size);
    Promise.resolve(1).then((x) => x + 1);
    (async () => { await null; return 2; })();
}"#;

/// Makes `args` and `stdin` exist in the realm (each call sets them again), then warms
/// the realm up.
fn setup(shell: &mut Shell) -> Result<(), String> {
    set_inputs(shell, "", &[]).map_err(|e| e.to_string())?;
    eval(shell, WARM_UP)
        .and_then(|value| shell.settle(value))
        .map_err(|e| format!("the warm-up failed: {e}"))?;
    Ok(())
}

impl glovebox_js_shell::Guest for Runner {
    fn wizer_initialize() {
        glovebox_js_shell::initialize(setup);
    }
}

impl glovebox_js_shell::ToolGuest for Runner {
    fn list_tools() -> Vec<ToolSpec> {
        vec![spec(
            "run",
            "Runs JavaScript (modern ECMAScript, the boa engine; not Node) and returns \
             {\"stdout\", \"stderr\", \"value\", \"error\"}. `value` is the code's completion value \
             as JSON, like eval (a Promise is awaited); `error` is an uncaught exception with its \
             stack. Globals: console, `args` (array of strings), `stdin` (string), a synchronous \
             `fs` (readFile, writeFile, appendFile, readdir, exists, remove, mkdir; relative paths \
             are in the session's scratch directory /scratch, kept between calls of a session), \
             and `fetch(url, {method, headers, body})` to the hosts the operator granted. \
             Other tools of the session: `await tools.call('plugin.tool', {...})` gives the \
             tool's result or rejects with a ToolError (ToolDenied with `reason` and \
             `alternatives`, ApprovalRequired with `approvalId`, ...); `tools.list()` says what \
             may be called; each call is judged and logged as a call of the session (only when \
             the operator allows this tool calls, `limits.nested_calls`). No require, no process, no npm packages. Top-level await works; then `return` \
             gives the value. Output is kept up to 256 KiB per stream.",
            json!({
                "type": "object",
                "properties": {
                    "code": {
                        "type": "string",
                        "description": "JavaScript source, run as a script."
                    },
                    "stdin": {
                        "type": "string",
                        "description": "Text available to the code as the global `stdin`."
                    },
                    "args": {
                        "type": "array",
                        "items": { "type": "string" },
                        "description": "Strings available to the code as the global `args`."
                    }
                },
                "required": ["code"],
                "additionalProperties": false
            }),
            "execute:code:javascript",
            false,
            false,
        )]
    }

    fn call(_ctx: CallContext, tool: String, input: String) -> Result<String, ToolError> {
        if tool != "run" {
            return Err(unknown_tool(&tool, &Self::list_tools()));
        }
        let input = Input::parse_strict(&input, &["code", "stdin", "args"])?;
        let code = input.str("code")?;
        let stdin = input.opt_str("stdin")?.unwrap_or("");
        let args = match input.get("args") {
            None => Vec::new(),
            Some(Value::Array(items)) => items
                .iter()
                .enumerate()
                .map(|(i, item)| {
                    item.as_str().map(str::to_owned).ok_or_else(|| {
                        invalid(format!(
                            "field `args` must be an array of strings; item {i} is {}",
                            glovebox_plugin_sdk::kind_of(item)
                        ))
                    })
                })
                .collect::<Result<_, _>>()?,
            Some(other) => {
                return Err(invalid(format!(
                    "field `args` must be an array of strings, got {}",
                    glovebox_plugin_sdk::kind_of(other)
                )));
            }
        };
        let report = glovebox_js_shell::with_shell(setup, |shell| run(shell, code, stdin, &args));
        output(&report)
    }
}

/// Runs `code` and reports what it printed, its value and its uncaught error.
fn run(shell: &mut Shell, code: &str, stdin: &str, args: &[String]) -> Value {
    let outcome = set_inputs(shell, stdin, args)
        .and_then(|()| eval(shell, code))
        .and_then(|value| shell.settle(value));
    let (value, error) = match outcome {
        Ok(value) => (shell.to_result(&value), shell.unhandled_rejection()),
        Err(e) => (None, Some(shell.describe_error(e))),
    };
    let (stdout, stderr) = glovebox_js_shell::take_output();
    let mut report = Map::new();
    report.insert("stdout".into(), stdout.into());
    report.insert("stderr".into(), stderr.into());
    if let Some(value) = value {
        report.insert("value".into(), value);
    }
    if let Some(error) = error {
        report.insert("error".into(), error.into());
    }
    Value::Object(report)
}

fn set_inputs(shell: &mut Shell, stdin: &str, args: &[String]) -> JsResult<()> {
    let values = args
        .iter()
        .map(|a| JsValue::from(JsString::from(a.as_str())));
    let args = JsArray::from_iter(values, &mut shell.context);
    shell.set_global("args", args.into())?;
    shell.set_global("stdin", JsString::from(stdin).into())
}

/// Evaluates `code` as a script. Code that uses `await` at the top level (a syntax
/// error in a script) runs again as the body of an async function, on the same lines.
fn eval(shell: &mut Shell, code: &str) -> Result<JsValue, JsError> {
    let first = shell
        .context
        .eval(Source::from_bytes(code).with_path(Path::new(FILE)));
    match first {
        Err(e) if is_syntax_error(&e) && code.contains("await") => {
            let wrapped = format!("(async () => {{{code}\n}})()");
            match shell
                .context
                .eval(Source::from_bytes(&wrapped).with_path(Path::new(FILE)))
            {
                Err(again) if is_syntax_error(&again) => Err(e),
                other => other,
            }
        }
        other => other,
    }
}

fn is_syntax_error(e: &JsError) -> bool {
    e.as_native().is_some_and(|n| {
        matches!(
            n.kind(),
            glovebox_js_shell::boa_engine::JsNativeErrorKind::Syntax
        )
    })
}

glovebox_js_shell::export!(Runner with_types_in glovebox_js_shell::bindings);
