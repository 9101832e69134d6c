//! Shared glue for Glovebox tool plugins written in Rust.
//!
//! The bindings for the `tool-plugin` world (`wit/plugin.wit` at the repository root)
//! are generated once, here; a plugin implements [`Guest`] and exports it with
//! [`export!`](crate::export):
//!
//! ```ignore
//! use glovebox_plugin_sdk::{CallContext, Guest, ToolError, ToolSpec};
//!
//! struct Echo;
//! impl Guest for Echo {
//!     fn list_tools() -> Vec<ToolSpec> { /* ... */ }
//!     fn call(ctx: CallContext, tool: String, input: String) -> Result<String, ToolError> { /* ... */ }
//! }
//! glovebox_plugin_sdk::export!(Echo);
//! ```
//!
//! The JSON helpers turn bad input into `tool-error::invalid-input` with a message that
//! tells the agent what to fix. With the feature `tools`, [`tools`](crate::tools) calls
//! the session's other tools from inside a call (code mode).

wit_bindgen::generate!({
    path: "../../wit",
    world: "tool-plugin",
    pub_export_macro: true,
    default_bindings_module: "glovebox_plugin_sdk",
});

#[cfg(feature = "tools")]
pub mod tools;

pub use exports::glovebox::plugin::tool::Guest;
pub use glovebox::plugin::types::{CallContext, ToolError, ToolSpec};
pub use serde_json::{self, Map, Value, json};

/// `tool-error::invalid-input(msg)`.
pub fn invalid(msg: impl Into<String>) -> ToolError {
    ToolError::InvalidInput(msg.into())
}

/// `tool-error::failed(msg)`.
pub fn failed(msg: impl Into<String>) -> ToolError {
    ToolError::Failed(msg.into())
}

/// Describes one tool. `input_schema` is a JSON Schema value.
pub fn spec(
    name: &str,
    description: &str,
    input_schema: Value,
    action: &str,
    destructive: bool,
    idempotent: bool,
) -> ToolSpec {
    ToolSpec {
        name: name.to_owned(),
        description: description.to_owned(),
        input_schema: input_schema.to_string(),
        action: action.to_owned(),
        destructive,
        idempotent,
    }
}

/// The error for a tool name this plugin does not offer.
pub fn unknown_tool(tool: &str, specs: &[ToolSpec]) -> ToolError {
    let names: Vec<&str> = specs.iter().map(|s| s.name.as_str()).collect();
    invalid(format!(
        "unknown tool `{tool}`; this plugin offers: {}",
        names.join(", ")
    ))
}

/// Serializes a result value as JSON text.
pub fn output(value: &Value) -> Result<String, ToolError> {
    serde_json::to_string(value).map_err(|e| failed(format!("cannot serialize the result: {e}")))
}

/// A tool's input: a parsed JSON object.
#[derive(Debug, Clone)]
pub struct Input {
    fields: Map<String, Value>,
}

impl Input {
    /// Parses `input`, which must be a JSON object.
    pub fn parse(input: &str) -> Result<Self, ToolError> {
        let value: Value = serde_json::from_str(input)
            .map_err(|e| invalid(format!("input is not valid JSON: {e}")))?;
        match value {
            Value::Object(fields) => Ok(Self { fields }),
            other => Err(invalid(format!(
                "input must be a JSON object, got {}",
                kind_of(&other)
            ))),
        }
    }

    /// Parses `input` and refuses fields other than `allowed`.
    pub fn parse_strict(input: &str, allowed: &[&str]) -> Result<Self, ToolError> {
        let parsed = Self::parse(input)?;
        if let Some(unknown) = parsed
            .fields
            .keys()
            .find(|k| !allowed.contains(&k.as_str()))
        {
            let expected = if allowed.is_empty() {
                "this tool takes no fields".to_owned()
            } else {
                format!("expected only: {}", allowed.join(", "))
            };
            return Err(invalid(format!("unknown field `{unknown}`; {expected}")));
        }
        Ok(parsed)
    }

    /// All fields.
    pub fn fields(&self) -> &Map<String, Value> {
        &self.fields
    }

    /// The raw value of a field, if present and not null.
    pub fn get(&self, key: &str) -> Option<&Value> {
        self.fields.get(key).filter(|v| !v.is_null())
    }

    /// A required string field.
    pub fn str(&self, key: &str) -> Result<&str, ToolError> {
        self.opt_str(key)?
            .ok_or_else(|| invalid(format!("missing required string field `{key}`")))
    }

    /// An optional string field.
    pub fn opt_str(&self, key: &str) -> Result<Option<&str>, ToolError> {
        match self.get(key) {
            None => Ok(None),
            Some(Value::String(s)) => Ok(Some(s)),
            Some(other) => Err(invalid(format!(
                "field `{key}` must be a string, got {}",
                kind_of(other)
            ))),
        }
    }

    /// An optional non-negative integer field.
    pub fn opt_u64(&self, key: &str) -> Result<Option<u64>, ToolError> {
        match self.get(key) {
            None => Ok(None),
            Some(v) => v.as_u64().map(Some).ok_or_else(|| {
                invalid(format!(
                    "field `{key}` must be a non-negative integer, got {}",
                    describe(v)
                ))
            }),
        }
    }

    /// An optional object field.
    pub fn opt_object(&self, key: &str) -> Result<Option<&Map<String, Value>>, ToolError> {
        match self.get(key) {
            None => Ok(None),
            Some(Value::Object(m)) => Ok(Some(m)),
            Some(other) => Err(invalid(format!(
                "field `{key}` must be an object, got {}",
                kind_of(other)
            ))),
        }
    }
}

/// "a string", "an array", ... for error messages.
pub fn kind_of(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

fn describe(value: &Value) -> String {
    match value {
        Value::Number(n) => format!("`{n}`"),
        other => kind_of(other).to_owned(),
    }
}
