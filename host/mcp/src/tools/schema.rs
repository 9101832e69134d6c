//! A built-in's input schema, derived from the struct its arguments parse
//! into (schemars), written as the clients know schemas: the same writing
//! as the registry's operations (`glovebox::operations::input_schema`).

use std::sync::Arc;

use glovebox::operations::{Entry, input_schema};
use rmcp::model::{JsonObject, Tool};
use schemars::JsonSchema;
use serde_json::Value;

/// A built-in whose arguments parse into `T`.
pub(super) fn builtin<T: JsonSchema>(name: &'static str, description: &'static str) -> Tool {
    Tool::new(name, description, Arc::new(input_schema::<T>()))
}

/// A built-in served by the operation registry: its description is the
/// operation's summary and description, its input schema the operation's
/// arguments'.
pub(super) fn operation(name: &'static str, entry: &Entry) -> Tool {
    let description = format!("{} {}", entry.summary, entry.description);
    Tool::new(name, description, Arc::new(entry.input_schema()))
}

pub(super) fn object(v: Value) -> JsonObject {
    match v {
        Value::Object(o) => o,
        _ => JsonObject::new(),
    }
}
