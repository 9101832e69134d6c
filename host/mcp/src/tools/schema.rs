//! A built-in's input schema, derived from the struct its arguments parse
//! into (schemars), written as the clients know schemas.

use std::sync::Arc;

use rmcp::model::{JsonObject, Tool};
use schemars::generate::SchemaSettings;
use schemars::transform::RecursiveTransform;
use schemars::{JsonSchema, Schema};
use serde_json::Value;

/// A built-in whose arguments parse into `T`.
pub(super) fn builtin<T: JsonSchema>(name: &'static str, description: &'static str) -> Tool {
    Tool::new(name, description, Arc::new(input_schema::<T>()))
}

/// `T`'s schema as an MCP input schema: an object schema with every
/// subschema inlined, no `$schema`, and no root `title` or `description`
/// (the struct's name and doc; the tool's description says what it does).
pub(super) fn input_schema<T: JsonSchema>() -> JsonObject {
    let schema = SchemaSettings::draft2020_12()
        .with(|s| {
            s.inline_subschemas = true;
            s.meta_schema = None;
        })
        .with_transform(RecursiveTransform(as_clients_know_it))
        .into_generator()
        .into_root_schema_for::<T>();
    let mut schema = object(schema.to_value());
    schema.remove("title");
    schema.remove("description");
    schema
}

/// What schemars writes differently from the schemas clients had: an
/// `Option` field also allows `null` and defaults to it (the field is
/// optional: leave it out); a number has its Rust type as `format`
/// (`uint64`, `double`: no JSON Schema format, and some clients refuse a
/// tool with a format they do not know; `minimum` says what matters); and a
/// doc comment's line breaks stay in its description (they are the
/// source's wrapping, not the text's).
pub(super) fn as_clients_know_it(schema: &mut Schema) {
    let Some(o) = schema.as_object_mut() else {
        return;
    };
    if let Some(Value::Array(types)) = o.get_mut("type") {
        types.retain(|t| t != "null");
        if let [only] = types.as_slice() {
            let only = only.clone();
            o.insert("type".into(), only);
        }
    }
    if let Some(Value::Array(words)) = o.get_mut("enum") {
        words.retain(|w| !w.is_null());
    }
    if o.get("default").is_some_and(Value::is_null) {
        o.remove("default");
    }
    if matches!(
        o.get("type").and_then(Value::as_str),
        Some("integer" | "number")
    ) {
        o.remove("format");
    }
    if let Some(Value::String(text)) = o.get_mut("description") {
        *text = text
            .split("\n\n")
            .map(|p| p.split('\n').map(str::trim).collect::<Vec<_>>().join(" "))
            .collect::<Vec<_>>()
            .join("\n\n");
    }
}

pub(super) fn object(v: Value) -> JsonObject {
    match v {
        Value::Object(o) => o,
        _ => JsonObject::new(),
    }
}
