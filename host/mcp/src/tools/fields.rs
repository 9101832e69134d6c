//! What names a bad field of a built-in's arguments that serde cannot: the
//! built-ins' own schemas, compiled once.

pub(crate) use glovebox_input::limits::field_of;
use std::collections::HashMap;
use std::sync::LazyLock;

use serde_json::Value;

use super::builtin_tools;

/// The built-ins' compiled schemas and property names, by tool name: what
/// names a bad field serde cannot (see [`locate`]).
pub(crate) static SCHEMAS: LazyLock<HashMap<String, (jsonschema::Validator, Vec<String>)>> =
    LazyLock::new(|| {
        builtin_tools()
            .into_iter()
            .filter_map(|tool| {
                let schema = Value::Object((*tool.input_schema).clone());
                let fields = schema["properties"]
                    .as_object()
                    .map(|p| p.keys().cloned().collect())
                    .unwrap_or_default();
                let validator = jsonschema::validator_for(&schema).ok()?;
                Some((tool.name.to_string(), (validator, fields)))
            })
            .collect()
    });

/// Where built-in `tool`'s `args` break its schema, as serde would name
/// the field (`tags[0]`), and what is wrong there; `None` when no field is
/// at fault. For a field of a group flattened into the arguments
/// ([`NewSessionArgs`], [`HandoffNotes`]), which serde's error cannot
/// name. A `null` is passed over: serde takes it for an optional field,
/// which the schema leaves out instead.
pub(crate) fn locate(tool: &str, args: &Value) -> Option<String> {
    let (validator, _) = SCHEMAS.get(tool)?;
    let error = validator
        .iter_errors(args)
        .find(|e| !e.instance().is_null() && e.instance_path().as_str() != "")?;
    let field = field_of(error.instance_path().as_str());
    Some(format!("`{field}`: {error}"))
}

/// The fields built-in `tool` takes, as an unknown field's error lists them.
pub(crate) fn fields_of(tool: &str) -> Option<String> {
    let (_, fields) = SCHEMAS.get(tool)?;
    Some(
        fields
            .iter()
            .map(|f| format!("`{f}`"))
            .collect::<Vec<_>>()
            .join(", "),
    )
}
