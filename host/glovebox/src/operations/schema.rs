//! How the operations' schemas are written for clients, on every surface.

use schemars::generate::SchemaSettings;
use schemars::transform::{RecursiveTransform, Transform};
use schemars::{JsonSchema, Schema, SchemaGenerator};
use serde_json::{Map, Value};

/// A schema as clients know it, for every surface that shows one (the MCP
/// tools' input schemas, the HTTP API's OpenAPI document), so they say the
/// same. What schemars writes differently from the schemas clients had: an
/// `Option` field also allows `null` and defaults to it (the field is
/// optional: leave it out); a number has its Rust type as `format`
/// (`uint64`, `double`: no JSON Schema format, and some clients refuse a
/// tool with a format they do not know; `minimum` says what matters); and a
/// doc comment's line breaks stay in its description (they are the
/// source's wrapping, not the text's).
pub fn as_clients_know_it(schema: &mut Schema) {
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

/// The schema `schema_of` writes, whole (every subschema inlined: no
/// `$ref`, which some clients do not follow) and as clients know it: an
/// MCP tool's input schema. Without `$schema`, and without the root's
/// `title` and `description` (a struct's name and doc: the tool's own
/// description says what it does).
pub(crate) fn inlined(
    schema_of: impl FnOnce(&mut SchemaGenerator) -> Schema,
) -> Map<String, Value> {
    let mut generator = SchemaSettings::draft2020_12()
        .with(|s| {
            s.inline_subschemas = true;
            s.meta_schema = None;
        })
        .into_generator();
    let mut schema = schema_of(&mut generator);
    RecursiveTransform(as_clients_know_it).transform(&mut schema);
    let mut schema = match schema.to_value() {
        Value::Object(o) => o,
        _ => Map::new(),
    };
    for key in ["$schema", "title", "description"] {
        schema.remove(key);
    }
    schema
}

/// `T`'s schema, whole, as an MCP tool's input schema (see [`inlined`]):
/// what the MCP built-ins not yet in the registry are listed with.
pub fn input_schema<T: JsonSchema>() -> Map<String, Value> {
    inlined(|generator| generator.subschema_for::<T>())
}
