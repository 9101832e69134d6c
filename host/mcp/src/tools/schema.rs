//! A built-in's input schema, derived from the struct its arguments parse
//! into (schemars), written as the clients know schemas.

use std::sync::Arc;

use glovebox::operations::as_clients_know_it;
use rmcp::model::{JsonObject, Tool};
use schemars::JsonSchema;
use schemars::generate::SchemaSettings;
use schemars::transform::RecursiveTransform;
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

pub(super) fn object(v: Value) -> JsonObject {
    match v {
        Value::Object(o) => o,
        _ => JsonObject::new(),
    }
}
