//! How the operations' schemas are written for clients, on every surface.

use schemars::Schema;
use serde_json::Value;

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
