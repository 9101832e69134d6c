//! The built-ins' declared limits, enforced (threat 43): every `maxLength`,
//! `maxItems`, `maximum` (and their lower bounds) a built-in's schema tells
//! clients is checked here, for every built-in, before its arguments are
//! parsed and before it runs. Serde alone takes a string of any length, so
//! without this a 4 MiB `context_search` query reached the index.
//!
//! Only the limit keywords are checked here: types, words and unknown
//! fields are left to the parse (`builtins::parse`), whose errors say more
//! and which takes words the schema spells one way (`-` for `_`). A refusal
//! names the argument, its size and the limit, never the value.

use serde_json::Value;

use super::tools::fields::{SCHEMAS, field_of};
use jsonschema::error::ValidationErrorKind;

/// The first argument of built-in `tool` outside a limit its schema
/// declares, in words; `Ok` when every one holds (or `tool` is not a
/// built-in).
pub(crate) fn check(tool: &str, args: &Value) -> Result<(), String> {
    let Some((validator, _)) = SCHEMAS.get(tool) else {
        return Ok(());
    };
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
        return Err(said);
    }
    Ok(())
}
