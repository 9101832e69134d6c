//! Tool plugins written in JavaScript: see [`js_plugin!`](crate::js_plugin) and
//! `plugins/js/README.md`.
//!
//! The plugin's source declares `tools` (an array of tool specs) and a function
//! `call(tool, input, ctx)`. The shell evaluates it in `wizer-initialize`, so the
//! snapshot holds the loaded plugin; each call only runs `call`.

use std::cell::RefCell;
use std::path::Path;

use boa_engine::{JsError, JsObject, JsString, JsValue, Source, js_string};
use glovebox_plugin_sdk::{CallContext, ToolError, ToolSpec, Value, failed, invalid, unknown_tool};

use crate::{Shell, natives};

/// Installed before a plugin's source: the error class for bad input.
const PLUGIN_PRELUDE: &str = r#"
Object.defineProperty(globalThis, 'InvalidInput', {
    value: class InvalidInput extends Error {
        constructor(message) {
            super(message);
            this.name = 'InvalidInput';
        }
    },
    writable: true,
    configurable: true,
    enumerable: false,
});
"#;

struct Plugin {
    specs: Vec<ToolSpec>,
    call: JsObject,
}

thread_local! {
    static PLUGIN: RefCell<Option<Plugin>> = const { RefCell::new(None) };
}

/// Loads the plugin `source` (named `file` in stack traces) into `shell`.
pub fn load(shell: &mut Shell, source: &str, file: &str) -> Result<(), String> {
    let file = Path::new(file)
        .file_name()
        .and_then(|f| f.to_str())
        .unwrap_or(file);
    shell
        .context
        .eval(Source::from_bytes(PLUGIN_PRELUDE))
        .map_err(|e| format!("the plugin prelude failed: {e}"))?;
    if let Err(e) = shell
        .context
        .eval(Source::from_bytes(source).with_path(Path::new(file)))
    {
        return Err(format!("{file}: {}", shell.describe_error(e)));
    }
    let found = shell
        .context
        .eval(Source::from_bytes(
            "[typeof tools === 'undefined' ? undefined : tools, \
              typeof call === 'undefined' ? undefined : call]",
        ))
        .map_err(|e| format!("{file}: {e}"))?;
    let found = found.as_object().ok_or("no array")?;
    let tools = found
        .get(0, &mut shell.context)
        .map_err(|e| e.to_string())?;
    let call = found
        .get(1, &mut shell.context)
        .map_err(|e| e.to_string())?;
    let call = call
        .as_callable()
        .ok_or_else(|| format!("{file}: declares no function `call(tool, input, ctx)`"))?;
    let tools = shell
        .to_json(&tools)
        .ok_or_else(|| format!("{file}: declares no `tools` array (or it is not JSON)"))?;
    let specs = specs(file, &tools)?;
    PLUGIN.with(|p| *p.borrow_mut() = Some(Plugin { specs, call }));
    Ok(())
}

fn specs(file: &str, tools: &Value) -> Result<Vec<ToolSpec>, String> {
    let list = tools
        .as_array()
        .ok_or_else(|| format!("{file}: `tools` must be an array"))?;
    let mut specs = Vec::new();
    for (i, tool) in list.iter().enumerate() {
        let at = |field: &str| format!("{file}: tools[{i}].{field}");
        let text = |field: &str| -> Result<String, String> {
            tool.get(field)
                .and_then(Value::as_str)
                .filter(|s| !s.is_empty())
                .map(str::to_owned)
                .ok_or_else(|| format!("{} must be a non-empty string", at(field)))
        };
        let flag = |field: &str| -> Result<bool, String> {
            match tool.get(field) {
                None | Some(Value::Null) => Ok(false),
                Some(Value::Bool(b)) => Ok(*b),
                Some(_) => Err(format!("{} must be a boolean", at(field))),
            }
        };
        let schema = tool
            .get("inputSchema")
            .filter(|s| s.is_object())
            .ok_or_else(|| format!("{} must be a JSON Schema object", at("inputSchema")))?;
        specs.push(ToolSpec {
            name: text("name")?,
            description: text("description")?,
            input_schema: schema.to_string(),
            action: text("action")?,
            destructive: flag("destructive")?,
            idempotent: flag("idempotent")?,
        });
    }
    if specs.is_empty() {
        return Err(format!("{file}: `tools` is empty"));
    }
    Ok(specs)
}

/// The setup function that loads `source`, for [`crate::initialize`].
pub fn setup<'a>(
    source: &'a str,
    file: &'a str,
) -> impl FnOnce(&mut Shell) -> Result<(), String> + 'a {
    move |shell| load(shell, source, file)
}

/// `list-tools` of a JS plugin.
pub fn list_tools(source: &str, file: &str) -> Vec<ToolSpec> {
    crate::with_shell(setup(source, file), |_| {
        PLUGIN.with(|p| {
            p.borrow()
                .as_ref()
                .map(|p| p.specs.clone())
                .unwrap_or_default()
        })
    })
}

/// `call` of a JS plugin.
pub fn call(
    source: &str,
    file: &str,
    ctx: CallContext,
    tool: String,
    input: String,
) -> Result<String, ToolError> {
    let result = crate::with_shell(setup(source, file), |shell| {
        let (specs, function) = PLUGIN.with(|p| {
            let p = p.borrow();
            let p = p.as_ref().expect("loaded by setup");
            (p.specs.clone(), p.call.clone())
        });
        if !specs.iter().any(|s| s.name == tool) {
            return Err(unknown_tool(&tool, &specs));
        }
        let parsed: Value = glovebox_plugin_sdk::serde_json::from_str(&input)
            .map_err(|e| invalid(format!("input is not valid JSON: {e}")))?;
        if !parsed.is_object() {
            return Err(invalid(format!(
                "input must be a JSON object, got {}",
                glovebox_plugin_sdk::kind_of(&parsed)
            )));
        }
        let context = &mut shell.context;
        let js_input = JsValue::from_json(&parsed, context)
            .map_err(|e| failed(format!("cannot convert the input: {e}")))?;
        let js_ctx = crate::string_object(
            context,
            &[
                ("sessionId", Some(&ctx.session_id)),
                ("sessionName", ctx.session_name.as_deref()),
                ("role", Some(&ctx.role)),
                ("callId", Some(&ctx.call_id)),
                ("jobId", ctx.job_id.as_deref()),
            ],
        );
        let outcome = function
            .call(
                &JsValue::undefined(),
                &[
                    JsString::from(tool.as_str()).into(),
                    js_input,
                    js_ctx.into(),
                ],
                context,
            )
            .and_then(|v| shell.settle(v));
        match outcome {
            Ok(value) if value.is_undefined() => Ok("null".to_owned()),
            Ok(value) => match shell.to_json(&value) {
                Some(json) => Ok(json.to_string()),
                None => Err(failed(format!(
                    "`call` returned {}, which has no JSON form",
                    shell.inspect_value(&value)
                ))),
            },
            Err(e) => Err(error(shell, e)),
        }
    });
    natives::flush_to_stdio();
    result
}

/// A thrown `InvalidInput` is `invalid-input` with its message; anything else fails
/// the call with the error and its stack.
fn error(shell: &mut Shell, e: JsError) -> ToolError {
    if let Some(object) = e.as_opaque().and_then(JsValue::as_object) {
        let context = &mut shell.context;
        let name = object.get(js_string!("name"), context).ok();
        if name
            .and_then(|n| n.as_string())
            .is_some_and(|n| n == js_string!("InvalidInput"))
        {
            let message = object
                .get(js_string!("message"), context)
                .ok()
                .and_then(|m| m.as_string())
                .map(|m| m.to_std_string_lossy())
                .unwrap_or_default();
            return invalid(message);
        }
    }
    failed(shell.describe_error(e))
}

/// Makes this crate a tool plugin written in JavaScript: `js_plugin!("../my-tool.js")`
/// embeds the source (the path is relative to the file that invokes the macro) and
/// exports the `preinit-tool-plugin` world.
#[macro_export]
macro_rules! js_plugin {
    ($path:literal) => {
        struct JsPlugin;

        const SOURCE: &str = include_str!($path);
        const FILE: &str = $path;

        impl $crate::Guest for JsPlugin {
            fn wizer_initialize() {
                $crate::initialize($crate::plugin::setup(SOURCE, FILE));
            }
        }

        impl $crate::ToolGuest for JsPlugin {
            fn list_tools() -> ::std::vec::Vec<$crate::ToolSpec> {
                $crate::plugin::list_tools(SOURCE, FILE)
            }

            fn call(
                ctx: $crate::CallContext,
                tool: ::std::string::String,
                input: ::std::string::String,
            ) -> ::std::result::Result<::std::string::String, $crate::ToolError> {
                $crate::plugin::call(SOURCE, FILE, ctx, tool, input)
            }
        }

        $crate::export!(JsPlugin with_types_in $crate::bindings);
    };
}
