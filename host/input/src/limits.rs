//! The limits a JSON Schema declares, enforced on arguments (threat 43):
//! every `maxLength`, `maxItems`, `maxProperties`, `maximum` (and their
//! lower bounds) is checked before the arguments are parsed, for every
//! surface that takes JSON arguments (the MCP built-ins, the operations of
//! the HTTP API and `glovebox operation`). Serde alone takes a string of any
//! length.
//!
//! Only the limit keywords are checked here: types, words and unknown fields
//! are left to the parse, whose errors say more. A refusal names the
//! argument, its size and the limit, never the value.

use jsonschema::Validator;
use jsonschema::error::ValidationErrorKind;
use serde_json::Value;

/// The first argument in `args` outside a limit `validator`'s schema
/// declares, in words; `None` when every one holds.
pub fn first_exceeded(validator: &Validator, args: &Value) -> Option<String> {
    for error in validator.iter_errors(args) {
        let field = field_of(error.instance_path().as_str());
        let field = if field.is_empty() {
            "the arguments".to_string()
        } else {
            format!("`{field}`")
        };
        let instance = error.instance();
        let chars = || instance.as_str().map_or(0, |s| s.chars().count());
        let items = || instance.as_array().map_or(0, Vec::len);
        let properties = || instance.as_object().map_or(0, serde_json::Map::len);
        let said = match error.kind() {
            ValidationErrorKind::MaxLength { limit } => format!(
                "{field} is {} characters long, more than the limit of {limit} (`maxLength`)",
                chars()
            ),
            ValidationErrorKind::MinLength { limit } => format!(
                "{field} is {} characters long, less than the minimum of {limit} (`minLength`)",
                chars()
            ),
            ValidationErrorKind::MaxItems { limit } => format!(
                "{field} has {} items, more than the limit of {limit} (`maxItems`)",
                items()
            ),
            ValidationErrorKind::MinItems { limit } => format!(
                "{field} has {} items, fewer than the minimum of {limit} (`minItems`)",
                items()
            ),
            ValidationErrorKind::MaxProperties { limit } => format!(
                "{field} has {} fields, more than the limit of {limit} (`maxProperties`)",
                properties()
            ),
            ValidationErrorKind::Maximum { limit } => {
                format!("{field} is {instance}, more than the maximum of {limit} (`maximum`)")
            }
            ValidationErrorKind::ExclusiveMaximum { limit } => format!(
                "{field} is {instance}, not below the limit of {limit} (`exclusiveMaximum`)"
            ),
            ValidationErrorKind::Minimum { limit } => {
                format!("{field} is {instance}, less than the minimum of {limit} (`minimum`)")
            }
            ValidationErrorKind::ExclusiveMinimum { limit } => format!(
                "{field} is {instance}, not above the limit of {limit} (`exclusiveMinimum`)"
            ),
            _ => continue,
        };
        return Some(said);
    }
    None
}

/// A JSON pointer into the arguments as serde names the field (`tags[0]`,
/// `budget.cost`).
pub fn field_of(pointer: &str) -> String {
    let mut field = String::new();
    for part in pointer.split('/').skip(1) {
        let part = part.replace("~1", "/").replace("~0", "~");
        if part.parse::<usize>().is_ok() {
            field.push_str(&format!("[{part}]"));
        } else {
            if !field.is_empty() {
                field.push('.');
            }
            field.push_str(&part);
        }
    }
    field
}
